"""`minatar_muzero.py report --seeds 0,1,2`: MuZero Reanalyze against plain MuZero over seeds.

Each seed trains and is evaluated in a work directory of its own (`--work` with
``{seed}`` in it, as `nannon_seeds.py` does); this module reads each seed's evaluation
cache (WORK/eval/ARM-step_*.json) and writes NAME_seeds.{json,md,png}:

- per arm and checkpoint (learning step; the arms stop at equal environment steps,
  `--max-positions`), the mean return over seeds and its 95% t-interval;
- per seed and pair (a Reanalyze arm, a plain arm), Reanalyze's mean return minus the
  plain arm's, averaged over the environment steps both reached (straight lines
  between checkpoints: `minatar_muzero.equal_positions`);
- that difference's mean over seeds with its 95% t-interval: Reanalyze is ahead when
  the interval lies above 0. The issue's rule: a target is met by the mean over seeds,
  never by a seed's best checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

from common import git_commit, interval, machine_line, write_report
from minatar_muzero import GAME, PLAIN_ARMS, equal_positions
from minatar_muzero_games import GAMES
from nannon_seeds import load_summary, seed_work

REANALYZE_ARMS = ("reanalyze_small", "reanalyze")


def seed_curves(work: Path, arms: list[str]) -> dict[str, list[dict]]:
    """A seed's evaluated checkpoints per arm (those it has), in order of environment steps."""
    curves = {}
    for arm in arms:
        rows = [json.loads(p.read_text()) for p in (work / "eval").glob(f"{arm}-step_*.json")]
        for r in rows:
            r.pop("returns", None)
        if rows:
            curves[arm] = sorted(rows, key=lambda r: r["positions"])
    return curves


def arm_over_seeds(curves_by_seed: dict, arm: str) -> list[dict]:
    """Per learning step the seeds' checkpoints of `arm` share: their returns, environment
    steps and training minutes, the mean return and its 95% t-interval (none for one seed)."""
    by_step: dict[int, list[tuple]] = {}
    for seed, curves in curves_by_seed.items():
        for r in curves.get(arm, []):
            by_step.setdefault(r["step"], []).append((seed, r))
    out = []
    for step, seeded in sorted(by_step.items()):
        values = [r["mean_return"] for _, r in seeded]
        mean, lo, hi = interval(values)
        out.append(
            {
                "step": step,
                "seeds": [s for s, _ in seeded],
                "returns": values,
                "positions": [r["positions"] for _, r in seeded],
                "train_min": [round(r["train_time"] / 60, 2) for _, r in seeded],
                "mean": mean,
                "ci95": [lo, hi] if len(values) > 1 else None,
            }
        )
    return out


def difference_over_seeds(curves_by_seed: dict, reanalyze: str, plain: str) -> dict | None:
    """Per seed having both arms, Reanalyze minus `plain` averaged over the environment
    steps both reached; the mean of those differences over seeds, its 95% t-interval, and
    `ahead`: the interval lies above 0 (needs two seeds or more)."""
    per_seed = {}
    for seed, curves in curves_by_seed.items():
        if reanalyze in curves and plain in curves:
            c = equal_positions(curves[reanalyze], curves[plain])
            per_seed[str(seed)] = {**c, "difference": round(c["reanalyze"] - c["plain"], 3)}
    if not per_seed:
        return None
    diffs = [x["difference"] for x in per_seed.values()]
    mean, lo, hi = interval(diffs)
    enough = len(diffs) > 1
    return {
        "reanalyze": reanalyze,
        "plain": plain,
        "per_seed": per_seed,
        "mean": mean,
        "ci95": [lo, hi] if enough else None,
        "ahead": bool(enough and lo > 0),
    }


def random_over_seeds(works: dict) -> dict | None:
    """Random play's mean return per seed (each seed's eval/random.json) and their mean
    with its 95% t-interval; None unless every seed has one."""
    files = [work / "eval" / "random.json" for work in works.values()]
    if not all(f.exists() for f in files):
        return None
    values = [json.loads(f.read_text())["mean_return"] for f in files]
    mean, lo, hi = interval(values)
    return {"returns": values, "mean": mean, "ci95": [lo, hi] if len(values) > 1 else None}


def report(args) -> dict:
    """NAME_seeds.{json,md,png} from the seeds' evaluation caches."""
    works = {seed: seed_work(args.work, args.out, seed, len(args.seeds) > 1) for seed in args.seeds}
    curves_by_seed = {seed: seed_curves(work, args.arms) for seed, work in works.items()}
    missing = [s for s, c in curves_by_seed.items() if not c]
    if missing:
        raise SystemExit(f"error: no evaluated checkpoints for seed(s) {missing} (run eval with --seed S first)")
    arms = [a for a in args.arms if any(a in c for c in curves_by_seed.values())]
    pairs = [(r, p) for r in REANALYZE_ARMS for p in PLAIN_ARMS if r in arms and p in arms]
    load = load_summary(args.loadavg.parent, args.loadavg.name) if args.loadavg else None
    result = {
        "benchmark": "minatar_muzero",
        "game": getattr(args, "game", GAME),
        "seeds": args.seeds,
        "work": {str(s): str(w) for s, w in works.items()},
        "command": "python benchmarks/minatar_muzero.py " + " ".join(getattr(args, "argv", [])),
        "git": git_commit(),
        "machine": machine_line(),
        "load_while_running": load,
        "search": args.search,
        "episodes": args.episodes,
        "max_positions": args.max_positions,
        "arms": {arm: arm_over_seeds(curves_by_seed, arm) for arm in arms},
        "reanalyze_vs_plain": [d for r, p in pairs if (d := difference_over_seeds(curves_by_seed, r, p))],
        "random": random_over_seeds(works),
    }
    name = f"{args.out}_seeds"
    write_report(name, result, markdown(name, result), plot)
    return result


def _fmt(mean: float, ci: list | None) -> str:
    return f"{mean:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def markdown(name: str, result: dict) -> list[str]:
    """The report's lines: what ran, return per arm and checkpoint, Reanalyze against plain."""
    load = result["load_while_running"]
    load_text = f"mean {load['mean']:.2f}, min {load['min']:.2f}, max {load['max']:.2f}" if load else "not recorded"
    title = GAMES[result["game"]]["title"]
    compared = "MuZero Reanalyze against plain MuZero" if result["reanalyze_vs_plain"] else "MuZero"
    lines = [
        f"# Benchmark `{name}`: {title}, {compared} over seeds " + ", ".join(map(str, result["seeds"])),
        "",
        f"Machine: {result['machine']}, shared with other sessions' work while these ran (the comparison is at "
        "equal environment steps, which the machine's load does not change; training minutes do depend on it). "
        f"1-minute load average while training and evaluating (sampled each minute): {load_text}.",
        f"Command: `{result['command']}` (report at commit {result['git'][:10]}).",
        "",
        (
            f"Each arm's run stops at {result['max_positions']} environment steps (`--max-positions`), "
            if result["max_positions"]
            else "Each arm's run stops at its wall-clock budget (`--budget-min`), "
        )
        + f"{result['search']} root search; a checkpoint's return is the mean over {result['episodes']} "
        "evaluation episodes (no noise, most-visited action). Per checkpoint: mean over seeds [95% t-interval].",
        "",
        *(
            [
                f"Random play, same evaluation, per seed {', '.join(f'{v:.2f}' for v in rnd['returns'])}: "
                f"{_fmt(rnd['mean'], rnd['ci95'])}.",
                "",
            ]
            if (rnd := result.get("random"))
            else []
        ),
        "| arm | learning step | environment steps | train min | per seed | mean [95% CI] |",
        "|---|---:|---:|---:|---|---|",
    ]
    for arm, cells in result["arms"].items():
        for c in cells:
            lines.append(
                f"| {arm} | {c['step']} | {round(sum(c['positions']) / len(c['positions']))} | "
                f"{', '.join(f'{m:.1f}' for m in c['train_min'])} | "
                f"{', '.join(f'{v:.2f}' for v in c['returns'])} | {_fmt(c['mean'], c['ci95'])} |"
            )
    lines += [
        "",
        "Reanalyze minus plain MuZero, mean return averaged over the environment steps both reached "
        "(straight lines between checkpoints), per seed and over seeds (ahead: the 95% t-interval lies above 0):",
        "",
        "| Reanalyze | plain | per seed (Reanalyze vs plain, difference) | mean difference [95% CI] | verdict |",
        "|---|---|---|---|---|",
    ]
    for d in result["reanalyze_vs_plain"]:
        seeds = "; ".join(
            f"seed {s}: {x['reanalyze']:.2f} vs {x['plain']:.2f}, {x['difference']:+.2f} over {x['positions']}"
            for s, x in d["per_seed"].items()
        )
        verdict = "ahead" if d["ahead"] else "not ahead" if d["ci95"] else "one seed: no interval"
        lines.append(f"| {d['reanalyze']} | {d['plain']} | {seeds} | {_fmt(d['mean'], d['ci95'])} | {verdict} |")
    lines += ["", f"![curves]({name}.png)"]
    return lines


def plot(result: dict, path: Path) -> None:
    """Mean return over seeds against environment steps, the 95% interval as a band, the
    seeds' own points beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for arm, cells in result["arms"].items():
        xs = [sum(c["positions"]) / len(c["positions"]) for c in cells]
        (line,) = ax.plot(xs, [c["mean"] for c in cells], marker="o", label=f"{arm} (mean over seeds)")
        banded = [(x, c) for x, c in zip(xs, cells) if c["ci95"]]
        if banded:
            ax.fill_between(
                [x for x, _ in banded],
                [c["ci95"][0] for _, c in banded],
                [c["ci95"][1] for _, c in banded],
                color=line.get_color(),
                alpha=0.15,
            )
        for c in cells:
            ax.scatter(c["positions"], c["returns"], s=8, color=line.get_color(), alpha=0.6)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return (95% t-interval over seeds)")
    ax.set_title(f"{GAMES[result['game']]['title']}, seeds {','.join(map(str, result['seeds']))}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
