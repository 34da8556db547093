"""Self-play throughput of the Ray driver's workers against their number.

The learner is paused: N SelfPlayWorker actors (one torch thread each) play
with fixed weights, and we count searched positions (moves) per second over
all of them. Runs with different N are interleaved round by round so they see
the same machine phase; a speed probe is sampled each round.

  python benchmarks/scaling.py --workers 1,2 --rounds 4 --seconds 20 --game connect_four
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ray
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from polyzero.config import build_config  # noqa: E402
from polyzero.train.ray_driver import SelfPlayWorker  # noqa: E402


def probe_ms() -> float:
    """A fixed pure-Python loop (the anchor harness's speed probe)."""
    t0 = time.perf_counter()
    s = 0
    for i in range(50_000):
        s += i * i
    return (time.perf_counter() - t0) * 1e3


def measure(workers, seconds: float, chunk: int) -> dict:
    """Positions searched per second by all `workers` together, after a warm-up task."""
    ray.get([w.play.remote(1) for w in workers])
    t0 = time.perf_counter()
    refs = {w.play.remote(chunk): w for w in workers}
    searches = positions = 0
    while time.perf_counter() - t0 < seconds:
        ready, _ = ray.wait(list(refs), num_returns=1)
        w = refs.pop(ready[0])
        out = ray.get(ready[0])
        searches += out["stats"]["searches"]
        positions += out["stats"]["positions"]
        refs[w.play.remote(chunk)] = w
    ray.get(list(refs))  # let the last tasks finish outside the window
    dt = time.perf_counter() - t0
    return {"searches_per_s": searches / dt, "positions_per_s": positions / dt}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="connect_four")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--out", default="benchmarks/results/scaling.json")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    cfg = build_config(args.game, "alphazero", overrides=["threads=1"] + args.overrides)
    ray.init(
        num_cpus=max(counts),
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}},
    )
    # Workers search on the CPU unless --set ray.worker_gpus=F gives each a share of a GPU.
    remote = ray.remote(num_cpus=1, num_gpus=cfg.ray.worker_gpus)(SelfPlayWorker)
    pool = [remote.remote(cfg.to_dict(), i) for i in range(max(counts))]
    chunk = cfg.selfplay.concurrent_games
    rows = {n: [] for n in counts}
    probes = []
    for r in range(args.rounds):
        for n in counts if r % 2 == 0 else counts[::-1]:
            probes.append(probe_ms())
            rows[n].append(measure(pool[:n], args.seconds, chunk))
            print(f"round {r} workers {n}: {rows[n][-1]}", flush=True)
    summary = {n: {k: statistics.median(m[k] for m in rows[n]) for k in rows[n][0]} for n in counts}
    base = summary[counts[0]]["searches_per_s"]
    for n in counts:
        summary[n]["speedup"] = summary[n]["searches_per_s"] / base
        summary[n]["efficiency"] = summary[n]["speedup"] / (n / counts[0])
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if "Model name" in line), "?")
    where = (
        f"each worker on {cfg.ray.worker_gpus:g} of a GPU ({torch.cuda.get_device_name(0)})"
        if cfg.ray.worker_gpus > 0
        else "workers on the CPU"
    )
    result = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "machine": {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version()},
        "workers_on": where,
        "game": args.game,
        "config": cfg.to_dict(),
        "rounds": rows,
        "summary": summary,
        "probe_ms": {"median": statistics.median(probes), "min": min(probes), "max": max(probes)},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    lines = [
        f"# Self-play scaling ({args.game})",
        "",
        f"- command: `{result['command']}`",
        f"- machine: {model}, {os.cpu_count()} cores",
        f"- {where}, one torch thread per worker; learner paused; {args.rounds} interleaved rounds of "
        f"{args.seconds:.0f} s; speed probe median {result['probe_ms']['median']:.2f} ms "
        f"(min {result['probe_ms']['min']:.2f}, max {result['probe_ms']['max']:.2f})",
        "",
        "| workers | positions searched / s | finished-game positions / s | speed-up | efficiency |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in counts:
        s = summary[n]
        lines.append(
            f"| {n} | {s['searches_per_s']:.1f} | {s['positions_per_s']:.1f} | "
            f"{s['speedup']:.2f}x | {s['efficiency']:.2f} |"
        )
    Path(args.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    ray.shutdown()


if __name__ == "__main__":
    main()
