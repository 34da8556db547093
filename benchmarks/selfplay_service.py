"""Self-play through one shared inference service (selfplay.shared_inference) against
today's single actor with its own evaluator, interleaved in one process
(benchmarks/selfplay_throughput.py --service; issue 60, item 3).

Arms: `today`, one SelfPlayActor of `games` games calling its own evaluator, and one
per `AxG` in --service: A actor threads of G games each around one InferenceService.
Each round runs `block` moves of every arm in turn (A/B on the same machine phase);
positions / s = positions searched / seconds, over all rounds, with the median of the
per-round ratios to `today`. Cores used = process CPU seconds / wall seconds of the
arm's moves (the service may use more than one core where it overlaps tree and network
work). Network calls alone: the network calls an arm made (the service's joined
batches), replayed alone on random inputs of the same shapes through the same
evaluator; not a ceiling where its cache (net.cache) serves repeated positions.
"""

from __future__ import annotations

import os
import time

import numpy as np


def parse_arms(text: str) -> list[tuple[int, int]]:
    """'2x64,2x32' -> [(2, 64), (2, 32)]; ValueError naming a bad one."""
    arms = []
    for part in text.split(","):
        actors, sep, games = part.strip().partition("x")
        if not sep or not actors.isdigit() or not games.isdigit() or int(actors) < 1 or int(games) < 1:
            raise ValueError(f"--service takes ACTORSxGAMES items such as 2x64, not {part!r}")
        arms.append((int(actors), int(games)))
    return arms


class Arm:
    """One setting's actor (or actor threads), its recording evaluator and its counters."""

    def __init__(self, name, actor, evaluate, algo, service=None):
        self.name, self.actor, self.evaluate, self.algo, self.service = name, actor, evaluate, algo, service
        self.times, self.positions, self.cpu = [], [], []

    def run(self, ticks: int) -> None:
        before = self.actor.stats["searches"]
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(ticks):
            self.actor.tick()
        self.times.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)
        self.positions.append(self.actor.stats["searches"] - before)

    def close(self) -> None:
        if self.service is not None:
            self.actor.close()


def make_arms(args, preset: str, games: int, arms: list[tuple[int, int]]) -> list[Arm]:
    from polyzero.train.actor_threads import ActorThreads
    from selfplay_throughput import build_setting, make_actor

    algo, evaluate, actor = make_actor(preset, games, args.inference, args.service_device, 0, args.checkpoint)
    out = [Arm("today", actor, evaluate, algo)]
    for actors, g in arms:
        more = [f"selfplay.actors={actors}", "selfplay.shared_inference=true"]
        more += [f"selfplay.inference_wait_ms={args.wait_ms}", f"selfplay.inference_max_batch={args.max_batch}"]
        more += [f"selfplay.inference_buckets=[{args.buckets}]", f"selfplay.inference_dtype={args.dtype}"]
        cfg, game, algo, evaluate = build_setting(
            preset, g, args.inference, args.service_device, 0, args.checkpoint, more
        )
        threads = ActorThreads(algo, game, cfg, evaluate, seed=0)
        out.append(Arm(f"service {actors}x{g}", threads, evaluate, algo, threads.service))
    return out


def service_ab(args, preset: str, games: int, arms: list[tuple[int, int]]) -> dict:
    from polyzero.nets.inference import set_threads
    from selfplay_throughput import gpu_sampler, replay_alone

    set_threads(args.threads)
    made = make_arms(args, preset, games, arms)
    for arm in made:  # warm-up: the compiled paths are built, the kernels compiled
        arm.run(args.warmup_ticks)
        arm.times, arm.positions, arm.cpu = [], [], []
    stop_gpu = gpu_sampler(args.service_device)
    loads = [os.getloadavg()[0]]
    for r in range(args.service_rounds):
        for arm in made if r % 2 == 0 else made[::-1]:  # ABBA: neither arm always runs first
            arm.evaluate.record = r == 0  # the first round's calls are the ceiling's sample
            arm.run(args.block)
        loads.append(os.getloadavg()[0])
    gpu = stop_gpu() if stop_gpu else None
    rows = []
    for arm in made:
        arm.evaluate.record = False
        net_s = replay_alone(arm.evaluate.evaluate, arm.evaluate.calls, arm.algo.num_actions)
        sizes = [spec[0][0][0] for _, spec in arm.evaluate.calls]
        ratios = [t0 / p0 * p / t for t0, p0, t, p in zip(made[0].times, made[0].positions, arm.times, arm.positions)]
        row = {
            "arm": arm.name,
            "positions": int(sum(arm.positions)),
            "seconds": float(sum(arm.times)),
            "positions_per_s": sum(arm.positions) / sum(arm.times),
            "median_round_ratio_vs_today": float(np.median(ratios)),
            "cores_used": sum(arm.cpu) / sum(arm.times),
            "network_ceiling_positions_per_s": arm.positions[0] / net_s if net_s else None,
            "rows_per_network_call": float(np.mean(sizes)) if sizes else None,
            "service": dict(arm.service.stats) if arm.service is not None else None,
        }
        rows.append(row)
        arm.close()
    return {
        "preset": preset,
        "games": games,
        "rounds": args.service_rounds,
        "block": args.block,
        "gpu_busy": gpu,
        "loadavg_1min": loads,
        "arms": rows,
    }


def render_service(result: dict) -> str:
    m = result["meta"]
    lines = [
        "# Self-play through one shared inference service against today's single actor",
        "",
        f"- command: `{m['command']}`",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs, GPU {m['gpu']}; "
        f"torch {m['torch']}; {m['threads']} torch thread(s); device {m['device']}",
        "- load: the 1-minute load averages below, sampled every round, say how busy the machine was (on the "
        "shared development machine other sessions' jobs ran on its cores); the arms interleave so they see the "
        "same phases",
        f"- service settings: wait {m['wait_ms']} ms, max batch {m['max_batch'] or 'none'}, buckets "
        f"[{m['buckets']}], dtype {m['dtype']}",
        "- positions / s = positions searched / seconds over all rounds; ratio = median over rounds of the "
        "arm's positions / s over today's in the same round; cores used = process CPU time / wall time of the "
        "arm's moves; network calls alone = positions / s if the arm's first-round network calls, replayed "
        "alone on random inputs, were all its time: no ceiling where the evaluator's cache (net.cache) serves "
        "the searches' repeated positions, which random inputs never hit",
        "",
    ]
    for r in result["service"]:
        loads = r["loadavg_1min"]
        lines += [
            f"## {r['preset']}, today's actor with {r['games']} games; {r['rounds']} rounds of {r['block']} move(s)",
            "",
            f"load average (1 min) from {min(loads):.1f} to {max(loads):.1f}, median {np.median(loads):.1f}"
            + (f"; GPU busy {r['gpu_busy']:.2f}" if r["gpu_busy"] is not None else ""),
            "",
            "| arm | positions | positions / s | ratio to today (median of rounds) | cores used "
            "| network calls alone, positions / s | rows per network call |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for a in r["arms"]:
            ceiling = f"{a['network_ceiling_positions_per_s']:,.0f}" if a["network_ceiling_positions_per_s"] else "-"
            rows = f"{a['rows_per_network_call']:.1f}" if a["rows_per_network_call"] else "-"
            lines.append(
                f"| {a['arm']} | {a['positions']:,} | {a['positions_per_s']:,.0f} | "
                f"**{a['median_round_ratio_vs_today']:.2f}x** | {a['cores_used']:.2f} | {ceiling} | {rows} |"
            )
        lines.append("")
    return "\n".join(lines)
