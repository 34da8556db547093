"""Benchmark `sog_london_beliefs`: what public states and beliefs cost on Scotland Yard's
London board (199 stations, `scotland_yard(map=london)`).

Plays --games uniformly random games (seeded; starts dealt by chance) and, at every
detectives' decision of every --every-th round, builds the public state
(`public_state_at`: the worlds consistent with the public history, one per station
of Mr X with `mrx_recall=station`) and the CVPN's input for it (public observation
and both ranges over the slots: 199 stations for Mr X, one for the detectives).
Records the worlds, the time and (in a second, traced call) the Python memory
(tracemalloc peak) of each,
and the input's size, beside the same input with the full public history
(`mrx_recall=path`) for scale.

    python benchmarks/sog_london_beliefs.py --games 10

Writes benchmarks/results/sog_london_beliefs.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, git_commit, machine_line  # noqa: E402


def measure(games: int, every: int) -> list[dict]:
    from polyzero.games import load_game, sample_chance
    from polyzero.games.public_states import public_state_at
    from polyzero.sog.cvpn import BeliefEncoding

    game = load_game("scotland_yard(map=london)")
    encoding = BeliefEncoding(game)
    rows = []
    for seed in range(games):
        rng = np.random.default_rng(seed)
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                sample_chance(state, rng)
                continue
            if state.current_player() == 1 and state.turn == 1 and state.round() % every == 0:
                t0 = time.perf_counter()
                node = public_state_at(game, state)
                t1 = time.perf_counter()
                ranges = [np.ones(len(node.info_states[p])) for p in range(2)]
                x = encoding.input(node, ranges)
                t2 = time.perf_counter()
                tracemalloc.start()  # memory in a second call: tracing slows Python down
                encoding.input(public_state_at(game, state), ranges)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                rows.append(
                    {
                        "seed": seed,
                        "round": state.round(),
                        "history": len(state.history()),
                        "worlds": len(node.worlds),
                        "public_state_s": t1 - t0,
                        "input_s": t2 - t1,
                        "peak_mb": peak / 1e6,
                        "input_size": int(x.size),
                    }
                )
            state.apply_action(int(rng.choice(state.legal_actions())))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=10)
    p.add_argument("--every", type=int, default=2, help="measure at every n-th round")
    args = p.parse_args(argv)
    from polyzero.games import load_game
    from polyzero.sog.cvpn import BeliefEncoding

    rows = measure(args.games, args.every)
    path_input = BeliefEncoding(load_game("scotland_yard(map=london,mrx_recall=path)")).input_size
    git = git_commit()
    command = "python benchmarks/sog_london_beliefs.py " + " ".join(sys.argv[1:])
    worlds = [r["worlds"] for r in rows]
    summary = {
        "measurements": len(rows),
        "worlds_max": max(worlds),
        "worlds_mean": float(np.mean(worlds)),
        "public_state_s_mean": float(np.mean([r["public_state_s"] for r in rows])),
        "public_state_s_max": max(r["public_state_s"] for r in rows),
        "input_s_mean": float(np.mean([r["input_s"] for r in rows])),
        "peak_mb_max": max(r["peak_mb"] for r in rows),
        "input_size": rows[0]["input_size"],
        "input_size_with_public_history": path_input,
    }
    result = {"command": command, "git": git, "machine": machine_line(), "summary": summary, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sog_london_beliefs.json").write_text(json.dumps(result, indent=2))
    by_round = {}
    for r in rows:
        by_round.setdefault(r["round"], []).append(r)
    lines = [
        "# Benchmark `sog_london_beliefs`: public states and beliefs on the London board",
        "",
        f"Machine: {result['machine']} (shared, times indicative). Command: `{command}` (commit {git[:10]}).",
        "",
        f"{args.games} uniformly random games; at the detectives' first move of every {args.every}nd "
        "round: the public state (`public_state_at`) and the CVPN's input for it.",
        "",
        "| round | public states | worlds (mean / max) | public state s (mean / max) | CVPN input s (mean) "
        "| peak Python memory MB (max) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for rnd, rs in sorted(by_round.items()):
        w = [r["worlds"] for r in rs]
        t = [r["public_state_s"] for r in rs]
        lines.append(
            f"| {rnd} | {len(rs)} | {np.mean(w):.1f} / {max(w)} | {np.mean(t):.3f} / {max(t):.3f} | "
            f"{np.mean([r['input_s'] for r in rs]):.4f} | {max(r['peak_mb'] for r in rs):.2f} |"
        )
    lines += [
        "",
        f"CVPN input: {summary['input_size']:,} numbers (public observation + 199 + 1 range slots); "
        f"with the public history instead (`mrx_recall=path`): {path_input:,}.",
    ]
    (RESULTS / "sog_london_beliefs.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
