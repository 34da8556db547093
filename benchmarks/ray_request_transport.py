"""The round trip of one self-play inference request under Ray, the transport alone
(issue 60; docs/cluster.md "One GPU box"): a worker's `RemoteEvaluator` call to a
server that answers at once (no network), so what is timed is what a request costs
besides the forward -- Ray's call, the arrays' way to the server, the reply.

Arms: requests as float32 or with their board planes as uint8
(`ray_inference.pack_planes`), each with Ray's default inline-argument limit (100 KB;
above it an argument goes through the object store) and with the local cluster's
(`ray_actors.INLINE_BYTES`). The limit is set when a cluster starts, so each limit runs
in a process of its own, the limits alternating round by round; inside one, the two
request forms alternate call by call. Requests: `--rows` random 0/1 planes of the
game's observation shape (256 Connect Four observations are 129 KB of float32).

    python benchmarks/ray_request_transport.py --rounds 4 --calls 200 \\
        --out benchmarks/results/ray_request_transport.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, interval, machine_line, timing_meta, write_results  # noqa: E402

LIMITS = {"Ray's default (100 KB)": None, "the local cluster's (1 MiB)": "INLINE_BYTES"}
FORMS = ("float32", "planes as uint8")


class EchoServer:
    """`InferenceServer.call`'s signature and unpacking, with an answer of the reply's
    shape (7 logits and a value per row) instead of a forward."""

    def call(self, method: str, arrays: tuple, packed: tuple) -> tuple:
        from polyzero.train.ray_inference import unpack_planes

        rows = unpack_planes(arrays, packed)[0]
        return np.zeros((len(rows), 7), np.float32), np.zeros(len(rows), np.float32)


def child(limit: str, game: str, rows: int, calls: int) -> dict:
    """One cluster with `limit`: seconds and caller CPU seconds per call of each form."""
    import pyspiel
    import ray

    from polyzero.train import ray_actors
    from polyzero.train.ray_inference import RemoteEvaluator

    ray_actors.start_ray(ray, 2, None, None if LIMITS[limit] is None else ray_actors.INLINE_BYTES)
    shape = pyspiel.load_game(game).observation_tensor_shape()
    planes = (np.random.default_rng(0).random((rows, *shape)) > 0.5).astype(np.float32)
    server = ray.remote(max_concurrency=2)(EchoServer).remote()
    remote = RemoteEvaluator(server)
    plain = RemoteEvaluator(server)
    plain._call = lambda method, arrays: ray.get(server.call.remote(method, arrays, (False,) * len(arrays)))
    clients = {"float32": plain, "planes as uint8": remote}
    for c in clients.values():  # warm-up: the actor's start, the first transfers
        for _ in range(5):
            c(planes)
    wall = dict.fromkeys(FORMS, 0.0)
    cpu = dict.fromkeys(FORMS, 0.0)
    for _ in range(calls):
        for form in FORMS:
            t, c = time.perf_counter(), time.process_time()
            clients[form](planes)
            wall[form] += time.perf_counter() - t
            cpu[form] += time.process_time() - c
    ray.shutdown()
    return {f: {"ms_per_call": 1e3 * wall[f] / calls, "caller_cpu_ms_per_call": 1e3 * cpu[f] / calls} for f in FORMS}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="connect_four")
    ap.add_argument("--rows", type=int, default=256, help="rows per request (a worker's concurrent games)")
    ap.add_argument("--calls", type=int, default=200, help="calls of each form per round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", default="benchmarks/results/ray_request_transport.json")
    ap.add_argument("--child", choices=list(LIMITS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for name in ("rows", "calls", "rounds"):  # refused here, not as a child's traceback or an empty mean
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, not {getattr(args, name)}")
    if args.child:
        print(json.dumps(child(args.child, args.game, args.rows, args.calls)))
        return
    runs = {limit: [] for limit in LIMITS}
    for r in range(args.rounds):
        for limit in LIMITS if r % 2 == 0 else reversed(LIMITS):
            cmd = [PY, __file__, "--child", limit, "--game", args.game, "--rows", str(args.rows)]
            out = subprocess.run([*cmd, "--calls", str(args.calls)], capture_output=True, text=True, check=True)
            runs[limit].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {r} {limit}: {runs[limit][-1]}", flush=True)
    table = []
    for limit, rounds in runs.items():
        for form in FORMS:
            ms = [x[form]["ms_per_call"] for x in rounds]
            cpu = [x[form]["caller_cpu_ms_per_call"] for x in rounds]
            table.append({"limit": limit, "form": form, "ms_per_call": interval(ms), "caller_cpu_ms": interval(cpu)})
    base = statistics.mean(x["float32"]["ms_per_call"] for x in runs["Ray's default (100 KB)"])
    meta = timing_meta(argv, game=args.game, rows=args.rows, calls=args.calls, rounds=args.rounds)
    meta["loadavg_end"] = os.getloadavg()
    lines = [
        "# One self-play inference request under Ray, the transport alone",
        "",
        f"- command: `{meta['command']}`",
        f"- machine: {machine_line()}; load average (1 min) {meta['loadavg_start'][0]:.1f} at the start, "
        f"{meta['loadavg_end'][0]:.1f} at the end",
        f"- requests: {args.rows} random 0/1 planes of {args.game}'s observation shape; a server that answers at "
        "once; the two limits in processes of their own, alternating round by round; the two forms call by call",
        "- per call: mean over rounds [95% interval]; ratio: the mean against float32 under Ray's default",
        "",
        "| inline limit | request | ms per call | caller CPU ms per call | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for row in table:
        m, lo, hi = row["ms_per_call"]
        c, clo, chi = row["caller_cpu_ms"]
        lines.append(
            f"| {row['limit']} | {row['form']} | {m:.2f} [{lo:.2f}, {hi:.2f}] | {c:.2f} [{clo:.2f}, {chi:.2f}] "
            f"| {base / m:.2f}x |"
        )
    write_results(Path(args.out), {"meta": meta, "rounds": runs, "table": table}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
