"""`polyzero probe`: the learned model of a MuZero or NDMZ run against the true game, k steps ahead."""

from __future__ import annotations

from pathlib import Path

from ..validation import check_output_dir, count_arg, path_arg, seed_arg

EXAMPLES = """examples:
  polyzero probe runs/c4-muzero
  polyzero probe runs/c4-muzero --baseline runs/c4-alphazero --games 500
  polyzero probe runs/nannon-ndmz --unroll 6 --out probes/nannon
"""


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "probe",
        help="a learned model's k-step agreement with the true game",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="Unroll a MuZero or NDMZ run's learned model along games of random moves "
        "and compare each prediction k steps ahead with the true game: top-move "
        "legality (NDMZ's top-move and uniform tests), agreement with the model's "
        "own view of the true position, value drift, reward error, and for NDMZ "
        "the identity and chance predictions; with --baseline, agreement with an "
        "AlphaZero run's network (given the rules); on Nannon, whose exact values are "
        "tabulated, value, top move and a one-move look-ahead against them. Prints a table per k and "
        "writes probe.json and probe.png.",
    )
    p.add_argument("run_dir", type=Path, metavar="RUN", help="a muzero or ndmz run directory or checkpoint")
    p.add_argument("--baseline", type=Path, metavar="RUN", help="an alphazero run of the same game to compare with")
    p.add_argument(
        "--games", type=count_arg, default=200, help="random games whose positions are probed (default: 200)"
    )
    p.add_argument("--unroll", type=int, metavar="K", help="steps to unroll (default: the run's K)")
    p.add_argument(
        "--moves",
        choices=["random", "model"],
        default="random",
        help="how the probed games are played: uniform random moves (default), or moves sampled "
        "from the model's own prior f(h(o)), closer to the positions its self-play reaches",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the probed games (default: 0)")
    p.add_argument("--out", type=path_arg(check_output_dir, "--out"), help="output directory (default: RUN/probe)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..train.probe import format_table, probe_run

    result = probe_run(
        args.run_dir,
        baseline=args.baseline,
        games=args.games,
        seed=args.seed,
        unroll=args.unroll,
        out=args.out,
        moves=args.moves,
    )
    print(
        f"{result['algo']} on {result['game']}, checkpoint {result['checkpoint']} "
        f"(learning step {result['learning_step']}), {args.games} games of {args.moves} moves, seed {args.seed}"
    )
    print(format_table(result))
    print(f"results: {result['json']}; plot: {result['plot']}")
    return 0
