"""`polyzero replay`: show a recorded game (SGF, PGN or polyzero's JSON lines)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser(
        "replay",
        help="show a recorded game (.sgf, .pgn, .jsonl)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero replay games/runs_go9-vs-gnugo_1-0000.sgf
  polyzero replay games/random-vs-mcts_5-0001.jsonl --every
""",
        description="Replay a game record written by --record (or any SGF Go game or PGN "
        "chess game from the start) through OpenSpiel's rules: the moves, the "
        "final position and the result.",
    )
    p.add_argument("file", type=Path, help="the record: .sgf (Go), .pgn (chess) or .jsonl (any game)")
    p.add_argument("--every", action="store_true", help="print the position after every move")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..eval.records import replay_lines

    for line in replay_lines(args.file, every=args.every):
        print(line)
    return 0
