"""NDMZ's search on the shared compiled core against the NumPy engine it replaced.

Nondeterministic MuZero's search (NDMZ paper, Appendix A) had its own NumPy
implementation (``polyzero/search/ndmz.py``'s ``NDMZTrees``, one NumPy pass per tree
level) until its node kinds joined the compiled core. This script loads that engine
from git history (the parent of the commit that replaced it) and times both on the
same roots, interleaved in one process: the Nannon preset's untrained network
(torch seed 0), 100 simulations, B roots from random Nannon games, one thread, no
noise. It also reports each engine's mean root value and visit share of the most
visited move (equal up to roulette draws).

  python benchmarks/ndmz_search_speed.py        # results into benchmarks/results/ndmz_search_speed.{json,md}
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import write_results  # noqa: E402

OLD_PATH = "polyzero/search/ndmz.py"
NUMPY_ENGINE_COMMIT = "fd464a8"  # "search: one tree engine ...": its parent holds the NumPy engine


def numpy_engine():
    """The NumPy NDMZ engine, loaded from git as a module of polyzero.search."""
    commit = subprocess.run(
        ["git", "rev-parse", NUMPY_ENGINE_COMMIT + "^"], capture_output=True, text=True, cwd=HERE.parent, check=True
    ).stdout.strip()
    source = subprocess.run(
        ["git", "show", f"{commit}:{OLD_PATH}"], capture_output=True, text=True, cwd=HERE.parent, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "ndmz_numpy.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("polyzero.search.ndmz_numpy", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module, commit


def roots(game, count: int, seed: int):
    from polyzero.games import sample_chance

    rng, states = np.random.default_rng(seed), []
    while len(states) < count:
        s = game.new_initial_state()
        while not s.is_terminal():
            if s.is_chance_node():
                sample_chance(s, rng)
            elif rng.random() < 0.2:
                states.append(s.clone())
                break
            else:
                s.apply_action(int(rng.choice(s.legal_actions())))
    return states


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-sizes", default="64,256")
    ap.add_argument("--sims", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/ndmz_search_speed.json")
    args = ap.parse_args(argv)
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config
    from polyzero.games import legal_action_mask, load_game
    from polyzero.nets.inference import set_threads
    from polyzero.search.ndmz import ndmz_search

    set_threads(1)
    old, commit = numpy_engine()
    game = load_game("nannon")
    algo = make_algorithm(build_config("nannon", "ndmz"), game)
    torch.manual_seed(0)
    ev = algo.make_evaluator(algo.build_network(), "cpu")
    results = {
        "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
        "numpy_commit": commit,
        "loadavg": os.getloadavg(),
        "simulations": args.sims,
        "rows": [],
    }
    for batch in (int(x) for x in args.batch_sizes.split(",")):
        states = roots(game, batch, seed=batch)
        obs, legal = algo.encode(states), legal_action_mask(states, algo.num_actions)
        players = np.zeros(batch, np.int32)
        engines = {"numpy": old.ndmz_search, "compiled": ndmz_search}
        times = {name: [] for name in engines}
        stats = {name: [] for name in engines}
        for r in range(args.rounds + 1):
            for name, search in engines.items():
                t0 = time.perf_counter()
                res = search(ev, obs, legal, players, algo.layout, args.sims, algo.nd.c_puct, np.random.default_rng(r))
                if r:  # the first round compiles
                    times[name].append(time.perf_counter() - t0)
                    top = res.root_visits.max(1) / np.maximum(res.root_visits.sum(1), 1)
                    stats[name].append((float(res.root_value.mean()), float(top.mean()), int(res.model_calls)))
        row = {"batch": batch}
        for name in engines:
            value, top, calls = (float(np.mean(x)) for x in zip(*stats[name]))
            row[name] = {
                "median_s": statistics.median(times[name]),
                "min_s": min(times[name]),
                "us_per_tree_and_simulation": statistics.median(times[name]) / batch / args.sims * 1e6,
                "mean_root_value": value,
                "top_move_share": top,
                "model_calls": calls,
            }
        row["speedup"] = row["numpy"]["median_s"] / row["compiled"]["median_s"]
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
    lines = [
        "# NDMZ search: the compiled core vs the NumPy engine it replaced",
        "",
        f"Command: `{results['command']}`; NumPy engine from git `{commit[:10]}`; load {results['loadavg']}; "
        f"the Nannon preset's untrained network, {args.sims} simulations, one thread, {args.rounds} interleaved "
        "rounds (median).",
        "",
        "| roots | NumPy s | compiled s | speed-up | us per tree and simulation (NumPy, compiled) | "
        "mean root value (NumPy, compiled) | top-move visit share (NumPy, compiled) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        o, c = r["numpy"], r["compiled"]
        lines.append(
            f"| {r['batch']} | {o['median_s']:.3f} | {c['median_s']:.3f} | {r['speedup']:.2f}x | "
            f"{o['us_per_tree_and_simulation']:.1f}, {c['us_per_tree_and_simulation']:.1f} | "
            f"{o['mean_root_value']:.3f}, {c['mean_root_value']:.3f} | {o['top_move_share']:.3f}, "
            f"{c['top_move_share']:.3f} |"
        )
    write_results(args.out, results, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
