"""The Connect Four preset's network alone through ONNX Runtime: the direct convolution
against Winograd's F(m x m, 3 x 3) (`net.winograd`, polyzero/nets/winograd.py), in one
process, one call of every arm per round (arms interleaved, so a shared machine's
phases weigh on all alike), timed by the process's CPU time (one thread: what the call
cost, not what the scheduler gave it) and by the wall clock. Also what a weight
publication costs each arm (`Evaluator.load_state_dict` then the first call, which
builds the new session), and the largest output difference from PyTorch eager.

  python benchmarks/selfplay_winograd.py --out benchmarks/results/selfplay_winograd.json
  python benchmarks/selfplay_winograd.py --rounds 5 --batches 64 --out /tmp/w.json       # smoke run
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import timing_meta, write_results  # noqa: E402
from polyzero.nets.inference import Evaluator, set_threads  # noqa: E402
from selfplay_throughput import build_setting  # noqa: E402


def arm_name(ev: Evaluator) -> str:
    """The convolution an evaluator runs: "direct" or the tiles, e.g. "F(6x4,3x3)"."""
    w = ev._winograd
    return "direct" if w is None else f"F({w.m_h}x{w.m_w},3x3)"


def arms(algo, tiles: list[int]) -> dict[str, Evaluator]:
    """One evaluator per arm over the same network (no cache), named by the tiles it runs
    (two m that give a board the same tiles are one arm)."""
    net = algo.build_network().eval()
    made: dict[str, Evaluator] = {}
    for m in tiles:
        ev = Evaluator(net, "cpu", "onnx", 0, m)
        made.setdefault(arm_name(ev), ev)
    return made


def run(preset: str, tiles: list[int], batches: list[int], rounds: int, publications: int) -> dict:
    cfg, game, algo, _ = build_setting(preset, 64, "onnx", "cpu", 0)
    return time_arms(algo, tiles, batches, rounds, publications)


def time_arms(algo, tiles: list[int], batches: list[int], rounds: int, publications: int) -> dict:
    """Each arm's CPU and wall time per call at each batch (medians), its publication's
    cost and its largest difference from PyTorch eager, for `algo`'s untrained network."""
    made = arms(algo, tiles)
    net = next(iter(made.values())).net
    rng = np.random.default_rng(0)
    shape = algo.encoder.shape
    inputs = {b: (rng.random((b, *shape)) < 0.3).astype(np.float32) for b in batches}
    with torch.inference_mode():
        ref = {b: [t.numpy() for t in net(torch.from_numpy(x))] for b, x in inputs.items()}
    error = {}
    for name, ev in made.items():
        err = 0.0
        for b, x in inputs.items():
            out = ev(x)
            err = max(err, *(float(np.abs(o - r).max()) for o, r in zip(out, ref[b])))
        error[name] = err
    cpu = {n: {b: [] for b in batches} for n in made}
    wall = {n: {b: [] for b in batches} for n in made}
    for _ in range(rounds):
        for b, x in inputs.items():
            for name, ev in made.items():
                c0, w0 = time.process_time(), time.perf_counter()
                ev(x)
                cpu[name][b].append(time.process_time() - c0)
                wall[name][b].append(time.perf_counter() - w0)
    state = {k: v.clone() for k, v in net.state_dict().items()}
    publish = {n: [] for n in made}
    x = inputs[batches[0]]
    for _ in range(publications):
        for name, ev in made.items():
            c0 = time.process_time()
            ev.load_state_dict(state)
            ev(x[:1])
            publish[name].append(time.process_time() - c0)
    macs = sum(
        m.in_channels * m.out_channels * m.kernel_size[0] * m.kernel_size[1] * shape[1] * shape[2]
        for m in net.modules()
        if isinstance(m, torch.nn.Conv2d)
    )
    return {
        "arms": list(made),
        "batches": batches,
        "max_abs_error_vs_eager": error,
        "cpu_ms_median": {n: {b: 1e3 * float(np.median(v)) for b, v in d.items()} for n, d in cpu.items()},
        "wall_ms_median": {n: {b: 1e3 * float(np.median(v)) for b, v in d.items()} for n, d in wall.items()},
        "publication_ms_median": {n: 1e3 * float(np.median(v)) for n, v in publish.items()},
        "conv_macs_per_row": macs,
    }


def render(result: dict) -> str:
    m, r = result["meta"], result["result"]
    first = r["arms"][0]
    lines = [
        "# The Connect Four network alone: direct convolution against Winograd's F(m x m, 3 x 3)",
        "",
        f"- command: `{m['command']}`",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs, shared with other "
        f"jobs; one thread; load average start/end {m['loadavg_start'][0]:.1f} / {m['loadavg_end'][0]:.1f}",
        f"- preset {m['preset']}'s untrained network through ONNX Runtime, {m['rounds']} rounds, the arms one call "
        "each per round; medians of the process's CPU time (wall clock in brackets)",
        "",
        "| batch | " + " | ".join(r["arms"]) + " |",
        "|---:|" + "---:|" * len(r["arms"]),
    ]
    for b in r["batches"]:
        cells = []
        for n in r["arms"]:
            c, w = r["cpu_ms_median"][n][str(b)], r["wall_ms_median"][n][str(b)]
            ratio = r["cpu_ms_median"][first][str(b)] / c
            cells.append(f"{c:.2f} ms ({w:.2f}){'' if n == first else f', **{ratio:.2f}x**'}")
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    lines += [
        "| a weight publication (load, rebuild, first call) | "
        + " | ".join(f"{r['publication_ms_median'][n]:.1f} ms" for n in r["arms"])
        + " |",
        "| largest output difference from PyTorch eager | "
        + " | ".join(f"{r['max_abs_error_vs_eager'][n]:.1e}" for n in r["arms"])
        + " |",
        "",
        f"Ratios are {first}'s CPU time over the arm's. Convolutions' multiply-adds per row (direct): "
        f"{r['conv_macs_per_row'] / 1e6:.2f} M.",
    ]
    return "\n".join(lines) + "\n"


def tiles_and_batches(ap: argparse.ArgumentParser, args) -> tuple[list[int], list[int]]:
    """--tiles and --batches as lists of integers (else a usage error: one line, exit 2)."""
    try:
        return [int(t) for t in args.tiles.split(",")], [int(b) for b in args.batches.split(",")]
    except ValueError:
        ap.error("--tiles and --batches are comma-separated integers")


def string_keys(result: dict) -> None:
    """The per-batch medians keyed by strings, as JSON reads them back (render reads that form)."""
    for k in ("cpu_ms_median", "wall_ms_median"):
        result[k] = {n: {str(b): v for b, v in d.items()} for n, d in result[k].items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="alphazero")
    ap.add_argument("--tiles", default="0,2,4,6", help="m of each arm (0: the direct convolution)")
    ap.add_argument("--batches", default="16,64,128")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--publications", type=int, default=10)
    ap.add_argument("--out", default="benchmarks/results/selfplay_winograd.json")
    args = ap.parse_args(argv)
    tiles, batches = tiles_and_batches(ap, args)
    if args.rounds < 1 or args.publications < 1 or min(batches) < 1:
        ap.error("--rounds, --publications and the batches must be positive")
    set_threads(1)
    meta = timing_meta(argv, preset=args.preset, rounds=args.rounds)
    result = run(args.preset, tiles, batches, args.rounds, args.publications)
    meta["loadavg_end"] = os.getloadavg()
    out = {"meta": meta, "result": result}
    string_keys(result)
    write_results(args.out, out, render(out))
    print(render(out))


if __name__ == "__main__":
    main()
