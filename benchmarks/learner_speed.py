"""The learner's training steps per second on each device (issue 3: GPU learner against CPU).

For each algorithm, a replay buffer is filled once by self-play with the untrained
network (few simulations: the examples only need the right shapes and a realistic
mix), then the same `Learner` class the drivers use times minibatch updates on each
device: sample + update, the loss terms read back to the host as the trainer does.

  python benchmarks/learner_speed.py --game connect_four --algos alphazero,muzero --devices cpu,cuda
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.train.learner import Learner  # noqa: E402
from polyzero.train.selfplay import SelfPlayActor  # noqa: E402

FILL_OVERRIDES = ["search.num_simulations=8", "selfplay.concurrent_games=64", "muzero.reanalyse_fraction=0"]


def filled_replay(cfg, algo, game, positions: int):
    """A replay buffer holding at least `positions` self-play positions of the untrained network."""
    net = algo.build_network()
    actor = SelfPlayActor(algo, game, cfg, algo.make_evaluator(net, torch.device("cpu")), seed=cfg.seed)
    replay = algo.make_replay()
    added = 0
    while added < positions:
        for traj in actor.tick():
            added += replay.add(algo.trajectory_examples(traj))
    return replay


def time_updates(algo, cfg, replay, device: torch.device, steps: int, warmup: int) -> dict:
    torch.manual_seed(0)
    learner = Learner(algo, cfg.train, device)
    rng = np.random.default_rng(0)
    for _ in range(warmup):
        learner.update(replay.sample(cfg.train.batch_size, rng))
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        learner.update(replay.sample(cfg.train.batch_size, rng))  # .item() syncs each step
    dt = time.perf_counter() - t0
    return {"steps_per_s": steps / dt, "examples_per_s": steps * cfg.train.batch_size / dt}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="connect_four")
    ap.add_argument("--algos", default="alphazero,muzero")
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--batch-sizes", default="", help="comma list; default: each preset's batch size")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--cpu-threads", type=int, default=os.cpu_count(), help="torch threads for the CPU learner")
    ap.add_argument("--out", default="benchmarks/results/learner_speed.json")
    args = ap.parse_args()
    torch.set_num_threads(args.cpu_threads)
    rows = []
    for name in args.algos.split(","):
        cfg = build_config(args.game, name, overrides=FILL_OVERRIDES)
        game = load_game(cfg.game)
        algo = make_algorithm(cfg, game)
        sizes = [int(b) for b in args.batch_sizes.split(",")] if args.batch_sizes else [cfg.train.batch_size]
        replay = filled_replay(cfg, algo, game, 4 * max(sizes))
        for batch in sizes:
            cfg.train.batch_size = batch
            for dev in args.devices.split(","):
                r = time_updates(algo, cfg, replay, torch.device(dev), args.steps, args.warmup)
                rows.append({"algo": name, "device": dev, "batch_size": batch, **r})
                print(rows[-1], flush=True)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if "Model name" in line), "?")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    result = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "machine": {"cpu": model, "cores": os.cpu_count(), "gpu": gpu, "python": platform.python_version(),
                    "torch": torch.__version__},
        "cpu_threads": args.cpu_threads, "game": args.game, "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    lines = [f"# Learner training steps per second ({args.game})", "",
             f"- command: `{result['command']}`",
             f"- machine: {model}, {os.cpu_count()} cores, GPU {gpu}; torch {torch.__version__}; "
             f"CPU learner with {args.cpu_threads} torch threads",
             "- each step: sample a minibatch, one update, loss terms read back; "
             f"{args.steps} timed steps after {args.warmup} warm-up steps", "",
             "| algorithm | batch | device | steps / s | examples / s | vs CPU |", "|---|---:|---|---:|---:|---:|"]
    for r in rows:
        base = next(x for x in rows if x["algo"] == r["algo"] and x["batch_size"] == r["batch_size"])
        lines.append(f"| {r['algo']} | {r['batch_size']} | {r['device']} | {r['steps_per_s']:.1f} | "
                     f"{r['examples_per_s']:.0f} | {r['steps_per_s'] / base['steps_per_s']:.2f}x |")
    Path(args.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
