"""Self-play throughput: positions and simulations per second against concurrent games,
actors and device, for the AlphaZero, MuZero and Gumbel presets, beside the network
alone at the same batches (the ceiling).

Each setting runs the drivers' `SelfPlayActor` with the preset's untrained network
(`--checkpoint` for trained weights) through `algo.make_evaluator` (so `net.inference`
applies) for `--seconds` after a warm-up of `--warmup-ticks` moves, in `--actors`
processes at once (one torch thread each, as Ray's self-play workers run), and counts
positions searched (one per live game per move) and simulations. The ceiling: the
network calls those moves made (every batch size recorded on the way), replayed alone
on random inputs of the same shapes through the same evaluator, in the same process:
positions / s if the search and the games cost nothing. Where CUDA is present the GPU's
busy share is sampled during the run (NVML, through torch.cuda.utilization).
Under the fused search (MuZero `mlp` networks, net.inference fused or auto) the
recurrent calls run inside the search's kernel: they are counted from the simulations
instead (`fused_calls`) and the row says `fused`.

  python benchmarks/selfplay_throughput.py                                   # full (CPU; CUDA too if present)
  python benchmarks/selfplay_throughput.py --presets alphazero --games 64,256 --actors 1,2
  python benchmarks/selfplay_throughput.py --presets muzero_cartpole --games 1,16 --inference onnx,fused --interleave 50
  python benchmarks/selfplay_throughput.py --quick --out /tmp/sp.json        # smoke run
  python benchmarks/selfplay_throughput.py --presets alphazero --games 64 --service 2x64,2x32   # shared service
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, write_results  # noqa: E402
from selfplay_report import render, render_interleaved  # noqa: E402
from selfplay_service import parse_arms, render_service, service_ab  # noqa: E402

PRESETS = {  # name -> (game, algo, overrides)
    "alphazero": ("connect_four", "alphazero", []),
    "muzero": ("connect_four", "muzero", []),
    "gumbel": ("connect_four", "alphazero", ["search.kind=gumbel"]),
    # the shipped MuZero presets with `mlp` networks: where the fused search applies
    "muzero_tic_tac_toe": ("tic_tac_toe", "muzero", []),
    "muzero_cartpole": ("cartpole", "muzero", []),
}
DEFAULT_PRESETS = "alphazero,muzero,gumbel"


class Recording:
    """Wraps an evaluator: every call's input shapes, so the calls can be replayed alone."""

    def __init__(self, evaluate):
        self.evaluate = evaluate
        self.calls = []  # (method, [shapes and dtypes of the inputs])
        self.record = False

    def _wrap(self, name):
        fn = getattr(self.evaluate, name)

        def call(*arrays):
            if self.record:
                self.calls.append((name, [(a.shape, a.dtype) for a in arrays]))
            return fn(*arrays)

        return call

    def __getattr__(self, name):
        return self._wrap(name) if name in ("initial", "recurrent") else getattr(self.evaluate, name)

    def __call__(self, obs):
        return self._wrap("__call__")(obs)


def fused_calls(evaluate, calls, simulations: int, positions: int) -> list | None:
    """The recurrent calls a fused search made inside its kernel, which the recording
    cannot see (polyzero.search.fused): None where the search called `recurrent` itself.
    Under the fused search every simulation step evaluates one row per live tree, so each
    recorded `initial` call of B rows stands for simulations / positions recurrent calls
    of B rows, which replay_alone then runs through the same program outside the search."""
    program = getattr(evaluate, "program", None)
    if program is None or not positions or any(name == "recurrent" for name, _ in calls):
        return None
    steps = round(simulations / positions)
    return [
        ("recurrent", [((spec[0][0][0], program.hidden), np.dtype(np.float32)), ((spec[0][0][0],), np.dtype(np.int64))])
        for name, spec in calls
        if name == "initial"
        for _ in range(steps)
    ]


def replay_alone(evaluate, calls, num_actions: int) -> float:
    """Seconds the recorded network calls take alone, on random inputs of their shapes."""
    rng = np.random.default_rng(0)
    inputs = [
        (
            name,
            [
                rng.random(shape).astype(dtype)
                if dtype.kind == "f"
                else rng.integers(0, num_actions, shape).astype(dtype)
                for shape, dtype in spec
            ],
        )
        for name, spec in calls
    ]
    t0 = time.perf_counter()
    for name, arrays in inputs:
        getattr(evaluate, name)(*arrays)
    return time.perf_counter() - t0


def gpu_sampler(device: str):
    """(start, stop -> mean busy share) of the GPU, sampled every 0.2 s; None without CUDA/NVML."""
    if device != "cuda":
        return None
    try:
        torch.cuda.utilization()
    except Exception:  # noqa: BLE001 -- no NVML: no utilisation figure
        return None
    samples, done = [], threading.Event()

    def loop():
        while not done.wait(0.2):
            samples.append(torch.cuda.utilization())

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def stop():
        done.set()
        thread.join()
        return float(np.mean(samples)) / 100 if samples else None

    return stop


def build_setting(preset: str, games: int, inference: str, device: str, seed: int, checkpoint=None, more=()):
    """(config, game, algorithm, an evaluator recording its calls) for one setting; `more`:
    further config overrides."""
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config
    from polyzero.games import load_game

    game_name, algo_name, overrides = PRESETS[preset]
    path, *extra = inference.split("+")  # "auto+net.cache=0": a path and overrides of its own
    cfg = build_config(
        game_name,
        algo_name,
        overrides=overrides + [f"selfplay.concurrent_games={games}", f"net.inference={path}"] + extra + list(more),
    )
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    torch.manual_seed(seed)
    net = algo.build_network()
    if checkpoint:
        from polyzero.train.checkpoint import read_learner

        net.load_state_dict(read_learner(checkpoint)["net"])
    return cfg, game, algo, Recording(algo.make_evaluator(net, torch.device(device), selfplay=True))


def make_actor(preset: str, games: int, inference: str, device: str, seed: int, checkpoint=None):
    """(the algorithm, an evaluator recording its calls, a SelfPlayActor) for one setting."""
    from polyzero.train.selfplay import SelfPlayActor

    cfg, game, algo, evaluate = build_setting(preset, games, inference, device, seed, checkpoint)
    return algo, evaluate, SelfPlayActor(algo, game, cfg, evaluate, seed=seed)


def interleaved(preset: str, games: int, inferences: list[str], rounds: int, threads: int, refresh_every=0) -> dict:
    """The same self-play through each net.inference path in one process, one move of
    every path per round (A/B on the same machine phase): median seconds per move (and
    the mean, which counts the moves after a weight refresh at their share)."""
    from polyzero.nets.inference import set_threads

    set_threads(threads)
    made = {i: make_actor(preset, games, i, "cpu", seed=0) for i in inferences}
    actors = {i: m[2] for i, m in made.items()}
    refreshers = {i: Refresher(m[1], refresh_every) for i, m in made.items()}
    times = {i: [] for i in inferences}
    fused = {}
    for r in range(rounds + 2):
        for i, actor in actors.items():
            evaluate = made[i][1]
            evaluate.record = r == 1  # the second warm-up move tells whether the search ran fused
            sims = actor.stats["simulations"]
            t0 = time.perf_counter()
            if r >= 2:
                refreshers[i].before_tick()
            actor.tick()
            if r >= 2:  # two warm-up moves (the first builds the compiled path)
                times[i].append(time.perf_counter() - t0)
            if r == 1:
                evaluate.record = False
                inside = fused_calls(evaluate.evaluate, evaluate.calls, actor.stats["simulations"] - sims, games)
                fused[i] = inside is not None
    med = {i: float(np.median(t)) for i, t in times.items()}
    mean = {i: float(np.mean(t)) for i, t in times.items()}
    return {
        "preset": preset,
        "games": games,
        "rounds": rounds,
        "refresh_every": refresh_every,
        "fused": fused,
        "positions_per_s": {i: games / m for i, m in med.items()},
        "speedup_vs_first": {i: med[inferences[0]] / m for i, m in med.items()},
        "positions_per_s_mean": {i: games / m for i, m in mean.items()},
        "speedup_vs_first_mean": {i: mean[inferences[0]] / m for i, m in mean.items()},
    }


class Refresher:
    """A learner's weight publication every `every` moves (0: never), as the trainer makes
    one every train.positions_per_step positions: the same weights loaded again, so that
    what a refresh costs (an ONNX Runtime session rebuilt, the network-output cache
    cleared) is paid while the search stays the same."""

    def __init__(self, evaluate, every: int):
        self.evaluate, self.every, self.ticks = evaluate, every, 0
        self.state = {k: v.clone() for k, v in evaluate.net.state_dict().items()} if every else None

    def before_tick(self) -> None:
        if self.every and self.ticks and self.ticks % self.every == 0:
            self.evaluate.load_state_dict(self.state)
        self.ticks += 1


def run_actor(job: dict) -> dict:
    """One actor process: self-play for job['seconds'], then its network calls alone."""
    from polyzero.nets.inference import set_threads

    set_threads(job["threads"])
    algo, evaluate, actor = make_actor(
        job["preset"], job["games"], job["inference"], job["device"], job["seed"], job.get("checkpoint")
    )
    for _ in range(job["warmup_ticks"]):
        actor.tick()
    stop_gpu = gpu_sampler(job["device"])
    s0, sim0 = actor.stats["searches"], actor.stats["simulations"]
    counts0 = cache_counts(evaluate.evaluate)
    evaluate.record = True
    t0 = time.perf_counter()
    refresh = Refresher(evaluate, job.get("refresh_every", 0))
    while time.perf_counter() - t0 < job["seconds"]:
        refresh.before_tick()
        actor.tick()
    wall = time.perf_counter() - t0
    evaluate.record = False
    hits, misses = np.subtract(cache_counts(evaluate.evaluate), counts0)
    gpu = stop_gpu() if stop_gpu else None
    positions, simulations = actor.stats["searches"] - s0, actor.stats["simulations"] - sim0
    inside = fused_calls(evaluate.evaluate, evaluate.calls, simulations, positions)
    calls = evaluate.calls + (inside or [])
    net_s = replay_alone(evaluate.evaluate, calls, algo.num_actions)
    return {
        "positions": positions,
        "simulations": simulations,
        "wall_s": wall,
        "network_alone_s": net_s,
        "fused": inside is not None,
        "network_calls": len(calls),
        "mean_rows_per_call": float(np.mean([spec[0][0][0] for _, spec in calls])),
        "gpu_busy": gpu,
        "cache_hit_share": float(hits / (hits + misses)) if hits + misses else None,
    }


def cache_counts(evaluate) -> tuple[int, int]:
    """(hits, misses) of the evaluator's network-output cache (net.cache) so far; (0, 0) without one."""
    cache = getattr(evaluate, "cache", None)
    return (cache.hits, cache.misses) if cache is not None else (0, 0)


def measure(preset, games, actors, device, inference, args) -> dict:
    jobs = [
        {
            "preset": preset,
            "games": games,
            "device": device,
            "seed": i,
            "threads": args.threads,
            "seconds": args.seconds,
            "warmup_ticks": args.warmup_ticks,
            "refresh_every": args.refresh_every,
            "inference": inference,
            "checkpoint": args.checkpoint,
        }
        for i in range(actors)
    ]
    if actors == 1:
        parts = [run_actor(jobs[0])]
    else:
        with mp.get_context("spawn").Pool(actors) as pool:
            parts = pool.map(run_actor, jobs)
    positions = sum(p["positions"] for p in parts)
    wall = max(p["wall_s"] for p in parts)
    # the ceiling: every actor's calls alone, as if they ran side by side as the actors did
    net_alone = max(p["network_alone_s"] for p in parts)
    row = {
        "preset": preset,
        "games": games,
        "actors": actors,
        "device": device,
        "inference": inference,
        "positions_per_s": positions / wall,
        "simulations_per_s": sum(p["simulations"] for p in parts) / wall,
        "network_ceiling_positions_per_s": positions / net_alone,
        "mean_rows_per_call": float(np.mean([p["mean_rows_per_call"] for p in parts])),
        "fused": all(p["fused"] for p in parts),
        "gpu_busy": parts[0]["gpu_busy"],
        "cache_hit_share": _mean_or_none([p["cache_hit_share"] for p in parts]),
        "actors_detail": parts,
    }
    row["share_of_ceiling"] = row["positions_per_s"] / row["network_ceiling_positions_per_s"]
    return row


def _mean_or_none(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default=DEFAULT_PRESETS, help="of: " + ", ".join(PRESETS))
    ap.add_argument("--games", default="16,64,256", help="concurrent games per actor")
    ap.add_argument("--actors", default="1,2", help="actor processes at once")
    ap.add_argument("--devices", default="cpu,cuda", help="cuda is skipped where there is none")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per actor")
    ap.add_argument(
        "--inference",
        default="auto",
        help="net.inference of the actors; a comma list (e.g. eager,auto) runs each, back to back; "
        "a path may carry overrides after '+' (auto+net.cache=0)",
    )
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup-ticks", type=int, default=3)
    ap.add_argument(
        "--refresh-every",
        type=int,
        default=0,
        metavar="MOVES",
        help="reload the weights every this many moves, as a learner publishes them (the presets: "
        "train.positions_per_step / selfplay.concurrent_games, 8 for AlphaZero Connect Four); 0: never",
    )
    ap.add_argument("--checkpoint", default=None, help="a run's checkpoint to take the weights from")
    ap.add_argument(
        "--interleave",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="instead: every --inference path in one process, one move each per round, "
        "this many rounds (A/B under a noisy machine)",
    )
    ap.add_argument(
        "--service",
        default="",
        metavar="AxG,...",
        help="instead: today's single actor (--games games) against A actor threads of G games each "
        "around one shared inference service (selfplay.shared_inference), interleaved in one process",
    )
    ap.add_argument("--service-rounds", type=int, default=20, help="--service: rounds (ABBA)")
    ap.add_argument("--block", type=int, default=1, help="--service: moves of each arm per round")
    ap.add_argument("--service-device", default="cpu", help="--service: the device (cpu or cuda)")
    ap.add_argument("--wait-ms", type=float, default=5.0, help="--service: selfplay.inference_wait_ms")
    ap.add_argument("--max-batch", type=int, default=0, help="--service: selfplay.inference_max_batch")
    ap.add_argument("--buckets", default="", help="--service: selfplay.inference_buckets, e.g. 64,128,256")
    ap.add_argument("--dtype", default="float32", help="--service: selfplay.inference_dtype (CUDA: bfloat16)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 16 games, one actor, 3 s")
    ap.add_argument("--out", default="benchmarks/results/selfplay_throughput.json")
    args = ap.parse_args(argv)
    unknown = [p for p in args.presets.split(",") if p not in PRESETS]
    if unknown:
        ap.error(f"unknown preset(s) {', '.join(unknown)}; choose from {', '.join(PRESETS)}")
    if args.refresh_every < 0:
        ap.error(f"--refresh-every must not be negative, not {args.refresh_every}")
    if args.quick:
        args.games, args.actors, args.seconds, args.warmup_ticks = "16", "1", 3.0, 1
        args.service_rounds = min(args.service_rounds, 2)
    if args.service:
        from polyzero.errors import UsageError
        from polyzero.validation import check_inference_service

        try:
            args.service_arms = parse_arms(args.service)
            if not all(b.strip().isdigit() for b in args.buckets.split(",") if b.strip()):
                raise ValueError(f"--buckets takes sizes such as 64,128,256, not {args.buckets!r}")
            buckets = [int(b) for b in args.buckets.split(",") if b.strip()]
            check_inference_service(args.max_batch, buckets, args.wait_ms, args.dtype)
        except (ValueError, UsageError) as e:
            ap.error(str(e))
        if args.service_rounds < 1 or args.block < 1:
            ap.error("--service-rounds and --block must be at least 1")
        if args.service_device == "cuda" and not torch.cuda.is_available():
            ap.error("--service-device cuda was asked for but no CUDA device is available")
    return args


def main(argv=None):
    args = parse_args(argv)
    devices = [d for d in args.devices.split(",") if d != "cuda" or torch.cuda.is_available()]
    meta = {
        "command": " ".join(["python", os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
        "machine": machine_info(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "threads": args.threads,
        "seconds": args.seconds,
        "warmup_ticks": args.warmup_ticks,
        "refresh_every": args.refresh_every,
        "loadavg_start": os.getloadavg(),
    }
    if args.service:
        meta.update(
            {k: getattr(args, k) for k in ("wait_ms", "max_batch", "buckets", "dtype", "service_rounds", "block")}
        )
        meta["device"] = args.service_device
        found = [
            service_ab(args, p, int(g), args.service_arms)
            for p in args.presets.split(",")
            for g in args.games.split(",")
        ]
        meta["loadavg_end"] = os.getloadavg()
        result = {"meta": meta, "service": found}
        write_results(args.out, result, render_service(result))
        print(render_service(result))
        return
    if args.interleave:
        rows = [
            interleaved(p, int(g), args.inference.split(","), args.interleave, args.threads, args.refresh_every)
            for p in args.presets.split(",")
            for g in args.games.split(",")
        ]
        for r in rows:
            print(r, flush=True)
        meta["loadavg_end"] = os.getloadavg()
        result = {"meta": meta, "interleaved": rows}
        write_results(args.out, result, render_interleaved(result))
        return
    rows = []
    for preset in args.presets.split(","):
        for device in devices:
            for games in [int(g) for g in args.games.split(",")]:
                for actors, inference in [
                    (int(a), i) for a in args.actors.split(",") for i in args.inference.split(",")
                ]:
                    r = measure(preset, games, actors, device, inference, args)
                    rows.append(r)
                    print(
                        f"{preset} games={games} actors={actors} {device} {inference}: "
                        f"{r['positions_per_s']:.0f} positions/s, "
                        f"{r['simulations_per_s']:.0f} simulations/s, "
                        f"ceiling {r['network_ceiling_positions_per_s']:.0f} "
                        f"({r['share_of_ceiling']:.2f})",
                        flush=True,
                    )
    meta["loadavg_end"] = os.getloadavg()
    result = {"meta": meta, "rows": rows}
    write_results(args.out, result, render(result))
    print(render(result))


if __name__ == "__main__":
    main()
