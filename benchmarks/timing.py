"""Timing helpers shared by the benchmarks: the anchor harness's speed probe and its
blocked round-robin timing (every job of a comparison sees the same machine phase),
order statistics, and the machine's description."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time


def _probe_work(n=50_000):
    s = 0
    for i in range(n):
        s += i * i
    return s


def probe_ms():
    """The anchor harness's speedprobe: a fixed pure-Python loop (~2.7 ms quiet)."""
    t0 = time.perf_counter()
    _probe_work()
    return (time.perf_counter() - t0) * 1e3


def time_interleaved(jobs, min_calls, min_total_s, max_rounds, block_s=0.03, block_min_calls=2):
    """Blocked round-robin (as the anchor's mctx_search.time_interleaved): each round
    runs, for each job, a block of back-to-back calls (>= block_min_calls and
    block_s seconds), each timed on its own, the first of every block dropped;
    a speedprobe sample ends each round. jobs: [(name, fn, args_list)], fn must
    block until its result is ready."""
    times = {name: [] for name, _, _ in jobs}
    probe = []
    t_start = time.perf_counter()
    r = 0
    while (min(len(v) for v in times.values()) < min_calls
           or time.perf_counter() - t_start < min_total_s) and r < max_rounds:
        for name, fn, args_list in jobs:
            t_block, k = time.perf_counter(), 0
            while k < block_min_calls or time.perf_counter() - t_block < block_s:
                args = args_list[(r + k) % len(args_list)]
                t0 = time.perf_counter()
                fn(*args)
                dt = time.perf_counter() - t0
                if k > 0:
                    times[name].append(dt)
                k += 1
        probe.append(probe_ms())
        r += 1
    return times, probe


def summarize(ts):
    ts = sorted(ts)
    q = lambda f: ts[min(len(ts) - 1, int(f * (len(ts) - 1) + 0.5))]  # noqa: E731
    return {"n": len(ts), "median_s": statistics.median(ts), "min_s": ts[0],
            "p25_s": q(0.25), "p75_s": q(0.75), "max_s": ts[-1]}


def machine_info():
    info = {"python": platform.python_version(), "cpu_count": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket"):
                info[k.strip()] = v.strip()
    except OSError:
        pass
    return info


def write_results(out, result: dict, markdown: str) -> None:
    """`out` (JSON) and the Markdown beside it (same name, .md)."""
    import json
    from pathlib import Path

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    out.with_suffix(".md").write_text(markdown)
    print(f"wrote {out} and {out.with_suffix('.md')}", flush=True)
