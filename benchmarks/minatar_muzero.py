"""Benchmark `minatar_muzero`: MuZero and MuZero Reanalyze on MinAtar Breakout.

    python benchmarks/minatar_muzero.py train --arms muzero,reanalyze
    python benchmarks/minatar_muzero.py train --arms muzero_paper_ratio,muzero_reanalyze_ratio
    python benchmarks/minatar_muzero.py all --budget-min 30 --episodes 100 --seed 0
    python benchmarks/minatar_muzero.py train --work runs/probe/P --arms reanalyze \
        --set muzero.reanalyse_targets=policy            # a probe: one arm with an override

Arms (every one the shipped `minatar-breakout` preset, 1,024 samples per learning step):
  muzero              the preset: 256 new positions per learning step, so each
                      stored state is sampled 4.0 times on average (our scaling)
  reanalyze           Appendix H: policy targets re-searched for 0.8 of the
                      samples (at the preset's reanalyse_c_scale 0.01), a
                      target network for n = 5 bootstraps, value loss weight
                      0.25, 2.0 samples per stored state (512 new positions
                      per learning step)
  reanalyze_small     the small-budget preset: as `reanalyze`, but bootstraps
                      from a search with the target network, n = 10, value
                      loss weight 1 (both presets: polyzero/presets/
                      muzero_reanalyze-*_minatar-breakout.toml)
  muzero_paper_ratio  plain MuZero at Appendix H's 0.1 samples per stored state
                      (one minibatch of 128 per 1,280 new positions)
  muzero_reanalyze_ratio  the control: plain MuZero at Reanalyze's 2.0 samples
                      per stored state (512 new positions per learning step)

Phases (each continues from what WORK already holds, so a run resumes):
  train   the `--arms` side by side, one process and one core each, for
          `--budget-min` minutes of wall clock each, a checkpoint every
          `--checkpoint-positions` environment steps (all kept); stopped with
          SIGTERM (which writes a checkpoint) and continued with --resume.
  eval    every checkpoint of the `--arms`: mean return over `--episodes`
          episodes at the evaluation search (no noise, most-visited action),
          plus a random policy in the same run; cached per checkpoint.
  report  benchmarks/results/OUT.{json,md,png} (--out, default minatar_muzero) for every arm WORK
          holds: return against environment steps and learning steps, and
          Reanalyze against each plain arm at equal environment steps.
          With --seeds 0,1,2 (and {seed} in --work): OUT_seeds.{json,md,png},
          the mean over seeds with its 95% t-interval (minatar_muzero_seeds.py).

Games (--game, minatar_muzero_games.py): minatar-breakout (the default, every arm) and
atari-breakout (plain-MuZero arms; report OUT default atari_breakout: one curve beside
random play against environment steps, learning steps and minutes); eval --follow S
evaluates checkpoints as they appear, --eval-cap caps the evaluation's episodes.

Stopping at equal environment steps: --max-positions N ends each arm's run at the
learning step whose new positions reach N (its last checkpoint there); --budget-min
stays a cap on wall clock. Seeds: train and eval each with --seed S --work
'runs/bench/NAME_s{seed}'; minatar_muzero_queue.py runs such jobs two at a time.
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
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import minatar_muzero_eval  # noqa: E402
import minatar_muzero_plots  # noqa: E402
from common import POLYZERO, results_name, seed_list  # noqa: E402
from minatar_muzero_games import GAMES, game_error  # noqa: E402
from nannon_seeds import seed_work  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GAME = "minatar-breakout"


def preset_overrides(name: str) -> list[str]:
    """A shipped preset's values as `--set KEY=VALUE` overrides (its game and algo left
    out): the benchmark's Reanalyze arms are the presets a user picks, one source of truth."""
    from polyzero.presets import preset_text

    def flat(prefix: str, node: dict):
        for key, value in node.items():
            if isinstance(value, dict):
                yield from flat(f"{prefix}{key}.", value)
            elif prefix or key not in ("game", "algo"):
                yield f"{prefix}{key}={json.dumps(value)}"

    return list(flat("", tomllib.loads(preset_text(name))))


ARMS = {
    "muzero": [],
    # Appendix H's values (kept under this name so that older results still read)
    "reanalyze": preset_overrides("muzero_reanalyze-appendix-h_minatar-breakout"),
    # the small-budget preset: search bootstraps with the target network, n = 10, value weight 1
    "reanalyze_small": preset_overrides("muzero_reanalyze-small_minatar-breakout"),
    "muzero_paper_ratio": ["train.minibatches_per_step=1", "train.positions_per_step=1280"],
    # the control: plain MuZero at Reanalyze's 2.0 samples per stored state
    "muzero_reanalyze_ratio": ["train.positions_per_step=512"],
}
PLAIN_ARMS = ("muzero", "muzero_paper_ratio", "muzero_reanalyze_ratio")


def _positions_per_step(arm: str) -> int:
    for o in ARMS[arm]:
        if o.startswith("train.positions_per_step="):
            return int(o.split("=")[1])
    return 256  # the preset's b_step


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def train(args, work: Path) -> None:
    """The arms side by side, one process (one torch thread: the preset's `threads`)
    per core, each for what is left of its budget."""
    running = []
    for arm in args.arms:
        extra = ARMS[arm]
        every = max(1, round(args.checkpoint_positions / _positions_per_step(arm)))
        run = work / arm
        spent_file = work / f"{arm}.seconds"
        spent = float(spent_file.read_text()) if spent_file.exists() else 0.0
        left = args.budget_min * 60 - spent
        if left <= 1:
            _log(f"{arm}: budget spent ({spent / 60:.1f} min)")
            continue
        ckpts = _checkpoints(run) if (run / "checkpoints").exists() else []
        if args.max_positions and ckpts and _positions(ckpts[-1]) >= args.max_positions:
            _log(f"{arm}: reached {_positions(ckpts[-1])} environment steps")
            continue
        if ckpts:
            cmd = [*POLYZERO, "train", "--resume", str(run), "--no-progress"]
            if args.max_positions:  # a larger N carries a stopped run on (its temperature stays 1)
                cmd += ["--set", _stop_overrides(arm, args.max_positions)[0]]
        else:
            cmd = [
                *POLYZERO,
                "train",
                getattr(args, "game", GAME),
                "--algo",
                "muzero",
                "--run-dir",
                str(run),
                "--no-progress",
                "--seed",
                str(args.seed),
            ]
            for o in (
                extra
                + args.set
                + _stop_overrides(arm, args.max_positions)
                + [
                    "eval.every=0",
                    "eval.final_games=0",
                    f"train.checkpoint_every={every}",
                    "train.keep_checkpoints=100000",
                    f"search.kind={args.search}",
                ]
            ):
                cmd += ["--set", o]
        _log(f"{arm}: training {left / 60:.1f} min: {' '.join(cmd)}")
        log = open(work / f"{arm}.log", "a")
        running.append((subprocess.Popen(cmd, stdout=log, stderr=log), log, time.time(), left, spent, spent_file))
    for proc, log, t0, left, spent, spent_file in running:
        try:
            proc.wait(timeout=max(0.0, t0 + left - time.time()))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        log.close()
        spent_file.write_text(str(spent + time.time() - t0))


def _stop_overrides(arm: str, max_positions: int) -> list[str]:
    """Where a fresh run stops: at the learning step whose new positions reach
    `max_positions` (its last checkpoint there), else open-ended. The acting temperature
    stays 1 either way: Appendix D's schedule (0.5 and 0.25 after 50% and 75% of
    train.steps) would tie it to the stopping point, and the open-ended runs never reach it."""
    if not max_positions:
        return ["train.steps=1000000"]
    steps = -(-max_positions // _positions_per_step(arm))
    return [f"train.steps={steps}", "muzero.temperature_schedule=false"]


def _checkpoints(run: Path) -> list[Path]:
    return sorted(p for p in (run / "checkpoints").glob("step_*") if p.is_dir())


def _positions(ckpt: Path) -> int:
    return json.loads((ckpt / "state.json").read_text())["actor"]["stats"]["positions"]


def _to_evaluate(work: Path, arm: str, extra: int, max_positions: int = 0) -> list[Path]:
    """Every checkpoint up to the environment steps all trained arms reached (where
    the arms are compared), and at most `extra` evenly spaced ones beyond, the last
    included: the cheap arm of 0.1 samples per state covers several times the others'."""
    ckpts = _checkpoints(work / arm)
    if max_positions:  # runs stopped at equal environment steps: all of them (not step 0's)
        return [c for c in ckpts if _positions(c) > 0]
    if not ckpts:
        return []
    reached = min(_positions(c[-1]) for a in ARMS if (c := _checkpoints(work / a)))
    common = [c for c in ckpts if _positions(c) <= reached]
    beyond = ckpts[len(common) :]
    if len(beyond) > extra:
        beyond = [beyond[round(i)] for i in np.linspace(0, len(beyond) - 1, extra)] if extra else []
    return common + beyond


def evaluate(args, work: Path) -> None:
    """The eval phase (minatar_muzero_eval.py) over `_to_evaluate`'s checkpoints."""
    minatar_muzero_eval.evaluate(args, work, lambda arm: _to_evaluate(work, arm, args.eval_beyond, args.max_positions))


def report(args, work: Path) -> dict:
    if getattr(args, "game", GAME) != GAME:  # another game: one curve beside random play
        import minatar_muzero_games

        return minatar_muzero_games.report(args, work, RESULTS)
    out = work / "eval"
    curves = {
        arm: sorted((json.loads(p.read_text()) for p in out.glob(f"{arm}-step_*.json")), key=lambda r: r["step"])
        for arm in ARMS
    }
    curves = {arm: pts for arm, pts in curves.items() if pts}
    random = json.loads((out / "random.json").read_text())
    for rec in [random, *(p for pts in curves.values() for p in pts)]:
        for key in ("returns", "lengths"):
            rec.pop(key, None)
    result = {
        "benchmark": "minatar_muzero",
        "game": GAME,
        "seed": args.seed,
        "budget_min": args.budget_min,
        "search": args.search,
        "episodes": args.episodes,
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "random": random,
        "curves": curves,
        "targets": _targets(curves, random),
        "overrides": args.set,
        "out": args.out,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=1))
    (RESULTS / f"{args.out}.md").write_text(_markdown(result))
    minatar_muzero_plots.one_axis(curves, random, RESULTS / f"{args.out}.png")
    return result


def _targets(curves, random) -> dict:
    best = {arm: max((p["mean_return"] for p in pts), default=0.0) for arm, pts in curves.items()}
    five_x = {arm: b >= 5 * random["mean_return"] for arm, b in best.items()}
    out = {"best_mean_return": best, "at_least_5x_random": five_x}
    for re_arm in ("reanalyze", "reanalyze_small"):  # keys: reanalyze_vs_plain, reanalyze_small_vs_plain
        out[f"{re_arm}_vs_plain"] = {
            plain: equal_positions(curves[re_arm], curves[plain])
            for plain in PLAIN_ARMS
            if plain in curves and re_arm in curves
        }
    return out


def equal_positions(reanalyze: list[dict], plain: list[dict]) -> dict:
    """Both curves (return against environment steps, straight lines between
    checkpoints) averaged over the environment steps both reached, with their 95%
    interval bounds averaged alike: Reanalyze is ahead when its averaged lower bound
    lies above plain MuZero's averaged upper bound."""
    end = min(reanalyze[-1]["positions"], plain[-1]["positions"])
    xs = np.linspace(0, end, 201)

    def mean(pts, key):
        return float(np.interp(xs, [p["positions"] for p in pts], [p[key] for p in pts]).mean())

    r, p = mean(reanalyze, "mean_return"), mean(plain, "mean_return")
    return {
        "positions": int(end),
        "reanalyze": round(r, 3),
        "plain": round(p, 3),
        "ahead": mean(reanalyze, "ci_low") > mean(plain, "ci_high"),
    }


def _markdown(r: dict) -> str:
    lines = [
        "# Benchmark `minatar_muzero`",
        "",
        f"MuZero and MuZero Reanalyze on MinAtar Breakout (`{GAME}` preset, {r['search']} root search), "
        f"{r['budget_min']:g} minutes of training wall clock per arm, one core each, the other core "
        f"busy (two arms, or an arm and probes), seed {r['seed']}. "
        "Arms: `muzero` the preset (4.0 samples per stored "
        "state); `reanalyze` Appendix H (re-searched policy targets for 0.8 of the samples, target "
        "network, n = 5, value weight 0.25, 2.0 samples per stored state); `reanalyze_small` the "
        "small-budget preset (search bootstraps with the target network, n = 10, value weight 1, "
        "re-searched policies at c_scale 0.01, 2.0 samples per stored state); `muzero_paper_ratio` "
        "plain MuZero at Appendix H's 0.1 samples per stored state; `muzero_reanalyze_ratio` the "
        "control, plain MuZero at Reanalyze's 2.0."
        + (
            " Overrides on every arm: " + ", ".join(f"`{o}`" for o in r["overrides"]) + "."
            if r.get("overrides")
            else ""
        ),
        "",
        f"- machine: {r['machine']}",
        f"- command: `python benchmarks/{r['command']}`",
        f"- evaluation: mean return over {r['episodes']} episodes, no noise, most-visited action; normal 95% interval",
        f"- random policy, same run: {r['random']['mean_return']:.2f} "
        f"[{r['random']['ci_low']:.2f}, {r['random']['ci_high']:.2f}]",
        "",
        "| arm | learning steps | environment steps | train min | mean return | 95% CI |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for arm, pts in r["curves"].items():
        for p in pts:
            lines.append(
                f"| {arm} | {p['step']} | {p['positions']} | {p['train_time'] / 60:.1f} | "
                f"{p['mean_return']:.2f} | [{p['ci_low']:.2f}, {p['ci_high']:.2f}] |"
            )
    t = r["targets"]
    lines += [
        "",
        "Targets: at least 5x the random policy's return: "
        + ", ".join(
            f"{a} {'met' if ok else 'not met'} (best {t['best_mean_return'][a]:.2f})"
            for a, ok in t["at_least_5x_random"].items()
        )
        + ".",
        "",
        "Reanalyze against plain MuZero at equal environment steps (mean return over the "
        "environment steps both reached, straight lines between checkpoints; ahead when the "
        "intervals' averaged bounds are apart): "
        + (
            "; ".join(
                f"`{re_arm}` against `{a}` over {c['positions']} steps, {c['reanalyze']:.2f} vs {c['plain']:.2f}, "
                f"{'ahead' if c['ahead'] else 'not ahead'}"
                for re_arm in ("reanalyze", "reanalyze_small")
                for a, c in t.get(f"{re_arm}_vs_plain", {}).items()
            )
            or "not measured"
        )
        + ".",
        "",
        f"![curves]({r.get('out', 'minatar_muzero')}.png)",
        "",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", choices=list(GAMES), default=GAME, help="the game (minatar_muzero_games.py)")
    p.add_argument(
        "--work", type=Path, default=None, help="default runs/bench/minatar_muzero (MinAtar), else OUT_s{seed}"
    )
    p.add_argument("--budget-min", type=float, default=30.0, help="training wall clock per arm (minutes)")
    p.add_argument(
        "--arms",
        default=None,
        help=f"comma-separated arms to train and evaluate, side by side ({', '.join(ARMS)}); default all on "
        "MinAtar, muzero on another game",
    )
    p.add_argument(
        "--checkpoint-positions",
        type=int,
        default=12800,
        help="environment steps between checkpoints (rounded to whole learning steps per arm)",
    )
    p.add_argument(
        "--max-positions",
        type=int,
        default=0,
        help="environment steps at which each arm's run stops, its last checkpoint there "
        "(0: none; --budget-min stays a cap on wall clock); a larger N resumes a run stopped at a smaller one",
    )
    p.add_argument("--episodes", type=int, default=100)
    minatar_muzero_eval.add_options(p)
    p.add_argument(
        "--eval-beyond",
        type=int,
        default=6,
        help="checkpoints evaluated per arm beyond the environment steps every arm reached",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override added to every arm a fresh run starts with (probes; repeatable)",
    )
    p.add_argument(
        "--out", type=results_name, default=None, help="report name under benchmarks/results/ (default: the game's)"
    )
    p.add_argument(
        "--seeds",
        type=seed_list,
        default=None,
        help="report only: the mean and 95%% t-interval over these seeds (e.g. 0,1,2), each from its own "
        "--work (with {seed} in it) -> OUT_seeds.* (benchmarks/minatar_muzero_seeds.py)",
    )
    p.add_argument(
        "--loadavg", type=Path, default=None, help="with --seeds: the load averages sampled while they ran (JSON lines)"
    )
    p.add_argument(
        "--search",
        choices=["gumbel", "puct"],
        default="gumbel",
        help="root search of both arms (the preset's gumbel; puct is MuZero's own)",
    )
    return p


def _settle(p: argparse.ArgumentParser, args) -> None:
    """The game's defaults (arms, episode cap, report name, work folder); a bad
    combination is a usage error (one line, exit 2)."""
    minatar = GAMES[args.game]["minatar"]
    args.arms = [a for a in (args.arms or (",".join(ARMS) if minatar else "muzero")).split(",") if a]
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arm {unknown[0]!r}; choose from {', '.join(ARMS)}")
    if error := game_error(args.game, args.arms, PLAIN_ARMS):
        p.error(error)
    args.eval_cap = GAMES[args.game]["cap"] if args.eval_cap is None else args.eval_cap
    if min(args.eval_cap, args.follow, args.eval_every) < 0 or args.episodes < 2:
        p.error("--eval-cap, --eval-every and --follow must be >= 0 and --episodes >= 2")
    args.out = args.out or GAMES[args.game]["out"]
    if args.work is None and minatar:
        args.work = ROOT / "runs" / "bench" / "minatar_muzero"
    if args.max_positions < 0:
        p.error(f"--max-positions must be >= 0, not {args.max_positions}")
    if args.seeds is not None and args.phase != "report":
        p.error("--seeds is for the report phase (train and eval one --seed at a time)")


def main(argv=None) -> None:
    p = _parser()
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    _settle(p, args)
    if args.seeds is not None:
        import minatar_muzero_seeds

        minatar_muzero_seeds.report(args)
        return
    args.work = seed_work(args.work, args.out, args.seed)  # {seed} in --work: a directory per seed
    args.work.mkdir(parents=True, exist_ok=True)
    if args.phase in ("train", "all"):
        train(args, args.work)
    if args.phase in ("eval", "all"):
        evaluate(args, args.work)
    if args.phase in ("report", "all"):
        result = report(args, args.work)
        print(json.dumps(result["targets"] if "targets" in result else result["against_random"], indent=1))


if __name__ == "__main__":
    main()
