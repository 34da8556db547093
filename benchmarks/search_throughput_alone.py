"""search_throughput's alone mode: each library timed in its own process.

In one process, torch's and XLA's thread pools and caches slow each other (mctx's
B = 256 time moved between 102 and 300 ms there). Here the parent starts one child
per library with the same settings; each times only its own jobs (blocked round-robin
as in the interleaved mode):

* polyzero: root forward + search, and the same network calls alone (net alone);
* mctx: jitted ``muzero_policy``, and its network work alone (root_fn and n
  recurrent_fn calls inside one jitted fori_loop: XLA's loop, the anchor's net_loop);

and writes its medians and the root visit counts of one fixed batch, which the parent
compares across the two (the same check as the interleaved mode's).

With ``--cpu-time`` each child times its calls by its process's CPU time, which other
jobs on a shared host do not inflate as they do the wall clock; the mctx child then
runs XLA on one intra-op thread and on the caller (no async dispatch), so that its
CPU time is its work, as polyzero's one thread is.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tinynet
from common import ONE_THREAD, summarize, time_interleaved

LIBRARIES = ("polyzero", "mctx")


def child(args) -> None:
    """Time one library's jobs for every (B, sims); write them to args.child_out."""
    import search_throughput_jobs as st

    net = tinynet.TinyNetNumpy(args.net_mode) if args.library == "polyzero" else None
    rows = []
    for b in [int(x) for x in args.batch_sizes.split(",")]:
        obs_list = [tinynet.make_obs(b, seed=s) for s in range(4)]
        for n in [int(x) for x in args.sims.split(",")]:
            if args.library == "polyzero":
                pz = st.PolyzeroMuZero(net, n)
                visits = pz(obs_list[0]).root_visits  # also warms the kernels
                jobs = [
                    ("polyzero", pz, [(o,) for o in obs_list]),
                    ("net_alone", st.net_alone_fn(net, n, b), [(o,) for o in obs_list]),
                ]
            else:
                import jax
                import jax.numpy as jnp

                if args.cpu_time:  # async dispatch would run the calls on a worker thread
                    jax.config.update("jax_cpu_enable_async_dispatch", False)

                params = jax.tree_util.tree_map(jnp.asarray, tinynet.make_params())
                keys = list(jax.random.split(jax.random.PRNGKey(42), 4))
                no_mask = jnp.zeros((b, tinynet.A), bool)
                call_args = [(params, keys[i], jnp.asarray(obs_list[i]), no_mask) for i in range(4)]
                mc, loop = st.make_mctx(n), st.make_mctx(n, net_loop=True)
                visits = np.asarray(mc(*call_args[0])[1])
                loop(*call_args[0])
                jobs = [("mctx", mc, call_args), ("mctx_net_loop", loop, call_args)]
            clock = time.process_time if args.cpu_time else time.perf_counter
            ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=500, clock=clock)
            row = {
                "B": b,
                "num_simulations": n,
                "path": _path(net, args.net_mode, b, n),
                "probe_ms": statistics.median(probe),
                "root_visits": visits.astype(int).tolist(),
            }
            for name in ts:
                row[name] = {**summarize(ts[name]), "sims_per_s": b * n / statistics.median(ts[name])}
            rows.append(row)
            print(
                f"[{args.library} alone] B={b} sims={n} "
                + "  ".join(f"{k} {row[k]['median_s'] * 1e3:.3f} ms" for k in ts),
                flush=True,
            )
    with open(args.child_out, "w") as fh:
        json.dump({"library": args.library, "loadavg": os.getloadavg(), "rows": rows}, fh)


def _path(net, net_mode: str, batch: int, num_simulations: int) -> str:
    """How polyzero searched at this batch: 'fused' (search.fused: simulations and network
    in one compiled call; 'fused, N threads': its trees in N ranges, one a thread) or the
    network path of `net_mode`; mctx's child: mctx."""
    if net is None:
        return "mctx"
    if net.program is None or not net._fused(batch):
        return net_mode
    from polyzero.search.fused import fused_chunks

    chunks = fused_chunks(batch, num_simulations)
    return "fused" if chunks == 1 else f"fused, {chunks} threads"


def run(args, meta: dict, libraries=LIBRARIES) -> dict:
    """Start one child per library, then merge their rows and compare root visits."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "search_throughput.py")
    common = [
        "--batch-sizes",
        args.batch_sizes,
        "--sims",
        args.sims,
        "--threads",
        str(args.threads),
        "--min-total-s",
        str(args.min_total_s),
        "--min-calls",
        str(args.min_calls),
        "--net-mode",
        args.net_mode,
    ] + (["--cpu-time"] if args.cpu_time else [])
    env = dict(os.environ)
    if args.cpu_time:
        env.setdefault("XLA_FLAGS", ONE_THREAD["XLA_FLAGS"])
    children = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lib in libraries:
            out = os.path.join(tmp, f"{lib}.json")
            subprocess.run([sys.executable, script, "--library", lib, "--child-out", out, *common], check=True, env=env)
            with open(out) as fh:
                children[lib] = json.load(fh)
    rows, checks = [], []
    for pz in children["polyzero"]["rows"]:
        row = {k: pz[k] for k in ("B", "num_simulations", "polyzero", "net_alone")}
        row["path"] = pz.get("path", args.net_mode)
        row["probe_ms"] = {"polyzero": pz["probe_ms"]}
        mc = next(
            (
                r
                for r in children.get("mctx", {}).get("rows", [])
                if (r["B"], r["num_simulations"]) == (pz["B"], pz["num_simulations"])
            ),
            None,
        )
        if mc:
            row.update(mctx=mc["mctx"], mctx_net_loop=mc["mctx_net_loop"])
            row["probe_ms"]["mctx"] = mc["probe_ms"]
            row["speedup_vs_mctx"] = mc["mctx"]["median_s"] / pz["polyzero"]["median_s"]
            row["net_alone_vs_xla_loop"] = pz["net_alone"]["median_s"] / mc["mctx_net_loop"]["median_s"]
            diff = np.abs(np.asarray(pz["root_visits"]) - np.asarray(mc["root_visits"]))
            checks.append(
                {
                    "B": pz["B"],
                    "num_simulations": pz["num_simulations"],
                    "root": "all legal",
                    "rows_exact": float((diff.sum(axis=1) == 0).mean()),
                    "max_abs_diff": int(diff.max()),
                }
            )
        rows.append(row)
    return {
        "meta": {
            **meta,
            "mode": "alone",
            "children_loadavg": {k: v["loadavg"] for k, v in children.items()},
            "children_xla_flags": env.get("XLA_FLAGS"),
        },
        "rows": rows,
        "visit_check": checks,
    }


def _clock_words(meta: dict) -> str:
    if meta.get("clock") == "process_time":
        return f"process CPU time; the mctx child's XLA_FLAGS: {meta.get('children_xla_flags')}"
    return "wall clock"


def render(results) -> str:
    m = results["meta"]
    mach = m["machine"]
    lines = [
        "# Search throughput, each library alone in its own process: polyzero vs mctx",
        "",
        f"- machine: {mach.get('Model name', '?')}, {mach.get('CPU(s)', mach.get('cpu_count'))} CPUs; "
        f"torch threads {m['torch_threads']}, tree-kernel threads {m.get('tree_kernel_threads', 1)} "
        f"({m['env'].get('POLYZERO_PARALLEL_TREES') or 'auto'}); mctx's XLA: "
        f"{m.get('children_xla_flags') or 'its default threads'}",
        f"- command: `{m['command']}`",
        f"- network: the anchor tiny MuZero MLP, polyzero's '{m['net_mode']}' path; search: {m['search_params']}",
        f"- load average start/end: {m['loadavg_start']} / {m.get('loadavg_end')}; the speed probe "
        "(last column) reads ~2.5 ms on the quiet 2-core machine: higher values mean other jobs "
        "shared its cores during the run",
        "",
        f"Median ms per policy call ({_clock_words(m)}), each library in its own process (mode: alone); net alone: "
        "polyzero's 1 + n network calls at batch B without a tree (path fused: in one compiled "
        "loop, as the fused search runs them); XLA loop: mctx's root_fn + n recurrent_fn in one "
        "jitted fori_loop. Path: how polyzero searched (fused: polyzero.search.fused, every "
        "simulation and the network in one compiled call; compiled:auto above "
        "search.fused.FUSED_MAX_BATCH trees: the per-simulation loop over ONNX Runtime).",
        "",
        "| B | sims | path | polyzero ms | mctx ms | speed-up | polyzero net alone ms | XLA loop ms "
        "| net alone / XLA loop | probe ms (polyzero / mctx) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results["rows"]:
        mc, loop = r.get("mctx"), r.get("mctx_net_loop")
        lines.append(
            f"| {r['B']} | {r['num_simulations']} | {r.get('path', '-')} | {r['polyzero']['median_s'] * 1e3:.3f} | "
            + (f"{mc['median_s'] * 1e3:.3f} | **{r['speedup_vs_mctx']:.2f}x** | " if mc else "- | - | ")
            + f"{r['net_alone']['median_s'] * 1e3:.3f} | "
            + (f"{loop['median_s'] * 1e3:.3f} | {r['net_alone_vs_xla_loop']:.2f} | " if loop else "- | - | ")
            + " / ".join(f"{v:.2f}" for v in r["probe_ms"].values())
            + " |"
        )
    if results["visit_check"]:
        lines += [
            "",
            "Root visit counts, polyzero vs mctx (same batch, all legal):",
            "",
            "| B | sims | rows matching exactly | max abs diff |",
            "|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {c['B']} | {c['num_simulations']} | {c['rows_exact']:.3f} | {c['max_abs_diff']} |"
            for c in results["visit_check"]
        ]
    return "\n".join(lines) + "\n"
