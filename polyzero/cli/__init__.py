"""polyzero's command line: one module per subcommand, each with `register(sub)` and `run(args)`.

User mistakes print one line `polyzero: error: ...` and exit with status 2.
A new subcommand is one module here plus its name in `COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import RunStopped, UsageError

# Subcommands in the order `polyzero --help` lists them; each names a module of this package.
COMMANDS = ("train", "arena", "play", "solve", "ladder", "tournament", "exploitability", "sog_probe", "plot", "probe",
            "serve", "export", "presets", "gtp", "uci", "replay")

EPILOG = """examples:
  polyzero train connect_four --algo alphazero --set train.steps=20
  polyzero train tic_tac_toe --run-dir runs/ttt --seed 1
  polyzero train kuhn_poker --algo sog
  polyzero train --resume runs/ttt
  polyzero arena runs/ttt mcts-solver:100 --games 100
  polyzero play tic_tac_toe --agent runs/ttt --human-seat 0
  polyzero play connect_four --agent mcts-solver:1000 --human-seat 1
  polyzero plot runs/ttt
  polyzero serve runs/ttt                 # a web page on http://127.0.0.1:8000
  polyzero export runs/ttt --format onnx
  polyzero presets
  polyzero solve nannon
  polyzero gtp --agent runs/go9            # a GTP engine for Sabaki, Lizzie, GoGui
  polyzero uci --agent mcts:200            # a UCI chess engine for cutechess
  polyzero arena runs/go9 gnugo:1 --games 20 --record games/
  polyzero replay games/runs_go9-vs-gnugo_1-0000.sgf
Each command's --help explains its options and shows examples; docs/ has a page per capability.
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="polyzero", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="The Zero family of self-play learning and planning on OpenSpiel games.")
    from .. import __version__

    p.add_argument("--version", action="version", version=f"polyzero {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"polyzero: error: {exc}", file=sys.stderr)
        return 2
    except RunStopped as exc:
        print(f"polyzero: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("polyzero: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
