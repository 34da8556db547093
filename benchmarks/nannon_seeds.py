"""`nannon_636.py report --seeds 0,1,2`: the benchmark over several training seeds.

Each seed trains and is evaluated in a work directory of its own (`--work` with
``{seed}`` in it, default ``runs/bench/NAME_s{seed}``); this module reads each
seed's evaluation cache (WORK/eval/*.json) and writes NAME_seeds.{json,md,png}:
per method, agent (raw policy, search) and score (exact vs optimal, exact vs random)
the mean over seeds and its 95% t-interval at each mark (0 and budget * k / points
minutes). A seed's point at a mark is its evaluated checkpoint nearest the mark in
training minutes, if within half the marks' spacing (eval spreads --points
checkpoints over the training time, so each lands near a mark); the checkpoint's
own minutes are kept beside its score. The issue's rule: a target is met by the
mean at a mark, never by a seed's best checkpoint.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
from pathlib import Path

from common import ROOT, git_commit, machine_line, seed_list, write_report
from polyzero.errors import UsageError
from seed_cells import cell_text, mean_and_ci95

AGENTS = ("raw", "search")
SCORES = ("exact_vs_optimal", "exact_vs_random")
TARGET = 0.495  # issue 56: NDMZ's search agent vs the optimal player, mean of 3 seeds, within 60 minutes
TARGET_SEEDS = 3


def seed_work(work: Path | str | None, out: str, seed: int) -> Path:
    """Seed `seed`'s work directory: `work` with {seed} filled in, default runs/bench/OUT_s{seed}."""
    template = str(work) if work is not None else str(ROOT / "runs" / "bench" / f"{out}_s{{seed}}")
    return Path(template.format(seed=seed))


def eval_rows(work: Path) -> list[dict]:
    """A seed's evaluated checkpoints (WORK/eval/*.json), in order of training minutes."""
    return sorted((json.loads(p.read_text()) for p in (work / "eval").glob("*.json")), key=lambda r: r["minutes"])


def marks_of(budget_min: float, points: int) -> list[float]:
    """0 and `points` even marks up to the budget (minutes of training)."""
    return [0.0] + [budget_min * k / points for k in range(1, points + 1)]


def at_marks(rows: list[dict], marks: list[float], budget_min: float) -> dict[float, dict]:
    """Each mark's row: the one nearest it in minutes, within half the marks' spacing and
    within the budget (a mark with none is left out)."""
    tolerance = (marks[1] - marks[0]) / 2 if len(marks) > 1 else float("inf")
    rows = [r for r in rows if r["minutes"] <= budget_min]
    out = {}
    for mark in marks:
        near = min(rows, key=lambda r: abs(r["minutes"] - mark), default=None)
        if near is not None and abs(near["minutes"] - mark) <= tolerance:
            out[mark] = near
    return out


def across_seeds(rows_by_seed: dict[int, list[dict]], marks: list[float], budget_min: float) -> list[dict]:
    """Per method, agent, score and mark, over the seeds that have it: the seeds' scores,
    their checkpoints' minutes, the mean and its 95% t-interval (none for one seed)."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for seed, rows in sorted(rows_by_seed.items(), key=lambda item: str(item[0])):
        for method in sorted({r["method"] for r in rows}):
            mine = [r for r in rows if r["method"] == method]
            for mark, row in at_marks(mine, marks, budget_min).items():
                groups.setdefault((method, mark), []).append((seed, row))
    out = []
    for (method, mark), seeded in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1])):
        for agent in AGENTS:
            for score in SCORES:
                have = [(s, r) for s, r in seeded if score in r.get(agent, {})]
                if not have:
                    continue
                values = [r[agent][score] for _, r in have]
                out.append(
                    {
                        "method": method,
                        "agent": agent,
                        "score": score,
                        "mark": mark,
                        "seeds": [s for s, _ in have],
                        "minutes": [r["minutes"] for _, r in have],
                        "steps": [r["step"] for _, r in have],
                        "values": values,
                        **mean_and_ci95(values),
                    }
                )
    return out


def target(cells: list[dict], seeds: list, budget_min: float = 60.0) -> dict:
    """Issue 56's target: NDMZ's search agent, the mean over all `seeds` (at least 3) of the
    exact score against the optimal player at some mark within `budget_min` minutes, at
    least 0.495."""
    means = [
        c
        for c in cells
        if (c["method"], c["agent"], c["score"]) == ("ndmz", "search", "exact_vs_optimal")
        and c["mark"] <= budget_min
        and sorted(c["seeds"], key=str) == sorted(seeds, key=str)
    ]
    best = max(means, key=lambda c: c["mean"], default=None)
    return {
        "rule": f"mean over seeds {seeds} of NDMZ's search agent, exact vs optimal, >= {TARGET} at a mark "
        f"<= {budget_min:g} min",
        "best_mark": None if best is None else best["mark"],
        "best_mean": None if best is None else best["mean"],
        "best_ci95": None if best is None else best["ci95"],
        "enough_seeds": len(seeds) >= TARGET_SEEDS,
        "met": best is not None and best["mean"] >= TARGET and len(seeds) >= TARGET_SEEDS,
        "marks_meeting": [c["mark"] for c in means if c["mean"] >= TARGET],
    }


def dynamics_at_last(rows_by_seed: dict[int, list[dict]], budget_min: float) -> dict | None:
    """NDMZ's dynamics tests (top-move accuracy per k) at each seed's last evaluated
    checkpoint within the budget: per k the mean over seeds and the lowest seed."""
    last = []
    for rows in rows_by_seed.values():
        tested = [r for r in rows if r["method"] == "ndmz" and "dynamics" in r and r["minutes"] <= budget_min]
        if tested:
            last.append(tested[-1]["dynamics"]["top_move"])
    if not last:
        return None
    per_k = list(zip(*last))
    return {"seeds": len(last), "mean": [statistics.fmean(k) for k in per_k], "min": [min(k) for k in per_k]}


def by_step(rows_by_seed: dict, budget_min: float) -> list[dict]:
    """Every evaluated NDMZ checkpoint of each seed, past the budget too (training is
    deterministic in its learning steps, so a step's score does not depend on the load)."""
    out = []
    for seed, rows in rows_by_seed.items():
        for r in rows:
            if r["method"] == "ndmz" and "search" in r:
                scores = {agent: r[agent].get("exact_vs_optimal") for agent in AGENTS}
                out.append({"seed": seed, "step": r["step"], "minutes": r["minutes"], **scores})
    return sorted(out, key=lambda x: (str(x["seed"]), x["step"]))


def load_summary(work: Path, name: str = "loadavg.jsonl") -> dict | None:
    """The 1-minute load average sampled while the seed trained (WORK/loadavg.jsonl)."""
    path = work / name
    if not path.exists():
        return None
    loads = [json.loads(x)["loadavg"][0] for x in path.read_text().splitlines() if x.strip()]
    if not loads:
        return None
    return {"samples": len(loads), "mean": statistics.fmean(loads), "min": min(loads), "max": max(loads)}


def report(args) -> dict:
    """NAME_seeds.{json,md,png} from the seeds' caches (and --baseline's rows beside them)."""
    seeds = args.seeds
    stored = stored_seeds(getattr(args, "seed_results", None) or [], seeds)
    works = {seed: seed_work(args.work, args.out, seed) for seed in seeds if seed not in stored}
    rows_by_seed = {seed: stored[seed].pop("rows") if seed in stored else eval_rows(works[seed]) for seed in seeds}
    missing = [s for s, rows in rows_by_seed.items() if not rows]
    if missing:
        raise SystemExit(f"no evaluated checkpoints for seed(s) {missing} (run eval with --seed S first)")
    marks = marks_of(args.budget_min, args.points)
    cells = across_seeds(rows_by_seed, marks, args.budget_min)
    baseline = _baseline(args, marks, rows_by_seed)
    against = _against(args, seeds)
    result = {
        "game": args.game,
        "seeds": seeds,
        "work": {str(s): str(w) for s, w in works.items()},
        "command": "python benchmarks/nannon_636.py " + " ".join(getattr(args, "argv", [])),
        "git": git_commit(),
        "stored": {str(s): x for s, x in stored.items()},
        "train_git": {str(s): stored[s]["train_git"] if s in stored else train_commits(works[s]) for s in seeds},
        "machine": machine_line(),
        "load_while_training": {
            str(s): stored[s]["load_while_training"] if s in stored else load_summary(works[s]) for s in seeds
        },
        "marks": marks,
        "cells": cells,
        "baseline": baseline,
        "against": against,
        "dynamics_at_last": dynamics_at_last(rows_by_seed, args.budget_min),
        "by_step": by_step(
            {**rows_by_seed, **({f"{baseline['seed']}@{baseline['git'][:7]}": baseline["rows"]} if baseline else {})},
            args.budget_min,
        )
        + (against["by_step"] if against else []),
        "target": target(cells, seeds, args.budget_min),
    }
    if baseline:
        baseline.pop("rows")  # in its own results file
    name = f"{args.out}_seeds"
    from nannon_seeds_plot import plot

    write_report(name, result, markdown(name, result), plot)
    return result


def _baseline(args, marks: list[float], rows_by_seed: dict[int, list[dict]]) -> dict | None:
    """--baseline FILE (an earlier one-seed results JSON): its cells beside the seeds'; if
    its seed is not among them, NDMZ over the seeds with it as one more, named SEED@COMMIT
    (a different commit: shown apart from the target's verdict)."""
    if not getattr(args, "baseline", None):
        return None
    earlier = _read_earlier(args.baseline, "rows", "--baseline")
    rows, seed, git = earlier["rows"], earlier.get("seed", 0), earlier.get("git") or "unknown"
    out = {
        "file": str(args.baseline),
        "git": git,
        "seed": seed,
        "cells": across_seeds({seed: rows}, marks, args.budget_min),
        "rows": rows,
    }
    if seed not in rows_by_seed:
        ndmz = {s: [r for r in rs if r["method"] == "ndmz"] for s, rs in rows_by_seed.items()}
        mixed = {**ndmz, f"{seed}@{git[:7]}": [r for r in rows if r["method"] == "ndmz"]}
        cells = across_seeds(mixed, marks, args.budget_min)
        out["with_it"] = {"seeds": list(mixed), "cells": cells, "target": target(cells, list(mixed), args.budget_min)}
    return out


def _against(args, seeds: list[int]) -> dict | None:
    """--against FILE (an earlier `report --seeds` JSON: the default's run of the same seeds,
    beside a lever's): its cells over these seeds only (mean and 95% t-interval recomputed
    over them) and their by-step rows, labelled SEED@FILE's stem."""
    if not getattr(args, "against", None):
        return None
    earlier = _read_earlier(args.against, "cells", "--against")
    if not any(x["seed"] in seeds for x in earlier.get("by_step", [])):
        raise UsageError(f"--against {args.against} has no NDMZ checkpoint of seed(s) {seeds}")
    cells = []
    for c in earlier["cells"]:
        keep = [i for i, s in enumerate(c["seeds"]) if s in seeds]
        if keep:
            pick = {k: [c[k][i] for i in keep] for k in ("seeds", "minutes", "steps", "values")}
            cells.append({**c, **pick, **mean_and_ci95(pick["values"])})
    stem = Path(args.against).stem
    rows = [{**x, "seed": f"{x['seed']}@{stem}"} for x in earlier["by_step"] if x["seed"] in seeds]
    return {
        "file": str(args.against),
        "git": earlier["git"],
        "train_git": {s: c for s, c in earlier["train_git"].items() if s in map(str, seeds)},
        "cells": cells,
        "by_step": rows,
    }


def stored_seeds(specs: list[tuple[int, Path]], seeds: list[int]) -> dict[int, dict]:
    """--seed-results SEED=FILE: a seed's evaluated checkpoints from an earlier one-seed results
    file (`report` without --seeds; its "rows" are the work directory's eval/*.json), for a
    seed whose work directory is gone; with the file's commit, and its training commits and
    load if it stored them."""
    out = {}
    for seed, path in specs:
        if seed not in seeds or seed in out:
            raise UsageError(f"--seed-results {seed}={path}: seed {seed} is not one of --seeds {seeds} or given twice")
        earlier = _read_earlier(path, "rows", "--seed-results")
        if earlier.get("seed", seed) != seed:
            raise UsageError(f"--seed-results {seed}={path}: the file is seed {earlier['seed']}'s")
        out[seed] = {
            "file": str(path),
            "git": earlier.get("git") or "unknown",
            "train_git": earlier.get("train_git") or [],
            "load_while_training": earlier.get("load_while_training"),
            "rows": earlier["rows"],
        }
    return out


def seed_result(text: str) -> tuple[int, Path]:
    """'0=benchmarks/results/x.json' -> (0, Path(...)) (--seed-results)."""
    seed, sep, path = text.partition("=")
    if not sep or not seed.strip().isdigit() or not path:
        raise argparse.ArgumentTypeError(f"expected SEED=FILE, not {text!r}")
    return int(seed), Path(path)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`report --seeds` and the results files it reads beside the seeds' work directories."""
    p.add_argument(
        "--seeds",
        type=seed_list,
        default=None,
        help="report only: the mean and 95%% interval over these training seeds (e.g. 0,1,2), each "
        "from its own --work (with {seed} in it; default runs/bench/NAME_s{seed}) -> NAME_seeds.*",
    )
    p.add_argument(
        "--seed-results",
        type=seed_result,
        action="append",
        default=[],
        metavar="SEED=FILE",
        help="with --seeds: that seed's evaluated checkpoints from an earlier one-seed results JSON "
        "(its work directory gone); repeatable",
    )
    p.add_argument("--baseline", type=Path, default=None, help="with --seeds: an earlier results JSON shown beside")
    p.add_argument(
        "--against",
        type=Path,
        default=None,
        help="with --seeds: an earlier report --seeds JSON whose same seeds are shown beside (a lever vs the default)",
    )


def _read_earlier(path: Path, key: str, flag: str) -> dict:
    """An earlier results JSON named by `flag`; a missing, unreadable or other kind of file
    (without `key`) is a UsageError."""
    try:
        earlier = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror if isinstance(exc, OSError) else 'not JSON'}") from None
    if not isinstance(earlier, dict) or key not in earlier:
        raise UsageError(f"{flag} {path} is not the results file it takes (no {key!r})")
    return earlier


def train_commits(work: Path) -> list[str]:
    """The commits the seed's training ran at (WORK/train_commits.txt: one line per start)."""
    path = work / "train_commits.txt"
    lines = path.read_text().split("\n") if path.exists() else []
    return sorted({x.split()[-1] for x in lines if x.strip()})


# ----------------------------------------------------------------------------- the report
_fmt = functools.partial(cell_text, digits=4, missing="")


def _table(cells: list[dict], marks: list[float], label: str) -> list[str]:
    """A row per method and agent, a column per mark: the mean [95% interval] of each score."""
    lines = []
    for score in SCORES:
        lines += [
            "",
            f"{label}: exact {score.replace('exact_', '').replace('_', ' ')} (mean [95% t-interval] over seeds)",
            "",
            "| method | agent | seeds | " + " | ".join(f"{m:g} min" for m in marks) + " |",
            "|---|---|---|" + "---:|" * len(marks),
        ]
        for method in sorted({c["method"] for c in cells}):
            for agent in AGENTS:
                mine = {c["mark"]: c for c in cells if (c["method"], c["agent"], c["score"]) == (method, agent, score)}
                if mine:
                    seeds = sorted({s for c in mine.values() for s in c["seeds"]})
                    row = " | ".join(_fmt(mine.get(m)) for m in marks)
                    lines.append(f"| {method} | {agent} | {','.join(map(str, seeds))} | {row} |")
    return lines


def _per_seed(cells: list[dict]) -> list[str]:
    """NDMZ's search agent vs optimal per seed: each seed's checkpoint (minutes) and score."""
    mine = [c for c in cells if (c["method"], c["agent"], c["score"]) == ("ndmz", "search", "exact_vs_optimal")]
    lines = ["", "NDMZ search agent, exact vs optimal, per seed (the checkpoint's training minutes and step):", ""]
    lines += ["| mark | " + " | ".join(f"seed {s}" for s in mine[0]["seeds"]) + " |"] if mine else []
    lines += ["|---:|" + "---:|" * len(mine[0]["seeds"])] if mine else []
    for c in mine:
        seeded = (f"{v:.4f} ({m:.1f} min, step {n})" for v, m, n in zip(c["values"], c["minutes"], c["steps"]))
        lines.append(f"| {c['mark']:g} | " + " | ".join(seeded) + " |")
    return lines


def markdown(name: str, result: dict) -> list[str]:
    """The report's lines: what was run, the tables, the target."""
    tgt, base = result["target"], result["baseline"]
    loads = {s: x for s, x in result["load_while_training"].items() if x}  # a stored seed's may be missing
    load_text = "; ".join(f"seed {s} mean {x['mean']:.2f}, max {x['max']:.2f}" for s, x in loads.items())
    lines = [
        f"# Benchmark `{name}`: {result['game']} over training seeds {', '.join(map(str, result['seeds']))}",
        "",
        f"Machine: {result['machine']}, shared with other sessions' work while these ran: the minutes are "
        "training time (wall clock of the learning steps in the training process, not CPU time), so a "
        "busier machine gives fewer learning steps per minute. "
        f"Command: `{result['command']}` (report at commit {result['git'][:10]}; training at "
        + ", ".join(
            f"seed {s}: {'/'.join(c[:10] for c in cs) or 'unrecorded'}" for s, cs in result["train_git"].items()
        )
        + ").",
        "",
        f"1-minute load average while training (sampled each minute): {load_text or 'not recorded'}.",
        *_stored_lines(result.get("stored") or {}),
        "",
        "Scores are exact expected scores (both seats, opening roll included) of every decision tabulated. "
        "A seed's point at a mark is its evaluated checkpoint nearest the mark in training minutes "
        f"(within half the spacing); marks {', '.join(f'{m:g}' for m in result['marks'])} min.",
    ]
    lines += _table(result["cells"], result["marks"], "This run")
    lines += _per_seed(result["cells"])
    lines += _by_step_lines(result["by_step"], result["marks"][-1])
    if base:
        lines += _baseline_lines(base, result["marks"])
    if result.get("against"):
        lines += _against_lines(result)
    dyn = result["dynamics_at_last"]
    if dyn:
        lines += [
            "",
            f"NDMZ dynamics tests at each seed's last checkpoint ({dyn['seeds']} seeds), top-move accuracy per k: "
            "mean "
            + ", ".join(f"{x:.3f}" for x in dyn["mean"])
            + "; lowest seed "
            + ", ".join(f"{x:.3f}" for x in dyn["min"]),
        ]
    return lines + ["", f"Target ({tgt['rule']}): {_verdict(tgt)}."]


def _stored_lines(stored: dict) -> list[str]:
    """Which seeds' checkpoints came from a stored results file (--seed-results), not a work directory."""
    lines = []
    for s, x in stored.items():
        trained = "/".join(c[:10] for c in x["train_git"]) or "is not stored in the file"
        load = x["load_while_training"]
        load_text = f"mean {load['mean']:.2f}, max {load['max']:.2f}" if load else "not stored"
        lines += [
            "",
            f"Seed {s}'s evaluated checkpoints come from the stored results file `{x['file']}` (written at "
            f"commit {x['git'][:10]}; its work directory is gone): its training commit {trained}, its load "
            f"while training {load_text}.",
        ]
    return lines


def _by_step_lines(rows: list[dict], budget_min: float) -> list[str]:
    """Every evaluated NDMZ checkpoint by learning step, past the budget too."""
    lines = [
        "",
        "NDMZ by learning step, every evaluated checkpoint (training is deterministic in its steps, so a "
        f"step's score does not depend on the machine's load; past {budget_min:g} minutes: not counted at a mark):",
        "",
        "| seed | step | minutes | search vs optimal | raw vs optimal |",
        "|---|---:|---:|---:|---:|",
    ]
    for x in rows:
        lines.append(f"| {x['seed']} | {x['step']} | {x['minutes']:.1f} | {x['search']:.4f} | {x['raw']:.4f} |")
    return lines


def _verdict(tgt: dict) -> str:
    """'**met**', '**not met**' or '**not established** (N seeds)', with the best mark's mean."""
    if tgt["met"]:
        verdict = "**met**"
    elif tgt["enough_seeds"]:
        verdict = "**not met**"
    else:
        verdict = f"**not established** (fewer than {TARGET_SEEDS} seeds)"
    if tgt["best_mean"] is None:
        return verdict
    return (
        f"{verdict}: best mean {_fmt({'mean': tgt['best_mean'], 'ci95': tgt['best_ci95']})} at {tgt['best_mark']:g} min"
    )


def _baseline_lines(base: dict, marks: list[float]) -> list[str]:
    """The earlier run's table, and NDMZ over the seeds with it as one more (if it is not one of them)."""
    lines = _table(
        base["cells"], marks, f"Beside it, one seed ({base['seed']}) at commit {base['git'][:10]} ({base['file']})"
    )
    mixed = base.get("with_it")
    if mixed:
        ndmz = [c for c in mixed["cells"] if c["agent"] == "search" and c["score"] == "exact_vs_optimal"]
        lines += [
            "",
            f"NDMZ search agent vs optimal over seeds {', '.join(map(str, mixed['seeds']))}, the earlier run "
            "counted as one more (a different commit, so not the target's verdict): "
            + "; ".join(f"{c['mark']:g} min {_fmt(c)} (n = {len(c['values'])})" for c in ndmz)
            + f". Read this way the target would be {_verdict(mixed['target'])}.",
        ]
    return lines


def _against_lines(result: dict) -> list[str]:
    """--against's run of the same seeds: its table by mark, and both runs at equal learning steps."""
    against = result["against"]
    trained = "; ".join(f"seed {s}: {'/'.join(c[:10] for c in cs)}" for s, cs in against["train_git"].items())
    lines = _table(
        against["cells"], result["marks"], f"Beside it, the same seeds in {against['file']} (trained at {trained})"
    )
    mine = {(str(x["seed"]), x["step"]): x for x in result["by_step"] if "@" not in str(x["seed"])}
    lines += [
        "",
        "NDMZ at equal learning steps, this run beside it (exact vs optimal; the minutes each reached the step in):",
        "",
        "| seed | step | search, this run | search, beside | raw, this run | raw, beside "
        "| minutes, this run | minutes, beside |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for x in against["by_step"]:
        seed = x["seed"].split("@")[0]
        y = mine.get((seed, x["step"]))
        if y:
            lines.append(
                f"| {seed} | {x['step']} | {y['search']:.4f} | {x['search']:.4f} | {y['raw']:.4f} | {x['raw']:.4f} "
                f"| {y['minutes']:.1f} | {x['minutes']:.1f} |"
            )
    return lines
