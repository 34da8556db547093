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

A score is exact where the game is small enough to tabulate every decision (6-3-6);
on larger boards (12-5-6) the search agent's score is sampled from games
(`sampled_vs_*`, a seed's point is its sampled score), and the targets read each
agent's exact score where it has one, else its sampled one.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from common import ROOT, git_commit, machine_line, seed_list, write_report
from polyzero.errors import UsageError
from seed_cells import mean_and_ci95

AGENTS = ("raw", "search")
SCORES = ("exact_vs_optimal", "exact_vs_random", "sampled_vs_optimal", "sampled_vs_random")
TARGET = 0.495  # issue 56: NDMZ's search agent vs the optimal player, mean of 3 seeds, within 60 minutes
TARGET_SEEDS = 3
ORDER_AGENT = {"ndmz": "search", "alphazero": "search", "td": "raw"}  # how each method plays (NDMZ, Section 4.4)
TABULATED_POINTS = 8  # boards up to this many points have every search decision tabulated (exact scores)


def search_sampled(game: str) -> bool:
    """Whether `game`'s search agents are scored from sampled games (a board too large to
    tabulate their decisions: 12-5-6, whose target is the paper's order) or exactly (6-3-6)."""
    from polyzero.games.loader import load_game
    from polyzero.games.nannon_solver import NannonParams

    return NannonParams.from_game(load_game(game)).points > TABULATED_POINTS


def score_of(scores: dict, score: str) -> float | None:
    """An agent's `score` from its evaluated scores: exact, or a sampled one's point
    estimate; a sampled score where the exact one is there is left out (the exact one
    supersedes it)."""
    if score not in scores or (score.startswith("sampled_") and score.replace("sampled_", "exact_") in scores):
        return None
    value = scores[score]
    return value[0] if isinstance(value, list) else value  # sampled: [score, low, high]


def preferred(names, opponent: str) -> str | None:
    """The score to read against `opponent` among `names`: the exact one if there, else the
    sampled one (the board decides an agent's kind, so one method's seeds never mix them)."""
    return next((s for s in (f"exact_vs_{opponent}", f"sampled_vs_{opponent}") if s in names), None)


def best_known(scores: dict, opponent: str) -> tuple[str | None, float | None]:
    """(score name, value) against `opponent`: the exact score if evaluated, else the sampled."""
    score = preferred(scores, opponent)
    return score, None if score is None else score_of(scores, score)


def seed_work(work: Path | str | None, out: str, seed: int, many: bool = False) -> Path:
    """Seed `seed`'s work directory: `work` with {seed} filled in, default runs/bench/OUT_s{seed};
    with `many` seeds a template without {seed} (every seed one directory) is a UsageError."""
    template = str(work) if work is not None else str(ROOT / "runs" / "bench" / f"{out}_s{{seed}}")
    if many and "{seed}" not in template:
        raise UsageError(f"{template}: no {{seed}} in it, so every seed would read the same directory")
    try:
        return Path(template.format(seed=seed))
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(f"{template}: not a directory template with {{seed}} in it ({exc})") from None


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
                have = [(s, r) for s, r in seeded if score_of(r.get(agent, {}), score) is not None]
                if not have:
                    continue
                values = [score_of(r[agent], score) for _, r in have]
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
    """Issue 56's target on 6-3-6: NDMZ's search agent, the mean over all `seeds` (at least 3)
    of the exact score against the optimal player at some mark within `budget_min` minutes,
    at least 0.495 (none where the search agent's score is sampled: a larger board)."""
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


def order(cells: list[dict], mark: float) -> dict | None:
    """Issue 56's target on 12-5-6, the paper's order (NDMZ, Fig. 2 and Section 4.4): NDMZ and
    AlphaZero (each playing with search) above TD(lambda) (greedy on its value) at `mark`,
    against random play (the paper's metric) and against the optimal player (ours); per
    opponent each method's mean over its seeds, whether each is above TD(lambda)'s mean,
    and whether their 95% intervals are apart. It holds when every mean is above TD's
    with at least 3 seeds each (the issue's rule: the mean at a mark); the verdict also
    says whether the intervals are apart. None unless all three methods are there."""
    here = {
        (c["method"], c["score"]): c for c in cells if c["mark"] == mark and ORDER_AGENT.get(c["method"]) == c["agent"]
    }
    out = {"mark": mark}
    for opponent in ("random", "optimal"):
        mine = {}
        for method in ORDER_AGENT:
            score = preferred({s for m, s in here if m == method}, opponent)
            if score is None:
                return None
            c = here[(method, score)]
            mine[method] = {"score": score, "seeds": c["seeds"], "mean": c["mean"], "ci95": c["ci95"]}
        td = mine["td"]
        for method in ("ndmz", "alphazero"):
            m = mine[method]
            m["above_td"] = m["mean"] > td["mean"]
            m["apart"] = bool(m["ci95"] and td["ci95"]) and (
                m["ci95"][0] > td["ci95"][1] if m["above_td"] else m["ci95"][1] < td["ci95"][0]
            )
        out[opponent] = mine
    seeds = [len(m["seeds"]) for opp in ("random", "optimal") for m in out[opp].values()]
    pairs = [out[opp][m] for opp in ("random", "optimal") for m in ("ndmz", "alphazero")]
    above, apart = all(m["above_td"] for m in pairs), all(m["apart"] for m in pairs)
    out["enough_seeds"] = min(seeds) >= TARGET_SEEDS
    out["holds"] = out["enough_seeds"] and above
    in_order = "the means in the paper's order" if above else "the means not in the paper's order"
    out["verdict"] = (
        f"not established (fewer than {TARGET_SEEDS} seeds for some method; {in_order})"
        if not out["enough_seeds"]
        else "does not hold"
        if not above
        else "holds, every interval apart from TD(lambda)'s"
        if apart
        else "holds in the means, some intervals overlapping TD(lambda)'s"
    )
    return out


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
                known = {agent: best_known(r[agent], "optimal") for agent in AGENTS}
                scores = {agent: value for agent, (_, value) in known.items()}
                sampled = [agent for agent, (score, _) in known.items() if score and score.startswith("sampled_")]
                out.append({"seed": seed, "step": r["step"], "minutes": r["minutes"], **scores, "sampled": sampled})
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
    sources = {seed: seed_sources(args, seed, stored.get(seed)) for seed in seeds}
    rows_by_seed = {seed: [r for part in parts for r in part["rows"]] for seed, parts in sources.items()}
    sampled = search_sampled(args.game)
    marks = marks_of(args.budget_min, args.points)
    cells = across_seeds(rows_by_seed, marks, args.budget_min)
    baseline = _baseline(args, marks, rows_by_seed, sampled)
    against = _against(args, seeds)
    labelled = [(_label(s, i, part), part) for s, parts in sources.items() for i, part in enumerate(parts)]
    result = {
        "game": args.game,
        "seeds": seeds,
        "search_sampled": sampled,
        "work": {label: part["work"] for label, part in labelled if "work" in part},
        "command": report_command(args),
        "git": git_commit(),
        "stored": {label: {k: v for k, v in part.items() if k != "rows"} for label, part in labelled if "file" in part},
        "train_git": {str(s): sorted({c for part in sources[s] for c in part["train_git"]}) for s in seeds},
        "machine": machine_line(),
        "load_while_training": {label: part["load_while_training"] for label, part in labelled},
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
        "target": None if sampled else target(cells, seeds, args.budget_min),
        "order": order(cells, marks[-1]) if sampled else None,
    }
    if baseline:
        baseline.pop("rows")  # in its own results file
    name = f"{args.out}_seeds"
    from nannon_seeds_page import markdown, plot

    write_report(name, result, markdown(name, result), plot)
    return result


def seed_sources(args, seed: int, stored: list[dict] | None) -> list[dict]:
    """Seed `seed`'s evaluated checkpoints, training commits and load: from its work directory
    (--work) or, in its place, its stored results files (--seed-results), and from each
    --with-work directory (methods trained apart; for a stored seed, one without evaluations
    is passed over: gone with the seed's work). A directory without evaluations, one named
    twice, or a method found in two of them is a UsageError."""
    parts = list(stored or [])
    many = len(args.seeds) > 1
    works = [] if stored else [seed_work(args.work, args.out, seed, many)]
    for work in works + [seed_work(t, args.out, seed, many) for t in getattr(args, "with_work", None) or []]:
        rows = eval_rows(work) if (work / "eval").is_dir() else []
        if not rows and stored:
            continue
        if not rows:
            raise UsageError(f"seed {seed}: no evaluated checkpoints in {work} (run eval with --seed {seed} first)")
        parts.append(
            {
                "work": str(work),
                "rows": rows,
                "train_git": train_commits(work),
                "load_while_training": load_summary(work),
            }
        )
    seen: dict[str, str] = {}
    named: set[Path] = set()
    for part in parts:
        where = _where(part)
        if Path(where).resolve() in named:
            raise UsageError(f"seed {seed}: {where} is given twice")
        named.add(Path(where).resolve())
        for method in sorted({r["method"] for r in part["rows"]}):
            if seen.setdefault(method, where) != where:
                raise UsageError(f"seed {seed}: {method} checkpoints in both {seen[method]} and {where}")
    return parts


def _where(part: dict) -> str:
    """Where a seed's source was read: its work directory or its stored results file."""
    return part.get("work") or part["file"]


def _label(seed: int, index: int, part: dict) -> str:
    """A seed's source's key in the report: the seed for its first, 'SEED PATH' for the others."""
    return str(seed) if index == 0 else f"{seed} {_where(part)}"


def _baseline(args, marks: list[float], rows_by_seed: dict[int, list[dict]], sampled: bool) -> dict | None:
    """--baseline FILE (an earlier one-seed results JSON): its cells beside the seeds'; if
    its seed is not among them, NDMZ over the seeds with it as one more, named SEED@COMMIT
    (a different commit: shown apart from the target's verdict; 6-3-6's target read that way
    too, none on a board whose search agent is `sampled`)."""
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
        tgt = None if sampled else target(cells, list(mixed), args.budget_min)
        out["with_it"] = {"seeds": list(mixed), "cells": cells, "target": tgt}
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


def report_command(args) -> str:
    """The command line a report records: main(argv)'s own arguments (`args.argv`)."""
    return "python benchmarks/nannon_636.py " + " ".join(getattr(args, "argv", []))


def stored_seeds(specs: list[tuple[int, Path]], seeds: list[int]) -> dict[int, list[dict]]:
    """--seed-results SEED=FILE: a seed's evaluated checkpoints from an earlier one-seed results
    file (`report` without --seeds; its "rows" are the work directory's eval/*.json), for a
    seed whose work directory is gone (one file per method trained apart); with the file's
    commit, and its training commits and load if it stored them."""
    out: dict[int, list[dict]] = {}
    for seed, path in specs:
        if seed not in seeds or path.resolve() in {Path(x["file"]).resolve() for x in out.get(seed, [])}:
            raise UsageError(f"--seed-results {seed}={path}: seed {seed} is not one of --seeds {seeds} or given twice")
        earlier = _read_earlier(path, "rows", "--seed-results")
        if earlier.get("seed", seed) != seed:
            raise UsageError(f"--seed-results {seed}={path}: the file is seed {earlier['seed']}'s")
        out.setdefault(seed, []).append(
            {
                "file": str(path),
                "git": earlier.get("git") or "unknown",
                "command": earlier.get("command") or "not stored",  # which run it was (its --work, --set)
                "train_git": earlier.get("train_git") or [],
                "load_while_training": earlier.get("load_while_training"),
                "methods": sorted({r["method"] for r in earlier["rows"]}),
                "rows": earlier["rows"],
            }
        )
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
    p.add_argument(
        "--with-work",
        action="append",
        default=[],
        metavar="TEMPLATE",
        help="with --seeds: another work directory per seed ({seed} in it) whose methods join the seed's "
        "(a method trained apart); repeatable",
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
