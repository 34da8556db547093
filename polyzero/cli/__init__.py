"""polyzero's command line: one module per subcommand, each with `register(sub)` and `run(args)`.

User mistakes print one line `polyzero: error: ...` and exit with status 2; so do files
that cannot be decoded (not UTF-8, not JSON), naming the file. Operating-system errors
(a full disk, a permission) print one line naming the path and exit with status 1.
A new subcommand is one module here plus its name in `COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import warnings

from ..errors import RunStopped, UsageError

# Subcommands in the order `polyzero --help` lists them; each names a module of this package.
COMMANDS = (
    "train",
    "arena",
    "play",
    "solve",
    "ladder",
    "tournament",
    "exploitability",
    "sog_probe",
    "plot",
    "probe",
    "serve",
    "export",
    "presets",
    "gtp",
    "uci",
    "replay",
)

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


class _Parser(argparse.ArgumentParser):
    """Command-line mistakes as one line (argparse's usage block stays in --help)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="polyzero",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="The Zero family of self-play learning and planning on OpenSpiel games.",
    )
    from .. import __version__

    p.add_argument("--version", action="version", version=f"polyzero {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    # torch warns before refusing a foreign pickle in a checkpoint; the refusal is the one line.
    warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
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
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # a file the command read
        what = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"not valid JSON ({exc.msg})"
        path = _path_of(exc)
        where = (f"a file in {path}" if os.path.isdir(path) else path) if path else "a file it read"
        print(f"polyzero: error: {where} is {what}", file=sys.stderr)
        return 2
    except MemoryError:
        print("polyzero: error: out of memory (lower the sizes: docs/input_validation.md)", file=sys.stderr)
        return 1
    except OSError as exc:
        path = exc.filename or _path_of(exc) or "a file"
        print(f"polyzero: error: {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1


_PATH_NAMES = ("path", "pointer", "file", "filename", "ckpt", "fh")


def _path_of(exc: BaseException) -> str | None:
    """The file an error came from, read off the innermost frame that names one
    (`path`, `pointer`, ...): decoding errors do not carry it."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        local = tb.tb_frame.f_locals
        for name in _PATH_NAMES:
            value = local.get(name)
            if isinstance(value, (str, os.PathLike)) and str(value):
                found = str(value)
                break
            if hasattr(value, "name") and isinstance(value.name, str):
                found = value.name
                break
        tb = tb.tb_next
    return found


if __name__ == "__main__":
    sys.exit(main())
