"""The fused search on one thread against several (search.fused.simulate_fused_parallel).

polyzero's MuZero-mode search over the anchor's tiny MLP (the fused search, every
simulation in one compiled call) at each B and number of simulations, its trees split
into 1 and into `--threads` ranges (search.fused.fused_chunks forced to each), the
variants interleaved call by call in one process; wall clock and this process's CPU
time per call, the speed probe and the load average beside them. The two variants'
root visits are compared first (they must be equal, bit for bit: tests/test_fused_threads.py).

Also the price of the fused search's network without BLAS (search.fused._simulate: the
layers without panels on the register tiles at every batch): the anchor's recurrent
program alone at B rows, kernels.mlp.run_rows with and without BLAS, interleaved, CPU time.

Usage:
  python benchmarks/fused_threads_ab.py --threads 2 --batch-sizes 16,32,64,128,256 --sims 16,64
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinynet  # noqa: E402
from common import machine_info, probe_ms, write_results  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search import fused  # noqa: E402
from polyzero.search.kernels.mlp import run_rows  # noqa: E402
from search_throughput_jobs import PolyzeroMuZero  # noqa: E402


def search_row(net, batch: int, sims: int, threads: int, rounds: int) -> dict:
    search = PolyzeroMuZero(net, sims)
    obs = [tinynet.make_obs(batch, seed=s) for s in range(2)]
    variants = (1, threads)
    visits = {}
    for chunks in variants:  # warm, and the root visits of each
        fused.fused_chunks = lambda _b, _n, c=chunks: c
        visits[chunks] = search(obs[0]).root_visits
    wall = {c: [] for c in variants}
    cpu = {c: [] for c in variants}
    probes = []
    for r in range(rounds):
        for chunks in variants if r % 2 == 0 else variants[::-1]:
            fused.fused_chunks = lambda _b, _n, c=chunks: c
            w0, c0 = time.perf_counter(), time.process_time()
            search(obs[r % 2])
            cpu[chunks].append(time.process_time() - c0)
            wall[chunks].append(time.perf_counter() - w0)
        probes.append(probe_ms())
    row = {
        "B": batch,
        "num_simulations": sims,
        "visits_equal": bool(np.array_equal(visits[1], visits[threads])),
        "probe_ms": statistics.median(probes),
        "loadavg_1min": os.getloadavg()[0],
    }
    for chunks in variants:
        row[f"chunks{chunks}"] = {
            "wall_ms": statistics.median(wall[chunks]) * 1e3,
            "cpu_ms": statistics.median(cpu[chunks]) * 1e3,
        }
    row["speedup"] = row["chunks1"]["wall_ms"] / row[f"chunks{threads}"]["wall_ms"]
    print(
        f"B={batch:4d} sims={sims:3d}  1 thread {row['chunks1']['wall_ms']:8.3f} ms  {threads} threads "
        f"{row[f'chunks{threads}']['wall_ms']:8.3f} ms  x{row['speedup']:.2f}  visits equal {row['visits_equal']}"
        f"  (probe {row['probe_ms']:.2f} ms, load {row['loadavg_1min']:.2f})",
        flush=True,
    )
    return row


def network_row(net, batch: int, calls: int, rounds: int) -> dict:
    """The recurrent program alone at `batch` rows, `calls` calls a sample, with and without BLAS."""
    program = net.program
    scratch = program.scratch(batch)
    times = {True: [], False: []}
    for blas in (True, False):
        run_rows(program.ops, program.weights, scratch, batch, blas)
    for _ in range(rounds):
        for blas in (True, False):
            c0 = time.process_time()
            for _ in range(calls):
                run_rows(program.ops, program.weights, scratch, batch, blas)
            times[blas].append((time.process_time() - c0) / calls)
    row = {
        "B": batch,
        "blas_us": statistics.median(times[True]) * 1e6,
        "tiles_us": statistics.median(times[False]) * 1e6,
    }
    print(f"network B={batch}: BLAS {row['blas_us']:.1f} us, tiles {row['tiles_us']:.1f} us", flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-sizes", default="16,32,64,128,256")
    ap.add_argument("--sims", default="16,64")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", default="benchmarks/results/fused_threads_ab.json")
    args = ap.parse_args(argv)
    set_threads(args.threads)
    net = tinynet.TinyNetNumpy("fused")
    meta = {
        "command": " ".join(["benchmarks/fused_threads_ab.py", *(argv or sys.argv[1:])]),
        "machine": machine_info(),
        "threads": args.threads,
        "rounds": args.rounds,
        "loadavg_start": os.getloadavg(),
    }
    batches = [int(x) for x in args.batch_sizes.split(",")]
    rows = [search_row(net, b, n, args.threads, args.rounds) for b in batches for n in map(int, args.sims.split(","))]
    set_threads(1)
    network = [network_row(net, b, 20, args.rounds) for b in batches if b >= 64]
    meta["loadavg_end"] = os.getloadavg()
    results = {"meta": meta, "rows": rows, "network": network}
    write_results(args.out, results, render(results))
    return results


def render(results) -> str:
    m = results["meta"]
    t = m["threads"]
    lines = [
        f"# The fused search on 1 and {t} threads (search.fused), interleaved in one process",
        "",
        f"- command: `{m['command']}`; machine: {m['machine'].get('Model name', '?')}, "
        f"{m['machine'].get('CPU(s)', '?')} CPUs",
        f"- load average start/end: {m['loadavg_start']} / {m['loadavg_end']}; the speed probe reads "
        "~2.5 ms on the quiet machine",
        "",
        f"Median ms per policy call (root forward + search) over {m['rounds']} rounds; the trees in 1 "
        f"range or {t} (fused_chunks forced), root visits compared first.",
        "",
        f"| B | sims | 1 thread wall ms | {t} threads wall ms | speed-up | 1 thread CPU ms | {t} threads CPU ms "
        "| visits equal | probe ms | load |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in results["rows"]:
        a, b = r["chunks1"], r[f"chunks{t}"]
        lines.append(
            f"| {r['B']} | {r['num_simulations']} | {a['wall_ms']:.3f} | {b['wall_ms']:.3f} | **{r['speedup']:.2f}x** "
            f"| {a['cpu_ms']:.3f} | {b['cpu_ms']:.3f} | {r['visits_equal']} | {r['probe_ms']:.2f} "
            f"| {r['loadavg_1min']:.2f} |"
        )
    if results["network"]:
        lines += [
            "",
            "The recurrent program alone, one thread, CPU time per call: the layers without panels "
            "through BLAS (run_program from 64 rows) or the register tiles (the fused search's choice).",
            "",
            "| B | BLAS us | tiles us | tiles / BLAS |",
            "|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['B']} | {r['blas_us']:.1f} | {r['tiles_us']:.1f} | {r['tiles_us'] / r['blas_us']:.3f} |"
            for r in results["network"]
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
