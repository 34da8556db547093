"""Where one self-play actor's time goes at a preset's settings, and how close its
network path runs to this CPU's floor.

Stages (a timer wrapped around each function, nothing of the actor copied here, so the
split cannot drift from the code it profiles): the network call (`CompiledCall`), the
network-output cache around it (`net.cache`), the legal masks and observation encoding
of the leaves, OpenSpiel stepping in the tree (cloning, applying, reading outcomes), the
tree kernels, the rest of the search (roots, noise, results) and the rest of a move
(recording the games). Every `--variants` entry (a `net.inference` path with optional
overrides after '+', as selfplay_throughput.py takes them) runs its own actor in this
process, one move each per round (A/B under a noisy machine).

The floor: the preset's network at the mean batch self-play sent, through the same
evaluator (no cache), against single-thread GEMMs of the im2col shape of its 3x3
convolutions (`torch.mm`, one thread: this CPU's dense float32 rate), interleaved, as
GFLOP/s of the tower's multiply-adds.

  python benchmarks/profile_selfplay.py --variants auto+net.cache=0,auto --ticks 40 \\
      --out benchmarks/results/selfplay_profile_c4.json
  python benchmarks/profile_selfplay.py --variants auto,auto+net.winograd=4 --ticks 40 --refresh-every 8 \\
      --out benchmarks/results/selfplay_profile_c4_refresh8.json          # in training's loop
  python benchmarks/profile_selfplay.py --ticks 2 --out /tmp/sp_profile.json        # smoke run
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import timing_meta, write_results  # noqa: E402
from polyzero.algos import simulator  # noqa: E402
from polyzero.nets import compiled, eval_cache, inference  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search import gumbel, kernels, mcts  # noqa: E402
from polyzero.train import selfplay  # noqa: E402
from selfplay_throughput import Refresher, make_actor  # noqa: E402

# (owner, attribute) -> the timer it adds to; nested timers are subtracted in _stages
TIMED = {
    (compiled.CompiledCall, "__call__"): "network",
    (compiled.CompiledCall, "_build"): "build",  # inside the network call that follows a publication
    (inference.Evaluator, "load_state_dict"): "publication",
    (eval_cache.EvaluationCache, "__call__"): "cache+network",
    (simulator.SimulatorModel, "_evaluate_rows"): "evaluate_rows",
    (simulator.SimulatorModel, "_step_rows"): "step_rows",
    (simulator.SimulatorModel, "initial"): "initial",
    (kernels, "select_leaves"): "kernels",
    (kernels, "select_leaves_parallel"): "kernels",
    (kernels, "expand_and_backup"): "kernels",
    (kernels, "expand_and_backup_parallel"): "kernels",
    (mcts, "simulate"): "simulate",  # the searches' own references to search.loop's
    (gumbel, "simulate"): "simulate",
    (selfplay.SelfPlayActor, "search_moves"): "search_moves",
    (selfplay.SelfPlayActor, "tick"): "tick",
}


class Timers:
    """Seconds accumulated per timer for the variant that is running."""

    def __init__(self):
        self.current: dict[str, float] | None = None

    def install(self):
        """Wrap every TIMED function; returns what puts the originals back."""
        originals = {(owner, name): getattr(owner, name) for owner, name in TIMED}
        for (owner, name), label in TIMED.items():
            setattr(owner, name, self._wrap(originals[owner, name], label))

        def uninstall():
            for (owner, name), fn in originals.items():
                setattr(owner, name, fn)

        return uninstall

    def _wrap(self, fn, label):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.current is not None:
                    self.current[label] = self.current.get(label, 0.0) + time.perf_counter() - t0

        return timed


def _stages(t: dict[str, float]) -> dict[str, float]:
    """Exclusive seconds per stage from the nested timers (the roots' evaluation, inside
    `initial`, counts in the network, cache and encoding stages like the leaves')."""
    g = lambda k: t.get(k, 0.0)  # noqa: E731
    network = g("network") - g("build")
    cached = g("cache+network") if "cache+network" in t else g("network")
    return {
        "weight publications (load, filter transforms, new session)": g("publication") + g("build"),
        "network call (ONNX Runtime or the path chosen)": network,
        "network-output cache (keys, lookups, copies)": cached - g("network"),
        "legal masks, observation encoding, output copies": g("evaluate_rows") - cached,
        "OpenSpiel stepping in the tree (clone, apply, outcomes)": g("step_rows") - g("evaluate_rows") + g("initial"),
        "tree kernels (numba)": g("kernels"),
        "search loop glue": g("simulate") - g("step_rows") - g("kernels"),
        "search roots, noise, results": g("search_moves") - g("simulate") - g("initial"),
        "recording the games (rest of a move)": g("tick") - g("search_moves"),
    }


def _total(t: dict[str, float]) -> float:
    """A move's seconds: the tick and the publication before it."""
    return t.get("tick", 0.0) + t.get("publication", 0.0)


def profile(variants: list[str], preset: str, games: int, ticks: int, warmup: int, refresh_every: int = 0) -> dict:
    timers = Timers()
    uninstall = timers.install()
    made = {v: make_actor(preset, games, v, "cpu", seed=0) for v in variants}
    refreshers = {v: Refresher(m[1], refresh_every) for v, m in made.items()}
    acc = {v: {} for v in variants}
    rows = {v: [0, 0] for v in variants}  # rows asked for, network calls
    try:
        for r in range(warmup + ticks):
            for v, (_, evaluate, actor) in made.items():
                evaluate.record = r >= warmup
                timers.current = acc[v] if r >= warmup else None
                if r >= warmup:
                    refreshers[v].before_tick()
                actor.tick()
                timers.current = None
    finally:
        uninstall()
    out = {}
    for v, (_, evaluate, _) in made.items():
        calls = evaluate.calls
        rows[v] = [sum(spec[0][0][0] for _, spec in calls), len(calls)]
        cache = getattr(evaluate.evaluate, "cache", None)
        stages = _stages(acc[v])
        total = _total(acc[v])
        out[v] = {
            "seconds": total,
            "positions": ticks * games,
            "positions_per_s": ticks * games / total,
            "stages_s": stages,
            "stages_share": {k: s / total for k, s in stages.items()},
            "rows_asked": rows[v][0],
            "network_calls": rows[v][1],
            "cache_hit_share": cache.hits / (cache.hits + cache.misses) if cache is not None else None,
            "publications": (refreshers[v].ticks - 1) // refresh_every if refresh_every else 0,
        }
    return {"variants": out, "evaluator": made[variants[0]][1].evaluate, "algo": made[variants[0]][0]}


def tower_macs(net: torch.nn.Module, obs_shape) -> int:
    """Multiply-adds per row of every Conv2d and Linear in `net` (on `obs_shape` planes)."""
    cells = obs_shape[1] * obs_shape[2]
    macs = 0
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            macs += m.in_channels * m.out_channels * m.kernel_size[0] * m.kernel_size[1] * cells
        elif isinstance(m, torch.nn.Linear):
            macs += m.in_features * m.out_features
    return macs


def floor(evaluator, algo, batch: int, repeats: int) -> dict:
    """The network (no cache) at `batch` rows against a GEMM of its 3x3 convolutions' im2col
    shape (torch.mm on this process's one thread), interleaved; the fastest of `repeats`."""
    rng = np.random.default_rng(0)
    obs = (rng.random((batch, *algo.encoder.shape)) < 0.3).astype(np.float32)
    forward = evaluator._forward
    channels = algo.cfg.net.channels
    cells = algo.encoder.shape[1] * algo.encoder.shape[2]
    a = torch.rand(batch * cells, 9 * channels)
    b = torch.rand(9 * channels, channels)
    forward(obs)
    times = {"network": [], "gemm": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        forward(obs)
        times["network"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        torch.mm(a, b)
        times["gemm"].append(time.perf_counter() - t0)
    net_s, gemm_s = min(times["network"]), min(times["gemm"])
    macs = tower_macs(evaluator.net, algo.encoder.shape) * batch
    return {
        "per_row_us": per_row(forward, algo, (1, 16, batch, 2 * batch, 256), repeats),
        "batch": batch,
        "network_ms": net_s * 1e3,
        "network_median_ms": float(np.median(times["network"])) * 1e3,
        "network_gflops": 2 * macs / net_s / 1e9,
        "gemm_ms": gemm_s * 1e3,
        "gemm_median_ms": float(np.median(times["gemm"])) * 1e3,
        "gemm_gflops": 2 * a.shape[0] * a.shape[1] * b.shape[1] / gemm_s / 1e9,
        "macs_per_row": macs // batch,
    }


def per_row(forward, algo, batches, repeats: int) -> dict[int, float]:
    """Microseconds per row of the network alone at each batch size (fastest of `repeats`,
    the sizes interleaved): whether larger batches, two actors' leaves in one call, would
    cost less per row."""
    rng = np.random.default_rng(1)
    inputs = {b: (rng.random((b, *algo.encoder.shape)) < 0.3).astype(np.float32) for b in sorted(set(batches))}
    best = dict.fromkeys(inputs, float("inf"))
    for _ in range(repeats):
        for b, obs in inputs.items():
            t0 = time.perf_counter()
            forward(obs)
            best[b] = min(best[b], time.perf_counter() - t0)
    return {b: 1e6 * t / b for b, t in best.items()}


def render(result: dict) -> str:
    m, variants, f = result["meta"], result["variants"], result["floor"]
    names = list(variants)
    lines = [
        "# Where one self-play actor's time goes",
        "",
        f"- command: `{m['command']}`",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs, shared with other "
        f"jobs; torch {m['torch']}, one torch thread; load average start/end {m['loadavg_start']} / {m['loadavg_end']}",
        f"- preset {m['preset']}, {m['games']} concurrent games, {m['ticks']} moves per variant after {m['warmup']} "
        "warm-up moves, the variants one move each per round; untrained network"
        + (
            f"; the weights published again every {m['refresh_every']} moves (as the trainer's learner does)"
            if m.get("refresh_every")
            else ""
        ),
        "",
        "| stage | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for stage in variants[names[0]]["stages_s"]:
        cells = [
            f"{1e3 * variants[v]['stages_s'][stage] / m['ticks']:.1f} ms "
            f"({100 * variants[v]['stages_share'][stage]:.0f}%)"
            for v in names
        ]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    lines += [
        "| **a move (all games)** | "
        + " | ".join(f"**{1e3 * variants[v]['seconds'] / m['ticks']:.1f} ms**" for v in names)
        + " |",
        "| positions / s | " + " | ".join(f"{variants[v]['positions_per_s']:,.0f}" for v in names) + " |",
        "| rows asked of the network per move | "
        + " | ".join(f"{variants[v]['rows_asked'] / m['ticks']:,.0f}" for v in names)
        + " |",
        "| cache hit share | "
        + " | ".join(
            f"{variants[v]['cache_hit_share']:.2f}" if variants[v]["cache_hit_share"] is not None else "-"
            for v in names
        )
        + " |",
        "",
        f"The floor (fastest of {m['floor_repeats']} interleaved calls each): the network ({names[0]}'s "
        f"evaluator, no cache) at B = {f['batch']}: {f['network_ms']:.2f} ms, "
        f"{f['network_gflops']:.0f} GFLOP/s of its {f['macs_per_row'] / 1e6:.2f} M multiply-adds per row; "
        f"a single-thread float32 GEMM of one 3x3 convolution's im2col shape: {f['gemm_ms']:.2f} ms, "
        f"{f['gemm_gflops']:.0f} GFLOP/s (the network at **{f['network_gflops'] / f['gemm_gflops']:.2f}x** "
        "the GEMM's rate). The network alone per row, by batch: "
        + ", ".join(f"B = {b}: {us:.0f} us" for b, us in f["per_row_us"].items())
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="alphazero", help="a selfplay_throughput.py preset")
    ap.add_argument("--variants", default="auto+net.cache=0,auto")
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--ticks", type=int, default=40, help="measured moves per variant")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--floor-repeats", type=int, default=30)
    ap.add_argument(
        "--refresh-every",
        type=int,
        default=0,
        metavar="MOVES",
        help="the weights published again every this many moves, as the trainer's learner does (0: never)",
    )
    ap.add_argument("--out", default="benchmarks/results/selfplay_profile_c4.json")
    args = ap.parse_args(argv)
    if args.ticks < 1 or args.games < 1:
        ap.error("--ticks and --games must be positive")
    if args.refresh_every < 0:
        ap.error("--refresh-every must not be negative")
    set_threads(1)
    meta = timing_meta(
        argv, **{k: getattr(args, k) for k in ("preset", "games", "ticks", "warmup", "floor_repeats", "refresh_every")}
    )
    prof = profile(args.variants.split(","), args.preset, args.games, args.ticks, args.warmup, args.refresh_every)
    first = prof["variants"][args.variants.split(",")[0]]
    batch = max(1, round(first["rows_asked"] / max(first["network_calls"], 1)))
    result = {"meta": meta, "variants": prof["variants"]}
    result["floor"] = floor(prof["evaluator"], prof["algo"], batch, args.floor_repeats)
    meta["loadavg_end"] = os.getloadavg()
    write_results(args.out, result, render(result))
    print(render(result))


if __name__ == "__main__":
    main()
