"""A learning step's query solves one after another against the same solves advanced
together (`polyzero.sog.selfplay.solve_queries`: each CFR iteration's leaf queries of
all the searches in one CVPN call), in CPU seconds, in one process.

Per round: a batch of queries (the game's decision public states with random ranges,
as `sog_solve_ab.py` draws them; with --warm-steps N, the next ones in the query
buffer of the preset's run after N learning steps, and that run's network), the SoG
preset's solver (Kuhn at `sog.max_depth=1` as the suite's Kuhn run), a CVPN at its
seed-`--net-seed` initialisation (or the run's), one torch thread. The batch is solved
both ways, which goes first alternating by round, each search with the same random
generator both ways. Reported: CPU seconds of each way,
the ratio per round (mean, 95% t-interval over rounds), the network calls and rows,
and how far the answers differ: the largest absolute difference of the counterfactual
values at the query (the solve's output, in the game's units) and of the root's
average policy, over every solve, and whether any differ at all.

  python benchmarks/sog_batched_solves.py --game leduc_poker --rounds 5 \\
      --out benchmarks/results/sog_batched_solves_leduc.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import git_commit, interval, timing_meta  # noqa: E402
from timing_page import finish_timing, machine_load_line  # noqa: E402


class Counting:
    """A value function's calls and rows, passed through."""

    def __init__(self, inner):
        self.inner, self.calls, self.rows = inner, 0, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __setattr__(self, name, value):
        if name == "listener":
            self.inner.listener = value
        else:
            object.__setattr__(self, name, value)

    def evaluate(self, queries):
        self.calls += 1
        self.rows += len(queries)
        return self.inner.evaluate(queries)


def warm_run(game_name: str, steps: int, seed: int):
    """The preset's run after `steps` learning steps (its query buffer and network)."""
    from polyzero.config import build_config
    from polyzero.sog import trainer

    sets = ["device=cpu", "threads=1", "eval.every=0", "eval.final_games=0", "train.checkpoint_every=100000"]
    sets += [f"train.steps={steps}", f"seed={seed}"] + (["sog.max_depth=1"] if game_name == "kuhn_poker" else [])
    with tempfile.TemporaryDirectory(prefix="sog_batched_") as tmp:
        run = trainer.SoGTrainer.create(build_config(game_name, "sog", None, sets), Path(tmp) / "run", progress=False)
        run.run()
    return run


def compare(results: dict, policies: dict) -> tuple[float, float, bool]:
    """The largest |difference| of the two ways' counterfactual values and root average
    policies, and whether all are equal."""
    import numpy as np

    cfv, policy, identical = 0.0, 0.0, True
    for a, b, pa, pb in zip(results["alone"], results["together"], policies["alone"], policies["together"]):
        for x, y in zip(a, b):
            identical &= bool(np.array_equal(x, y))
            cfv = max(cfv, float(np.max(np.abs(x - y), initial=0.0)))
        for info, row in pa.items():
            for action, p in row.items():
                policy = max(policy, abs(p - pb[info][action]))
                identical &= p == pb[info][action]
    return cfv, policy, identical


def run(game_name: str, batch: int, rounds: int, net_seed: int, warm_steps: int = 0) -> dict:
    import numpy as np
    import torch

    from polyzero.config import build_config
    from polyzero.games import load_game
    from polyzero.games.public_states import DECISION, PublicTree
    from polyzero.sog import cvpn, trainer
    from polyzero.sog.lockstep import answer_together
    from polyzero.sog.selfplay import _solved_values, _solver
    from polyzero.sog.values import Query, answer_all

    torch.set_num_threads(1)
    cfg = build_config(game_name, "sog", overrides=["sog.max_depth=1"] if game_name == "kuhn_poker" else [])
    game = load_game(cfg.game)
    model = trainer.CVPNModel(cvpn.BeliefEncoding(game), cfg)
    torch.manual_seed(net_seed)
    value_fn = Counting(cvpn.NetworkValueFunction(model.encoding, model.build_network()))
    buffer = None
    if warm_steps:
        warm = warm_run(game_name, warm_steps, net_seed)
        value_fn, buffer = Counting(warm.data.solver_values), warm.queries
    settings = cfg.sog.search_settings(solver=True)
    nodes = [n for n in PublicTree(game).nodes if n.kind == DECISION]
    source = np.random.default_rng(0)
    out_rounds, diff_cfv, diff_policy, identical = [], 0.0, 0.0, True
    for r in range(rounds):
        if buffer is not None:
            queries = [q for q in (buffer.pop() for _ in range(batch)) if q is not None]
            if len(queries) < batch:
                break
        else:
            picks = [nodes[int(i)] for i in source.integers(0, len(nodes), batch)]
            queries = [Query(n, [source.random(len(s)) + 0.05 for s in n.info_states]) for n in picks]
        results, cpu, calls, policies = {}, {}, {}, {}
        for way in ("alone", "together") if r % 2 == 0 else ("together", "alone"):
            rngs = [np.random.default_rng([r, k]) for k in range(batch)]
            value_fn.calls = value_fn.rows = 0
            t = time.process_time()
            searches = [_solver(game, q, value_fn, settings, g, None) for q, g in zip(queries, rngs)]
            if way == "alone":  # solve_query's steps, one search after another
                for s in searches:
                    answer_all(s.run_steps(), value_fn)
            else:
                answer_together([s.run_steps() for s in searches], value_fn)
            results[way] = [_solved_values(s) for s in searches]
            cpu[way] = time.process_time() - t
            calls[way] = (value_fn.calls, value_fn.rows)
            policies[way] = [s.average_policy() for s in searches]
        c, p, same = compare(results, policies)
        diff_cfv, diff_policy, identical = max(diff_cfv, c), max(diff_policy, p), identical and same
        out_rounds.append(
            {
                "alone_cpu_s": round(cpu["alone"], 3),
                "together_cpu_s": round(cpu["together"], 3),
                "alone_calls_rows": calls["alone"],
                "together_calls_rows": calls["together"],
            }
        )
        print(out_rounds[-1], flush=True)
    ratios = [x["alone_cpu_s"] / x["together_cpu_s"] for x in out_rounds]
    _, low, high = interval(ratios)
    return {
        "game": game_name,
        "solver": f"GT-CFR({settings.simulations}, {settings.expansions_per_update})"
        + (f" depth {settings.max_depth}" if settings.max_depth else ""),
        "public_states": len(nodes),
        "solves_per_round": batch,
        "net_seed": net_seed,
        "warm_steps": warm_steps,
        "rounds": out_rounds,
        "alone_over_together_mean": round(statistics.mean(ratios), 3),
        "alone_over_together_95": [round(low, 3), round(high, 3)],
        "max_abs_diff_cfv": diff_cfv,
        "max_abs_diff_root_policy": diff_policy,
        "identical": bool(identical),
    }


def render(result: dict) -> str:
    lines = [
        "# A step's query solves one after another against together (one CVPN call per round), one process",
        "",
        f"- command: `{result['command']}`",
        f"- commit: {result['commit']}",
        machine_load_line(result),
        f"- {result['game']}, solver {result['solver']}: {result['solves_per_round']} queries a round "
        + (
            f"(the query buffer of the preset's run after {result['warm_steps']} learning steps, seed "
            f"{result['net_seed']}, and its network)"
            if result.get("warm_steps")
            else f"(decision public states of {result['public_states']}, random ranges), CVPN at its "
            f"seed-{result['net_seed']} initialisation"
        )
        + "; each round solved both ways, alternating which goes first",
        f"- largest |difference| over all solves: counterfactual values {result['max_abs_diff_cfv']:.3g}, "
        f"root average policy {result['max_abs_diff_root_policy']:.3g}; bit for bit the same: {result['identical']}",
        "",
        "| round | alone CPU s | together CPU s | alone / together | network calls (rows) alone | together |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(result["rounds"]):
        a, t = r["alone_calls_rows"], r["together_calls_rows"]
        lines.append(
            f"| {i} | {r['alone_cpu_s']:.3f} | {r['together_cpu_s']:.3f} | "
            f"{r['alone_cpu_s'] / r['together_cpu_s']:.3f} | {a[0]} ({a[1]}) | {t[0]} ({t[1]}) |"
        )
    lo, hi = result["alone_over_together_95"]
    lines += [
        "",
        f"Alone / together, mean of the rounds: **{result['alone_over_together_mean']:.3f}x** "
        f"(95% interval {lo}-{hi}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", default="leduc_poker")
    ap.add_argument("--batch", type=int, default=None, help="queries a round (default: the preset's solves_per_step)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--net-seed", type=int, default=0)
    ap.add_argument(
        "--warm-steps",
        type=int,
        default=0,
        help="train the preset this many steps first (seed --net-seed); its buffer's queries and its network",
    )
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    from polyzero.config import build_config

    batch = args.batch or build_config(args.game, "sog").sog.solves_per_step
    result = timing_meta(argv, batch=batch)
    result["commit"] = git_commit()
    result.update(run(args.game, batch, args.rounds, args.net_seed, args.warm_steps))
    finish_timing(args.out, result, render)


if __name__ == "__main__":
    main()
