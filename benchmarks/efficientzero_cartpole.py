"""Benchmark `efficientzero_cartpole`: EfficientZero's value prefix and off-policy
correction (Ye et al. 2021, Sections 4.2-4.3) against plain MuZero on CartPole, a
smoke-level ablation at equal learning steps (so equal environment steps).

    python benchmarks/efficientzero_cartpole.py all --seeds 0,1,2 --steps 100 --jobs 2

Arms (every one the shipped `cartpole` preset, 200 new positions per learning step):
  plain            the preset
  value_prefix     + muzero.value_prefix=true (H = 5)
  reanalyse_value  the off-policy arm's control: Reanalyze refreshing only the
                   bootstrap values (0.8 of each minibatch) with a search by the
                   target network (muzero.reanalyse_targets=value,
                   muzero.reanalyse_bootstrap=search)
  off_policy       reanalyse_value + muzero.off_policy_correction=true

Phases:
  train   every (arm, seed) not finished yet under WORK, `--jobs` processes at once
          (one torch thread each); an unfinished run directory is started over.
  report  benchmarks/results/OUT.{json,md} (--out): the mean evaluation return at each
          evaluation step per arm, over the seeds, with each seed's value; per seed the
          area under the return curve over learning steps, normalised (the mean return
          over training, Go-Exploit's AUC, polyzero.eval.auc), its mean over the seeds
          with a 95% t interval, and Welch's one-sided p of each switch above its control.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from polyzero.eval.auc import learning_curve_auc, welch_one_sided

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
REANALYSE_VALUE = [
    "muzero.reanalyse_fraction=0.8",
    "muzero.reanalyse_bootstrap=search",
    "muzero.reanalyse_targets=value",
]
ARMS = {
    "plain": [],
    "value_prefix": ["muzero.value_prefix=true"],
    "reanalyse_value": REANALYSE_VALUE,
    "off_policy": REANALYSE_VALUE + ["muzero.off_policy_correction=true"],
}
CONTROL = {"value_prefix": "plain", "off_policy": "reanalyse_value"}  # each switch against its control


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _records(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _finished(run: Path, steps: int) -> bool:
    return any(r.get("kind") == "train" and r.get("step") == steps for r in _records(run))


def _command(arm: str, seed: int, args, run: Path) -> list[str]:
    sets = [
        f"train.steps={args.steps}",
        f"eval.every={args.eval_every}",
        f"eval.games={args.eval_games}",
        "eval.final_games=0",
        "threads=1",
        f"train.checkpoint_every={args.steps}",
        *ARMS[arm],
    ]
    return [
        sys.executable,
        "-m",
        "polyzero",
        "train",
        "cartpole",
        "--algo",
        "muzero",
        "--seed",
        str(seed),
        "--run-dir",
        str(run),
        "--no-progress",
    ] + [x for s in sets for x in ("--set", s)]


def train(args, work: Path) -> None:
    todo = [
        (arm, seed) for seed in args.seeds for arm in args.arms if not _finished(work / arm / f"seed{seed}", args.steps)
    ]
    running: list[tuple[str, subprocess.Popen]] = []
    while todo or running:
        while todo and len(running) < args.jobs:
            arm, seed = todo.pop(0)
            run = work / arm / f"seed{seed}"
            shutil.rmtree(run, ignore_errors=True)  # an unfinished run starts over
            run.parent.mkdir(parents=True, exist_ok=True)
            log = open(work / f"{arm}_seed{seed}.log", "w")
            _log(f"start {arm} seed {seed}")
            running.append(
                (
                    f"{arm} seed {seed}",
                    subprocess.Popen(_command(arm, seed, args, run), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT),
                )
            )
        time.sleep(2)
        for name, proc in [r for r in running if r[1].poll() is not None]:
            running.remove((name, proc))
            _log(f"done {name}: exit {proc.returncode}")


def _curve(run: Path) -> dict:
    """Evaluation step -> (environment steps so far, mean return); and the training wall time."""
    records = _records(run)
    env_steps, points, wall = 0, [], 0.0
    for r in records:
        if r.get("kind") == "train":
            env_steps, wall = r.get("selfplay/positions", env_steps), r.get("train_time", wall)
        elif r.get("kind") == "eval" and "eval/return/mean" in r:
            points.append({"step": r["step"], "env_steps": env_steps, "return": r["eval/return/mean"]})
    return {"points": points, "train_seconds": wall}


def report(args, work: Path) -> None:
    arms = {}
    for arm in args.arms:
        seeds = {
            s: _curve(work / arm / f"seed{s}") for s in args.seeds if _finished(work / arm / f"seed{s}", args.steps)
        }
        if not seeds:
            continue
        steps = sorted({p["step"] for c in seeds.values() for p in c["points"]})
        table = []
        for step in steps:
            values = {s: p["return"] for s, c in seeds.items() for p in c["points"] if p["step"] == step}
            env = [p["env_steps"] for c in seeds.values() for p in c["points"] if p["step"] == step]
            table.append(
                {
                    "step": step,
                    "env_steps_mean": float(np.mean(env)),
                    "mean": float(np.mean(list(values.values()))),
                    "per_seed": {str(s): v for s, v in values.items()},
                }
            )
        auc = [
            learning_curve_auc(
                [p["step"] for p in c["points"]],
                [p["return"] for p in c["points"]],
                total_steps=args.steps,
                normalise=True,
            )
            for c in seeds.values()
        ]
        arms[arm] = {
            "overrides": ARMS[arm],
            "seeds": sorted(seeds),
            "curve": table,
            "auc_per_seed": auc,
            "auc": _mean_interval(auc),
            "train_seconds_mean": float(np.mean([c["train_seconds"] for c in seeds.values()])),
        }
    for arm, control in CONTROL.items():
        if arm in arms and control in arms and min(len(arms[arm]["seeds"]), len(arms[control]["seeds"])) > 1:
            _, p_value = welch_one_sided(arms[arm]["auc_per_seed"], arms[control]["auc_per_seed"])
            arms[arm]["against_control"] = {"control": control, "welch_one_sided_p": p_value}
    out = {
        "benchmark": "efficientzero_cartpole",
        "date": time.strftime("%Y-%m-%d"),
        "command": f"python benchmarks/efficientzero_cartpole.py all --seeds {','.join(map(str, args.seeds))} "
        f"--steps {args.steps} --eval-every {args.eval_every} --eval-games {args.eval_games} "
        f"--jobs {args.jobs}",
        "machine": f"{os.cpu_count()}-core {platform.machine()} CPU, one torch thread per run, {args.jobs} runs "
        f"at once; load average {os.getloadavg()[1]:.1f} over the 5 minutes before the report",
        "settings": {
            "steps": args.steps,
            "eval_every": args.eval_every,
            "eval_games": args.eval_games,
            "positions_per_step": 200,
        },
        "arms": arms,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(_markdown(out))
    _log(f"wrote {RESULTS / args.out}.json and .md")


def _mean_interval(values) -> dict:
    """The mean of `values` with a 95% Student t interval (none for one value)."""
    x = np.asarray(values, np.float64)
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
    return {"mean": float(x.mean()), "low": float(x.mean() - half), "high": float(x.mean() + half)}


def _markdown(out: dict) -> str:
    arms = out["arms"]
    steps = sorted({row["step"] for a in arms.values() for row in a["curve"]})
    head = "| arm | " + " | ".join(f"step {s}" for s in steps) + " | AUC, 95% interval | vs control | training s |"
    lines = [
        f"# efficientzero_cartpole ({out['date']})",
        "",
        f"`{out['command']}`",
        "",
        f"Machine: {out['machine']}.",
        "",
        "Mean evaluation return (CartPole-v1, cap 500) over the seeds at each evaluation step "
        f"({out['settings']['eval_games']} episodes each; {out['settings']['positions_per_step']} new "
        "positions per learning step); each seed's value in brackets. A smoke-level measurement.",
        "",
        "AUC: the mean return over the run's learning steps (the curve interpolated between "
        "evaluations), per seed, then its mean over the seeds with a 95% t interval; vs control: "
        "Welch's one-sided p of the switch's AUC above its control's.",
        "",
        head,
        "|" + "---|" * (len(steps) + 4),
    ]
    for name, a in arms.items():
        cells = []
        for s in steps:
            row = next((r for r in a["curve"] if r["step"] == s), None)
            per_seed = ", ".join(f"{v:.0f}" for v in row["per_seed"].values()) if row else ""
            cells.append("" if row is None else f"{row['mean']:.1f} ({per_seed})")
        auc, vs = a["auc"], a.get("against_control")
        versus = f"p = {vs['welch_one_sided_p']:.2f} vs {vs['control']}" if vs else ""
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {auc['mean']:.1f} [{auc['low']:.1f}, {auc['high']:.1f}] | "
            f"{versus} | {a['train_seconds_mean']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=("train", "report", "all"))
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "efficientzero_cartpole")
    p.add_argument("--arms", type=lambda s: s.split(","), default=list(ARMS))
    p.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--eval-games", type=int, default=10)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default="efficientzero_cartpole")
    args = p.parse_args(argv)
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARMS)}")
    if args.phase in ("train", "all"):
        train(args, args.work)
    if args.phase in ("report", "all"):
        report(args, args.work)


if __name__ == "__main__":
    main()
