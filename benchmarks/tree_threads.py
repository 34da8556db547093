"""The tree kernels' thread choice on a busy machine (kernels.tree_chunks).

polyzero's MuZero-mode search over the anchor's tiny MLP (`net.inference = auto`:
ONNX Runtime at this batch, the per-simulation loop) at B = 256 trees with
`--threads` numba threads, the kernels' ranges chosen two ways, interleaved call by
call in one process: POLYZERO_PARALLEL_TREES=always (numba's thread count, the
choice before 2026-11-28) and auto (no more ranges than the cores the load average
leaves free). Run it while other jobs keep the cores busy to see what auto avoids,
and on an idle machine to see what it keeps.

Usage:
  python benchmarks/tree_threads.py --threads 2 --rounds 12
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinynet  # noqa: E402
from common import machine_info, probe_ms, write_results  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search import kernels  # noqa: E402
from search_throughput_jobs import PolyzeroMuZero  # noqa: E402

POLICIES = ("always", "auto")


def measure(args) -> dict:
    set_threads(args.threads)
    search = PolyzeroMuZero(tinynet.TinyNetNumpy("compiled:auto"), args.sims)
    obs = [tinynet.make_obs(args.batch, seed=s) for s in range(2)]
    times: dict[str, list[float]] = {p: [] for p in POLICIES}
    chunks: dict[str, list[int]] = {p: [] for p in POLICIES}
    loads, probes = [], []
    for policy in POLICIES:  # warm both kernels
        os.environ[kernels.PARALLEL_TREES_ENV] = policy
        search(obs[0])
    for r in range(args.rounds):
        for policy in POLICIES:
            os.environ[kernels.PARALLEL_TREES_ENV] = policy
            chunks[policy].append(kernels.tree_chunks(args.batch))
            t0 = time.perf_counter()
            search(obs[r % 2])
            times[policy].append(time.perf_counter() - t0)
        loads.append(os.getloadavg()[0])
        probes.append(probe_ms())
    os.environ.pop(kernels.PARALLEL_TREES_ENV, None)
    return {
        "meta": {
            "command": " ".join(["benchmarks/tree_threads.py", *sys.argv[1:]]),
            "machine": machine_info(),
            "threads": args.threads,
            "batch": args.batch,
            "num_simulations": args.sims,
            "loadavg_1min": {"min": min(loads), "max": max(loads)},
            "probe_ms_median": statistics.median(probes),
        },
        "rows": [
            {
                "policy": p,
                "chunks": sorted(set(chunks[p])),
                "median_ms": statistics.median(times[p]) * 1e3,
                "max_ms": max(times[p]) * 1e3,
                "calls": len(times[p]),
            }
            for p in POLICIES
        ],
    }


def render(res: dict) -> str:
    m = res["meta"]
    mach = m["machine"]
    lines = [
        "# Tree kernels' threads on a busy machine (kernels.tree_chunks)",
        "",
        f"- machine: {mach.get('Model name', '?')}, {mach.get('CPU(s)', mach.get('cpu_count'))} CPUs; "
        f"numba and torch threads {m['threads']}",
        f"- command: `{m['command']}`",
        f"- B = {m['batch']} trees, {m['num_simulations']} simulations, the anchor's tiny MLP through "
        "`net.inference = auto`; the two policies interleaved call by call",
        f"- 1-minute load average during the run {m['loadavg_1min']['min']:.2f}-{m['loadavg_1min']['max']:.2f} "
        f"on {mach.get('CPU(s)', mach.get('cpu_count'))} cores; speed probe median {m['probe_ms_median']:.2f} ms "
        "(~2.5 on the quiet machine)",
        "",
        "| POLYZERO_PARALLEL_TREES | ranges chosen | median ms per search | max ms | calls |",
        "|---|---|---:|---:|---:|",
    ]
    for r in res["rows"]:
        lines.append(
            f"| {r['policy']} | {', '.join(map(str, r['chunks']))} | {r['median_ms']:.1f} | "
            f"{r['max_ms']:.1f} | {r['calls']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--sims", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--out", default="benchmarks/results/tree_threads.json")
    args = ap.parse_args(argv)
    res = measure(args)
    write_results(args.out, res, render(res))
    print(render(res))


if __name__ == "__main__":
    main()
