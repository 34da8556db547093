"""Where a learner's step goes, phase by phase, beside its floor (`learner_speed.py
--phases ARMS`): the process's CPU time taken at each boundary inside whole steps
(sampling, the batch as tensors, the network's forward pass, the loss head, the L2
term, the backward pass, the optimizer's step, the read-back), the floor's forward
and backward passes in the same rounds, medians and means over the rounds.

The boundaries are wrappers around the Learner's own calls (its loss, its network's
forward, `Tensor.backward`, the optimizer's step, its read-back), put in place for
the measurement only, so the timed code is the drivers' code. Each boundary costs
one `time.process_time()` call, measured and reported (`timer_us`).
"""

from __future__ import annotations

import contextlib
import statistics
import time

import numpy as np
import torch

from learner_arms import ARMS, Arm, floor_pass, setup
from learner_drift import drift
from polyzero.train import flat_kernels, learner as learner_module
from polyzero.train.learner import Learner

STEP_PHASES = (
    "sample",
    "tensors",
    "net forward",
    "loss head",
    "L2 term",
    "backward",
    "optimizer",
    "read-back",
    "rest",
)
FLOOR_PHASES = ("floor forward", "floor backward")


class Clock:
    """CPU time since the last mark, added to the current round under a phase's name."""

    def __init__(self):
        self.last = time.process_time()
        self.round: dict[str, float] = {}
        self.in_floor = False

    def mark(self, phase: str) -> None:
        now = time.process_time()
        self.round[phase] = self.round.get(phase, 0.0) + now - self.last
        self.last = now


def _wrap(clock: Clock, fn, before, after):
    """`fn` with a mark before it (the phase that ends there) and after it (its own)."""

    def run(*args, **kwargs):
        clock.mark(before() if callable(before) else before)
        out = fn(*args, **kwargs)
        clock.mark(after() if callable(after) else after)
        return out

    return run


@contextlib.contextmanager
def instrumented(clock: Clock, learner: Learner):
    """The Learner's calls with marks around them, undone on leaving."""
    net, saved_backward, forward = learner.net, torch.Tensor.backward, learner.net.forward
    saved_module = learner_module.adam_step, learner_module.fused_adam_step
    loss, l2, read_back, step = learner._loss, learner._l2_term, learner._read_back, learner.optimizer.step

    def forward_phase():
        return "floor forward" if clock.in_floor else "rest"

    def backward_phase():
        return "floor backward" if clock.in_floor else "backward"

    net.forward = _wrap(clock, net.forward, "loss head", "net forward")
    learner._loss = _wrap(clock, loss, "tensors", "loss head")
    learner._l2_term = _wrap(clock, l2, "rest", "L2 term")
    learner._read_back = _wrap(clock, read_back, "rest", "read-back")
    learner.optimizer.step = _wrap(clock, step, "rest", "optimizer")
    learner_module.adam_step = _wrap(clock, saved_module[0], "rest", "optimizer")
    learner_module.fused_adam_step = _wrap(clock, saved_module[1], "rest", "optimizer")
    torch.Tensor.backward = _wrap(clock, saved_backward, forward_phase, backward_phase)
    try:
        yield
    finally:
        net.forward, learner.optimizer.step = forward, step
        learner._loss, learner._l2_term, learner._read_back = loss, l2, read_back
        learner_module.adam_step, learner_module.fused_adam_step = saved_module
        torch.Tensor.backward = saved_backward


def timer_cost(n: int = 20000) -> float:
    """One mark's own CPU time, in us."""
    clock = Clock()
    c0 = time.process_time()
    for _ in range(n):
        clock.mark("x")
    return (time.process_time() - c0) / n * 1e6


def phase_times(arm: Arm, batch: int, rounds: int, warmup: int = 5, kernels: bool = True) -> dict:
    """Each phase's CPU time per step (medians and means over `rounds` whole steps,
    each followed by a floor pass on a fixed batch), in ms; with `kernels` False, the
    buffer's steps as torch's passes (train/flat_kernels.py declined, as where its
    check fails: the code before 2026-11-29's kernels)."""
    algo, cfg, sampler = setup(arm, batch)
    torch.manual_seed(0)
    learner = Learner(algo, cfg.train, torch.device("cpu"))
    # the record the Learner's Adam and L2 kernels consult, set to decline them (or use them)
    key = (
        flat_kernels.adam_key(len(learner.flat.data), learner.optimizer.param_groups[0]["betas"][0])
        if learner.flat
        else None
    )
    if key is not None:
        flat_kernels._CHECKED[key] = kernels
    floor_net = algo.build_network().train()
    rng = np.random.default_rng(0)
    fixed = {k: torch.from_numpy(v) for k, v in sampler.sample(cfg.train.batch_size, rng).items() if k != "index"}
    clock = Clock()
    per_round: list[dict[str, float]] = []
    with instrumented(clock, learner):
        for r in range(warmup + rounds):
            clock.round, clock.in_floor = {}, False
            clock.mark("rest")
            b = sampler.sample(cfg.train.batch_size, rng)
            clock.mark("sample")
            learner.update(b)
            clock.mark("rest")
            clock.in_floor = True
            floor_net.zero_grad(set_to_none=True)
            floor_pass(algo, floor_net, fixed)
            clock.mark("floor backward")
            if r >= warmup:
                per_round.append(dict(clock.round))
    phases = STEP_PHASES + FLOOR_PHASES
    med = {p: statistics.median(x.get(p, 0.0) for x in per_round) * 1e3 for p in phases}
    mean = {p: statistics.fmean(x.get(p, 0.0) for x in per_round) * 1e3 for p in phases}
    step = [sum(x.get(p, 0.0) for p in STEP_PHASES) * 1e3 for x in per_round]
    floor = [sum(x.get(p, 0.0) for p in FLOOR_PHASES) * 1e3 for x in per_round]
    if key is not None:
        del flat_kernels._CHECKED[key]
    return {
        "arm": arm.name + ("" if kernels else " (torch's passes)"),
        "batch": cfg.train.batch_size,
        "rounds": rounds,
        "median_ms": med,
        "mean_ms": mean,
        "step_ms": statistics.median(step),
        "floor_ms": statistics.median(floor),
        "step_mean_ms": statistics.fmean(step),
        "floor_mean_ms": statistics.fmean(floor),
        "timer_us": timer_cost(),
        "marks_per_round": 14,
    }


def render_phases(rows: list[dict]) -> list[str]:
    """One table per arm: each phase's median and mean CPU ms, and the mean's share of
    what the step spends beyond the floor."""
    lines = []
    for r in rows:
        med, mean = r["median_ms"], r["mean_ms"]
        over = r["step_mean_ms"] - r["floor_mean_ms"]
        lines += [
            "",
            f"Where {r['arm']}'s step goes at batch {r['batch']} (`--phases`: the process's CPU time at each "
            f"boundary inside {r['rounds']} whole steps, each followed by a floor pass; one mark costs "
            f"{r['timer_us']:.2f} us, {r['marks_per_round']} a round). Step: median {r['step_ms']:.2f} ms, mean "
            f"{r['step_mean_ms']:.2f}; floor: median {r['floor_ms']:.2f}, mean {r['floor_mean_ms']:.2f}; the step "
            f"over the floor (means) {over:.2f} ms, {r['step_mean_ms'] / r['floor_mean_ms']:.2f}x:",
            "",
            "| phase | median ms | mean ms |",
            "|---|---:|---:|",
            *(f"| {p} | {med[p]:.3f} | {mean[p]:.3f} |" for p in STEP_PHASES + FLOOR_PHASES),
            f"| forward + loss head + backward, less the floor (means) | | "
            f"{mean['net forward'] + mean['loss head'] + mean['backward'] - r['floor_mean_ms']:.3f} |",
        ]
    return lines


def phases_and_drifts(args) -> tuple[list[dict], list[dict]]:
    """`--phases` (NAME:torch: with the buffer's steps as torch's passes) and `--drift`."""
    phases = [
        phase_times(
            next(a for a in ARMS if a.name == name.split(":")[0]),
            args.batch_size,
            args.phases_rounds,
            kernels=not name.endswith(":torch"),
        )
        for name in args.phases.split(",")
        if name
    ]
    drifts = [
        drift(next(a for a in ARMS if a.name == n), args.batch_size, args.drift_steps)
        for n in args.drift.split(",")
        if n
    ]
    return phases, drifts
