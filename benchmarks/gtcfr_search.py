"""Benchmark `gtcfr_search` (Student of Games part 1): the exploitability of the
continual re-solving search player SoG(s, c) with exact leaf values, against s
and c, on Kuhn, Leduc and the glasses map, beside IS-MCTS tabulated over all
information states with the same seeds; and a Leduc head-to-head of SoG against
IS-MCTS, seats swapped, with its 95% interval.

    python benchmarks/gtcfr_search.py all --game kuhn_poker --sims 10 30 100 --c 1 0.5 --seeds 10
    python benchmarks/gtcfr_search.py all --game leduc_poker --sims 10 30 100 --c 1 0.5 --seeds 3
    python benchmarks/gtcfr_search.py eval \\
        --game "scotland_yard(rounds=5,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)" --sims 10 --c 1 --ismcts --seeds 1
    python benchmarks/gtcfr_search.py eval \\
        --game "scotland_yard(rounds=5,reveal_rounds=none,mrx_taxi=5,detective_taxi=5)" \\
        --sims 10 30 --c 1 0.5 --ismcts --seeds 3
    python benchmarks/gtcfr_search.py eval \\
        --game "scotland_yard(rounds=5,reveal_rounds=none,mrx_taxi=5,detective_taxi=5)" --sims --ismcts 100 --seeds 2

The spec's glasses game (5 rounds, reveal after round 3) is a forced win for the
detectives (docs/scotland_yard.md): a detective search that finds the capture is
unexploitable there. These runs used the 5-round game without Mr X's reveal, where
his value is -0.78; the default glasses game is now the solved 4-round variant
(Mr X's value -0.601).

Phases (each resumable; `all` runs them in order):
  eval    for every (player, seed) the player's whole policy, built the paper's
          way (`polyzero.sog.exploitability.search_policy_table`: searches
          breadth-first over the public states, each conditioned on the ones at
          its predecessors; IS-MCTS asked once per information state), cached as
          WORK/GAME/PLAYER/seedK.json with its exploitability and cost.
  h2h     Leduc only: SoG(--h2h-sog) against IS-MCTS(--h2h-ismcts), each seed's
          policy against the same seed's, --hands hands sampled with seats swapped
          (the mean and a normal 95% interval, in mbb/h), beside the exact
          expected value of the same pairs of policies.
  report  benchmarks/results/gtcfr_search.{json,md} from everything cached.

Playing the tabulated policies makes the head-to-head measure exactly the
policies whose exploitability is reported; a live SoG player re-solves only
along the hand's path, with its own random stream, and plays the same
distribution of policies. The paper's IS-MCTS reference is 465 mbb/h at best on
Leduc.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, git_commit, write_json_atomic  # noqa: E402


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def table_path(work: Path, game: str, spec: str, seed: int) -> Path:
    return work / _safe(game) / _safe(spec) / f"seed{seed}.json"


def load_table(path: Path) -> dict[str, dict[int, float]]:
    rec = json.loads(path.read_text())
    return {info: {int(a): p for a, p in probs.items()} for info, probs in rec["policy"].items()}


def phase_eval(args, work: Path) -> None:
    from open_spiel.python.algorithms import exploitability

    from polyzero.games import load_game
    from polyzero.sog.exploitability import search_policy_table, tabular_from, unit_scale
    from polyzero.sog.players import sog_reference_player

    game = load_game(args.game)
    scale, unit = unit_scale(game)
    specs = [f"ismcts:{n}" for n in args.ismcts] + [f"sog:{s},{c:g}" for c in args.c for s in args.sims]
    for spec in specs:
        for seed in range(args.from_seed, args.seeds):
            path = table_path(work, args.game, spec, seed)
            if path.exists():
                continue
            start = time.time()
            table = search_policy_table(game, sog_reference_player(spec, game, seed=seed))
            value = scale * exploitability.exploitability(game, tabular_from(game, table))
            rec = {
                "game": args.game,
                "spec": spec,
                "seed": seed,
                "exploitability": value,
                "unit": unit,
                "seconds": time.time() - start,
                "policy": table,
            }
            write_json_atomic(path, rec)  # a cell is either whole or absent
            print(f"[eval] {args.game} {spec} seed {seed}: {value:.2f} {unit} ({rec['seconds']:.0f} s)", flush=True)


def play_hand(game, tables, rng) -> list[float]:
    from polyzero.games import sample_chance
    from polyzero.sog.players import sample_action

    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            sample_chance(state, rng)
        else:
            player = state.current_player()
            state.apply_action(sample_action(rng, tables[player][state.information_state_string(player)]))
    return state.returns()


def phase_h2h(args, work: Path) -> None:
    if not args.game.startswith("leduc_poker"):
        return
    from open_spiel.python.algorithms.expected_game_score import policy_value

    from polyzero.games import load_game
    from polyzero.sog.exploitability import tabular_from

    game = load_game(args.game)
    out = work / _safe(args.game) / f"h2h_{_safe(args.h2h_sog)}_vs_{_safe(args.h2h_ismcts)}_{args.hands}.json"
    if out.exists():
        return
    seeds = [
        s
        for s in range(args.seeds)
        if table_path(work, args.game, args.h2h_sog, s).exists()
        and table_path(work, args.game, args.h2h_ismcts, s).exists()
    ]
    if not seeds:
        print(f"[h2h] no seed has both {args.h2h_sog} and {args.h2h_ismcts}: run eval first", flush=True)
        return
    start = time.time()
    rng = np.random.default_rng(args.seed)
    payoffs, exact = [], []
    for seed in seeds:
        sog = load_table(table_path(work, args.game, args.h2h_sog, seed))
        ismcts = load_table(table_path(work, args.game, args.h2h_ismcts, seed))
        pair = [tabular_from(game, sog), tabular_from(game, ismcts)]
        exact.append(
            0.5
            * (policy_value(game.new_initial_state(), pair)[0] + policy_value(game.new_initial_state(), pair[::-1])[1])
        )
        hands = -(-args.hands // len(seeds))  # at least --hands in all
        for i in range(hands):
            seat = i % 2  # seats swapped every hand
            tables = [sog, ismcts] if seat == 0 else [ismcts, sog]
            payoffs.append(play_hand(game, tables, rng)[seat])
    payoffs = 1000.0 * np.array(payoffs)
    half = 1.96 * payoffs.std(ddof=1) / math.sqrt(len(payoffs))
    rec = {
        "sog": args.h2h_sog,
        "ismcts": args.h2h_ismcts,
        "seeds": seeds,
        "hands": len(payoffs),
        "mean_mbb": float(payoffs.mean()),
        "ci95_mbb": [float(payoffs.mean() - half), float(payoffs.mean() + half)],
        "exact_mbb": float(1000.0 * np.mean(exact)),
        "seconds": time.time() - start,
    }
    out.write_text(json.dumps(rec))
    print(
        f"[h2h] {rec['sog']} vs {rec['ismcts']}: {rec['mean_mbb']:.0f} mbb/h "
        f"[{rec['ci95_mbb'][0]:.0f}, {rec['ci95_mbb'][1]:.0f}] over {rec['hands']} hands "
        f"(exact {rec['exact_mbb']:.0f})",
        flush=True,
    )


def phase_report(args, work: Path) -> dict:
    cells: dict[tuple, list] = {}
    for path in sorted(work.glob("*/*/seed*.json")):
        rec = json.loads(path.read_text())
        cells.setdefault((rec["game"], rec["spec"]), []).append(rec)
    rows = []
    for (game, spec), recs in cells.items():
        values = [r["exploitability"] for r in recs]
        rows.append(
            {
                "game": game,
                "spec": spec,
                "seeds": [r["seed"] for r in recs],
                "values": values,
                "min": min(values),
                "mean": float(np.mean(values)),
                "max": max(values),
                "unit": recs[0]["unit"],
                "seconds_per_seed": float(np.mean([r["seconds"] for r in recs])),
            }
        )
    git = git_commit()
    for r in rows:
        r["commit"] = git[:10]
    h2h = [json.loads(p.read_text()) for p in sorted(work.glob("*/h2h_*.json"))]
    rows, h2h = _carry_previous(rows, h2h)
    order = ["kuhn_poker", "leduc_poker"]
    rows.sort(
        key=lambda r: (
            order.index(r["game"]) if r["game"] in order else 9,
            r["game"],
            not r["spec"].startswith("ismcts"),
            _spec_key(r["spec"]),
        )
    )
    machine = f"{platform.node()} ({platform.processor() or platform.machine()}), {__import__('os').cpu_count()} CPUs"
    result = {"machine": machine, "git": git, "rows": rows, "head_to_head": h2h}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "gtcfr_search.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Benchmark `gtcfr_search`: the re-solving search player with exact leaf values",
        "",
        f"Machine: {machine}; commit {git[:10]}. Commands: the module docstring of "
        "`benchmarks/gtcfr_search.py`. Exploitability min / mean / max over seeds (poker in mbb/h, "
        "Scotland Yard in reward units); seconds per seed = building one seed's whole policy; commit = the "
        "run that measured the row (rows of earlier runs are carried over from the previous report "
        "when WORK no longer holds their cells).",
        "",
        "| game | player | seeds | min | mean | max | seconds per seed | commit |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        digits = 1 if r["unit"] == "mbb/h" else 3  # reward units lie in [0, 2]
        low, mean, high = (f"{max(r[k], 0.0):.{digits}f}" for k in ("min", "mean", "max"))  # -1e-12 is 0
        lines.append(
            f"| {r['game']} | `{r['spec']}` | {len(r['values'])} | {low} | {mean} | {high} | "
            f"{r['seconds_per_seed']:.0f} | {r['commit']} |"
        )
    if h2h:
        lines += [
            "",
            "Leduc head-to-head (each seed's tabulated policies; seats swapped every hand; "
            "SoG's winnings in mbb/h, normal 95% interval; exact = expected value of the same pairs):",
            "",
            "| SoG | IS-MCTS | hands | mean | 95% interval | exact |",
            "|---|---|---:|---:|---|---:|",
        ]
        for h in h2h:
            lines.append(
                f"| `{h['sog']}` | `{h['ismcts']}` | {h['hands']} | {h['mean_mbb']:.0f} | "
                f"[{h['ci95_mbb'][0]:.0f}, {h['ci95_mbb'][1]:.0f}] | {h['exact_mbb']:.0f} |"
            )
    (RESULTS / "gtcfr_search.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


def _carry_previous(rows: list[dict], h2h: list[dict]) -> tuple[list[dict], list[dict]]:
    """Keep the previous report's rows (and head-to-heads) that WORK no longer
    holds, each with the commit that measured it: WORK lives under runs/, which
    does not survive between sessions, while the report is committed."""
    path = RESULTS / "gtcfr_search.json"
    if not path.exists():
        return rows, h2h
    previous = json.loads(path.read_text())
    have = {(r["game"], r["spec"]) for r in rows}
    for r in previous["rows"]:
        if (r["game"], r["spec"]) not in have:
            rows.append({**r, "commit": r.get("commit", previous["git"][:10])})
    if not h2h:
        h2h = previous.get("head_to_head", [])
    return rows, h2h


def _spec_key(spec: str) -> tuple:
    numbers = [float(x) for x in spec.split(":")[1].split(",")]
    return (-numbers[1] if len(numbers) > 1 else 0, numbers[0])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["eval", "h2h", "report", "all"])
    p.add_argument("--game", default="leduc_poker")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "gtcfr_search")
    p.add_argument("--sims", type=int, nargs="*", default=[10, 30, 100], help="SoG's s")
    p.add_argument("--c", type=float, nargs="+", default=[1.0], help="SoG's c (expansions per regret phase)")
    p.add_argument("--ismcts", type=int, nargs="*", default=[100, 1000, 10000], help="IS-MCTS simulations")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--from-seed", type=int, default=0, help="eval: start at this seed (to split seeds over cores)")
    p.add_argument("--h2h-sog", default="sog:100,1")
    p.add_argument("--h2h-ismcts", default="ismcts:10000")
    p.add_argument("--hands", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0, help="the head-to-head's deals")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    for name, phase in (("eval", phase_eval), ("h2h", phase_h2h), ("report", phase_report)):
        if args.phase in (name, "all"):
            phase(args, args.work)


if __name__ == "__main__":
    main()
