"""`polyzero plot`: learning-curve PNGs for one or more runs."""

from __future__ import annotations

from pathlib import Path

from ..validation import check_output_dir, path_arg

EXAMPLES = """examples:
  polyzero plot runs/ttt                      # runs/ttt/plots/losses.png, scores.png, ...
  polyzero plot runs/a runs/b --out compare   # both runs overlaid, into compare/
"""


def register(sub) -> None:
    import argparse

    pt = sub.add_parser(
        "plot",
        help="learning-curve PNGs for one or more runs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="Read RUN_DIR/metrics.jsonl and draw losses.png (each loss against "
        "learning step and wall-clock minutes), scores.png (each evaluation "
        "opponent's score with its 95% interval band), returns.png for "
        "one-player games and exploitability.png for Student of Games runs. "
        "Several runs are overlaid, labelled by directory name. For live "
        "curves: tensorboard --logdir RUN_DIR/tensorboard",
    )
    pt.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="run directories to plot")
    pt.add_argument(
        "--out",
        type=path_arg(check_output_dir, "--out"),
        metavar="DIR",
        help="output directory (default: RUN_DIR/plots for one run; for several, plots/ in the current directory)",
    )
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
