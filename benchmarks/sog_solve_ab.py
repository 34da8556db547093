"""GT-CFR solves' CPU time, this tree's `polyzero.sog` against an earlier revision's, in
one process: both trees' `polyzero.sog` are imported side by side (polyzero's other
packages from the earlier tree, which must not differ between the two: the script
refuses otherwise), and each query is solved by both, alternating which goes first, so
a shared machine's load weighs on both alike. It also checks that both return the same
counterfactual values bit for bit (what a speed change must keep).

The queries are the game's decision public states (its public tree to --depth) with
random ranges; the solver is the SoG preset's (`search_settings(solver=True)`, Kuhn at
`sog.max_depth=1` as the suite's Kuhn run); the value function a CVPN at its seed-0
initialisation, one torch thread. Per round, base CPU / this tree's CPU over its solves;
the mean of the rounds' ratios with a 95% t-interval.

  python benchmarks/sog_solve_ab.py --baseline d48b9c3 --game kuhn_poker \
      --out benchmarks/results/sog_solve_ab_kuhn.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, interval, timing_meta  # noqa: E402
from selfplay_ab import unpack  # noqa: E402
from timing_page import finish_timing, machine_load_line  # noqa: E402


def _sog_modules():
    import polyzero.sog.cvpn as cvpn
    import polyzero.sog.selfplay as selfplay
    import polyzero.sog.trainer as trainer
    import polyzero.sog.values as values

    return selfplay, cvpn, trainer, values


def load_both(base: str, now: str) -> tuple:
    """(base's, now's) polyzero.sog modules; polyzero's other packages are base's."""
    sys.path.insert(0, base)
    import polyzero

    old = _sog_modules()
    for name in [n for n in sys.modules if n.startswith("polyzero.sog")]:
        del sys.modules[name]
    polyzero.__path__[:] = [os.path.join(now, "polyzero")]
    new = _sog_modules()
    assert old[0].__file__.startswith(base) and new[0].__file__.startswith(now)
    return old, new


def run(base: str, now: str, game_name: str, queries: int, rounds: int, depth: int | None) -> dict:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    trees = load_both(base, now)
    from polyzero.config import build_config
    from polyzero.games import load_game
    from polyzero.games.public_states import DECISION, PublicTree

    cfg = build_config(game_name, "sog", overrides=["sog.max_depth=1"] if game_name == "kuhn_poker" else [])
    game = load_game(cfg.game)
    value_fns = []
    for _, cvpn, trainer, _ in trees:
        model = trainer.CVPNModel(cvpn.BeliefEncoding(game), cfg)
        torch.manual_seed(0)
        value_fns.append(cvpn.NetworkValueFunction(model.encoding, model.build_network()))
    nodes = [n for n in PublicTree(game, max_depth=depth).nodes if n.kind == DECISION]
    source = np.random.default_rng(0)
    picks = [nodes[int(i)] for i in source.integers(0, len(nodes), queries)]
    ranges = [[source.random(len(s)) + 0.05 for s in n.info_states] for n in picks]
    per_round, identical = [], True
    for r in range(rounds):
        cpu = [0.0, 0.0]
        for k, (node, rg) in enumerate(zip(picks, ranges)):
            out = {}
            for side in (0, 1) if (k + r) % 2 == 0 else (1, 0):
                selfplay, _, _, values = trees[side]
                query = values.Query(node, [x.copy() for x in rg])
                settings = cfg.sog.search_settings(solver=True)
                t = time.process_time()
                out[side] = selfplay.solve_query(game, query, value_fns[side], settings, np.random.default_rng([r, k]))
                cpu[side] += time.process_time() - t
            identical &= all(np.array_equal(a, b) for a, b in zip(out[0], out[1]))
        per_round.append({"base_cpu_s": round(cpu[0], 3), "now_cpu_s": round(cpu[1], 3)})
    ratios = [x["base_cpu_s"] / x["now_cpu_s"] for x in per_round]
    _, low, high = interval(ratios)  # nan with one round
    return {
        "game": game_name,
        "public_states": len(nodes),
        "solves_per_round": queries,
        "rounds": per_round,
        "base_over_now_mean": round(statistics.mean(ratios), 3),
        "base_over_now_95": [round(low, 3), round(high, 3)],
        "identical_values": bool(identical),
    }


def render(result: dict) -> str:
    lines = [
        "# GT-CFR solves' CPU time: this tree's polyzero.sog against an earlier revision's, in one process",
        "",
        f"- command: `{result['command']}`",
        f"- baseline: {result['baseline']}; now: this tree",
        machine_load_line(result),
        f"- {result['game']}: {result['solves_per_round']} queries a round (decision public states of "
        f"{result['public_states']}, random ranges), each solved by both trees, alternating which goes first",
        f"- the same counterfactual values bit for bit: **{result['identical_values']}**",
        "",
        "| round | baseline CPU s | now CPU s | baseline / now |",
        "|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(result["rounds"]):
        lines.append(f"| {i} | {r['base_cpu_s']:.3f} | {r['now_cpu_s']:.3f} | {r['base_cpu_s'] / r['now_cpu_s']:.3f} |")
    lo, hi = result["base_over_now_95"]
    lines += [
        "",
        f"Baseline / now, mean of the rounds: **{result['base_over_now_mean']:.3f}x** (95% interval {lo}-{hi}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git revision of the earlier tree")
    ap.add_argument("--game", default="kuhn_poker")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--depth", type=int, default=None, help="the public tree's depth the queries come from")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    result = timing_meta(argv, baseline=args.baseline)
    with tempfile.TemporaryDirectory(prefix="sog_solve_ab_") as tmp:
        result["baseline"] = unpack(args.baseline, Path(tmp))
        changed = subprocess.run(
            ["git", "diff", "--name-only", result["baseline"], "--", "polyzero"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.split()
        outside = [p for p in changed if not p.startswith("polyzero/sog/")]
        if outside:
            sys.exit(f"the trees differ outside polyzero/sog ({', '.join(outside[:3])}): use step_split_ab.py")
        result.update(run(tmp, str(ROOT), args.game, args.queries, args.rounds, args.depth))
    finish_timing(args.out, result, render)


if __name__ == "__main__":
    main()
