"""`polyzero serve`: the web page to play, watch and analyse games and browse runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError

EXAMPLES = """examples:
  polyzero serve                          # open http://127.0.0.1:8000 and play
  polyzero serve runs/c4 runs/ttt         # their agents as run:c4, run:ttt; their curves and ladders
  polyzero serve runs/c4 --port 8080
"""


def register(sub) -> None:
    sv = sub.add_parser(
        "serve",
        help="a web page to play, watch and analyse games and browse runs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="Serve a web page: play any two-player game against any player "
        "(boards for Go, Connect Four, tic-tac-toe, Hex, Othello, Breakthrough "
        "and chess, a move list for every game), watch two players, see each "
        "search's visits, values and principal variation, and browse the "
        "learning curves and ladders of the given run directories. The server "
        "reads only those directories and binds 127.0.0.1 unless --host says "
        "otherwise (docs/web.md).",
    )
    sv.add_argument(
        "run_dirs",
        nargs="*",
        type=Path,
        metavar="RUN_DIR",
        help="run directories whose agents (run:NAME), curves and ladders the page offers",
    )
    sv.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 opens it "
        "to the network, without authentication)",
    )
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    sv.set_defaults(run=run)


def run(args) -> int:
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be in 1..65535, not {args.port}")
    for d in args.run_dirs:
        if not (d / "config.toml").is_file():
            raise UsageError(f"{d} is not a run directory (it has no config.toml)")
    try:
        import uvicorn

        from ..web.app import create_app
    except ImportError as exc:
        raise UsageError(f"serve needs the web extra: pip install 'polyzero[web]' ({exc.name} is missing)") from None
    app = create_app(args.run_dirs)
    print(f"polyzero: serving on http://{args.host}:{args.port}  (Ctrl-C stops)", flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return 0
