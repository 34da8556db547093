"""The learner's training steps per second, every algorithm beside AlphaZero at the same
trunk, and beside each its floor: the same network passes alone.

For each arm a replay is filled once by self-play with the untrained network (two
simulations: the examples need the right shapes and a realistic mix; Student of
Games' CVPN a full sliding window of random examples of its shapes, its self-play
being a GT-CFR search),
then the `Learner` the drivers use times minibatch updates (sample, update, loss terms
read back). Interleaved with them, in the same process and the same rounds (A/B; the
median of each), the floor: the network passes that update cannot avoid on one
fixed batch, forward and backward, with nothing else -- AlphaZero and the CVPN one
pass of f; MuZero (and Gumbel MuZero, whose learner is MuZero's) h once and g and f K
times; NDMZ the same with its g and f. Arms:

* connect_four: AlphaZero (the preset's tower), MuZero, Gumbel MuZero, MuZero's
  model-shape levers (K = 3, K = 1, a one-block dynamics tower, K = 3 with it), and AlphaZero's and
  MuZero's learners with train.fused_step and through torch.compile (train.compile;
  the compile is a warm-up round, minutes on a small CPU);
* nannon: AlphaZero with NDMZ's trunk (MLP 256 x 2), NDMZ, and each with train.fused_step;
* connect_four, SoG's trunk (MLP 256 x 3): AlphaZero, SoG's CVPN, and each with
  train.fused_step.

  python benchmarks/learner_speed.py                            # every arm, CPU (and CUDA when present)
  python benchmarks/learner_speed.py --arms muzero,alphazero --devices cpu,cuda --batch-sizes 256,1024
  python benchmarks/learner_speed.py --quick --out /tmp/ls.json # smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, machine_info, write_results  # noqa: E402
from learner_arms import ARMS, Arm, floor_pass, setup  # noqa: E402
from learner_drift import render_drift  # noqa: E402
from learner_phases import phases_and_drifts, render_phases  # noqa: E402
from learner_report import render  # noqa: E402
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.train.learner import Learner  # noqa: E402


def time_arm(arm: Arm, algo, cfg, sampler, device: torch.device, steps: int, warmup: int) -> dict:
    """Medians over the rounds of wall-clock time, and of the process's CPU time: on a
    shared machine a round that loses the core for a time slice (4 ms and more) takes
    that long in wall-clock time but not in CPU time, so with one torch thread on the
    CPU the CPU-time ratio is the one the load does not move (on a GPU only wall-clock
    time means anything)."""
    torch.manual_seed(0)
    learner = Learner(algo, cfg.train, device)
    floor_net = algo.build_network().to(device).train()
    rng = np.random.default_rng(0)
    fixed = {
        k: torch.from_numpy(v).to(device) for k, v in sampler.sample(cfg.train.batch_size, rng).items() if k != "index"
    }
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    wall, cpu = {"step": [], "floor": []}, {"step": [], "floor": []}
    for i in range(warmup + steps):
        t0, c0 = time.perf_counter(), time.process_time()
        learner.update(sampler.sample(cfg.train.batch_size, rng))  # the loss terms' read-back syncs
        t1, c1 = time.perf_counter(), time.process_time()
        floor_net.zero_grad(set_to_none=True)
        floor_pass(algo, floor_net, fixed)
        sync()
        t2, c2 = time.perf_counter(), time.process_time()
        if i >= warmup:
            for times, start, mid, end in ((wall, t0, t1, t2), (cpu, c0, c1, c2)):
                times["step"].append(mid - start)
                times["floor"].append(end - mid)
    step, floor = statistics.median(wall["step"]), statistics.median(wall["floor"])
    cpu_step, cpu_floor = statistics.median(cpu["step"]), statistics.median(cpu["floor"])
    return {
        "steps_per_s": 1 / step,
        "floor_steps_per_s": 1 / floor,
        "learner_over_floor": step / floor,
        "examples_per_s": cfg.train.batch_size / step,
        "step_ms": step * 1e3,
        "floor_ms": floor * 1e3,
        "cpu_step_ms": cpu_step * 1e3,
        "cpu_floor_ms": cpu_floor * 1e3,
        "cpu_learner_over_floor": cpu_step / cpu_floor,
        "step_ms_all": [x * 1e3 for x in wall["step"]],
        "floor_ms_all": [x * 1e3 for x in wall["floor"]],
        "cpu_step_ms_all": [x * 1e3 for x in cpu["step"]],
        "cpu_floor_ms_all": [x * 1e3 for x in cpu["floor"]],
    }


# ------------------------------------------------------------------ where the time goes
def profile_arm(arm: Arm, batch: int, updates: int) -> dict:
    """torch.profiler over `updates` learner updates of `arm` (after two unprofiled ones):
    each operator's share of the self CPU time, and the shares of the groups that say
    whether the network passes or the loss and optimizer around them cost the time."""
    from torch.profiler import ProfilerActivity, profile

    algo, cfg, sampler = setup(arm, batch)
    learner = Learner(algo, cfg.train, torch.device("cpu"))
    rng = np.random.default_rng(0)
    batches = [sampler.sample(cfg.train.batch_size, rng) for _ in range(updates + 2)]
    for b in batches[:2]:
        learner.update(b)
    with profile(activities=[ProfilerActivity.CPU]) as prof, labelled_steps():
        for b in batches[2:]:
            learner.update(b)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    # The buffer's steps, their operators included (their share of the same total).
    whole = {e.key: e.cpu_time_total / total for e in events if e.key in STEP_LABELS.values()}
    floor_calls = floor_operator_calls(algo, batches[2], updates)
    ops = sorted(
        (
            {
                "op": e.key,
                "share": e.self_cpu_time_total / total,
                "calls": e.count,
                "calls_per_update": e.count / updates,
                "floor_calls_per_pass": floor_calls.get(e.key, 0.0),
            }
            for e in events
        ),
        key=lambda r: -r["share"],
    )
    groups = {
        "convolution": ("convolution",),
        "matrix products": ("aten::mm", "aten::addmm", "aten::bmm"),
        "batch norm": ("batch_norm",),
        "layout and copies": ("copy_", "contiguous", "clone", "cat"),
        "gradient accumulation (add_)": ("aten::add_",),
        "relu": ("relu", "clamp_min", "threshold_backward"),
        "optimizer and L2 (fused Adam, foreach)": ("_fused_adam", "_foreach"),
    }
    shares = {g: sum(r["share"] for r in ops if any(k in r["op"] for k in keys)) for g, keys in groups.items()}
    shares["everything else (elementwise math of the loss, scaling, softmax, ...)"] = 1 - sum(shares.values())
    return {
        "arm": arm.name,
        "batch": cfg.train.batch_size,
        "updates": updates,
        "group_shares": shares,
        "top_ops": ops[:20],
        "steps_whole": whole,
    }


def floor_operator_calls(algo, batch: dict, passes: int) -> dict[str, float]:
    """Each operator's calls per floor pass (torch.profiler): which of the update's
    operators the network passes make anyway (a linear layer's transposes, say)."""
    from torch.profiler import ProfilerActivity, profile

    net = algo.build_network().train()
    fixed = {k: torch.from_numpy(v) for k, v in batch.items() if k != "index"}
    floor_pass(algo, net, fixed)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(passes):
            net.zero_grad(set_to_none=True)
            floor_pass(algo, net, fixed)
    return {e.key: e.count / passes for e in prof.key_averages()}


STEP_LABELS = {
    "adam_step": "Adam's step on the buffer (train/flat.py adam_step)",
    "preload_l2": "the L2 term on the buffer (FlatParameters.preload_l2)",
}


@contextlib.contextmanager
def labelled_steps():
    """The Learner's steps on its buffer as named ranges in the profile (one range each
    per update, for the share of their operators together)."""
    from polyzero.train import flat, learner

    def labelled(fn, label):
        def run(*args, **kwargs):
            with torch.profiler.record_function(label):
                return fn(*args, **kwargs)

        return run

    saved = learner.adam_step, flat.FlatParameters.preload_l2
    learner.adam_step = labelled(saved[0], STEP_LABELS["adam_step"])
    flat.FlatParameters.preload_l2 = labelled(saved[1], STEP_LABELS["preload_l2"])
    try:
        yield
    finally:
        learner.adam_step, flat.FlatParameters.preload_l2 = saved


# ------------------------------------------------------------------ old loss against new
LOSS_AB = {"muzero_tic_tac_toe_mlp": 256, "muzero_cartpole_support": 256, "ndmz_nannon": 512, "muzero_connect_four": 64}


def loss_ab(rounds: int) -> list[dict]:
    """The loss's forward and backward, the code before the learner work (kept as the
    oracle in tests/test_learner_exact.py) against the current, on the same fixed batch,
    interleaved: median ms of each."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_learner_exact as t

    rows = []
    for case, batch in LOSS_AB.items():
        game, algo_name, overrides = t.CASES[case]
        cfg = build_config(game, algo_name, overrides=overrides if "support" in case else [])
        algo = make_algorithm(cfg, load_game(cfg.game))
        data = t.ndmz_batch(algo, batch) if algo_name == "ndmz" else t.muzero_batch(algo, batch)
        tensors = {k: torch.from_numpy(v) for k, v in data.items()}
        torch.manual_seed(0)
        net = algo.build_network().train()
        reference = t.reference_ndmz_loss if algo_name == "ndmz" else t.reference_muzero_loss
        fns = {
            "old": lambda: reference(algo, net, tensors)[0].backward(),
            "new": lambda: algo.loss(net, tensors)[0].backward(),
        }
        times = {k: [] for k in fns}
        for r in range(rounds + 1):
            for k, fn in fns.items():
                net.zero_grad(set_to_none=True)
                t0 = time.perf_counter()
                fn()
                if r:
                    times[k].append(time.perf_counter() - t0)
        old, new = (statistics.median(times[k]) * 1e3 for k in ("old", "new"))
        rows.append({"case": case, "batch": batch, "old_ms": old, "new_ms": new, "speedup": old / new})
        print(f"loss A/B {case} B={batch}: old {old:.1f} ms, new {new:.1f} ms, {old / new:.2f}x", flush=True)
    return rows


def learner_before(rev: str):
    """The `Learner` class of git revision `rev` (polyzero/train from `git archive`, imported
    as `polyzero_before.train.learner`; the rest of the package is today's)."""
    root = Path(tempfile.mkdtemp())
    repo = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "archive", rev, "polyzero/train"], capture_output=True, cwd=repo, check=True)
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    (root / "polyzero").rename(root / "polyzero_before")
    (root / "polyzero_before" / "__init__.py").touch()
    (root / "polyzero_before" / "train" / "__init__.py").write_text("")
    sys.path.insert(0, str(root))
    return importlib.import_module("polyzero_before.train.learner").Learner


def update_ab(names: list[str], batch: int, rounds: int, before: str = "") -> list[dict]:
    """The whole update, the code before the small-network work (L2 as a graph per tensor,
    the single-tensor optimizer loop: `reference_update` in tests/test_learner_exact.py),
    the Learner with its parameters apart (`flat=False`: the L2 node, the foreach step
    per tensor), the Learner's default (one buffer, train/flat.py) and the Learner with
    train.fused_step (the L2 gradient inside the fused Adam kernel), beside the floor,
    on the same minibatches, interleaved: medians of the process's CPU time (ms). With
    `before` (a git revision) also that revision's Learner, default and fused_step."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_learner_exact import reference_update

    rows = []
    for name in names:
        arm = next(a for a in ARMS if a.name == name)
        algo, cfg, sampler = setup(arm, batch)
        torch.manual_seed(0)
        new, old = (Learner(algo, cfg.train, torch.device("cpu")) for _ in range(2))
        apart = Learner(algo, cfg.train, torch.device("cpu"), flat=False)
        fused = Learner(algo, dataclasses.replace(cfg.train, fused_step=True), torch.device("cpu"))
        others = {"old": old, "apart": apart, "fused": fused}
        if before:
            then = learner_before(before)
            others["before"] = then(algo, cfg.train, torch.device("cpu"))
            others["before_fused"] = then(algo, dataclasses.replace(cfg.train, fused_step=True), torch.device("cpu"))
        for other in others.values():
            other.net.load_state_dict(new.net.state_dict())
        kind = torch.optim.Adam if cfg.train.optimizer == "adam" else torch.optim.SGD
        extra = {} if cfg.train.optimizer == "adam" else {"momentum": cfg.train.momentum}
        old.optimizer = kind(old.net.parameters(), lr=cfg.train.learning_rate, foreach=False, **extra)
        floor_net = algo.build_network().train()

        def floor_round():
            floor_net.zero_grad(set_to_none=True)
            floor_pass(algo, floor_net, fixed)

        rng = np.random.default_rng(0)
        learners = {"apart": apart, "new": new, **others}
        times = {k: [] for k in (*learners, "floor")}
        for r in range(rounds + 2):  # two warm-up rounds
            b = sampler.sample(cfg.train.batch_size, rng)
            fixed = {k: torch.from_numpy(v) for k, v in b.items() if k != "index"}
            steps = [(k, functools.partial(learner.update, b)) for k, learner in learners.items() if k != "old"]
            for key, fn in (("old", lambda: reference_update(old, b)), *steps, ("floor", floor_round)):
                c0 = time.process_time()
                fn()
                if r >= 2:
                    times[key].append(time.process_time() - c0)
        ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        rows.append(
            {"arm": name, "batch": cfg.train.batch_size, "before": before, **{f"{k}_ms": v for k, v in ms.items()}}
        )
        print(f"update A/B {name} B={cfg.train.batch_size}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in ms.items()))
    return rows


def sog_step_ab(batch: int, rounds: int, before: str) -> dict:
    """Student of Games' whole step (sample, update, loss terms read back) as at git
    revision `before` against now, beside the floor, interleaved on the same draws:
    before, the window gathering each example's rows (`DENSE_ROWS_BYTES` 0), the CVPN
    loss as it was (the oracle of tests/test_cvpn_loss_exact.py) and `before`'s Learner;
    now, the window's dense rows, today's loss and Learner; each with the default step
    and with train.fused_step. Medians of the process's CPU time (ms), and whether
    before and now returned the same loss terms every round."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from polyzero.sog import selfplay
    from test_cvpn_loss_exact import ReferenceModel

    arm = next(a for a in ARMS if a.name == "sog_cvpn")
    model, cfg, window = setup(arm, batch)
    saved, selfplay.DENSE_ROWS_BYTES = selfplay.DENSE_ROWS_BYTES, 0
    try:
        rows_window = setup(arm, batch)[2]
    finally:
        selfplay.DENSE_ROWS_BYTES = saved
    then, cpu, old_model = learner_before(before), torch.device("cpu"), ReferenceModel(model.encoding, cfg)
    fused_cfg = dataclasses.replace(cfg.train, fused_step=True)
    torch.manual_seed(0)
    now = Learner(model, cfg.train, cpu)
    learners = {
        "before": (then(old_model, cfg.train, cpu), rows_window),
        "now": (now, window),
        "before_fused": (then(old_model, fused_cfg, cpu), rows_window),
        "fused": (Learner(model, fused_cfg, cpu), window),
    }
    for learner, _ in learners.values():
        learner.net.load_state_dict(now.net.state_dict())
    draws = {id(w): np.random.default_rng(0) for w in (window, rows_window)}  # the same calls on each, in turn
    floor_net = model.build_network().train()
    first = [w.sample(cfg.train.batch_size, np.random.default_rng(1)) for w in (window, rows_window)]
    fixed = {k: torch.from_numpy(v) for k, v in first[0].items()}  # the floor's batch, drawn from both windows
    times = {k: [] for k in (*learners, "floor")}
    identical = {"default": True, "fused": True}
    pairs = [("before", "now"), ("before_fused", "fused")]
    for r in range(rounds + 2):  # two warm-up rounds
        out = {}
        # each pair back to back, which of the two goes first alternating by round (the
        # one after the other finds the shared window's arrays in cache)
        for key in (k for pair in pairs for k in (pair if r % 2 else pair[::-1])):
            learner, source = learners[key]
            c0 = time.process_time()
            out[key] = learner.update(source.sample(cfg.train.batch_size, draws[id(source)]))
            times[key].append(time.process_time() - c0)
        c0 = time.process_time()
        floor_net.zero_grad(set_to_none=True)
        floor_pass(model, floor_net, fixed)
        times["floor"].append(time.process_time() - c0)
        identical["default"] &= out["before"] == out["now"]
        identical["fused"] &= out["before_fused"] == out["fused"]
    ms = {k: statistics.median(v[2:]) * 1e3 for k, v in times.items()}
    print(f"SoG step A/B B={cfg.train.batch_size}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in ms.items()), identical)
    return {"batch": cfg.train.batch_size, "revision": before, "rounds": rounds, "identical": identical, **ms}


def check_ab_args(ap: argparse.ArgumentParser, args) -> None:
    """Refuse, before any timing, a revision git does not know or no A/B rounds (the
    A/B's run after the main table: a bad REV there lost the whole run's results)."""
    repo = Path(__file__).resolve().parents[1]
    for rev in dict.fromkeys(r for r in (args.update_ab_before, args.sog_step_ab) if r):
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=repo, capture_output=True
        )
        if found.returncode:
            ap.error(f"no git revision {rev!r} in this repository")
    for flag in ("sog_step_ab_rounds", "phases_rounds", "drift_steps"):
        if getattr(args, flag) < 1:  # none: a median of nothing (a traceback after the main table) or an empty table
            ap.error(f"--{flag.replace('_', '-')} must be at least 1, not {getattr(args, flag)}")
    known = {a.name for a in ARMS}
    for flag in ("phases", "drift"):
        for name in (n for n in getattr(args, flag, "").split(",") if n):
            if name.removesuffix(":torch") not in known:
                ap.error(f"--{flag.replace('_', '-')}: no arm {name!r}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", default=",".join(a.name for a in ARMS))
    ap.add_argument("--devices", default="cpu,cuda", help="cuda is skipped where there is none")
    ap.add_argument("--batch-size", type=int, default=0, help="0: each arm's preset batch size")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cpu-threads", type=int, default=os.cpu_count(), help="torch threads for the CPU learner")
    ap.add_argument("--loss-ab", type=int, default=0, metavar="ROUNDS", help="also the loss alone, old code vs new")
    ap.add_argument("--profile", default="", metavar="ARMS", help="also profile these arms' updates (torch.profiler)")
    ap.add_argument("--profile-updates", type=int, default=4)
    ap.add_argument("--phases", default="", metavar="ARMS", help="also these arms' step phase by phase (CPU time)")
    ap.add_argument("--phases-rounds", type=int, default=300)
    ap.add_argument("--drift", default="", metavar="ARMS", help="also train.fused_step's drift from the default step")
    ap.add_argument("--drift-steps", type=int, default=2000)
    ap.add_argument("--update-ab", default="", metavar="ARMS", help="also these arms' whole update, old code vs new")
    ap.add_argument("--update-ab-before", default="", metavar="REV", help="and against this git revision's Learner")
    ap.add_argument(
        "--sog-step-ab", default="", metavar="REV", help="also SoG's step vs the rows window, old loss, REV's Learner"
    )
    ap.add_argument("--sog-step-ab-rounds", type=int, default=400)
    ap.add_argument("--quick", action="store_true", help="smoke run: small batches, two rounds")
    ap.add_argument("--out", default="benchmarks/results/learner_speed_floor.json")
    return ap


def main(argv=None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    check_ab_args(ap, args)
    if args.quick:
        args.batch_size, args.steps, args.warmup = args.batch_size or 16, 2, 1
        args.sog_step_ab_rounds, args.phases_rounds, args.drift_steps = 2, 2, 2
    torch.set_num_threads(args.cpu_threads)
    devices = [d for d in args.devices.split(",") if d != "cuda" or torch.cuda.is_available()]
    wanted = args.arms.split(",")
    arms = [a for a in ARMS if a.name in wanted or any(a.name == b.baseline for b in ARMS if b.name in wanted)]
    load0 = os.getloadavg()
    rows = []
    for arm in arms if args.arms else []:
        algo, cfg, sampler = setup(arm, args.batch_size)
        for dev in devices:
            r = time_arm(arm, algo, cfg, sampler, torch.device(dev), args.steps, args.warmup)
            rows.append(
                {
                    "arm": arm.name,
                    "game": arm.game,
                    "algo": arm.algo,
                    "baseline": arm.baseline,
                    "overrides": arm.overrides,
                    "device": dev,
                    "batch_size": cfg.train.batch_size,
                    **r,
                }
            )
            print(
                f"{arm.name} {dev} batch {cfg.train.batch_size}: {r['steps_per_s']:.2f} steps/s, floor "
                f"{r['floor_steps_per_s']:.2f}, learner/floor {r['learner_over_floor']:.2f} "
                f"(CPU time {r['cpu_learner_over_floor']:.2f})",
                flush=True,
            )
    loss_rows = loss_ab(args.loss_ab) if args.loss_ab else []
    update_rows = update_ab(
        [a for a in args.update_ab.split(",") if a], args.batch_size, args.steps, args.update_ab_before
    )
    step_ab = sog_step_ab(args.batch_size, args.sog_step_ab_rounds, args.sog_step_ab) if args.sog_step_ab else None
    profiles = [
        profile_arm(next(a for a in ARMS if a.name == name), args.batch_size, args.profile_updates)
        for name in args.profile.split(",")
        if name
    ]
    phases, drifts = phases_and_drifts(args)
    result = {
        "command": command_line(argv),
        "machine": machine_info(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "cpu_threads": args.cpu_threads,
        "steps": args.steps,
        "warmup": args.warmup,
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg(),
        "rows": rows,
        "loss_ab": loss_rows,
        "update_ab": update_rows,
        "profiles": profiles,
        "sog_step_ab": step_ab,
        "phases": phases,
        "drift": drifts,
    }
    report = render(result) + "\n".join(render_phases(phases) + render_drift(drifts)) + "\n"
    write_results(args.out, result, report)
    print(report)


if __name__ == "__main__":
    main()
