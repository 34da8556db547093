"""`minatar_muzero.py --game`: the games the benchmark takes and what differs between them.

- ``minatar-breakout`` (the default): every arm; its commands, caches and reports are
  those of the MinAtar benchmark as before.
- ``atari-breakout``: ALE Breakout with MuZero Appendix I's protocol (the shipped
  `muzero_atari-breakout` preset), the plain-MuZero arms only (the Reanalyze arms are
  MinAtar presets; refused in one line). Its report (``--out atari_breakout``) is one
  learning curve -- mean episode return with its normal 95% interval against environment
  steps, learning steps and training wall-clock minutes -- with random play, evaluated
  in the same run under the same episode cap, beside it.

Episode cap for evaluation (``--eval-cap``, in the game's own unit: frames for Atari,
agent steps for MinAtar; 0 is the game's own cap). Appendix I plays Atari episodes of up
to 108,000 frames (27,000 agent steps at frame skip 4); Breakout needs FIRE to launch
the ball, and a policy that stops firing plays out its whole cap without another
point, so the benchmark's Atari default is 18,000 frames (4,500 agent steps, five
minutes of play at 60 frames a second). A capped episode that had stopped scoring ends
with the return it would have had at the full cap; each checkpoint's record counts its
episodes that reached the cap (`capped`), so a cap that cut a scoring episode short shows.
"""

from __future__ import annotations

import json
from pathlib import Path

GAMES = {
    "minatar-breakout": {
        "title": "MinAtar Breakout",
        "cap_param": "max_steps",
        "cap": 0,
        "minatar": True,
        "out": "minatar_muzero",
    },
    "atari-breakout": {
        "title": "Atari Breakout (ALE)",
        "cap_param": "max_frames",
        "cap": 18_000,
        "minatar": False,
        "out": "atari_breakout",
    },
}


def game_error(game: str, arms: list[str], plain: tuple[str, ...]) -> str | None:
    """Why `arms` cannot run on `game` (one line), or None: the Reanalyze arms are
    MinAtar Breakout presets, so another game takes the plain-MuZero arms only."""
    if GAMES[game]["minatar"]:
        return None
    bad = [a for a in arms if a not in plain]
    if bad:
        return f"arm {bad[0]!r} is a MinAtar Breakout preset; --game {game} takes {', '.join(plain)}"
    return None


def eval_game(game: str, cap: int):
    """The game the evaluation plays: `game` with its episode cap set to `cap` (0: its own)."""
    from polyzero.games import load_game
    from polyzero.games.loader import GAME_ALIASES, parse_game_spec

    if not cap:
        return load_game(game)
    name, params = parse_game_spec(GAME_ALIASES.get(game, game))
    params[GAMES[game]["cap_param"]] = cap
    return load_game(f"{name}({','.join(f'{k}={v}' for k, v in params.items())})")


def report(args, work: Path, results: Path) -> dict:
    """RESULTS/OUT.{json,md,png} for a game other than MinAtar: the arms' curves, random
    play beside them, the run's machine, command and seed ("one seed": --seeds later)."""
    import platform

    import minatar_muzero_plots
    from common import git_commit, machine_line
    from minatar_muzero_seeds import seed_curves

    curves = seed_curves(work, args.arms)
    for pts in curves.values():
        for p in pts:
            p.pop("lengths", None)
    random = json.loads((work / "eval" / "random.json").read_text())
    random.pop("returns", None)
    random.pop("lengths", None)
    result = {
        "benchmark": "minatar_muzero",
        "game": args.game,
        "title": GAMES[args.game]["title"],
        "seed": args.seed,
        "seeds": [args.seed],
        "search": args.search,
        "episodes": args.episodes,
        "eval_cap": args.eval_cap,
        "eval_cap_param": GAMES[args.game]["cap_param"],
        "eval_simulations": _eval_simulations(work, curves),
        "run_minutes": {a: _run_minutes(work, a) for a in curves},
        "command": "python benchmarks/minatar_muzero.py " + " ".join(getattr(args, "argv", [])),
        "git": git_commit(),
        "machine": f"{machine_line()}, {_hardware()}",
        "python": platform.python_version(),
        "random": random,
        "curves": curves,
        "against_random": {a: against_random(pts, random) for a, pts in curves.items()},
        "not_evaluated": {a: _not_evaluated(work, a) for a in curves},
        "selfplay": {a: selfplay_returns(work / a / "metrics.jsonl") for a in curves},
        "out": args.out,
    }
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{args.out}.json").write_text(json.dumps(result, indent=1))
    (results / f"{args.out}.md").write_text("\n".join(markdown(result)) + "\n")
    minatar_muzero_plots.three_axes(result, results / f"{args.out}.png")
    return result


def _hardware() -> str:
    """The processor's model and the memory (Linux's /proc), else what platform knows."""
    import platform

    info = {}
    for name in ("/proc/cpuinfo", "/proc/meminfo"):
        if Path(name).exists():
            for line in Path(name).read_text().splitlines():
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    memory = f", {int(info['MemTotal'].split()[0]) / 2**20:.0f} GB memory" if "MemTotal" in info else ""
    return info.get("model name", platform.processor() or platform.machine()) + memory


def selfplay_returns(metrics: Path, window: int = 50) -> list[dict]:
    """The self-play episodes' mean return (acting at temperature 1, with exploration
    noise) per `window` learning steps, from the run's metrics.jsonl: how the acting
    policy did, beside the evaluation's greedy one."""
    from common import read_jsonl

    out: dict[int, list[float]] = {}
    for row in read_jsonl(metrics):
        if row.get("kind") == "train" and row.get("selfplay/games_per_step"):
            end = -(-row["step"] // window) * window
            total = out.setdefault(end, [0.0, 0.0])
            total[0] += row["selfplay/games_per_step"]
            total[1] += row["selfplay/games_per_step"] * row["selfplay/mean_return"]
    return [{"step": k, "episodes": int(n), "mean_return": round(t / n, 3)} for k, (n, t) in sorted(out.items())]


def _not_evaluated(work: Path, arm: str) -> list[str]:
    """The arm's checkpoints without an evaluation (the evaluation did not keep up)."""
    ckpts = sorted(p.name for p in (work / arm / "checkpoints").glob("step_*") if p.is_dir())
    return [c for c in ckpts if not (work / "eval" / f"{arm}-{c}.json").exists()]


def _run_minutes(work: Path, arm: str) -> float | None:
    f = work / f"{arm}.seconds"
    return round(float(f.read_text()) / 60, 1) if f.exists() else None


def _eval_simulations(work: Path, curves: dict) -> dict:
    """Per arm, the evaluation search's simulations (the run's eval.simulations)."""
    import tomllib

    out = {}
    for arm in curves:
        cfg = tomllib.loads((work / arm / "config.toml").read_text())
        out[arm] = cfg["eval"]["simulations"]
    return out


def against_random(pts: list[dict], random: dict) -> dict:
    """The last checkpoint's return against random play's, and how many checkpoints'
    95% intervals lie wholly above random play's (apart: no overlap)."""
    last = pts[-1]
    above = [p["step"] for p in pts if p["ci_low"] > random["ci_high"]]
    return {
        "last_step": last["step"],
        "last_mean_return": round(last["mean_return"], 3),
        "random_mean_return": round(random["mean_return"], 3),
        "last_above_random": last["ci_low"] > random["ci_high"],
        "checkpoints_above_random": len(above),
        "checkpoints": len(pts),
    }


def _cap_text(r: dict) -> str:
    if not r["eval_cap"]:
        return "the game's own episode cap"
    if r["eval_cap_param"] == "max_frames":
        return f"episodes capped at {r['eval_cap']:,} frames ({r['eval_cap'] // 4:,} agent steps at frame skip 4)"
    return f"episodes capped at {r['eval_cap']:,} agent steps"


def markdown(r: dict) -> list[str]:
    """The report's lines: what ran, on what, one row per evaluated checkpoint."""
    seeds = "one seed" if len(r["seeds"]) == 1 else f"{len(r['seeds'])} seeds"
    lines = [
        f"# Benchmark `{r['out']}`: MuZero on {r['title']}, {seeds} (seed {r['seed']}), beside random play",
        "",
        "**One seed**: a learning curve of one training run, no claim over seeds "
        "(`report --seeds` gives the mean over seeds with its t-interval once more seeds are trained).",
        "",
        f"- machine: {r['machine']}",
        f"- command: `{r['command']}` (report at commit {r['git'][:10]})",
        f"- training: `{r['game']}` preset, {r['search']} root search, training wall clock per arm: "
        + ", ".join(f"{a} {'still training' if m is None else f'{m} min'}" for a, m in r["run_minutes"].items()),
        f"- evaluation: mean return over {r['episodes']} episodes per checkpoint with its normal 95% interval; "
        f"the run's evaluation search ({', '.join(f'{s} simulations' for s in set(r['eval_simulations'].values()))}, "
        f"no noise, the search's own action); {_cap_text(r)}, random play under the same cap",
        f"- random play, same run: {r['random']['mean_return']:.2f} "
        f"[{r['random']['ci_low']:.2f}, {r['random']['ci_high']:.2f}], "
        f"mean episode length {r['random']['mean_length']:.0f} agent steps",
        "",
    ]
    for arm, a in r["against_random"].items():
        lines.append(
            f"`{arm}`: last checkpoint (learning step {a['last_step']}) {a['last_mean_return']:.2f} against random "
            f"play's {a['random_mean_return']:.2f}, {'above' if a['last_above_random'] else 'not above'} it "
            f"(intervals apart); {a['checkpoints_above_random']} of {a['checkpoints']} checkpoints above it."
        )
        if missing := r["not_evaluated"].get(arm):
            lines.append(
                f"Checkpoints of `{arm}` not evaluated (the evaluation did not keep up): {', '.join(missing)}."
            )
    lines += [
        "",
        "| arm | learning steps | environment steps | train min | mean return | 95% CI | mean length | capped "
        "| eval s |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for arm, pts in r["curves"].items():
        for p in pts:
            lines.append(
                f"| {arm} | {p['step']} | {p['positions']} | {p['train_time'] / 60:.1f} | {p['mean_return']:.2f} | "
                f"[{p['ci_low']:.2f}, {p['ci_high']:.2f}] | {p.get('mean_length', 0):.0f} | {p.get('capped', 0)} | "
                f"{p.get('seconds', 0):.0f} |"
            )
    for arm, rows in r["selfplay"].items():
        lines += [
            "",
            f"`{arm}`'s self-play episodes (temperature 1, exploration noise; the run's metrics), mean return per "
            f"50 learning steps: " + ", ".join(f"{x['mean_return']:.2f} ({x['step']})" for x in rows) + ".",
        ]
    lines += ["", f"![curves]({r['out']}.png)"]
    return lines
