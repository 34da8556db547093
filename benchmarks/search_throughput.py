"""Search throughput: polyzero's batched search against DeepMind's mctx, same network.

MuZero mode (learned model): for every (B, num_simulations), in the same run and
interleaved (blocked round-robin, a speedprobe sample per round):
  * polyzero  : root forward + run_search(LearnedModel(tiny net), muzero rule,
                parent_siblings Q normalisation, unvisited Q = min, no noise)
  * net alone : the same network calls alone (1 root + n recurrent at batch B,
                on stored hidden states), i.e. the floor polyzero sits on
  * mctx      : jitted mctx.muzero_policy (JAX, CPU) with the same weights,
                dirichlet_fraction 0 (the same search as polyzero's)
and reports median ms per call, simulations per second, mean/max tree depth and
the share of polyzero's time spent outside the network (measured two ways: the
recurrent calls timed inside the search, and the network-alone job).

Before timing, both searches run once on the same batch and their root visit
counts are compared (exact-match fraction of rows, max abs difference), without
and with a random root legal mask.

AlphaZero mode: the shipped Connect Four preset (ResidualTower) searching from
random Connect Four openings at B=256, 64 simulations, against the same number of
network calls alone at the same batch size.

Gumbel mode (--gumbel): polyzero's Gumbel and Full Gumbel searches (mctx-equivalent
settings: completed-by-mix-value normalisation, c_scale 0.1, m = 16) beside pUCT
and jitted mctx.gumbel_muzero_policy, same network, interleaved; root visit counts,
A_{n+1} and pi' are first compared with mctx's on mctx's own Gumbel draws; the
tree's cost per (batch element x simulation x level visited) is set against pUCT's.

Usage:
  python benchmarks/search_throughput.py                 # full run (~3-5 min)
  python benchmarks/search_throughput.py --quick         # smoke run
  python benchmarks/search_throughput.py --gumbel --batch-sizes 16,256 --sims 64
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import search_throughput_alone  # noqa: E402
import tinynet  # noqa: E402
from common import machine_info, summarize, time_interleaved, write_results  # noqa: E402

from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search.learned import LearnedModel  # noqa: E402
from polyzero.search.gumbel import gumbel_search  # noqa: E402
from polyzero.search.mcts import run_search  # noqa: E402
from polyzero.search.params import SearchParams  # noqa: E402

SEED = 0
DEFAULT_OUT = "benchmarks/results/search_throughput.json"


def depth_from_parents(parents):
    """parents [B, N] (root and unused = -1) -> mean node depth, max depth."""
    parents = np.asarray(parents)
    b, n = parents.shape
    depth = np.zeros((b, n), np.int64)
    for j in range(1, n):
        par = parents[:, j]
        ok = par >= 0
        depth[ok, j] = depth[ok, par[ok]] + 1
    valid = np.concatenate([np.ones((b, 1), bool), parents[:, 1:] >= 0], axis=1)
    return {"mean_node_depth": float(depth[valid].mean()),
            "max_depth_mean_over_batch": float(depth.max(axis=1).mean()),
            "max_depth": int(depth.max())}


# ------------------------------------------------------------------ polyzero (MuZero mode)
MUZERO_PARAMS = dict(selection="muzero", q_normalisation="parent_siblings", unvisited_q="min",
                     c1=1.25, c2=19652.0, dirichlet_fraction=0.0)


class PolyzeroMuZero:
    """One call = root forward + batched search over a LearnedModel; the
    network time inside is accumulated in `net_s`."""

    def __init__(self, net: tinynet.TinyNetNumpy, num_simulations: int, **params):
        self.net = net
        self.params = SearchParams(num_simulations=num_simulations, **{**MUZERO_PARAMS, **params})
        self.rng = np.random.default_rng(SEED)
        self.net_s = 0.0
        self.calls = 0
        self.net_shares = []  # per call: network time / call time
        self.store = None  # the hidden-state store, reused across calls

    def _timed_recurrent(self, h, a):
        t0 = time.perf_counter()
        out = self.net.recurrent(h, a)
        self.net_s += time.perf_counter() - t0
        return out

    def __call__(self, obs, root_legal=None, gumbel=None):
        t0 = time.perf_counter()
        net0 = self.net_s
        logits, value, hidden = self.net.initial(obs)
        self.net_s += time.perf_counter() - t0
        model = LearnedModel(logits, value, hidden, self._timed_recurrent, discount=-1.0,
                             root_legal=root_legal, num_nodes=self.params.num_simulations + 1,
                             store=self.store)
        self.store = model.hidden  # reused by the next call, as polyzero's MuZero does
        self.calls += 1
        if self.params.kind == "puct":
            res = run_search(model, self.params, self.rng, add_noise=False)
        else:  # Gumbel noise on (scale 1), as mctx.gumbel_muzero_policy's default
            res = gumbel_search(model, self.params, self.rng, add_noise=True, gumbel=gumbel)
        self.net_shares.append((self.net_s - net0) / (time.perf_counter() - t0))
        return res


def net_alone_fn(net: tinynet.TinyNetNumpy, num_simulations: int, batch: int):
    """Root forward + num_simulations recurrent calls at batch B (gathering the
    parent state from a stored array as the search does), no tree."""
    rng = np.random.default_rng(SEED + 1)
    store = rng.standard_normal((batch * 8, tinynet.HID)).astype(np.float32)
    idx = [rng.integers(0, batch * 8, batch) for _ in range(8)]
    acts = [rng.integers(0, tinynet.A, batch).astype(np.int32) for _ in range(8)]

    def f(obs):
        net.initial(obs)
        for i in range(num_simulations):
            net.recurrent(store[idx[i % 8]], acts[i % 8])
    return f


# ------------------------------------------------------------------ mctx (JAX)
make_mctx = tinynet.mctx_policy  # the same network and policy, shared with engine_search_speed


# ------------------------------------------------------------------ Gumbel
# mctx-equivalent Gumbel settings: gumbel_muzero_policy's qtransform_completed_by_mix_value
# (value_scale 0.1, maxvisit_init 50, min-max of the completed Q), m = 16.
GUMBEL_PARAMS = dict(gumbel_q_normalisation="completed_minmax", c_visit=50.0, c_scale=0.1,
                     max_considered_actions=16, gumbel_scale=1.0)


def mctx_gumbel_draw(key, batch):
    """The Gumbel vector gumbel_muzero_policy draws from `key` (its first split)."""
    import jax

    _, gumbel_rng = jax.random.split(key)
    return np.asarray(jax.random.gumbel(gumbel_rng, shape=(batch, tinynet.A), dtype=np.float32),
                      np.float64)


def bookkeeping_per_level(pz, obs, calls=5):
    """Median over calls of (call time - network time) / (B x levels visited), where a
    simulation visits as many levels as its new node's depth (MuZero trees have no
    terminal revisits): the tree's cost per batch element, simulation and level."""
    out = []
    for _ in range(calls):
        net0 = pz.net_s
        t0 = time.perf_counter()
        res = pz(obs)
        total = time.perf_counter() - t0
        used = np.arange(res.tree.depth.shape[1])[None, :] < res.tree.num_nodes[:, None]
        levels = int(res.tree.depth[used].sum())
        out.append((total - (pz.net_s - net0)) / levels)
    return statistics.median(out), levels / res.tree.batch_size / pz.params.num_simulations


def gumbel_section(args, net, jparams, batch_sizes, sims_list):
    """Gumbel and Full Gumbel search beside pUCT and mctx.gumbel_muzero_policy, same
    network, interleaved; root visit counts checked against mctx first with mctx's own
    Gumbel draws (Full Gumbel in the mctx-equivalent mode)."""
    out = {"params": GUMBEL_PARAMS, "rows": [], "visit_check": []}
    for b in batch_sizes:
        obs_list = [tinynet.make_obs(b, seed=s) for s in range(4)]
        no_mask = np.zeros((b, tinynet.A), bool)
        mrng = np.random.default_rng(SEED + 7)
        invalid = mrng.random((b, tinynet.A)) < 0.3
        invalid[np.arange(b), mrng.integers(0, tinynet.A, b)] = False
        for n in sims_list:
            searches = {
                "puct": PolyzeroMuZero(net, n),
                "gumbel": PolyzeroMuZero(net, n, kind="gumbel", **GUMBEL_PARAMS),
                "full_gumbel": PolyzeroMuZero(net, n, kind="full_gumbel", **GUMBEL_PARAMS),
            }
            for pz in searches.values():
                pz(obs_list[0])  # warm (numba compile/cache load)
            row = {"B": b, "num_simulations": n}
            jobs = [(name, pz, [(o,) for o in obs_list]) for name, pz in searches.items()]
            jobs.append(("net_alone", net_alone_fn(net, n, b), [(o,) for o in obs_list]))
            if jparams is not None:
                import jax
                import jax.numpy as jnp

                mc = make_mctx(n, gumbel=True)
                keys = list(jax.random.split(jax.random.PRNGKey(42), 4))
                jobs_args = [(jparams, keys[i], jnp.asarray(obs_list[i]), jnp.asarray(no_mask))
                             for i in range(4)]
                mc(*jobs_args[0])
                for label, inv in (("all legal", no_mask), ("random root mask", invalid)):
                    g = mctx_gumbel_draw(keys[0], b)
                    res = searches["full_gumbel"](obs_list[0], root_legal=~inv, gumbel=g)
                    act, mv, _, weights = mc(jparams, keys[0], jnp.asarray(obs_list[0]),
                                             jnp.asarray(inv))
                    mv = np.asarray(mv)
                    diff = np.abs(res.root_visits.astype(np.int64) - mv)
                    chk = {"B": b, "num_simulations": n, "root": label,
                           "rows_exact": float((diff.sum(axis=1) == 0).mean()),
                           "max_abs_diff": int(diff.max()),
                           "actions_equal": float((res.action == np.asarray(act)).mean()),
                           "max_abs_policy_diff": float(np.abs(res.policy_target -
                                                               np.asarray(weights)).max()),
                           "masked_actions_visited": int(res.root_visits[inv].sum()) + int(mv[inv].sum())}
                    out["visit_check"].append(chk)
                    print(f"gumbel visit check B={b} sims={n} ({label}): rows exact "
                          f"{chk['rows_exact']:.3f}, max |diff| {chk['max_abs_diff']}, actions "
                          f"equal {chk['actions_equal']:.3f}, max |pi' diff| "
                          f"{chk['max_abs_policy_diff']:.1e}", flush=True)
                jobs.append(("mctx_gumbel", mc, jobs_args))
            ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=500)
            row["probe_ms"] = statistics.median(probe)
            for name in ts:
                s = summarize(ts[name])
                s["sims_per_s"] = b * n / s["median_s"]
                row[name] = s
            for name, pz in searches.items():
                per_level, levels_per_sim = bookkeeping_per_level(pz, obs_list[1])
                row[f"{name}_bookkeeping_us_per_level"] = per_level * 1e6
                row[f"{name}_levels_per_simulation"] = levels_per_sim
                row[f"{name}_depth"] = pz(obs_list[1]).tree.depth_stats()
            for name in ("gumbel", "full_gumbel"):
                row[f"{name}_bookkeeping_vs_puct"] = (row[f"{name}_bookkeeping_us_per_level"] /
                                                     row["puct_bookkeeping_us_per_level"])
                if "mctx_gumbel" in row:
                    row[f"{name}_speedup_vs_mctx"] = row["mctx_gumbel"]["median_s"] / row[name]["median_s"]
            line = f"B={b:4d} sims={n:3d} " + "  ".join(
                f"{name} {row[name]['median_s']*1e3:8.3f} ms" for name in ts)
            line += "  bookkeeping/level vs puct: " + ", ".join(
                f"{k} {row[f'{k}_bookkeeping_vs_puct']:.2f}" for k in ("gumbel", "full_gumbel"))
            print(line, flush=True)
            out["rows"].append(row)
    return out


def render_gumbel_markdown(meta, g) -> str:
    mach = meta["machine"]
    lines = ["# Gumbel search throughput: polyzero vs mctx.gumbel_muzero_policy", "",
             f"- machine: {mach.get('Model name', '?')}, {mach.get('CPU(s)', mach.get('cpu_count'))} CPUs; "
             f"torch threads {meta['torch_threads']}, tree-kernel threads {meta.get('tree_kernel_threads', 1)}",
             f"- command: `{meta['command']}`",
             f"- seed {meta['seed']}; numba {meta.get('numba')}, jax {meta.get('jax', '-')}, "
             f"mctx {meta.get('mctx', '-')}",
             f"- network: the anchor tiny MuZero MLP ({meta['net_parameters']} parameters, "
             f"{tinynet.A} actions), PyTorch '{meta['net_mode']}' path",
             f"- polyzero Gumbel settings: {g['params']}; pUCT inside `gumbel`: {MUZERO_PARAMS}",
             f"- load average start/end: {meta['loadavg_start']} / {meta.get('loadavg_end')}", "",
             "Median ms per policy call (root forward + search), all jobs interleaved in the same "
             "run. Speed-up = mctx / polyzero. Net alone: the same network calls without a tree "
             "(1 root + n recurrent at batch B), polyzero's floor. Bookkeeping per level = (call "
             "time - network time) / (B x levels visited), in microseconds, relative to pUCT's; "
             "Gumbel trees are shallower (levels per simulation), so per-simulation costs weigh "
             "more per level.", "",
             "| B | sims | pUCT ms | gumbel ms | full_gumbel ms | mctx gumbel ms | full_gumbel speed-up "
             "| gumbel speed-up | net alone ms | bookkeeping us/level puct / gumbel / full | gumbel/puct | full/puct "
             "| levels per simulation puct / gumbel / full |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in g["rows"]:
        mc = r.get("mctx_gumbel")
        lines.append(
            f"| {r['B']} | {r['num_simulations']} | {r['puct']['median_s']*1e3:.3f} | "
            f"{r['gumbel']['median_s']*1e3:.3f} | {r['full_gumbel']['median_s']*1e3:.3f} | "
            + (f"{mc['median_s']*1e3:.3f} | **{r['full_gumbel_speedup_vs_mctx']:.2f}x** | "
               f"{r['gumbel_speedup_vs_mctx']:.2f}x | " if mc else "- | - | - | ")
            + f"{r['net_alone']['median_s']*1e3:.3f} | "
            + f"{r['puct_bookkeeping_us_per_level']:.3f} / {r['gumbel_bookkeeping_us_per_level']:.3f}"
            f" / {r['full_gumbel_bookkeeping_us_per_level']:.3f} | "
            f"{r['gumbel_bookkeeping_vs_puct']:.2f} | {r['full_gumbel_bookkeeping_vs_puct']:.2f} | "
            f"{r['puct_levels_per_simulation']:.2f} / {r['gumbel_levels_per_simulation']:.2f} / "
            f"{r['full_gumbel_levels_per_simulation']:.2f} |")
    if g["visit_check"]:
        lines += ["", "## Root visit counts, Full Gumbel (mctx-equivalent mode) vs mctx, same Gumbel draws", "",
                  "| B | sims | root | rows matching exactly | max abs diff | A_{n+1} equal | max abs pi' diff "
                  "| visits to masked actions |",
                  "|---:|---:|---|---:|---:|---:|---:|---:|"]
        for c in g["visit_check"]:
            lines.append(f"| {c['B']} | {c['num_simulations']} | {c['root']} | {c['rows_exact']:.3f} | "
                         f"{c['max_abs_diff']} | {c['actions_equal']:.3f} | "
                         f"{c['max_abs_policy_diff']:.1e} | {c['masked_actions_visited']} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ AlphaZero mode
def alphazero_section(args, num_sims=64, batch=256):
    """The Connect Four preset network in AlphaZero mode: search time against the
    same number of network calls alone at the same batch size."""
    try:
        import polyzero.algos as algos
        import polyzero.config as config
        import polyzero.games as games
        from polyzero.nets.inference import Evaluator
    except Exception as e:  # noqa: BLE001  (the games layer may not exist yet)
        return {"skipped": f"{type(e).__name__}: {e}"}

    cfg = config.build_config("connect_four", "alphazero")
    game = games.load_game("connect_four")
    algo = algos.make_algorithm(cfg, game)
    net = algo.build_network()
    n_params = int(sum(p.numel() for p in net.parameters()))
    evaluate = Evaluator(net, "cpu")
    params = SearchParams(**{**{k: getattr(cfg.search, k) for k in vars(cfg.search)
                                if k in SearchParams.__dataclass_fields__},
                             "num_simulations": num_sims})
    rng = np.random.default_rng(SEED)

    def random_openings(n, seed):
        r = np.random.default_rng(seed)
        out = []
        while len(out) < n:
            s = game.new_initial_state()
            for _ in range(int(r.integers(0, 9))):
                s.apply_action(int(r.choice(s.legal_actions())))
                if s.is_terminal():
                    break
            if not s.is_terminal():
                out.append(s)
        return out

    state_sets = [random_openings(batch, seed) for seed in range(2)]
    obs_sets = [algo.encode(s) for s in state_sets]
    calls_per_search = {}

    class Counting:
        def __init__(self):
            self.calls = 0
            self.rows = 0
            self.net_s = 0.0

        def __call__(self, obs):
            t0 = time.perf_counter()
            out = evaluate(obs)
            self.net_s += time.perf_counter() - t0
            self.calls += 1
            self.rows += len(obs)
            return out

    counting = Counting()
    res = algo.search(counting, state_sets[0], params, rng, add_noise=False)
    calls_per_search["calls"] = counting.calls
    calls_per_search["mean_rows_per_call"] = counting.rows / counting.calls
    depth = res.tree.depth_stats()

    def search_job(states):
        algo.search(evaluate, states, params, rng, add_noise=False)

    def net_job(obs):
        for _ in range(num_sims + 1):
            evaluate(obs)

    jobs = [("alphazero_search", search_job, [(s,) for s in state_sets]),
            ("network_alone", net_job, [(o,) for o in obs_sets])]
    ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=200)
    s = summarize(ts["alphazero_search"])
    n = summarize(ts["network_alone"])
    # the network share inside search, by timing the evaluate calls in one more search
    counting.net_s = 0.0
    t0 = time.perf_counter()
    algo.search(counting, state_sets[1], params, rng, add_noise=False)
    total = time.perf_counter() - t0
    return {
        "B": batch, "num_simulations": num_sims, "network": repr(cfg.net),
        "parameters": n_params,
        "search_ms": s["median_s"] * 1e3, "network_alone_ms": n["median_s"] * 1e3,
        "ratio": s["median_s"] / n["median_s"],
        "search": s, "network_alone": n, "probe_ms": statistics.median(probe),
        "network_calls_per_search": calls_per_search,
        "net_share_inside_one_search": counting.net_s / total,
        "depth": depth,
    }


# ------------------------------------------------------------------ main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-sizes", default="1,16,256")
    ap.add_argument("--sims", default="16,64")
    ap.add_argument("--min-total-s", type=float, default=4.0)
    ap.add_argument("--min-calls", type=int, default=9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--net-mode", default="compiled:auto",
                    choices=["lean", "script", "eager_ref"] + [f"compiled:{m}" for m in tinynet.COMPILED_MODES],
                    help="compiled:auto (default) is the path self-play takes (net.inference = auto)")
    ap.add_argument("--mode", default="interleaved", choices=["interleaved", "alone"],
                    help="interleaved: every job in this process, round-robin; alone: each library in "
                         "its own process (search_throughput_alone.py)")
    ap.add_argument("--library", choices=search_throughput_alone.LIBRARIES, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--no-mctx", action="store_true")
    ap.add_argument("--no-alphazero", action="store_true")
    ap.add_argument("--gumbel", action="store_true",
                    help="only the Gumbel section (Gumbel, Full Gumbel, pUCT, mctx.gumbel_muzero_policy)")
    ap.add_argument("--quick", action="store_true", help="small settings for a smoke run")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if args.quick:
        args.batch_sizes, args.sims = "1,16", "16"
        args.min_total_s, args.min_calls = 0.5, 3

    set_threads(args.threads)  # torch's and the tree kernels' (numba) threads
    if args.library:  # a child of the alone mode
        return search_throughput_alone.child(args)
    batch_sizes = [int(x) for x in args.batch_sizes.split(",")]
    sims_list = [int(x) for x in args.sims.split(",")]
    modes = (args.net_mode,) if args.net_mode.startswith("compiled:") else ()
    net_err = tinynet.check(1e-5, modes)
    net = tinynet.TinyNetNumpy(args.net_mode)

    meta = {"command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
            "seed": SEED, "machine": machine_info(), "torch": torch.__version__,
            "numpy": np.__version__, "torch_threads": torch.get_num_threads(),
            "tree_kernel_threads": numba.get_num_threads(),
            "net_mode": args.net_mode, "net_parameters": tinynet.num_parameters(),
            "net_max_abs_err_vs_numpy": net_err, "loadavg_start": os.getloadavg(),
            "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                   "XLA_FLAGS", "JAX_PLATFORMS")},
            "search_params": MUZERO_PARAMS}
    meta["numba"] = numba.__version__
    have_mctx = not args.no_mctx
    if have_mctx:
        try:
            import jax
            import jax.numpy as jnp
            import jaxlib
            import mctx
            meta.update(jax=jax.__version__, jaxlib=jaxlib.__version__, mctx=mctx.__version__,
                        jax_devices=[str(d) for d in jax.devices()])
            jparams = jax.tree_util.tree_map(jnp.asarray, tinynet.make_params())
        except ImportError as e:
            print(f"mctx comparison skipped: {e}", flush=True)
            have_mctx = False
            meta["mctx_skipped"] = str(e)
    print(json.dumps(meta), flush=True)

    if args.mode == "alone":
        if args.out == DEFAULT_OUT:
            args.out = "benchmarks/results/search_throughput_alone.json"
        results = search_throughput_alone.run(args, meta, ("polyzero", "mctx") if have_mctx else ("polyzero",))
        results["meta"]["loadavg_end"] = os.getloadavg()
        write_results(args.out, results, search_throughput_alone.render(results))
        return results

    if args.gumbel:
        if args.out == DEFAULT_OUT:
            args.out = "benchmarks/results/search_throughput_gumbel.json"
        gumbel = gumbel_section(args, net, jparams if have_mctx else None, batch_sizes, sims_list)
        meta["loadavg_end"] = os.getloadavg()
        results = {"meta": meta, "gumbel": gumbel}
        if args.out:
            write_results(args.out, results, render_gumbel_markdown(meta, gumbel))
        return results

    results = {"meta": {**meta, "mode": "interleaved"}, "rows": [], "visit_check": []}
    for b in batch_sizes:
        obs_list = [tinynet.make_obs(b, seed=s) for s in range(4)]
        no_mask = np.zeros((b, tinynet.A), bool)
        mrng = np.random.default_rng(SEED + 7)
        invalid = mrng.random((b, tinynet.A)) < 0.3
        invalid[np.arange(b), mrng.integers(0, tinynet.A, b)] = False  # >= 1 legal per row
        for n in sims_list:
            pz = PolyzeroMuZero(net, n)
            pz(obs_list[0])  # warm (numba compile/cache load)
            row = {"B": b, "num_simulations": n}
            jobs = [("polyzero", pz, [(o,) for o in obs_list]),
                    ("net_alone", net_alone_fn(net, n, b), [(o,) for o in obs_list])]
            res0 = pz(obs_list[0])
            row["polyzero_depth"] = res0.tree.depth_stats()
            if have_mctx:
                mc = make_mctx(n)
                keys = list(jax.random.split(jax.random.PRNGKey(42), 4))
                jobs_args = [(jparams, keys[i], jnp.asarray(obs_list[i]), jnp.asarray(no_mask))
                             for i in range(4)]
                t0 = time.perf_counter()
                _, mv, mpar = mc(*jobs_args[0])
                row["mctx_first_call_s"] = time.perf_counter() - t0
                row["mctx_depth"] = depth_from_parents(mpar)
                # ---- visit-count check on the same batch (no mask, then a random root mask)
                for label, inv in (("all legal", no_mask), ("random root mask", invalid)):
                    pv = pz(obs_list[0], root_legal=~inv).root_visits
                    _, mv, _ = mc(jparams, keys[0], jnp.asarray(obs_list[0]), jnp.asarray(inv))
                    mv = np.asarray(mv)
                    diff = np.abs(pv.astype(np.int64) - mv)
                    chk = {"B": b, "num_simulations": n, "root": label,
                           "rows_exact": float((diff.sum(axis=1) == 0).mean()),
                           "max_abs_diff": int(diff.max()),
                           "masked_actions_visited": int(pv[inv].sum()) + int(mv[inv].sum())}
                    results["visit_check"].append(chk)
                    print(f"visit check B={b} sims={n} ({label}): rows exact "
                          f"{chk['rows_exact']:.3f}, max |diff| {chk['max_abs_diff']}", flush=True)
                jobs.append(("mctx", mc, jobs_args))
            pz.net_s, pz.calls, pz.net_shares = 0.0, 0, []
            t_wall = time.perf_counter()
            ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=500)
            row["probe_ms"] = statistics.median(probe)
            row["probe_min_max_ms"] = [min(probe), max(probe)]
            for name in ts:
                s = summarize(ts[name])
                s["sims_per_s"] = b * n / s["median_s"]
                row[name] = s
            # share of each polyzero call spent outside the network (network calls
            # timed inside the search), median over calls
            row["polyzero_outside_net_share_inner"] = 1 - statistics.median(pz.net_shares)
            row["polyzero_outside_net_share_alone"] = \
                1 - row["net_alone"]["median_s"] / row["polyzero"]["median_s"]
            row["polyzero_mean_ms"] = statistics.mean(ts["polyzero"]) * 1e3
            row["mctx_mean_ms"] = statistics.mean(ts["mctx"]) * 1e3 if "mctx" in ts else None
            line = (f"B={b:4d} sims={n:3d}  polyzero {row['polyzero']['median_s']*1e3:9.3f} ms"
                    f"  net-alone {row['net_alone']['median_s']*1e3:9.3f} ms")
            if have_mctx:
                row["speedup_vs_mctx"] = row["mctx"]["median_s"] / row["polyzero"]["median_s"]
                line += (f"  mctx {row['mctx']['median_s']*1e3:9.3f} ms  "
                         f"x{row['speedup_vs_mctx']:.2f}")
            line += (f"  outside-net {row['polyzero_outside_net_share_inner']:.2f}"
                     f"  (probe {row['probe_ms']:.2f} ms, wall {time.perf_counter()-t_wall:.1f} s)")
            print(line, flush=True)
            results["rows"].append(row)

    if not args.no_alphazero:
        az = alphazero_section(args, num_sims=16 if args.quick else 64,
                               batch=16 if args.quick else 256)
        results["alphazero"] = az
        if "skipped" in az:
            print("AlphaZero mode skipped:", az["skipped"], flush=True)
        else:
            print(f"AlphaZero B={az['B']} sims={az['num_simulations']}: search "
                  f"{az['search_ms']:.1f} ms, network alone {az['network_alone_ms']:.1f} ms, "
                  f"ratio {az['ratio']:.3f} (probe {az['probe_ms']:.2f} ms)", flush=True)
    results["meta"]["loadavg_end"] = os.getloadavg()

    if args.out:
        write_results(args.out, results, render_markdown(results))
    return results


def render_markdown(results) -> str:
    m = results["meta"]
    mach = m["machine"]
    lines = ["# Search throughput: polyzero vs mctx, interleaved in one process", "",
             f"- machine: {mach.get('Model name', '?')}, {mach.get('CPU(s)', mach.get('cpu_count'))} CPUs; "
             f"torch threads {m['torch_threads']}, tree-kernel threads {m.get('tree_kernel_threads', 1)}; JAX on {', '.join(m.get('jax_devices', ['-']))}",
             f"- command: `{m['command']}`",
             f"- seed {m['seed']}; python {mach['python']}, torch {m['torch']}, numpy {m['numpy']}, "
             f"numba {m.get('numba')}, jax {m.get('jax', '-')}, jaxlib {m.get('jaxlib', '-')}, "
             f"mctx {m.get('mctx', '-')}",
             f"- network: the anchor tiny MuZero MLP ({m['net_parameters']} parameters), "
             f"PyTorch '{m['net_mode']}' path, max |err| vs NumPy reference "
             f"{m['net_max_abs_err_vs_numpy']:.1e}",
             f"- search: {m['search_params']} (mctx: muzero_policy, dirichlet_fraction=0)",
             f"- load average start/end: {m['loadavg_start']} / {m.get('loadavg_end')}", "",
             "Mode: interleaved (both libraries in this one process, blocked round-robin; "
             "`--mode alone` times each in its own process). "
             "Median ms per policy call (root forward + search), interleaved in the same run; "
             "speed-up = mctx / polyzero. 'outside net' = share of polyzero's time not spent "
             "in the network (inner: network calls timed inside the search; alone: 1 - "
             "net-alone / polyzero). Depth: mean node depth / max depth.", "",
             "| B | sims | polyzero ms | mctx ms | speed-up | polyzero sims/s | mctx sims/s "
             "| net alone ms | outside net (inner / alone) | depth polyzero | depth mctx | probe ms |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        pz, na = r["polyzero"], r["net_alone"]
        mc = r.get("mctx")
        pd, md_ = r["polyzero_depth"], r.get("mctx_depth")
        lines.append(
            f"| {r['B']} | {r['num_simulations']} | {pz['median_s']*1e3:.3f} | "
            + (f"{mc['median_s']*1e3:.3f} | **{r['speedup_vs_mctx']:.2f}x** | " if mc else "- | - | ")
            + f"{pz['sims_per_s']:,.0f} | " + (f"{mc['sims_per_s']:,.0f} | " if mc else "- | ")
            + f"{na['median_s']*1e3:.3f} | {r['polyzero_outside_net_share_inner']:.2f} / "
            f"{r['polyzero_outside_net_share_alone']:.2f} | "
            f"{pd['mean_node_depth']:.2f} / {pd['max_depth']} | "
            + (f"{md_['mean_node_depth']:.2f} / {md_['max_depth']} | " if md_ else "- | ")
            + f"{r['probe_ms']:.2f} |")
    if results["visit_check"]:
        lines += ["", "## Root visit counts, polyzero vs mctx (same batch, before timing)", "",
                  "| B | sims | root | rows matching exactly | max abs diff | visits to masked actions |",
                  "|---:|---:|---|---:|---:|---:|"]
        for c in results["visit_check"]:
            lines.append(f"| {c['B']} | {c['num_simulations']} | {c['root']} | "
                         f"{c['rows_exact']:.3f} | {c['max_abs_diff']} | {c['masked_actions_visited']} |")
    az = results.get("alphazero")
    if az:
        lines += ["", "## AlphaZero mode (Connect Four preset network)", ""]
        if "skipped" in az:
            lines.append(f"Skipped: {az['skipped']}")
        else:
            lines += [
                f"Network: {az['network']}, {az['parameters']:,} parameters; B = {az['B']} random "
                f"Connect Four openings, {az['num_simulations']} simulations, "
                f"{az['network_calls_per_search']['calls']} network calls per search "
                f"(mean {az['network_calls_per_search']['mean_rows_per_call']:.1f} rows per call).", "",
                "| search ms | same number of network calls alone ms | ratio (target <= 1.15) "
                "| network share inside one search | depth mean / max | probe ms |",
                "|---:|---:|---:|---:|---:|---:|",
                f"| {az['search_ms']:.1f} | {az['network_alone_ms']:.1f} | **{az['ratio']:.3f}** | "
                f"{az['net_share_inside_one_search']:.2f} | {az['depth']['mean_node_depth']:.2f} / "
                f"{az['depth']['max_depth']} | {az['probe_ms']:.2f} |"]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
