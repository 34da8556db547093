"""Where polyzero's MuZero-mode search spends its time outside the network.

Runs the real searches (pUCT ``run_search``, ``gumbel`` and ``full_gumbel``
``gumbel_search``) on the anchor's tiny net, with a timer wrapped around each
stage they call -- the numba kernels (a Gumbel root's Sequential Halving runs
inside selection), the learned model's step and the network inside it -- and prints microseconds per simulation for
each stage. Nothing of the search is copied here, so the breakdown cannot drift
from the code it profiles. "search loop (Python, glue)" is what is left: the
simulation loop itself, argument passing into the kernels, small arrays.

  python benchmarks/profile_search.py --batch-sizes 16,256 --sims 64 --kinds puct,full_gumbel
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinynet  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search import gumbel, kernels, learned, mcts  # noqa: E402
from polyzero.search.learned import LearnedModel  # noqa: E402
from polyzero.search.params import SearchParams  # noqa: E402
from search_throughput_gumbel import GUMBEL_PARAMS  # noqa: E402
from search_throughput_jobs import MUZERO_PARAMS  # noqa: E402

NETWORK = "network (recurrent_fn, NumPy<->torch included)"
STAGES = {  # (module, attribute) -> stage name
    (kernels, "select_leaves"): "select_leaves (numba)",
    (kernels, "select_leaves_parallel"): "select_leaves (numba)",
    (kernels, "expand_and_backup"): "expand_and_backup (numba)",
    (kernels, "expand_and_backup_parallel"): "expand_and_backup (numba)",
    (learned.LearnedModel, "step"): "LearnedModel.step outside the network",
    (mcts, "start_tree"): "start_tree",
    (gumbel, "start_tree"): "start_tree",
    (mcts, "finish"): "finish (root visits, Q)",
    (gumbel, "finish"): "finish (root visits, Q)",
    (gumbel, "root_outputs"): "Gumbel root outputs (pi', A_{n+1})",
}


@contextlib.contextmanager
def stage_timers(acc: dict):
    """Wrap every function of STAGES so its time adds to acc[stage]."""
    saved = []

    def timed(fn, name):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                acc[name] += time.perf_counter() - t

        return wrapper

    for (owner, attr), name in STAGES.items():
        fn = getattr(owner, attr)
        saved.append((owner, attr, fn))
        setattr(owner, attr, timed(fn, name))
    try:
        yield
    finally:
        for owner, attr, fn in reversed(saved):
            setattr(owner, attr, fn)


def profile(net, kind: str, batch: int, sims: int, repeats: int) -> dict:
    """Microseconds per simulation of each stage, and of the whole call."""
    extra = GUMBEL_PARAMS if kind != "puct" else {}
    params = SearchParams(num_simulations=sims, kind=kind, **{**MUZERO_PARAMS, **extra})
    obs = tinynet.make_obs(batch, seed=0)
    rng = np.random.default_rng(0)
    acc = defaultdict(float)

    def recurrent(h, a):
        t = time.perf_counter()
        out = net.recurrent(h, a)
        acc[NETWORK] += time.perf_counter() - t
        return out

    total = 0.0
    store = None
    with stage_timers(acc):
        for r in range(repeats + 1):  # the first call warms up and is not counted
            if r == 1:
                acc.clear()
            t = time.perf_counter()
            logits, value, hidden = net.initial(obs)
            acc["root network"] += time.perf_counter() - t
            model = LearnedModel(logits, value, hidden, recurrent, -1.0, num_nodes=sims + 1, store=store)
            mcts.search(model, params, rng, add_noise=True)
            store = model.hidden  # reused, as polyzero's MuZero does
            if r:
                total += time.perf_counter() - t
    # The model's step contains the network: report each once.
    acc["LearnedModel.step outside the network"] -= acc[NETWORK]
    acc["search loop (Python, glue)"] = total - sum(acc.values())
    scale = 1e6 / repeats / sims
    rows = {k: round(v * scale, 1) for k, v in sorted(acc.items(), key=lambda kv: -kv[1])}
    rows["TOTAL"] = round(total * scale, 1)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-sizes", default="16,256")
    ap.add_argument("--sims", type=int, default=64)
    ap.add_argument("--kinds", default="puct,gumbel,full_gumbel")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--net-mode", default="script")
    ap.add_argument("--threads", type=int, default=1, help="torch and tree-kernel threads")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    set_threads(args.threads)  # torch's and the tree kernels' (numba) threads
    net = tinynet.TinyNetNumpy(args.net_mode)
    out = {}
    for b in [int(x) for x in args.batch_sizes.split(",")]:
        for kind in args.kinds.split(","):
            rows = profile(net, kind, b, args.sims, args.repeats)
            out[f"{kind} B={b}"] = rows
            print(f"\n{kind}, B={b}, {args.sims} simulations: us per simulation (share)")
            for k, v in rows.items():
                print(f"  {k:48s} {v:9.1f}  {v / rows['TOTAL']:5.1%}")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
