"""`polyzero gtp`: an agent as a GTP engine for Go and Hex, on stdin and stdout."""

from __future__ import annotations

import argparse
import contextlib
import sys

from ..errors import UsageError
from ..validation import seed_arg

DEFAULT_GAME = "go(board_size=9,komi=7.5)"


def add_engine_options(p, default_game: str) -> None:
    """The options `gtp` and `uci` share."""
    p.add_argument(
        "--agent",
        required=True,
        help="random, mcts:SIMS, mcts-solver:SIMS, or a run directory / checkpoint (PATH@SIMS)",
    )
    p.add_argument("--game", help=f"the game (default: the agent's, else {default_game})")
    p.add_argument("--simulations", type=int, help="simulations a move without a clock (default: the agent's)")
    p.add_argument(
        "--max-simulations",
        type=int,
        default=100_000,
        help="the most simulations one search may run, clock or not (default: 100000)",
    )
    p.add_argument("--threads", type=int, default=1, help="PyTorch's and the search's threads (default: 1)")
    p.add_argument(
        "--leaf-batch",
        type=int,
        default=16,
        help="leaves of the one search tree a learned agent evaluates per network call, chosen "
        "with virtual loss (default: 16; 1: the sequential search; pUCT agents only)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the agent (default: 0)")


def build_engine_agent(args, default_game: str):
    """(agent, game, tied to the game's board?) from the shared options; setup output goes
    to stderr so that stdout carries the protocol alone."""
    from ..engines.agent import engine_agent
    from ..games import load_game
    from ..nets.inference import set_threads
    from ..train.agents import checkpoint_game

    for name in ("simulations", "max_simulations", "threads", "leaf_batch"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if args.simulations is not None and args.simulations > args.max_simulations:
        raise UsageError(
            f"--simulations {args.simulations} is above --max-simulations {args.max_simulations}: "
            "no search runs more; raise --max-simulations"
        )
    set_threads(args.threads)  # torch's and numba's: numba's parallel kernels would reset torch's
    with contextlib.redirect_stdout(sys.stderr):
        game = load_game(args.game or checkpoint_game(args.agent) or default_game)
        agent, tied = engine_agent(args.agent, game, args.seed, args.simulations, args.max_simulations, args.leaf_batch)
    return agent, game, tied


def register(sub) -> None:
    p = sub.add_parser(
        "gtp",
        help="an agent as a GTP engine (Go, Hex) on stdin/stdout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero gtp --agent runs/go9                         # for Sabaki, Lizzie, GoGui: the run's game
  polyzero gtp --agent runs/go9@800 --max-simulations 20000
  polyzero gtp --agent mcts:2000 --game 'go(board_size=13,komi=7.5)'
  polyzero gtp --agent mcts:1000 --game 'hex(board_size=11)'
""",
        description="Speak GTP version 2 on stdin/stdout for Sabaki, Lizzie, GoGui and "
        "other Go (or Hex) front-ends, with Leela Zero's lz-analyze stream. "
        "See docs/engines.md.",
    )
    add_engine_options(p, DEFAULT_GAME)
    p.set_defaults(run=run)


def run(args) -> int:
    from ..engines.gtp import GtpEngine, serve_gtp

    agent, game, tied = build_engine_agent(args, DEFAULT_GAME)
    serve_gtp(GtpEngine(agent, game, fixed_size=tied))
    return 0
