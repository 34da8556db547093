"""The report of benchmarks/sog_leduc.py: the means over training seeds at each mark,
a paired comparison against a baseline arm's training seeds, the targets, the Markdown
table and the curves (split from sog_leduc.py, which runs the phases)."""

from __future__ import annotations

import json
from pathlib import Path

from common import interval


def search_sims(row: dict) -> int:
    """s of a row's SoG(s, 1) or IS-MCTS(s) spec."""
    return int(row["spec"].split(":")[1].split(",")[0])


def across_seeds(sog: list[dict], seeds: list[int]) -> list[dict]:
    """Per SoG(s, 1) and --marks mark, where every training seed has the point: the mean
    over training seeds of each seed's mean, its 95% t-interval, and min / max of the seeds' means."""
    import numpy as np

    groups: dict[tuple, list[dict]] = {}
    for r in sog:
        if "mark" in r:
            groups.setdefault((search_sims(r), r["mark"]), []).append(r)
    out = []
    for (sims, mark), rs in sorted(groups.items()):
        if sorted(r["training_seed"] for r in rs) != sorted(seeds):
            continue
        means = [r["mean"] for r in rs]
        mean, lo, hi = interval(means)
        out.append(
            {
                "spec": f"sog:{sims},1",
                "step": mark,  # fig3_shape's order of points
                "mark": mark,
                "mark_unit": rs[0].get("mark_unit", "min"),
                "minutes": float(np.mean([r["minutes"] for r in rs])),
                "steps": [r["step"] for r in rs],
                "values": means,
                "mean": mean,
                "ci95": [lo, hi],
                "min": min(means),
                "max": max(means),
                "search_seeds": [len(r["values"]) for r in rs],
            }
        )
    return out


def paired(sog: list[dict], base: list[dict], seeds: list[int]) -> list[dict]:
    """Per SoG(s, 1) and mark that both arms have for every training seed: each seed's
    mean minus the baseline arm's mean for the same training seed, and the mean of these
    differences with its 95% t-interval (negative: this arm less exploitable)."""
    ours = {(search_sims(r), r["mark"], r["training_seed"]): r for r in sog if "mark" in r}
    theirs = {(search_sims(r), r["mark"], r["training_seed"]): r for r in base if "mark" in r}
    out = []
    for sims, mark in sorted({(s, m) for s, m, _ in ours}):
        keys = [(sims, mark, seed) for seed in seeds]
        if not all(k in ours and k in theirs for k in keys):
            continue
        diffs = [ours[k]["mean"] - theirs[k]["mean"] for k in keys]
        mean, lo, hi = interval(diffs)
        out.append(
            {
                "spec": f"sog:{sims},1",
                "mark": mark,
                "mark_unit": ours[keys[0]].get("mark_unit", "min"),
                "differences": diffs,
                "mean": mean,
                "ci95": [lo, hi],
                "minutes": [ours[k]["minutes"] for k in keys],
                "baseline_minutes": [theirs[k]["minutes"] for k in keys],
                "steps": [ours[k]["step"] for k in keys],
                "baseline_steps": [theirs[k]["step"] for k in keys],
            }
        )
    return out


def value_error_table(ours: list[dict], theirs: list[dict] | None) -> list[dict]:
    """`ours` (and `theirs`, a baseline arm): per training seed, mark -> the CVPN's value error
    record. Per mark every seed has: the errors by seed, their mean and 95% t-interval
    (all information states; also weighted), and the paired differences from the baseline."""
    out = []
    for mark in sorted(set.intersection(*(set(by_mark) for by_mark in ours)) if ours else []):
        recs = [by_mark[mark] for by_mark in ours]
        row = {"mark": mark, "steps": [r["step"] for r in recs], "minutes": [r["minutes"] for r in recs]}
        for key in ("all", "all_weighted"):
            values = [r[key] for r in recs]
            mean, lo, hi = interval(values)
            row[key] = {"values": values, "mean": mean, "ci95": [lo, hi]}
        if theirs and all(mark in by_mark for by_mark in theirs):
            base = [by_mark[mark] for by_mark in theirs]
            for key in ("all", "all_weighted"):
                values = [r[key] for r in base]
                diffs = [a - b for a, b in zip(row[key]["values"], values)]
                mean, lo, hi = interval(diffs)
                row[f"baseline_{key}"] = {"values": values, "mean": float(sum(values) / len(values))}
                row[f"difference_{key}"] = {"values": diffs, "mean": mean, "ci95": [lo, hi]}
        out.append(row)
    return out


def leduc_targets(sog: list[dict], anchors: list[dict]) -> dict:
    """Leduc: the issue's targets (SoG(100, 1) below IS-MCTS's best within 2 hours, below 200 within 6)."""
    best_ismcts = min((r["mean"] for r in anchors), default=None)
    sog100 = [r for r in sog if r["spec"].startswith("sog:100,")]
    bar = min(best_ismcts, 465.0) if best_ismcts is not None else 465.0

    def first_below(level: float, minutes: float):
        hits = [r["minutes"] for r in sog100 if r["minutes"] <= minutes and r["mean"] < level]
        return round(min(hits), 1) if hits else None

    return {
        "best_ismcts_mean": best_ismcts,
        "paper_best_ismcts": 465.0,
        "sog100_below_ismcts_within_2h": first_below(bar, 120) is not None,
        "sog100_first_below_ismcts_at_min": first_below(bar, 120),
        "sog100_below_200_within_6h": first_below(200.0, 360) is not None,
        "sog100_first_below_200_at_min": first_below(200.0, 360),
    }


def report_lines(args, result: dict, unit: str) -> list[str]:
    """The Markdown report: each cell (per training seed), then the means across training seeds."""
    f = ".1f" if unit == "mbb/h" else ".3f"
    rows = result["anchors"] + result["sog"]
    evaluated_on = sorted({m for r in rows for m in r.get("machines", [])})
    lines = [
        f"# Benchmark `{args.out}`: Student of Games on {args.game}",
        "",
        f"Machine: {result['machine']}. Command: `{result['command']}` (commit {result['git'][:10]}). "
        f"Training seed(s) {result['seed']}.",
        "",
        f"Exploitability in {unit} (min / mean / max over search seeds); minutes = training time of the checkpoint.",
        "",
        "| player | training seed | step | minutes | seeds | min | mean | max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["anchors"]:
        lines.append(
            f"| `{r['spec']}` | | | | {len(r['values'])} | {r['min']:{f}} | {r['mean']:{f}} | {r['max']:{f}} |"
        )
    for r in result["sog"]:
        label = r["spec"].split(",net=")[0] + (" (untrained)" if r["step"] == 0 else "")
        lines.append(
            f"| `{label}` | {r['training_seed']} | {r['step']} | {r['minutes']:.1f} | {len(r['values'])} | "
            f"{r['min']:{f}} | {r['mean']:{f}} | {r['max']:{f}} |"
        )
    if result["across_training_seeds"]:
        lines += across_lines(result["across_training_seeds"], f, "Across training seeds")
    if result.get("baseline"):
        base = result["baseline"]
        lines += across_lines(base["across_training_seeds"], f, f"The baseline arm (`{base['work']}`), the same way")
        lines += paired_lines(base["paired"], f)
    if result.get("value_error"):
        lines += value_error_lines(result["value_error"])
    if evaluated_on:  # seeds evaluated in parallel (--jobs), possibly on another machine
        lines += ["", "Seeds evaluated on: " + "; ".join(evaluated_on) + "."]
    if result["targets"]:
        lines += ["", f"Targets: {json.dumps(result['targets'])}"]
    return lines


def across_lines(rows: list[dict], f: str, title: str) -> list[str]:
    """The table of `across_seeds` rows under `title`."""
    unit = rows[0].get("mark_unit", "min") if rows else "min"
    lines = [
        "",
        f"{title} (each seed's mean over its search seeds; mean, 95% t-interval, min / max):",
        "",
        f"| player | mark ({unit}) | mean minutes | steps | training seeds | search seeds each | mean | 95% interval "
        "| min | max |",
        "|---|---:|---:|---|---:|---|---:|---|---:|---:|",
    ]
    for r in rows:
        lo, hi = r["ci95"]
        lines.append(
            f"| `SoG({search_sims(r)}, 1)` | {r['mark']:g} | {r['minutes']:.1f} | {r.get('steps', '')} | "
            f"{len(r['values'])} | {r['search_seeds']} | {r['mean']:{f}} | [{lo:{f}}, {hi:{f}}] | "
            f"{r['min']:{f}} | {r['max']:{f}} |"
        )
    return lines


def paired_lines(rows: list[dict], f: str) -> list[str]:
    """The table of `paired` rows: this arm minus the baseline, training seed by training seed."""
    lines = [
        "",
        "This arm minus the baseline, per training seed (the same seed in both arms; mean and 95% t-interval "
        "of the differences; minutes of training: this arm / the baseline):",
        "",
        "| player | mark | differences by seed | mean | 95% interval | minutes | baseline minutes |",
        "|---|---:|---|---:|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["ci95"]
        diffs = ", ".join(f"{d:+{f}}" for d in r["differences"])
        mins = ", ".join(f"{m:.1f}" for m in r["minutes"])
        base = ", ".join(f"{m:.1f}" for m in r["baseline_minutes"])
        lines.append(
            f"| `SoG({search_sims(r)}, 1)` | {r['mark']:g} {r['mark_unit']} | {diffs} | {r['mean']:+{f}} | "
            f"[{lo:+{f}}, {hi:+{f}}] | {mins} | {base} |"
        )
    return lines


def value_error_lines(rows: list[dict]) -> list[str]:
    """The CVPN's value error (chips) per mark: by training seed, mean [95% t], and against the baseline."""
    lines = [
        "",
        "The CVPN against an equilibrium's exact values (mean absolute error of the information states' "
        "expected returns in chips, all [weighted]; per training seed, mean and 95% t-interval; "
        "the baseline arm's mean and this arm minus it, paired by seed):",
        "",
        "| mark | by seed | mean | 95% interval | weighted mean | baseline mean | minus baseline | 95% interval "
        "| weighted: baseline mean | minus baseline | 95% interval |",
        "|---:|---|---:|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in rows:
        a, w = r["all"], r["all_weighted"]
        by_seed = ", ".join(f"{v:.3f}" for v in a["values"])
        line = f"| {r['mark']:g} | {by_seed} | {a['mean']:.3f} | [{a['ci95'][0]:.3f}, {a['ci95'][1]:.3f}] | "
        line += f"{w['mean']:.3f} |"
        for key in ("all", "all_weighted"):
            if f"difference_{key}" in r:
                d, base = r[f"difference_{key}"], r[f"baseline_{key}"]["mean"]
                line += f" {base:.3f} | {d['mean']:+.3f} | [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] |"
            else:
                line += " | | |"
        lines.append(line)
    return lines


def fig3_shape(sog: list[dict], anchors: list[dict]) -> dict:
    """The shape of the paper's Fig. 3 (B on the glasses map): exploitability falls with
    training (each SoG(s, 1) at the last checkpoint below the untrained network), and
    with search size (at the last checkpoint, every larger s below every smaller
    one), with trained SoG(100, 1) below IS-MCTS at each of its simulation counts."""
    if not sog:
        return {}
    first, last = min(r["step"] for r in sog), max(r["step"] for r in sog)
    at = {(r["step"], search_sims(r)): r["mean"] for r in sog}
    training = {
        s: {"untrained": at[(first, s)], "final": at[(last, s)], "falls": at[(last, s)] < at[(first, s)]}
        for (step, s) in at
        if step == last and (first, s) in at
    }
    final = sorted((s, m) for (step, s), m in at.items() if step == last)
    search = {"final_by_sims": final, "falls": all(a[1] > b[1] for a, b in zip(final, final[1:]))}
    sog100 = at.get((last, 100))
    ismcts = {
        r["spec"]: {"mean": r["mean"], "sog100_below": sog100 is not None and sog100 < r["mean"]} for r in anchors
    }
    return {"falls_with_training": training, "falls_with_search": search, "vs_ismcts": ismcts}


def plot_curves(sog, anchors, unit: str, path: Path, game: str, seeds: int = 1, baseline=()) -> None:
    """Mean exploitability (min-max band) against training minutes per SoG(s, 1) (against
    learning steps when the marks are steps); IS-MCTS as lines.
    With several training seeds (rows of `across_seeds` first, then each seed's rows):
    the means across seeds, the band their seeds' means, each seed's means thin; a
    baseline arm's means across seeds (`baseline`) dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    merged = [r for r in sog if "training_seed" not in r] if seeds > 1 else sog
    x_key = "step" if any(r.get("mark_unit") == "steps" for r in sog) else "minutes"
    colors = {}
    for sims in sorted({search_sims(r) for r in sog}):
        rows = sorted((r for r in merged if search_sims(r) == sims), key=lambda r: r[x_key])
        x = [r[x_key] for r in rows]
        (line,) = ax.plot(x, [r["mean"] for r in rows], marker="o", label=f"SoG({sims}, 1)")
        colors[sims] = line.get_color()
        ax.fill_between(x, [r["min"] for r in rows], [r["max"] for r in rows], alpha=0.2, color=colors[sims])
    for r in sog if seeds > 1 else []:  # each training seed's curve, thin
        if "training_seed" in r:
            same = [q for q in sog if q.get("training_seed") == r["training_seed"] and search_sims(q) == search_sims(r)]
            same.sort(key=lambda q: q[x_key])
            if r is same[0]:
                ax.plot(
                    [q[x_key] for q in same],
                    [q["mean"] for q in same],
                    marker=".",
                    linewidth=0.7,
                    alpha=0.6,
                    color=colors[search_sims(r)],
                )
    for sims in sorted({search_sims(r) for r in baseline}):
        rows = sorted((r for r in baseline if search_sims(r) == sims), key=lambda r: r[x_key])
        color = colors.get(sims, "black")
        ax.plot([r[x_key] for r in rows], [r["mean"] for r in rows], "--", marker="s", color=color, alpha=0.8)
        ax.lines[-1].set_label(f"SoG({sims}, 1), baseline arm")
    for r in anchors:
        ax.axhline(r["mean"], linestyle="--", linewidth=1, color="gray")
        ax.annotate(r["spec"], (0, r["mean"]), fontsize=7, color="gray", va="bottom")
    ax.set_yscale("log")
    ax.set_xlabel("learning steps" if x_key == "step" else "training time (minutes)")
    ax.set_ylabel(f"exploitability ({unit})")
    band = (
        f"mean over {seeds} training seeds (band: their means' min-max), each seed thin"
        if seeds > 1
        else "mean over seeds, min-max band"
    )
    ax.set_title(f"Student of Games on {game}\n{band}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
