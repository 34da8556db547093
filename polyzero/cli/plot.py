"""`polyzero plot`: learning-curve PNGs for one or more runs."""

from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    pt = sub.add_parser("plot", help="learning-curve PNGs for one or more runs")
    pt.add_argument("run_dirs", nargs="+", type=Path)
    pt.add_argument("--out", type=Path, help="output directory (default: RUN_DIR/plots)")
    pt.set_defaults(run=run)


def run(args) -> int:
    from ..eval.plot import plot_run, plot_runs

    if len(args.run_dirs) == 1:
        paths = plot_run(args.run_dirs[0], args.out)
    else:
        paths = plot_runs(args.run_dirs, args.out or Path("plots"))
    for p in paths:
        print(p)
    return 0
