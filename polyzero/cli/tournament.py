"""`polyzero tournament`: a round-robin of runs' checkpoints and reference players, with Elo ratings."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..validation import check_output_dir, count_arg, path_arg, seed_arg


def register(sub) -> None:
    tn = sub.add_parser(
        "tournament",
        help="round-robin of runs' checkpoints and reference players, Elo ratings",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero tournament runs/gesc runs/alphazero --games 40
  polyzero tournament runs/c4 --checkpoints all --references mcts-solver:1x,mcts-solver:10x
Checkpoints are labelled RUN#STEP (RUN's checkpoint at learning step STEP).
""",
        description="Round-robin between checkpoints of the given runs and reference players, "
        "every pair --games games with seats alternated; Elo ratings from a "
        "logistic model with a prior of virtual draws (as BayesElo), anchored at "
        "--anchor = 0, with 95% intervals; writes tournament.json, ratings.txt "
        "and ratings.png to --out.",
    )
    tn.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="runs whose checkpoints play")
    tn.add_argument(
        "--references",
        default="mcts-solver:1x",
        help="comma-separated reference players; Mx = M times the first run's evaluation "
        "simulations (default: mcts-solver:1x)",
    )
    tn.add_argument("--anchor", help="the player rated 0 (default: the first reference)")
    tn.add_argument("--checkpoints", default="last", help="last (default), all, or learning steps like 300,600")
    tn.add_argument("--games", type=count_arg, default=20, help="games per pair (default: 20)")
    tn.add_argument("--prior", type=float, default=2.0, help="virtual draws between players who met (default: 2)")
    tn.add_argument(
        "--out",
        type=path_arg(check_output_dir, "--out"),
        default=Path("tournament"),
        help="output directory (default: tournament)",
    )
    tn.add_argument("--seed", type=seed_arg, default=0, help="seed of the matches (default: 0)")
    tn.add_argument("--no-progress", action="store_true", help="no progress display")
    tn.add_argument(
        "--record",
        type=path_arg(check_output_dir, "--record"),
        metavar="DIR",
        help="write every game played to DIR (SGF, PGN or JSON lines)",
    )
    tn.set_defaults(run=run)


def run(args) -> int:
    from ..goexploit.harness import run_tournament

    if args.games < 1:
        raise UsageError("--games must be at least 1")
    refs = tuple(r.strip() for r in args.references.split(",") if r.strip())
    summary = run_tournament(
        args.run_dirs,
        references=refs,
        anchor=args.anchor,
        games=args.games,
        checkpoints=args.checkpoints,
        out_dir=args.out,
        seed=args.seed,
        prior_draws=args.prior,
        progress=not args.no_progress,
        record=args.record,
    )
    print(summary["table"])
    print(f"plot: {summary['plot']}; results: {summary['dir']}/tournament.json")
    return 0
