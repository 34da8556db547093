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
from polyzero.search.params import SearchParams  # noqa: E402
from search_throughput_gumbel import gumbel_section, render_gumbel_markdown  # noqa: E402
from search_throughput_jobs import (  # noqa: E402
    MUZERO_PARAMS,
    SEED,
    PolyzeroMuZero,
    batch_inputs,
    depth_from_parents,
    make_mctx,
    net_alone_fn,
)

DEFAULT_OUT = "benchmarks/results/search_throughput.json"
ENV_KEYS = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "XLA_FLAGS", "JAX_PLATFORMS", "POLYZERO_PARALLEL_TREES")


# ------------------------------------------------------------------ MuZero mode
def muzero_row(args, net, jparams, b: int, n: int, inputs: tuple, visit_check: list) -> dict:
    """One (B, num_simulations) of the MuZero mode: polyzero, the network alone and (with
    `jparams`) mctx timed interleaved, after the root visits are checked against mctx's
    (appended to `visit_check`)."""
    obs_list = inputs[0]
    pz = PolyzeroMuZero(net, n)
    pz(obs_list[0])  # warm (numba compile/cache load)
    row = {"B": b, "num_simulations": n}
    jobs = [
        ("polyzero", pz, [(o,) for o in obs_list]),
        ("net_alone", net_alone_fn(net, n, b), [(o,) for o in obs_list]),
    ]
    res0 = pz(obs_list[0])
    row["polyzero_depth"] = res0.tree.depth_stats()
    if jparams is not None:
        jobs.append(mctx_job(pz, jparams, b, n, inputs, row, visit_check))
    pz.net_s, pz.calls, pz.net_shares = 0.0, 0, []
    t_wall = time.perf_counter()
    clock = time.process_time if args.cpu_time else time.perf_counter
    ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=500, clock=clock)
    row["probe_ms"] = statistics.median(probe)
    row["probe_min_max_ms"] = [min(probe), max(probe)]
    for name in ts:
        s = summarize(ts[name])
        s["sims_per_s"] = b * n / s["median_s"]
        row[name] = s
    # share of each polyzero call spent outside the network (network calls
    # timed inside the search), median over calls
    # (not measurable inside the fused search: its network runs in the compiled call)
    row["polyzero_outside_net_share_inner"] = None if pz.fused else 1 - statistics.median(pz.net_shares)
    row["polyzero_outside_net_share_alone"] = 1 - row["net_alone"]["median_s"] / row["polyzero"]["median_s"]
    row["polyzero_mean_ms"] = statistics.mean(ts["polyzero"]) * 1e3
    row["mctx_mean_ms"] = statistics.mean(ts["mctx"]) * 1e3 if "mctx" in ts else None
    line = (
        f"B={b:4d} sims={n:3d}  polyzero {row['polyzero']['median_s'] * 1e3:9.3f} ms"
        f"  net-alone {row['net_alone']['median_s'] * 1e3:9.3f} ms"
    )
    if jparams is not None:
        row["speedup_vs_mctx"] = row["mctx"]["median_s"] / row["polyzero"]["median_s"]
        line += f"  mctx {row['mctx']['median_s'] * 1e3:9.3f} ms  x{row['speedup_vs_mctx']:.2f}"
    line += (
        f"  outside-net {_share(row['polyzero_outside_net_share_inner'])}"
        f"  (probe {row['probe_ms']:.2f} ms, wall {time.perf_counter() - t_wall:.1f} s)"
    )
    print(line, flush=True)
    return row


def _share(share: float | None) -> str:
    """A share of the time outside the network; '-' where the search ran fused."""
    return "-" if share is None else f"{share:.2f}"


def mctx_job(pz, jparams, b: int, n: int, inputs: tuple, row: dict, visit_check: list) -> tuple:
    """mctx's job at (B, n), after its first call (timed, into `row`) and the check of its
    root visits against polyzero's on the same batch (into `visit_check`)."""
    import jax
    import jax.numpy as jnp

    obs_list, no_mask, invalid = inputs
    mc = make_mctx(n)
    keys = list(jax.random.split(jax.random.PRNGKey(42), 4))
    jobs_args = [(jparams, keys[i], jnp.asarray(obs_list[i]), jnp.asarray(no_mask)) for i in range(4)]
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
        chk = {
            "B": b,
            "num_simulations": n,
            "root": label,
            "rows_exact": float((diff.sum(axis=1) == 0).mean()),
            "max_abs_diff": int(diff.max()),
            "masked_actions_visited": int(pv[inv].sum()) + int(mv[inv].sum()),
        }
        visit_check.append(chk)
        print(
            f"visit check B={b} sims={n} ({label}): rows exact "
            f"{chk['rows_exact']:.3f}, max |diff| {chk['max_abs_diff']}",
            flush=True,
        )
    return "mctx", mc, jobs_args


# ------------------------------------------------------------------ AlphaZero mode
def random_openings(game, n: int, seed: int) -> list:
    """`n` states after 0-8 random moves from the start (none terminal)."""
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


class Counting:
    """An evaluator counting its calls and rows, and timing them."""

    def __init__(self, evaluate):
        self.evaluate = evaluate
        self.calls = 0
        self.rows = 0
        self.net_s = 0.0

    def __call__(self, obs):
        t0 = time.perf_counter()
        out = self.evaluate(obs)
        self.net_s += time.perf_counter() - t0
        self.calls += 1
        self.rows += len(obs)
        return out


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
    params = SearchParams(
        **{
            **{k: getattr(cfg.search, k) for k in vars(cfg.search) if k in SearchParams.__dataclass_fields__},
            "num_simulations": num_sims,
        }
    )
    rng = np.random.default_rng(SEED)

    state_sets = [random_openings(game, batch, seed) for seed in range(2)]
    obs_sets = [algo.encode(s) for s in state_sets]
    calls_per_search = {}

    counting = Counting(evaluate)
    res = algo.search(counting, state_sets[0], params, rng, add_noise=False)
    calls_per_search["calls"] = counting.calls
    calls_per_search["mean_rows_per_call"] = counting.rows / counting.calls
    depth = res.tree.depth_stats()

    def search_job(states):
        algo.search(evaluate, states, params, rng, add_noise=False)

    def net_job(obs):
        for _ in range(num_sims + 1):
            evaluate(obs)

    jobs = [
        ("alphazero_search", search_job, [(s,) for s in state_sets]),
        ("network_alone", net_job, [(o,) for o in obs_sets]),
    ]
    ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=200)
    s = summarize(ts["alphazero_search"])
    n = summarize(ts["network_alone"])
    # the network share inside search, by timing the evaluate calls in one more search
    counting.net_s = 0.0
    t0 = time.perf_counter()
    algo.search(counting, state_sets[1], params, rng, add_noise=False)
    total = time.perf_counter() - t0
    return {
        "B": batch,
        "num_simulations": num_sims,
        "network": repr(cfg.net),
        "parameters": n_params,
        "search_ms": s["median_s"] * 1e3,
        "network_alone_ms": n["median_s"] * 1e3,
        "ratio": s["median_s"] / n["median_s"],
        "search": s,
        "network_alone": n,
        "probe_ms": statistics.median(probe),
        "network_calls_per_search": calls_per_search,
        "net_share_inside_one_search": counting.net_s / total,
        "depth": depth,
    }


def run_meta(args, argv, net_err: float) -> dict:
    """The run's command, machine, library versions, threads and settings."""
    meta = {
        "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
        "seed": SEED,
        "machine": machine_info(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "torch_threads": torch.get_num_threads(),
        "tree_kernel_threads": numba.get_num_threads(),
        "net_mode": args.net_mode,
        "net_parameters": tinynet.num_parameters(),
        "net_max_abs_err_vs_numpy": net_err,
        "loadavg_start": os.getloadavg(),
        "env": {k: os.environ.get(k) for k in ENV_KEYS},
        "search_params": MUZERO_PARAMS,
    }
    meta["numba"] = numba.__version__
    return meta


def mctx_params(meta: dict):
    """The tiny network's weights as JAX arrays, with JAX's and mctx's versions added to
    `meta`; None (and the reason in `meta`) where they are not installed."""
    try:
        import jax
        import jax.numpy as jnp
        import jaxlib
        import mctx
    except ImportError as e:
        print(f"mctx comparison skipped: {e}", flush=True)
        meta["mctx_skipped"] = str(e)
        return None
    meta.update(
        jax=jax.__version__,
        jaxlib=jaxlib.__version__,
        mctx=mctx.__version__,
        jax_devices=[str(d) for d in jax.devices()],
    )
    return jax.tree_util.tree_map(jnp.asarray, tinynet.make_params())


# ------------------------------------------------------------------ main
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-sizes", default="1,16,256")
    ap.add_argument("--sims", default="16,64")
    ap.add_argument("--min-total-s", type=float, default=4.0)
    ap.add_argument("--min-calls", type=int, default=9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--net-mode",
        default="compiled:auto",
        choices=["lean", "script", "eager_ref", "fused"] + [f"compiled:{m}" for m in tinynet.COMPILED_MODES],
        help="compiled:auto (default) is the path self-play takes (net.inference = auto): the "
        "fused search up to search.fused.FUSED_MAX_BATCH trees, ONNX Runtime above; fused: "
        "the fused search at every batch",
    )
    ap.add_argument(
        "--mode",
        default="interleaved",
        choices=["interleaved", "alone"],
        help="interleaved: every job in this process, round-robin; alone: each library in "
        "its own process (search_throughput_alone.py)",
    )
    ap.add_argument("--library", choices=search_throughput_alone.LIBRARIES, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--cpu-time", action="store_true", help="time calls by process CPU time, XLA on the caller")
    ap.add_argument("--no-mctx", action="store_true")
    ap.add_argument("--no-alphazero", action="store_true")
    ap.add_argument(
        "--gumbel",
        action="store_true",
        help="only the Gumbel section (Gumbel, Full Gumbel, pUCT, mctx.gumbel_muzero_policy)",
    )
    ap.add_argument("--quick", action="store_true", help="small settings for a smoke run")
    ap.add_argument("--out", default=DEFAULT_OUT)
    return ap


def main(argv=None):
    ap = _parser()
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

    meta = run_meta(args, argv, net_err)
    jparams = None if args.no_mctx else mctx_params(meta)
    have_mctx = jparams is not None
    meta["clock"] = "process_time" if args.cpu_time else "perf_counter"
    if args.cpu_time and have_mctx:  # XLA's async dispatch would run the calls on a worker thread
        import jax

        jax.config.update("jax_cpu_enable_async_dispatch", False)
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
        gumbel = gumbel_section(args, net, jparams, batch_sizes, sims_list)
        meta["loadavg_end"] = os.getloadavg()
        results = {"meta": meta, "gumbel": gumbel}
        if args.out:
            write_results(args.out, results, render_gumbel_markdown(meta, gumbel))
        return results

    results = {"meta": {**meta, "mode": "interleaved"}, "rows": [], "visit_check": []}
    for b in batch_sizes:
        inputs = batch_inputs(b)
        for n in sims_list:
            results["rows"].append(muzero_row(args, net, jparams, b, n, inputs, results["visit_check"]))

    if not args.no_alphazero:
        az = alphazero_section(args, num_sims=16 if args.quick else 64, batch=16 if args.quick else 256)
        results["alphazero"] = az
        if "skipped" in az:
            print("AlphaZero mode skipped:", az["skipped"], flush=True)
        else:
            print(
                f"AlphaZero B={az['B']} sims={az['num_simulations']}: search "
                f"{az['search_ms']:.1f} ms, network alone {az['network_alone_ms']:.1f} ms, "
                f"ratio {az['ratio']:.3f} (probe {az['probe_ms']:.2f} ms)",
                flush=True,
            )
    results["meta"]["loadavg_end"] = os.getloadavg()

    if args.out:
        write_results(args.out, results, render_markdown(results))
    return results


def render_markdown(results) -> str:
    m = results["meta"]
    mach = m["machine"]
    lines = [
        "# Search throughput: polyzero vs mctx, interleaved in one process",
        "",
        f"- machine: {mach.get('Model name', '?')}, {mach.get('CPU(s)', mach.get('cpu_count'))} CPUs; "
        f"torch threads {m['torch_threads']}, tree-kernel threads {m.get('tree_kernel_threads', 1)}; "
        f"JAX on {', '.join(m.get('jax_devices', ['-']))}",
        f"- command: `{m['command']}`",
        f"- seed {m['seed']}; python {mach['python']}, torch {m['torch']}, numpy {m['numpy']}, "
        f"numba {m.get('numba')}, jax {m.get('jax', '-')}, jaxlib {m.get('jaxlib', '-')}, "
        f"mctx {m.get('mctx', '-')}",
        f"- network: the anchor tiny MuZero MLP ({m['net_parameters']} parameters), "
        f"PyTorch '{m['net_mode']}' path, max |err| vs NumPy reference "
        f"{m['net_max_abs_err_vs_numpy']:.1e}",
        f"- search: {m['search_params']} (mctx: muzero_policy, dirichlet_fraction=0)",
        f"- load average start/end: {m['loadavg_start']} / {m.get('loadavg_end')} (over the CPU count: shared)",
        "",
        "Mode: interleaved (both libraries in this one process, blocked round-robin; "
        "`--mode alone` times each in its own process). "
        f"Median ms per policy call (root forward + search; clock: {m.get('clock', 'perf_counter')}), "
        "interleaved in the same run; "
        "speed-up = mctx / polyzero. 'outside net' = share of polyzero's time not spent "
        "in the network (inner: network calls timed inside the search; alone: 1 - "
        "net-alone / polyzero). Depth: mean node depth / max depth.",
        "",
        "| B | sims | polyzero ms | mctx ms | speed-up | polyzero sims/s | mctx sims/s "
        "| net alone ms | outside net (inner / alone) | depth polyzero | depth mctx | probe ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["rows"]:
        pz, na = r["polyzero"], r["net_alone"]
        mc = r.get("mctx")
        pd, md_ = r["polyzero_depth"], r.get("mctx_depth")
        lines.append(
            f"| {r['B']} | {r['num_simulations']} | {pz['median_s'] * 1e3:.3f} | "
            + (f"{mc['median_s'] * 1e3:.3f} | **{r['speedup_vs_mctx']:.2f}x** | " if mc else "- | - | ")
            + f"{pz['sims_per_s']:,.0f} | "
            + (f"{mc['sims_per_s']:,.0f} | " if mc else "- | ")
            + f"{na['median_s'] * 1e3:.3f} | {_share(r['polyzero_outside_net_share_inner'])} / "
            f"{r['polyzero_outside_net_share_alone']:.2f} | "
            f"{pd['mean_node_depth']:.2f} / {pd['max_depth']} | "
            + (f"{md_['mean_node_depth']:.2f} / {md_['max_depth']} | " if md_ else "- | ")
            + f"{r['probe_ms']:.2f} |"
        )
    if results["visit_check"]:
        lines += [
            "",
            "## Root visit counts, polyzero vs mctx (same batch, before timing)",
            "",
            "| B | sims | root | rows matching exactly | max abs diff | visits to masked actions |",
            "|---:|---:|---|---:|---:|---:|",
        ]
        for c in results["visit_check"]:
            lines.append(
                f"| {c['B']} | {c['num_simulations']} | {c['root']} | "
                f"{c['rows_exact']:.3f} | {c['max_abs_diff']} | {c['masked_actions_visited']} |"
            )
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
                f"(mean {az['network_calls_per_search']['mean_rows_per_call']:.1f} rows per call).",
                "",
                "| search ms | same number of network calls alone ms | ratio (target <= 1.15) "
                "| network share inside one search | depth mean / max | probe ms |",
                "|---:|---:|---:|---:|---:|---:|",
                f"| {az['search_ms']:.1f} | {az['network_alone_ms']:.1f} | **{az['ratio']:.3f}** | "
                f"{az['net_share_inside_one_search']:.2f} | {az['depth']['mean_node_depth']:.2f} / "
                f"{az['depth']['max_depth']} | {az['probe_ms']:.2f} |",
            ]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
