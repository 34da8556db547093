"""How fast is SoG's search on Connect Four? `PerfectInfoCFR` beside the anchor
`PublicTreeCFR` in the same run.

GT-CFR's regret updates in a perfect-information game run on a tree whose public
states hold one world each. `PublicTreeCFR` spends several numpy calls on every
public state per iteration; `PerfectInfoCFR` (what GT-CFR uses in such games)
does the same iterations with a few calls per tree level. Both re-solve the same
positions here with the same network and seeds, alternating position by
position, so that both see the same machine load; the policies they return are
compared too (they must agree to rounding).

    python benchmarks/sog_search_speed.py --sims 20 100 --positions 24

The positions: the first --positions states after 0, 2, ..., plies of random
play (seeded), the player re-solving from the game's root along each (its
searches at its earlier decisions included, as in a game). Leaves: a SoG run's
CVPN (--net RUN) or, by default, the AlphaZero network of the
`connect_four_alphazero_3h` benchmark's 40-minute mark (in the repository; its
value for both players, its policy as the prior). Results:
benchmarks/results/sog_search_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, git_commit, machine_line, results_name, write_json_atomic  # noqa: E402
from sog_search_quality import MARK, AlphaZeroLeaves  # noqa: E402


def positions(game, count: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        state = game.new_initial_state()
        for _ in range(2 * (k % 12)):
            if state.is_terminal():
                break
            state.apply_action(int(rng.choice(state.legal_actions())))
        if not state.is_terminal():
            out.append(state)
    return out


def compare(game, states: list, leaves, sims: int, seed: int) -> dict:
    """SoG(sims, 1) on every state with each CFR class under GT-CFR: the time per search
    of each, and the largest difference between their policies."""
    import polyzero.sog.gtcfr as gtcfr
    from polyzero.sog.cfr import PublicTreeCFR
    from polyzero.sog.gtcfr import SoGSettings
    from polyzero.sog.perfect_cfr import PerfectInfoCFR
    from polyzero.sog.resolve import SoGPlayer

    classes = {"PublicTreeCFR (anchor)": PublicTreeCFR, "PerfectInfoCFR": PerfectInfoCFR}
    seconds = dict.fromkeys(classes, 0.0)
    searches = dict.fromkeys(classes, 0)
    diff = 0.0
    try:
        for k, state in enumerate(states):
            policies = {}
            for name, cls in classes.items():
                gtcfr.PerfectInfoCFR = cls  # what GTCFR builds for a perfect-information game
                player = SoGPlayer(game, SoGSettings(simulations=sims), leaves, seed=seed + k)
                t0 = time.perf_counter()
                policies[name] = player.policy(state)
                seconds[name] += time.perf_counter() - t0
                searches[name] += player.searcher.searches
            a, b = policies.values()
            diff = max(diff, max(abs(a[m] - b.get(m, np.inf)) for m in a))
    finally:
        gtcfr.PerfectInfoCFR = PerfectInfoCFR
    anchor, fast = (seconds[n] / searches[n] for n in classes)
    print(
        f"SoG({sims}, 1): {searches['PerfectInfoCFR']} searches, PublicTreeCFR {1000 * anchor:.1f} ms, "
        f"PerfectInfoCFR {1000 * fast:.1f} ms per search: {anchor / fast:.2f}x; policies differ by "
        f"at most {diff:.1e}",
        flush=True,
    )
    return {
        "sims": sims,
        "searches": searches["PerfectInfoCFR"],
        "anchor_ms_per_search": 1000 * anchor,
        "ms_per_search": 1000 * fast,
        "speedup": anchor / fast,
        "max_policy_difference": diff,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sims", type=int, nargs="+", default=[20, 100], help="SoG(S, 1) simulations")
    p.add_argument("--positions", type=int, default=24)
    p.add_argument("--net", help="a SoG run or checkpoint (default: the AlphaZero mark's network)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=results_name, default="sog_search_speed")
    args = p.parse_args()

    import torch

    from polyzero.games import load_game

    torch.set_num_threads(1)
    game = load_game("connect_four")
    if args.net:
        from polyzero.sog.trainer import load_cvpn

        leaves, leaves_name = load_cvpn(args.net)[0], f"CVPN {args.net}"
    else:
        leaves, leaves_name = AlphaZeroLeaves(MARK), f"AlphaZero network {MARK.relative_to(ROOT)}"
    states = positions(game, args.positions, args.seed)
    rows = [compare(game, states, leaves, sims, args.seed) for sims in args.sims]
    command = "python benchmarks/sog_search_speed.py " + " ".join(sys.argv[1:])
    git = git_commit()
    result = {
        "command": command,
        "git": git,
        "machine": machine_line(),
        "leaves": leaves_name,
        "positions": len(states),
        "seed": args.seed,
        "rows": rows,
    }
    write_json_atomic(RESULTS / f"{args.out}.json", result)
    lines = [
        "# Benchmark `sog_search_speed`: GT-CFR's regret updates on Connect Four",
        "",
        f"Machine: {result['machine']}. Command: `{command}` (commit {git[:10]}). "
        f"Leaves: {leaves_name}. {len(states)} positions, seed {args.seed}; one thread.",
        "",
        "| search | searches | PublicTreeCFR (anchor), ms per search | PerfectInfoCFR, ms per search | speedup "
        "| largest policy difference |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| SoG({r['sims']}, 1) | {r['searches']} | {r['anchor_ms_per_search']:.1f} | {r['ms_per_search']:.1f} "
        f"| {r['speedup']:.2f}x | {r['max_policy_difference']:.1e} |"
        for r in rows
    ]
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
