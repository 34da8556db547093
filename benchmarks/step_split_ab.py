"""A learning step's CPU time split into self-play and learner, for this tree and an
earlier revision, in alternating processes on the same machine.

Each process runs `polyzero train GAME --algo ALGO` (the shipped preset, one torch
thread, seed 0, no evaluation) for --steps learning steps with its own tree's code,
and times in CPU seconds (time.process_time, which a shared machine's load does not
stretch) each step's self-play (`Trainer._collect`: b_step new positions) and each
minibatch update (`Learner.update`); the first --skip steps (start-up, the first
compile) are left out. Processes run in the order baseline, now, now, baseline per
round (ABBA), so a machine whose speed drifts weighs on both alike. What it answers:
how much of a step is the learner, and what each side gained between the revisions
(connect_four_muzero: MuZero's step against AlphaZero's, docs/muzero.md).

  python benchmarks/step_split_ab.py --baseline 2623dd9 --algos muzero,alphazero \\
      --out benchmarks/results/step_split_ab_c4.json

Without --baseline only this tree runs (one process per arm and round, the arms
interleaved). An arm is an algorithm's preset or, with --arm NAME=ALGO:KEY=VALUE,...,
the preset with settings (MuZero's model-shape levers: `--arm
muzero_k1=muzero:muzero.unroll_steps=1`); each arm also reports self-play's CPU per
new position and the learner's per minibatch update.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, timing_meta  # noqa: E402
from selfplay_ab import git, unpack  # noqa: E402

# What every worker sets beside the preset: one thread, no evaluation, no checkpoints.
WORKER_SETS = ["threads=1", "eval.every=0", "eval.final_games=0", "train.checkpoint_every=100000"]


def parse_arm(text: str) -> tuple[str, str, list[str]]:
    """'NAME=ALGO:KEY=VALUE,KEY=VALUE' (or a bare algorithm) -> (name, algo, settings)."""
    name, _, rest = text.partition("=") if "=" in text.split(":")[0] else (text, "", text)
    algo, _, sets = rest.partition(":")
    if not name or not algo:
        raise argparse.ArgumentTypeError(f"expected NAME=ALGO[:KEY=VALUE,...], not {text!r}")
    return name, algo, [x for x in sets.split(",") if x]


def check_runs(game: str, arms: list[tuple[str, str, list[str]]], steps: int) -> dict[str, int]:
    """The config each worker will build, built here first (this tree's code): an unknown
    game, algorithm or setting is a UsageError before any process starts."""
    from polyzero.config import build_config
    from polyzero.errors import UsageError
    from polyzero.games import load_game

    if not arms:
        raise UsageError("--algos names no algorithm")
    positions = {}
    for name, algo, sets in arms:
        cfg = build_config(game, algo, None, WORKER_SETS + sets + [f"train.steps={steps}", "seed=0"])
        load_game(cfg.game)
        positions[name] = cfg.train.positions_per_step
    return positions


def worker(tree: str, game: str, algo: str, steps: int, out: str, sets: list[str] = ()) -> None:
    """One process: train with `tree`'s code, each step's phases timed in CPU seconds."""
    sys.path.insert(0, tree)
    import polyzero
    from polyzero import cli
    from polyzero.train import driver, learner

    rec: dict = {"tree": tree, "code": polyzero.__file__, "algo": algo, "collect": [], "update": []}
    # the class that defines `_collect` (the training loop every trainer, SoG's too, inherits)
    owner = next(c for c in driver.Trainer.__mro__ if "_collect" in vars(c))
    collect, update = owner._collect, learner.Learner.update

    def timed_collect(self):
        t = time.process_time()
        collect(self)
        rec["collect"].append(time.process_time() - t)

    def timed_update(self, batch):
        t = time.process_time()
        r = update(self, batch)
        rec["update"].append(time.process_time() - t)
        return r

    owner._collect, learner.Learner.update = timed_collect, timed_update
    with tempfile.TemporaryDirectory(prefix="step_split_") as d:
        argv = ["train", game, "--algo", algo, "--seed", "0", "--run-dir", f"{d}/run", "--no-progress"]
        code = cli.main(argv + [x for s in WORKER_SETS + list(sets) + [f"train.steps={steps}"] for x in ("--set", s)])
    if code:  # the run stopped (its one line is on stderr): no timings to write
        sys.exit(code)
    rec["loadavg"] = os.getloadavg()
    Path(out).write_text(json.dumps(rec))


def summary(rec: dict, skip: int, positions_per_step: int = 0) -> dict:
    """CPU seconds per step: self-play, learner (its updates) and both, after `skip` steps;
    with `positions_per_step`, self-play's CPU ms per new position too."""
    per_step = len(rec["update"]) // len(rec["collect"])
    collect = statistics.mean(rec["collect"][skip:])
    update = statistics.mean(rec["update"][skip * per_step :])
    return {
        "selfplay_s": round(collect, 3),
        "update_s": round(update, 4),
        "learner_s": round(update * per_step, 3),
        "step_s": round(collect + update * per_step, 3),
        "updates_per_step": per_step,
        "update_ms": round(1000 * update, 2),
        **({"selfplay_ms_per_position": round(1000 * collect / positions_per_step, 3)} if positions_per_step else {}),
        "loadavg_end": [round(x, 2) for x in rec["loadavg"]],
        "code": rec["code"],
    }


def paired_rounds(arm: dict) -> list[float]:
    """Per ABBA round: the mean step CPU of its two baseline processes over its two new
    ones (which ran between them), so that a machine whose speed drifts weighs on both."""
    base, now = [r["step_s"] for r in arm["baseline"]["runs"]], [r["step_s"] for r in arm["now"]["runs"]]
    return [(base[i] + base[i + 1]) / (now[i] + now[i + 1]) for i in range(0, min(len(base), len(now)) - 1, 2)]


def paired_lines(result: dict) -> list[str]:
    """The page's lines of the rounds' paired ratios: mean and 95% t-interval over rounds."""
    from common import interval

    lines = ["", "Paired by round (baseline / now of each ABBA round's step CPU), mean with a 95% t-interval:", ""]
    for name, arm in result["algos"].items():
        ratios = paired_rounds(arm)
        mean, low, high = interval(ratios) if ratios else (float("nan"),) * 3
        lines.append(f"- {name}: {', '.join(f'{r:.2f}' for r in ratios)}; {mean:.2f}x [{low:.2f}, {high:.2f}]")
    return lines


def render(result: dict) -> str:
    trees = ("baseline", "now") if result.get("baseline") else ("now",)
    against = "this tree against an earlier revision" if len(trees) == 2 else "this tree's arms"
    order = "processes ABBA per round" if len(trees) == 2 else "one process per arm per round, the arms interleaved"
    lines = [
        f"# A learning step's CPU time: self-play and learner, {against}",
        "",
        f"- command: `{result['command']}`",
        f"- baseline: {result.get('baseline') or 'none'}; now: {result['now']}",
        f"- machine: {result['machine']}; torch {result['torch']}; load average at the start "
        f"{[round(x, 2) for x in result['loadavg_start']]}, at the end {[round(x, 2) for x in result['loadavg_end']]}",
        f"- {result['steps']} learning steps per process, the first {result['skip']} left out; "
        f"CPU seconds per step (medians over the processes); {order}",
        "",
        "| arm | settings | tree | self-play s | learner s | step s | learner share | self-play ms/position "
        "| learner ms/update | runs (step s) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, arm in result["algos"].items():
        sets = " ".join(arm.get("sets", [])) or "preset"
        for tree in trees:
            m = arm[tree]["median"]
            runs = ", ".join(f"{r['step_s']:.2f}" for r in arm[tree]["runs"])
            lines.append(
                f"| {name} | {arm.get('algo', name)}: {sets} | {tree} | {m['selfplay_s']:.2f} | {m['learner_s']:.2f} "
                f"| {m['step_s']:.2f} | {m['learner_s'] / m['step_s']:.2f} | {m.get('selfplay_ms_per_position', '-')} "
                f"| {m.get('update_ms', '-')} | {runs} |"
            )
    if len(trees) == 2:
        lines += ["", "| arm | self-play baseline / now | learner baseline / now | step baseline / now |"]
        lines += ["|---|---:|---:|---:|"]
        for name, arm in result["algos"].items():
            b, n = arm["baseline"]["median"], arm["now"]["median"]
            lines.append(
                f"| {name} | {b['selfplay_s'] / n['selfplay_s']:.2f}x | {b['learner_s'] / n['learner_s']:.2f}x | "
                f"{b['step_s'] / n['step_s']:.2f}x |"
            )
        lines += paired_lines(result)
    if len(result["algos"]) > 1:
        ref = "alphazero" if "alphazero" in result["algos"] else next(iter(result["algos"]))
        lines += ["", f"Against {ref} ({trees[-1]}): each arm's CPU over {ref}'s.", ""]
        lines += ["| arm | self-play | learner | step |", "|---|---:|---:|---:|"]
        r = result["algos"][ref][trees[-1]]["median"]
        for name, arm in result["algos"].items():
            m = arm[trees[-1]]["median"]
            lines.append(
                f"| {name} | {m['selfplay_s'] / r['selfplay_s']:.2f}x | {m['learner_s'] / r['learner_s']:.2f}x "
                f"| {m['step_s'] / r['step_s']:.2f}x |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="", help="git revision of the earlier tree (none: this tree's arms only)")
    ap.add_argument("--algos", default=None, help="algorithms' presets, comma-separated (default muzero,alphazero)")
    ap.add_argument(
        "--arm",
        type=parse_arm,
        action="append",
        default=[],
        metavar="NAME=ALGO:KEY=VALUE,...",
        help="instead of --algos",
    )
    ap.add_argument("--game", default="connect_four")
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--render", action="store_true", help="only write --out's page again from its stored JSON")
    args = ap.parse_args(argv)
    if args.render:
        try:
            stored = json.loads(Path(args.out).read_text())
            page = render(stored)
        except (OSError, ValueError) as exc:
            ap.error(f"--render: cannot read {args.out} ({exc})")
        except (KeyError, TypeError, AttributeError):
            ap.error(f"--render: {args.out} is not a step_split_ab results file")
        Path(args.out).with_suffix(".md").write_text(page)
        return
    if args.steps <= args.skip or args.skip < 1 or args.rounds < 1:
        ap.error("need --rounds >= 1 and 1 <= --skip < --steps")
    if args.baseline:
        try:
            git("rev-parse", "--verify", f"{args.baseline}^{{commit}}")
        except subprocess.CalledProcessError:
            ap.error(f"--baseline {args.baseline!r} is not a revision of this repository")
    if args.arm and args.algos is not None:
        ap.error("--arm and --algos: give one (an --arm names its algorithm)")
    arms = args.arm or [(a, a, []) for a in (args.algos or "muzero,alphazero").split(",") if a]
    if len({name for name, _, _ in arms}) != len(arms):
        ap.error("two arms have the same name")
    from polyzero.errors import UsageError  # not at the top: a worker imports its own tree's polyzero

    try:
        positions = check_runs(args.game, arms, args.steps)
    except UsageError as exc:
        ap.error(str(exc))
    trees = ("baseline", "now", "now", "baseline") if args.baseline else ("now",)
    result = timing_meta(argv, steps=args.steps, skip=args.skip, rounds=args.rounds)
    result["now"] = git("rev-parse", "HEAD") + (" (with changes)" if git("status", "--porcelain") else "")
    result["algos"] = {
        name: {"algo": algo, "sets": sets, "positions_per_step": positions[name], **{t: {"runs": []} for t in trees}}
        for name, algo, sets in arms
    }
    with tempfile.TemporaryDirectory(prefix="step_split_ab_") as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        result["baseline"] = unpack(args.baseline, base) if args.baseline else None
        for _ in range(args.rounds):
            for name, algo, sets in arms:
                for tree in trees:
                    out = Path(tmp) / "rec.json"
                    root = str(base if tree == "baseline" else ROOT)
                    cmd = [sys.executable, __file__, "_worker", root, args.game, algo, str(args.steps), str(out)]
                    code = subprocess.run(cmd + [json.dumps(sets)], cwd=tmp, stdout=subprocess.DEVNULL).returncode
                    if code:
                        sys.exit(f"step_split_ab: the {tree} tree's {name} run failed (exit {code}; its error above)")
                    run = summary(json.loads(out.read_text()), args.skip, positions[name])
                    result["algos"][name][tree]["runs"].append(run)
                    print(f"{name} {tree}: {run}", flush=True)
    keys = ("selfplay_s", "learner_s", "step_s", "update_ms", "selfplay_ms_per_position")
    for arm in result["algos"].values():
        for tree in trees:
            t = arm[tree]
            t["median"] = {k: round(statistics.median(r[k] for r in t["runs"]), 3) for k in keys}
    result["loadavg_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    Path(args.out).with_suffix(".md").write_text(render(result))
    print(f"wrote {args.out} and .md")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        worker(*sys.argv[2:5], int(sys.argv[5]), sys.argv[6], json.loads(sys.argv[7]) if len(sys.argv) > 7 else [])
    else:
        main()
