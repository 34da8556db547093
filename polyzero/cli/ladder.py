"""`polyzero ladder`: a run's checkpoints against the MCTS-Solver ladder, with AUC."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..validation import check_output_dir, count_arg, path_arg, seed_arg


def register(sub) -> None:
    ld = sub.add_parser(
        "ladder",
        help="a run's checkpoints against the MCTS-Solver ladder, with AUC",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero ladder runs/c4 --games 20 --levels 1,10
  polyzero ladder runs/c4 --from-metrics     # from the evaluations recorded while it trained
""",
        description="Play each checkpoint of RUN_DIR against MCTS-Solver at multiples of the "
        "agent's evaluation simulations (Go-Exploit Section 4), seats alternated, "
        "draws 1/2; print win rates, the windowed learning curve and its area (AUC) "
        "per level. Results are cached in RUN_DIR/ladder.json (a rerun plays only "
        "what is new); the plot goes to RUN_DIR/plots/ladder.png. Keep enough "
        "checkpoints for a curve: train with --set train.keep_checkpoints=1000.",
    )
    ld.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run whose checkpoints play")
    # The options of the games played default to None: --from-metrics refuses them when given.
    ld.add_argument("--games", type=count_arg, help="games per checkpoint and level (default: 20)")
    ld.add_argument("--levels", help="multiples of the agent's evaluation simulations (default: 1,10,100,1000)")
    ld.add_argument(
        "--high-every",
        type=count_arg,
        metavar="K",
        help="levels of 100x and more only at every K-th checkpoint and the last (default: 10)",
    )
    ld.add_argument(
        "--window", type=count_arg, default=50, help="learning steps the win rate is averaged over (default: 50)"
    )
    ld.add_argument("--seed", type=seed_arg, help="seed of the matches (default: 0)")
    ld.add_argument(
        "--from-metrics",
        action="store_true",
        help="play nothing: use the evaluations against mcts-solver levels recorded in "
        "RUN_DIR/metrics.jsonl during training",
    )
    ld.add_argument("--no-progress", action="store_true", help="no progress display")
    ld.add_argument(
        "--record",
        type=path_arg(check_output_dir, "--record"),
        metavar="DIR",
        help="write every game played to DIR (SGF, PGN or JSON lines)",
    )
    ld.set_defaults(run=run)


def run(args) -> int:
    from ..goexploit.harness import format_ladder, ladder_from_metrics, run_ladder

    if args.from_metrics:
        played = (args.games, args.levels, args.high_every, args.seed, args.record)
        flags = ("--games", "--levels", "--high-every", "--seed", "--record")
        given = [flag for flag, value in zip(flags, played) if value is not None]
        if given:
            raise UsageError(f"{given[0]} does nothing with --from-metrics: that ladder plays no games")
        summary = ladder_from_metrics(args.run_dir, window=args.window)
        print(format_ladder(summary))
        print(f"plot: {summary['plot']}")
        return 0
    text = args.levels or "1,10,100,1000"
    try:
        levels = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--levels must be comma-separated whole numbers, not {text!r}") from None
    if not levels or min(levels) < 1:
        raise UsageError("--levels must be positive multiples")
    summary = run_ladder(
        args.run_dir,
        games=args.games or 20,
        levels=levels,
        high_every=args.high_every or 10,
        window=args.window,
        seed=args.seed or 0,
        progress=not args.no_progress,
        record=args.record,
    )
    print(format_ladder(summary))
    print(f"plot: {summary['plot']}; results: {args.run_dir / 'ladder.json'}")
    return 0
