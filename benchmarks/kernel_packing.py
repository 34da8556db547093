"""The packed tree kernels and today's search against the 29-argument kernels and the
search they replaced, on the same trees and the same network, in one process.

The selection and backup kernels used to take every tree array and constant as a
separate argument (``polyzero/search/kernels.py`` before the one-engine change); now
they take the tree as one structure (``kernels.pack``: a structref) and the constants as
one tuple. This script checks that neither the packing nor the new search loop slowed
anything: it loads the whole ``polyzero`` package as it was before (from git: the parent
of the commit that removed kernels.py) under the name ``polyzero_before``, and times,
interleaved in one process (blocks of calls, alternating):

  * selection: one descent per tree, old ``select_paths`` vs new ``select_leaves``
    (asserted to reach the same leaves), on trees today's search built (the anchor's
    tiny MLP, MuZero's rule with mctx's Q transform, 64 simulations);
  * backup: one re-backup per tree from its deepest node, old vs new
    ``expand_and_backup`` (the same arithmetic, on a copy of the trees);
  * whole searches, as ``search_throughput.py`` times them (root forward and
    ``run_search`` over a ``LearnedModel``, B x simulations), old package vs new:
    the ratio new / old is the change of search_throughput's polyzero-vs-mctx ratio.

Per-call times include Numba's dispatch (typing the arguments). Run from the
repository (git is needed):

  python benchmarks/kernel_packing.py            # results into benchmarks/results/kernel_packing.{json,md}
  python benchmarks/kernel_packing.py --rounds 50 --out /tmp/kp.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import write_results  # noqa: E402

OLD_PATH = "polyzero/search/kernels.py"


def package_before():
    """``polyzero`` as it was before packing (from git), imported as ``polyzero_before``;
    returns its kernels module and the commit that removed it."""
    removed = subprocess.run(
        ["git", "log", "-n", "1", "--diff-filter=D", "--format=%H", "--", OLD_PATH],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        check=True,
    ).stdout.strip()
    root = Path(tempfile.mkdtemp())
    archive = subprocess.run(
        ["git", "archive", f"{removed}^", "polyzero"], capture_output=True, cwd=HERE.parent, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    (root / "polyzero").rename(root / "polyzero_before")
    sys.path.insert(0, str(root))
    return importlib.import_module("polyzero_before.search.kernels"), removed


def searched_tree(net, batch: int, sims: int):
    import tinynet
    from polyzero.search.learned import LearnedModel
    from polyzero.search.mcts import run_search
    from polyzero.search.params import SearchParams

    params = SearchParams(
        num_simulations=sims,
        selection="muzero",
        q_normalisation="parent_siblings",
        unvisited_q="min",
        dirichlet_fraction=0.0,
    )
    logits, value, hidden = net.initial(tinynet.make_obs(batch, seed=0))
    model = LearnedModel(logits, value, hidden, net.recurrent, num_nodes=sims + 1)
    return run_search(model, params, np.random.default_rng(0)).tree, params


def kernel_calls(old, tree, params):
    """{name: call} for the four kernels on `tree` (the backups on a copy of it, so that the
    selections keep walking the searched tree)."""
    return {**_selection_calls(old, tree, params), **_backup_calls(old, tree, params)}


def _selection_calls(old, tree, params) -> dict:
    """{"select_old": call, "select_new": call}: one descent per tree, checked to reach the
    same leaves."""
    from polyzero.search import kernels

    b = tree.batch_size
    rule, norm, unvisited = params.codes
    no_root, logits = np.full(b, -1, np.int32), np.zeros((b, 1))
    out = np.zeros(b, np.int32), np.zeros(b, np.int32), np.zeros(b, np.int8)
    ref, rules = kernels.pack(tree), tuple(params.rules())
    leaves = kernels.make_leaves(b)
    packed = tuple(leaves)
    root = (no_root, logits, np.full((1, b), -1, np.int32), 0)

    def old_select():
        old.select_paths(
            tree.children,
            tree.visits,
            tree.value,
            tree.raw_value,
            tree.reward,
            tree.discount,
            tree.prior,
            tree.legal,
            tree.terminal,
            tree.q_min,
            tree.q_max,
            no_root,
            logits,
            no_root,
            rule,
            norm,
            unvisited,
            params.c_puct,
            params.c1,
            params.c2,
            params.value_min,
            params.value_max,
            params.gumbel_norm,
            params.c_visit,
            params.c_scale,
            *out,
            tree.chance,
        )

    def new_select():
        kernels.select_leaves(ref, rules, root, packed, 1)

    old_select()
    new_select()
    assert (out[0] == leaves.node[:, 0]).all() and (out[1] == leaves.action[:, 0]).all(), "different leaves"
    return {"select_old": old_select, "select_new": new_select}


def _backup_calls(old, tree, params) -> dict:
    """{"backup_old": call, "backup_new": call}: one re-backup per tree from its deepest
    node, on a copy of `tree`."""
    import dataclasses

    from polyzero.search import kernels

    b = tree.batch_size
    spare = dataclasses.replace(tree, **{f.name: getattr(tree, f.name).copy() for f in dataclasses.fields(tree)})
    rules = tuple(params.rules())
    terminal, chance = tree.terminal, tree.chance
    deepest = np.argmax(np.where(np.arange(tree.depth.shape[1]) < tree.num_nodes[:, None], tree.depth, -1), 1)
    again = (deepest.astype(np.int32), np.full(b, -1, np.int32), np.full(b, kernels.TERMINAL_LEAF, np.int8))
    a = tree.num_actions
    new = (np.zeros((b, a), np.float32), np.ones((b, a), bool), np.zeros(b), np.zeros(b), np.ones(b))

    def old_backup():
        old.expand_and_backup(
            spare.children,
            spare.parent,
            spare.action,
            spare.depth,
            spare.visits,
            spare.value,
            spare.raw_value,
            spare.reward,
            spare.discount,
            spare.prior,
            spare.legal,
            terminal,
            spare.num_nodes,
            spare.q_min,
            spare.q_max,
            *again,
            *new,
            np.zeros(b, bool),
            chance,
            np.zeros(b, bool),
            0,
        )

    revisits = kernels.make_leaves(b)  # the backup's own leaves: selection rewrites `leaves`
    revisits.node[:, 0], revisits.kind[:, 0], revisits.count[:] = again[0], again[2], 1
    revisits = tuple(revisits)
    expansion = (*new, np.zeros(b, np.int8))

    spare_ref = kernels.pack(spare)

    def new_backup():
        kernels.expand_and_backup(spare_ref, rules, revisits, expansion, 1, False)

    return {"backup_old": old_backup, "backup_new": new_backup}


def search_calls(net, batch: int, sims: int) -> dict:
    """{"search_old": call, "search_new": call}: a root forward and a pUCT search of `sims`
    simulations over B trees, as search_throughput's polyzero job (mctx's settings)."""
    import tinynet
    from polyzero.search import learned, mcts, params

    old_learned = importlib.import_module("polyzero_before.search.learned")
    old_mcts = importlib.import_module("polyzero_before.search.mcts")
    old_params = importlib.import_module("polyzero_before.search.params")
    obs = tinynet.make_obs(batch, seed=0)
    settings = dict(
        num_simulations=sims,
        selection="muzero",
        q_normalisation="parent_siblings",
        unvisited_q="min",
        dirichlet_fraction=0.0,
    )

    def job(lm, ms, ps):
        p = ps.SearchParams(**settings)

        def call():
            logits, value, hidden = net.initial(obs)
            model = lm.LearnedModel(logits, value, hidden, net.recurrent, num_nodes=sims + 1)
            return ms.run_search(model, p, np.random.default_rng(0))

        return call

    calls = {"search_old": job(old_learned, old_mcts, old_params), "search_new": job(learned, mcts, params)}
    a, b = (call().root_visits for call in calls.values())
    assert (a == b).all(), "the two searches differ"
    return calls


def time_interleaved(calls: dict, rounds: int, per_block: int = 20) -> dict:
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            t0 = time.perf_counter()
            for _ in range(per_block):
                call()
            times[name].append((time.perf_counter() - t0) / per_block)
    return {name: {"median_us": statistics.median(ts) * 1e6, "min_us": min(ts) * 1e6} for name, ts in times.items()}


def markdown(results: dict) -> str:
    lines = [
        "# Packed tree kernels vs the 29-argument ones (same trees, one process, interleaved)",
        "",
        f"Command: `{results['command']}`; old kernels from git `{results['old_commit'][:10]}^`; "
        f"load {results['loadavg']}; {results['rounds']} rounds of 20-call blocks; per call, dispatch "
        "included; new / old < 1 is faster.",
        "",
        "| B | select old us | select new us | new / old (median, min) | backup old us | backup new us | "
        "new / old (median, min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        lines.append(f"| {r['batch']} | " + " | ".join(_cells(r["times"], ("select", "backup"))) + " |")
    lines += [
        "",
        "Whole searches (root forward + `run_search`, as `search_throughput.py`'s polyzero job; the "
        "trees asserted equal):",
        "",
        "| B | simulations | old ms | new ms | new / old (median, min) |",
        "|---|---|---|---|---|",
    ]
    for r in results["searches"]:
        lines.append(
            f"| {r['batch']} | {r['simulations']} | " + " | ".join(_cells(r["times"], ("search",), 1e-3)) + " |"
        )
    return "\n".join(lines) + "\n"


def _cells(times: dict, jobs, scale: float = 1.0) -> list[str]:
    cells = []
    for job in jobs:
        old, new = times[f"{job}_old"], times[f"{job}_new"]
        cells += [
            f"{old['median_us'] * scale:.2f}",
            f"{new['median_us'] * scale:.2f}",
            f"{new['median_us'] / old['median_us']:.2f}, {new['min_us'] / old['min_us']:.2f}",
        ]
    return cells


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-sizes", default="1,16,256")
    ap.add_argument("--sims", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--search-rounds", type=int, default=40)
    ap.add_argument("--search-configs", default="1x16,1x64,16x16,16x64,256x64", help="BxSIMS,...")
    ap.add_argument("--out", default="benchmarks/results/kernel_packing.json")
    args = ap.parse_args(argv)
    import tinynet
    from polyzero.nets.inference import set_threads

    set_threads(1)
    old, commit = package_before()
    net = tinynet.TinyNetNumpy("script")
    results = {
        "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
        "old_commit": commit,
        "loadavg": os.getloadavg(),
        "rounds": args.rounds,
        "rows": [],
        "searches": [],
    }
    for batch in (int(x) for x in args.batch_sizes.split(",")):
        tree, params = searched_tree(net, batch, args.sims)
        calls = kernel_calls(old, tree, params)
        rounds = args.rounds if batch < 256 else max(1, args.rounds // 4)
        row = {"batch": batch, "times": time_interleaved(calls, rounds)}
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
    for config in args.search_configs.split(","):
        batch, sims = (int(x) for x in config.split("x"))
        calls = search_calls(net, batch, sims)
        rounds = args.search_rounds if batch * sims <= 1024 else max(1, args.search_rounds // 4)
        row = {"batch": batch, "simulations": sims, "times": time_interleaved(calls, rounds, per_block=3)}
        results["searches"].append(row)
        print(json.dumps(row), flush=True)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
