"""Exploitability against iterations: GT-CFR growing its tree with exact leaf
values on Leduc, beside public-tree CFR+ with simultaneous updates on the whole
tree (= OpenSpiel's `_CFRSolver(alternating_updates=False, linear_averaging=True,
regret_matching_plus=True)`, tested to 1e-9) and OpenSpiel's alternating
`CFRPlusSolver`, all in the same run (Student of Games issue 7, benchmark
`gtcfr_exact`; paper "Search via GT-CFR", Theorem 1).

GT-CFR starts from the root public state and its children, runs one CFR
iteration per expansion (c = 1 by default) and values its leaves by
`ExactValueFunction`: the leaf's subgame solved by CFR+ for the current ranges
(`--solve` iterations per query, warm-started from the previous query of the
same public state unless `--cold`; with `--tolerance`, more until the subgame's
exploitability is at most that), each player's values those of its best
response to the other's solved policy. Its policy at a checkpoint is Theorem 1's
(`GTCFR.full_average_policy`, CFR-D's average): the tree's linearly averaged
policy plus, below the frontier, the leaf solves averaged with weight t x own
reach over the iterations that queried them. OpenSpiel's exact best response
gives the exploitability (mbb/h = 1000 x chips).

    .venv/bin/python benchmarks/gtcfr_exact.py --checkpoints 10,30,100,300,1000 --solve 100 --seed 0

Writes benchmarks/results/gtcfr_exact.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from open_spiel.python.algorithms import cfr, exploitability

from polyzero.games import load_game
from polyzero.games.public_states import PublicTree, public_observation_function
from polyzero.sog.exploitability import tabular_from
from polyzero.sog.flat_cfr import FlatCFR
from polyzero.sog.gtcfr import GTCFR, SoGSettings
from polyzero.sog.search_tree import SearchTree
from polyzero.sog.values import ExactValueFunction

RESULTS = Path(__file__).parent / "results"


def _write_json(args, checkpoints, machine, command, rows, sizes, solvers_seconds, gtcfr_seconds) -> None:
    result = {
        "game": args.game,
        "checkpoints": checkpoints,
        "c": args.c,
        "solve_iterations": args.solve,
        "warm_start": not args.cold,
        "tolerance": args.tolerance,
        "seed": args.seed,
        "machine": machine,
        "command": command,
        "mbb_per_hand": rows,
        "tree_sizes": sizes,
        "seconds": {"solvers": solvers_seconds, "gtcfr": gtcfr_seconds},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2))


def _mbb(game, policy) -> float:
    """The exploitability of an OpenSpiel policy in mbb/h (1000 x chips)."""
    return 1000.0 * exploitability.exploitability(game, policy)


def _solver_curves(game, checkpoints: list[int]) -> tuple[list, list, float]:
    """(iteration, mbb/h) at each checkpoint of CFR+ with simultaneous updates on the whole
    tree and of OpenSpiel's alternating CFRPlusSolver, and the seconds both took."""
    simultaneous_rows, alternating_rows = [], []
    start = time.time()
    simultaneous = FlatCFR(PublicTree(game))  # = PublicTreeCFR, vectorised (tests/test_sog_cfr.py)
    alternating = cfr.CFRPlusSolver(game)
    for t in range(1, checkpoints[-1] + 1):
        simultaneous.iterate()
        alternating.evaluate_and_update_policy()
        if t in checkpoints:
            simultaneous_rows.append((t, _mbb(game, tabular_from(game, simultaneous.average_policy()))))
            alternating_rows.append((t, _mbb(game, alternating.average_policy())))
            print(
                f"t={t}: simultaneous {simultaneous_rows[-1][1]:.2f}  alternating {alternating_rows[-1][1]:.2f} mbb/h",
                flush=True,
            )
    return simultaneous_rows, alternating_rows, time.time() - start


def _gtcfr_curve(args, game, checkpoints: list[int]) -> tuple[list, list, float]:
    """(iteration, mbb/h) of GT-CFR with exact leaves at each checkpoint, its tree's
    (iteration, public states, leaves) there, and the seconds it took."""
    rows, sizes = [], []
    start = time.time()
    values = ExactValueFunction(
        game, iterations=args.solve, warm_start=not args.cold, tolerance=args.tolerance, average_policies=True
    )
    root = PublicTree(game, max_depth=0).nodes[0]
    tree = SearchTree(game, root, public_observation_function(game))
    tree.expand(0)
    search = GTCFR(tree, values, SoGSettings(), np.random.default_rng(args.seed))
    done = 0
    for t in range(1, checkpoints[-1] + 1):
        if t > 1:
            target = int(np.floor((t - 1) * args.c + 1e-9))
            if target > done:
                search.expansion_phase(target - done)
                done = target
        search.iterate()
        if t in checkpoints:
            rows.append((t, _mbb(game, tabular_from(game, search.full_average_policy()))))
            sizes.append((t, len(tree.nodes), len(search.cfr.leaves)))
            print(
                f"t={t}: GT-CFR exact {rows[-1][1]:.2f} mbb/h, tree {len(tree.nodes)} "
                f"public states ({len(search.cfr.leaves)} leaves), {time.time() - start:.0f} s",
                flush=True,
            )
    return rows, sizes, time.time() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", default="leduc_poker")
    ap.add_argument("--checkpoints", default="10,30,100", help="CFR iterations at which to measure")
    ap.add_argument("--c", type=float, default=1.0, help="GT-CFR expansions per CFR iteration")
    ap.add_argument("--solve", type=int, default=100, help="CFR+ iterations per exact leaf query")
    ap.add_argument("--cold", action="store_true", help="solve every leaf query from scratch (no warm start)")
    ap.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="keep solving a leaf until its subgame's exploitability (chips) is at most this",
    )
    ap.add_argument("--seed", type=int, default=0, help="GT-CFR's expansion sampling")
    ap.add_argument("--out", default="gtcfr_exact")
    args = ap.parse_args(argv)
    checkpoints = sorted(int(x) for x in args.checkpoints.split(","))
    game = load_game(args.game)
    rows: dict[str, list] = {}
    rows["simultaneous_cfr_plus"], rows["openspiel_cfr_plus"], solvers_seconds = _solver_curves(game, checkpoints)
    rows["gtcfr_exact"], sizes, gtcfr_seconds = _gtcfr_curve(args, game, checkpoints)

    machine = f"{platform.node()} ({platform.processor() or platform.machine()}, {platform.system()})"
    command = "python benchmarks/gtcfr_exact.py " + " ".join(argv if argv is not None else sys.argv[1:])
    _write_json(args, checkpoints, machine, command, rows, sizes, solvers_seconds, gtcfr_seconds)
    lines = [
        f"# GT-CFR with exact leaf values on {args.game}",
        "",
        f"Machine: {machine}. Command: `{command}`. Seed {args.seed}; c = {args.c}; exact leaves: "
        f"{args.solve} CFR+ iterations per query ({'cold' if args.cold else 'warm'} start"
        + (
            f", then more until the subgame's exploitability is at most {args.tolerance:g} chips"
            if args.tolerance
            else ""
        )
        + "), best-response values; GT-CFR's policy: Theorem 1's average "
        "(`GTCFR.full_average_policy`).",
        "",
        "| iterations | simultaneous CFR+ (whole tree) | OpenSpiel CFRPlusSolver (alternating) | "
        "GT-CFR, exact leaves | GT-CFR tree (public states / leaves) |",
        "|---|---|---|---|---|",
    ]
    for i, t in enumerate(checkpoints):
        lines.append(
            f"| {t} | {rows['simultaneous_cfr_plus'][i][1]:.2f} | {rows['openspiel_cfr_plus'][i][1]:.2f} | "
            f"{rows['gtcfr_exact'][i][1]:.2f} | {sizes[i][1]} / {sizes[i][2]} |"
        )
    lines += [
        "",
        f"Exploitability in mbb/h (1000 x OpenSpiel's exploitability in chips). Wall time: solvers "
        f"{solvers_seconds:.0f} s, GT-CFR {gtcfr_seconds:.0f} s.",
    ]
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
