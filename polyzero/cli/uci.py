"""`polyzero uci`: an agent as a UCI chess engine, on stdin and stdout."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from .gtp import add_engine_options, build_engine_agent


def register(sub) -> None:
    p = sub.add_parser(
        "uci",
        help="an agent as a UCI chess engine on stdin/stdout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero uci --agent runs/chess                       # for cutechess, python-chess, lichess-bot
  polyzero uci --agent mcts:400
""",
        description="Speak UCI on stdin/stdout for cutechess, lichess-bot, python-chess "
        "and other chess front-ends; OpenSpiel's chess. See docs/engines.md.",
    )
    add_engine_options(p, "chess")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..engines.uci import UciEngine, serve_uci
    from ..games import game_spec_string

    agent, game, _ = build_engine_agent(args, "chess")
    if game.get_type().short_name != "chess":
        raise UsageError(f"uci plays chess, not '{game_spec_string(game)}'")
    serve_uci(UciEngine(agent, game))
    return 0
