"""Benchmark `minatar_muzero`: MuZero and MuZero Reanalyze on MinAtar Breakout.

    python benchmarks/minatar_muzero.py all --budget-min 30 --episodes 100 --seed 0

Phases (each continues from what WORK already holds, so a run resumes):
  train   both arms side by side, one core each: `polyzero train
          minatar-breakout --algo muzero` (the shipped preset, Gumbel root unless
          --search puct; Reanalyze adds the paper's Appendix H settings)
          for `--budget-min` minutes of wall clock, a checkpoint every
          `--checkpoint-every` learning steps (all kept); stopped with SIGTERM
          (which writes a checkpoint) and continued with --resume on re-runs.
  eval    every checkpoint of every arm: mean return over `--episodes`
          episodes at the evaluation search (no noise, most-visited action),
          plus a random policy in the same run; cached per checkpoint.
  report  benchmarks/results/minatar_muzero.{json,md,png}: return against
          environment steps and learning steps, machine, command, seed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GAME = "minatar-breakout"
ARMS = {
    "muzero": [],
    "reanalyze": ["muzero.reanalyse_fraction=0.8", "muzero.td_steps=5", "muzero.value_loss_weight=0.25"],
}


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def train(args, work: Path) -> None:
    """Both arms side by side, one process (one torch thread: the preset's `threads`)
    per core, each for what is left of its budget."""
    polyzero = str(Path(sys.executable).with_name("polyzero"))
    running = []
    for arm, extra in ARMS.items():
        run = work / arm
        spent_file = work / f"{arm}.seconds"
        spent = float(spent_file.read_text()) if spent_file.exists() else 0.0
        left = args.budget_min * 60 - spent
        if left <= 1:
            _log(f"{arm}: budget spent ({spent / 60:.1f} min)")
            continue
        if (run / "checkpoints").exists():
            cmd = [polyzero, "train", "--resume", str(run), "--no-progress"]
        else:
            cmd = [polyzero, "train", GAME, "--algo", "muzero", "--run-dir", str(run), "--no-progress",
                   "--seed", str(args.seed)]
            for o in extra + ["train.steps=1000000", "eval.every=0", "eval.final_games=0",
                              f"train.checkpoint_every={args.checkpoint_every}", "train.keep_checkpoints=100000",
                              f"search.kind={args.search}"]:
                cmd += ["--set", o]
        _log(f"{arm}: training {left / 60:.1f} min: {' '.join(cmd)}")
        log = open(work / f"{arm}.log", "a")
        running.append((subprocess.Popen(cmd, stdout=log, stderr=log), log, time.time(), left, spent,
                        spent_file))
    for proc, log, t0, left, spent, spent_file in running:
        try:
            proc.wait(timeout=max(0.0, t0 + left - time.time()))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        log.close()
        spent_file.write_text(str(spent + time.time() - t0))


def _checkpoints(run: Path) -> list[Path]:
    return sorted(p for p in (run / "checkpoints").glob("step_*") if p.is_dir())


def evaluate(args, work: Path) -> None:
    from polyzero.eval import play_single_agent
    from polyzero.eval.players import RandomPlayer
    from polyzero.games import load_game
    from polyzero.train.agents import load_search_player

    out = work / "eval"
    out.mkdir(exist_ok=True)
    game = load_game(GAME)
    random_file = out / "random.json"
    if not random_file.exists():
        res = play_single_agent(game, RandomPlayer(args.seed), args.episodes, seed=args.seed)
        random_file.write_text(json.dumps(res))
        _log(f"random: {res['mean_return']:.2f}")
    for arm in ARMS:
        for ckpt in _checkpoints(work / arm):
            path = out / f"{arm}-{ckpt.name}.json"
            if path.exists():
                continue
            state = json.loads((ckpt / "state.json").read_text())
            player = load_search_player(str(ckpt), game, seed=args.seed)
            res = play_single_agent(game, player, args.episodes, seed=args.seed + 1)
            res.update(step=state["step"], positions=state["actor"]["stats"]["positions"],
                       train_time=state["train_time"])
            path.write_text(json.dumps(res))
            _log(f"{arm} {ckpt.name}: {res['mean_return']:.2f} [{res['ci_low']:.2f}, {res['ci_high']:.2f}]")


def report(args, work: Path) -> dict:
    out = work / "eval"
    curves = {arm: sorted((json.loads(p.read_text()) for p in out.glob(f"{arm}-step_*.json")),
                          key=lambda r: r["step"]) for arm in ARMS}
    random = json.loads((out / "random.json").read_text())
    for pts in curves.values():
        for p in pts:
            p.pop("returns", None)
    random.pop("returns", None)
    result = {
        "benchmark": "minatar_muzero", "game": GAME, "seed": args.seed, "budget_min": args.budget_min,
        "search": args.search,
        "episodes": args.episodes, "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "random": random, "curves": curves,
        "targets": _targets(curves, random),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "minatar_muzero.json").write_text(json.dumps(result, indent=1))
    (RESULTS / "minatar_muzero.md").write_text(_markdown(result))
    _plot(curves, random, RESULTS / "minatar_muzero.png")
    return result


def _targets(curves, random) -> dict:
    best = {arm: max((p["mean_return"] for p in pts), default=0.0) for arm, pts in curves.items()}
    five_x = {arm: b >= 5 * random["mean_return"] for arm, b in best.items()}
    return {"best_mean_return": best, "at_least_5x_random": five_x}


def _markdown(r: dict) -> str:
    lines = ["# Benchmark `minatar_muzero`", "",
             f"MuZero and MuZero Reanalyze on MinAtar Breakout (`{GAME}` preset, {r['search']} root search), "
             f"{r['budget_min']:g} minutes of training wall clock per arm, the two arms side by side on "
             f"one core each, seed {r['seed']}.", "",
             f"- machine: {r['machine']}", f"- command: `python benchmarks/{r['command']}`",
             f"- evaluation: mean return over {r['episodes']} episodes, no noise, most-visited action; "
             f"normal 95% interval",
             f"- random policy, same run: {r['random']['mean_return']:.2f} "
             f"[{r['random']['ci_low']:.2f}, {r['random']['ci_high']:.2f}]", "",
             "| arm | learning steps | environment steps | train min | mean return | 95% CI |",
             "|---|---:|---:|---:|---:|---|"]
    for arm, pts in r["curves"].items():
        for p in pts:
            lines.append(f"| {arm} | {p['step']} | {p['positions']} | {p['train_time'] / 60:.1f} | "
                         f"{p['mean_return']:.2f} | [{p['ci_low']:.2f}, {p['ci_high']:.2f}] |")
    t = r["targets"]
    lines += ["", "Targets: at least 5x the random policy's return: " +
              ", ".join(f"{a} {'met' if ok else 'not met'} (best {t['best_mean_return'][a]:.2f})"
                        for a, ok in t["at_least_5x_random"].items())
              + "; Reanalyze ahead of plain MuZero at equal environment steps: compare the rows above.",
              "", "![curves](minatar_muzero.png)", ""]
    return "\n".join(lines)


def _plot(curves, random, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for arm, pts in curves.items():
        if pts:
            ax.errorbar([p["positions"] for p in pts], [p["mean_return"] for p in pts],
                        yerr=[[p["mean_return"] - p["ci_low"] for p in pts],
                              [p["ci_high"] - p["mean_return"] for p in pts]], marker=".", label=arm)
    ax.axhline(random["mean_return"], color="grey", linestyle="--", label="random")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return, 95% CI")
    ax.set_title("MinAtar Breakout")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "minatar_muzero")
    p.add_argument("--budget-min", type=float, default=30.0, help="training wall clock per arm (minutes)")
    p.add_argument("--checkpoint-every", type=int, default=25, help="learning steps between checkpoints")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--search", choices=["gumbel", "puct"], default="gumbel",
                   help="root search of both arms (the preset's gumbel; puct is MuZero's own)")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.phase in ("train", "all"):
        train(args, args.work)
    if args.phase in ("eval", "all"):
        evaluate(args, args.work)
    if args.phase in ("report", "all"):
        print(json.dumps(report(args, args.work)["targets"], indent=1))


if __name__ == "__main__":
    main()
