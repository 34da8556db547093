"""Where NDMZ's training time goes on Nannon 6-3-6, and learning steps per CPU second of
two source trees, interleaved (issue 56: more learning steps in the benchmark's
60 minutes, results unchanged).

Both modes resume copies of one checkpoint of the benchmark's run (`nannon_636.py train
--method ndmz --set ndmz.td_steps=3`: replay, games in flight, optimizer) and run
--steps learning steps at the benchmark's settings (one thread; after one untimed step,
which pays the first calls: ONNX session, compiled kernels) with no checkpoint in
between (a checkpoint is not in the run's `train_time`, the clock the 60-minute budget
reads; `split` times one separately). Times are the process's CPU time
(`time.process_time`), which other jobs on a shared core do not inflate.

  # the split of train_time: self-play (its search: network calls, the rest of the
  # tree work), the rest of self-play, replay sampling, the learner's update, the rest
  python benchmarks/ndmz_train_speed.py split --from RUN_DIR --steps 6 --out ndmz_train_split

  # A/B: arms A and B (source trees, as PYTHONPATH) in ABBA order, --rounds times; each
  # arm a fresh process; the final weights of every arm must agree bit for bit
  python benchmarks/ndmz_train_speed.py ab --from RUN_DIR --a TREE_A --b TREE_B \
      --steps 6 --rounds 2 --out ndmz_train_speed_ab

Writes benchmarks/results/OUT.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import ONE_THREAD, git_commit, machine_info, results_name, utcnow, write_results  # noqa: E402


# ----------------------------------------------------------------------------- one arm
def _resume_copy(src: Path, dest: Path):
    """The trainer of a copy of run `src` (its latest checkpoint only)."""
    from polyzero.train.checkpoint import latest_checkpoint
    from polyzero.train.driver import Trainer

    ckpt = latest_checkpoint(src)
    if ckpt is None:
        raise SystemExit(f"{src} holds no checkpoint")
    (dest / "checkpoints").mkdir(parents=True)
    shutil.copy2(src / "config.toml", dest / "config.toml")
    shutil.copytree(ckpt, dest / "checkpoints" / ckpt.name)
    (dest / "checkpoints" / "latest").write_text(ckpt.name)
    trainer = Trainer.resume(dest, ["threads=1", f"train.steps={10**9}"], progress=False)
    trainer.cfg.train.checkpoint_every = 10**9
    return trainer


def _weights_digest(trainer) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(trainer.learner.net.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


class _Clock:
    """Process CPU seconds spent inside wrapped callables, by part (the outermost wrap of
    a part counts; parts nest: `search` inside `collect`)."""

    def __init__(self):
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, part: str, fn):
        def timed(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[part] = self.cpu.get(part, 0.0) + time.process_time() - t0
                self.calls[part] = self.calls.get(part, 0) + 1

        return timed


def _instrument(trainer, clock: _Clock) -> None:
    """Time the parts of a learning step (instance attributes: nothing else changes)."""
    trainer._learning_step = clock.wrap("step", trainer._learning_step)
    trainer._collect = clock.wrap("collect", trainer._collect)
    trainer._updates = clock.wrap("updates", trainer._updates)
    trainer.replay.sample = clock.wrap("replay_sample", trainer.replay.sample)
    trainer.learner.update = clock.wrap("learner_update", trainer.learner.update)
    trainer.algo.search = clock.wrap("search", trainer.algo.search)
    evaluate = trainer.actor_evaluator  # the self-play search's network (NDMZInference)
    evaluate.recurrent = clock.wrap("search_network", evaluate.recurrent)
    evaluate.initial = clock.wrap("search_network", evaluate.initial)


def run_arm(src: Path, steps: int, split: bool, flush_denormal: bool = False) -> dict:
    """`steps` learning steps of a copy of `src`: CPU and wall seconds of the steps (and,
    with `split`, of their parts, a checkpoint and a chunk's restart)."""
    import torch

    torch.set_num_threads(1)
    if flush_denormal:  # subnormal floats as zero (changes results: a measurement, not a setting)
        torch.set_flush_denormal(True)
    work = Path(tempfile.mkdtemp(prefix="ndmz_speed_"))
    try:
        trainer = _resume_copy(src, work / "run")
        trainer.cfg.train.steps = trainer.step + 1  # untimed: first calls (ONNX session, kernels, allocations)
        trainer.run()
        clock = _Clock()
        if split:
            _instrument(trainer, clock)
        else:
            trainer._learning_step = clock.wrap("step", trainer._learning_step)
        start_step, start_train = trainer.step, trainer.train_time
        trainer.cfg.train.steps = start_step + steps
        cpu0, wall0 = time.process_time(), time.perf_counter()
        trainer.run()
        out = {
            "steps": trainer.step - start_step,
            "run_cpu_s": time.process_time() - cpu0,
            "run_wall_s": time.perf_counter() - wall0,
            "train_time_s": trainer.train_time - start_train,
            "parts_cpu_s": clock.cpu,
            "calls": clock.calls,
            "weights": _weights_digest(trainer),
            "start_step": start_step,
        }
        if split:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            trainer.save()
            out["save_cpu_s"], out["save_wall_s"] = time.process_time() - cpu0, time.perf_counter() - wall0
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------- split
SPLIT_ROWS = (  # (label, CPU seconds from the parts)
    ("self-play: search network calls (g then f, h then f)", lambda p: p.get("search_network", 0.0)),
    ("self-play: search, the rest (tree, NDMZ node bookkeeping)", lambda p: p["search"] - p.get("search_network", 0)),
    ("self-play: the rest (games, targets, replay writes)", lambda p: p["collect"] - p["search"]),
    ("learner: replay sampling and unroll targets", lambda p: p["replay_sample"]),
    ("learner: forward, backward, optimizer step", lambda p: p["learner_update"]),
    ("learner: the rest of the updates", lambda p: p["updates"] - p["replay_sample"] - p["learner_update"]),
    ("the rest of the step (weights to self-play, logging)", lambda p: p["step"] - p["collect"] - p["updates"]),
)


def split_markdown(meta: dict, arm: dict) -> str:
    p, n = arm["parts_cpu_s"], arm["steps"]
    lines = [
        "# NDMZ on Nannon 6-3-6: where a learning step's CPU time goes",
        "",
        f"- {meta['when']}, commit {meta['commit'][:10]}, {meta['machine'].get('Model name', '?')} "
        f"({meta['machine'].get('CPU(s)')} CPUs, shared: other jobs ran; times are this process's CPU time)",
        f"- command: `{meta['command']}`",
        f"- resumed one step before learning step {arm['start_step']} (that step untimed), {n} steps timed, one thread",
        "",
        "| part | CPU s per step | share of the steps' CPU |",
        "|---|---:|---:|",
    ]
    for label, get in SPLIT_ROWS:
        lines.append(f"| {label} | {get(p) / n:.3f} | {get(p) / p['step']:.1%} |")
    lines.append(f"| **learning step (what train_time counts)** | **{p['step'] / n:.3f}** | 100% |")
    lines += [
        "",
        f"Outside train_time: one checkpoint (replay included) {arm['save_cpu_s']:.2f} CPU s, "
        f"{arm['save_wall_s']:.2f} s wall. Wall clock of the {n} steps: {arm['train_time_s']:.1f} s "
        f"(train_time; the machine was shared), {arm['run_cpu_s']:.1f} CPU s for the whole run() call.",
        "",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- A/B
def _arm_process(tree: Path, src: Path, steps: int, flush_denormal: bool) -> dict:
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(tree)}
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [sys.executable, __file__, "arm", "--from", str(src), "--steps", str(steps), "--json", f.name]
        cmd += ["--flush-denormal"] if flush_denormal else []
        subprocess.run(cmd, env=env, check=True, cwd=tree)
        return {**json.loads(Path(f.name).read_text()), "commit": git_commit(tree)}


def ab_markdown(meta: dict, runs: list[dict], summary: dict) -> str:
    lines = [
        "# NDMZ on Nannon 6-3-6: learning steps per CPU second, A/B",
        "",
        f"- {meta['when']}, {meta['machine'].get('Model name', '?')} ({meta['machine'].get('CPU(s)')} CPUs, "
        "shared: other jobs ran on its cores; times are each arm's process CPU time)",
        f"- command: `{meta['command']}`",
        f"- A: commit {meta['commits']['A']}; B: commit {meta['commits']['B']}"
        + (" with subnormal floats flushed to zero (torch.set_flush_denormal)" if meta["b_flush_denormal"] else ""),
        f"- each arm: a fresh process resumed one step before learning step {runs[0]['start_step']} (that step "
        f"untimed), {runs[0]['steps']} steps timed, order {''.join(r['arm'] for r in runs)}",
        "",
        "| arm | order | CPU s per step | steps per CPU minute | wall s per step | final weights |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for i, r in enumerate(runs):
        per = r["parts_cpu_s"]["step"] / r["steps"]
        wall = r["train_time_s"] / r["steps"]
        lines.append(f"| {r['arm']} | {i + 1} | {per:.3f} | {60 / per:.1f} | {wall:.2f} | `{r['weights']}` |")
    a, b = summary["A_cpu_per_step"], summary["B_cpu_per_step"]
    paired = ", ".join(f"{x:.3f}" for x in summary["paired"])
    lines += [
        "",
        f"Mean CPU s per step: A {a:.3f}, B {b:.3f}; B/A {summary['ratio_b_over_a']:.3f} (each ABBA block's "
        f"B over its A: {paired}); learning steps per CPU minute A {60 / a:.1f}, B {60 / b:.1f}.",
        f"Final weights equal in every arm: **{summary['weights_equal']}**.",
        "",
    ]
    return "\n".join(lines)


def run_ab(args) -> None:
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    runs = []
    for _ in range(args.rounds):
        for arm in "ABBA":
            rec = _arm_process(trees[arm], args.src.resolve(), args.steps, arm == "B" and args.b_flush_denormal)
            runs.append({"arm": arm, **rec})
            print(f"[ab] {arm}: {rec['parts_cpu_s']['step'] / rec['steps']:.3f} CPU s per step", flush=True)
    per = {arm: [r["parts_cpu_s"]["step"] / r["steps"] for r in runs if r["arm"] == arm] for arm in "AB"}
    # one ABBA block per round: its two B over its two A
    paired = [sum(per["B"][2 * i : 2 * i + 2]) / sum(per["A"][2 * i : 2 * i + 2]) for i in range(args.rounds)]
    summary = {
        "A_cpu_per_step": statistics.mean(per["A"]),
        "B_cpu_per_step": statistics.mean(per["B"]),
        "ratio_b_over_a": statistics.mean(per["B"]) / statistics.mean(per["A"]),
        "paired": paired,
        "weights_equal": len({r["weights"] for r in runs}) == 1,
    }
    meta = _meta(args)
    meta["commits"] = {k: ", ".join(sorted({r["commit"][:10] for r in runs if r["arm"] == k})) for k in trees}
    meta["b_flush_denormal"] = args.b_flush_denormal
    write_results(
        HERE / "results" / f"{args.out}.json",
        {"meta": meta, "runs": runs, "summary": summary},
        ab_markdown(meta, runs, summary),
    )


def _polyzero_tree() -> Path:
    import polyzero

    return Path(polyzero.__file__).resolve().parent.parent


def _meta(args) -> dict:
    return {
        "when": utcnow(),
        "command": "python benchmarks/ndmz_train_speed.py " + " ".join(sys.argv[1:]),
        "machine": machine_info(),
        "commit": git_commit(_polyzero_tree()),  # the tree polyzero was imported from (PYTHONPATH)
        "loadavg": os.getloadavg(),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("split", "ab", "arm"))
    p.add_argument("--from", dest="src", type=Path, required=True, help="a run directory of the benchmark")
    p.add_argument("--steps", type=int, default=6, help="learning steps per arm")
    p.add_argument("--rounds", type=int, default=2, help="ABBA blocks (ab)")
    p.add_argument("--a", type=Path, help="source tree of arm A (ab)")
    p.add_argument("--b", type=Path, help="source tree of arm B (ab)")
    p.add_argument("--json", type=Path, help="where an arm writes its record (arm)")
    p.add_argument("--flush-denormal", action="store_true", help="subnormal floats as zero (arm)")
    p.add_argument("--b-flush-denormal", action="store_true", help="arm B with subnormal floats as zero (ab)")
    p.add_argument("--out", type=results_name, default=None, help="results name")
    args = p.parse_args(argv)
    if args.mode == "arm":
        args.json.write_text(json.dumps(run_arm(args.src, args.steps, split=False, flush_denormal=args.flush_denormal)))
    elif args.mode == "split":
        arm = run_arm(args.src, args.steps, split=True)
        meta = _meta(args)
        write_results(
            HERE / "results" / f"{args.out or 'ndmz_train_split'}.json",
            {"meta": meta, "arm": arm},
            split_markdown(meta, arm),
        )
    else:
        if args.a is None or args.b is None:
            p.error("ab needs --a and --b")
        run_ab(args)


if __name__ == "__main__":
    main()
