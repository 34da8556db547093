"""The report of `connect_four_alphazero` rendered: the curves' plot and the markdown page
(benchmarks/connect_four_results.py gathers what they show)."""

from __future__ import annotations

import json
from pathlib import Path

from connect_four_results import AGENT_SIMS, LEVELS


def plot(curves: dict, path: Path, search: str = "puct", cores: int = 1, baseline=None) -> None:
    """The curves by wall clock; `baseline` (about, curve): an earlier report's AlphaZero, dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, lv in zip(axes, LEVELS):
        for arm, color in (("polyzero", "tab:blue"), ("openspiel", "tab:orange"), ("muzero", "tab:green")):
            pts = [p for p in curves.get(arm, []) if lv in p]
            if not pts:
                continue
            x = [p["minutes"] for p in pts]
            y = [p[lv]["score"] for p in pts]
            lo = [p[lv]["score"] - p[lv]["ci95"][0] for p in pts]
            hi = [p[lv]["ci95"][1] - p[lv]["score"] for p in pts]
            ax.errorbar(
                x,
                y,
                yerr=[lo, hi],
                marker="o",
                capsize=3,
                color=color,
                label={
                    "polyzero": f"polyzero AlphaZero ({search})",
                    "openspiel": "OpenSpiel AlphaZero",
                    "muzero": "polyzero MuZero",
                }[arm],
            )
        base = [p for p in (baseline[1] if baseline else []) if lv in p]
        if base:
            ax.plot(
                [p["minutes"] for p in base],
                [p[lv]["score"] for p in base],
                ls="--",
                marker=".",
                color="tab:blue",
                label=f"polyzero AlphaZero ({baseline[0]['name']}, {baseline[0]['generated_utc'][:10]})",
            )
        ax.axhline(0.9 if lv == "1x" else 0.6, ls="--", color="grey", lw=0.8, label="target")
        ax.set_title(f"vs MCTS-Solver {lv} ({LEVELS[lv]} sims); agent at {AGENT_SIMS} sims")
        ax.set_xlabel(f"training wall clock (min, {cores} core{'s' if cores > 1 else ''} per arm)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="center right", fontsize=8)
    axes[0].set_ylabel("score (W + D/2) / N, Wilson 95% CI")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [
        f"# Benchmark `{r['benchmark']}`",
        "",
        f"Generated {r['generated_utc']}. Machine: {m.get('Model name', '?')}, {m.get('CPU(s)', m['cpus'])} "
        f"CPUs ({m.get('Hypervisor vendor', '')} VM), {m.get('mem_total', '')}. {r['machine_shared']}",
        "",
        f"Seed {r['seed']}; training budget {r['budget_min']:g} min per arm; checkpoints every "
        f"{r['mark_min']:g} min of wall clock.",
        "",
        "## Protocol",
        "",
    ]
    for k, v in r["protocol"].items():
        lines.append(f"- **{k}**: {json.dumps(v) if not isinstance(v, str) else v}")
    lines += [
        f"- **network**: {r['network']}",
        "",
        "## Curves",
        "",
        "Score = (W + D/2) / N for the agent, Wilson 95% interval; minutes of training wall clock.",
        "",
        "| arm | minutes | learning steps | vs 1x | games | vs 10x | games |",
        "|---|---:|---:|---|---:|---|---:|",
    ]
    for arm, pts in r["curves"].items():
        for p in pts:
            cells = []
            for lv in LEVELS:
                if lv in p:
                    q = p[lv]
                    cells += [f"{q['score']:.3f} [{q['ci95'][0]:.3f}, {q['ci95'][1]:.3f}]", str(q["games"])]
                else:
                    cells += ["-", "0"]
            lines.append(f"| {arm} | {p['minutes']:.1f} | {p['learning_step']} | " + " | ".join(cells) + " |")
    lines += _baseline_lines(r)
    lines += ["", f"![curves]({r['benchmark']}.png)", "", "## Targets", ""]
    lines += _targets_markdown(r["targets"])
    lines += [
        "",
        "## Machine speed probe (shared machine)",
        "",
        "| when | UTC | probe ms | loadavg |",
        "|---|---|---:|---|",
    ]
    for p in r["speed_probe_ms"]:
        lines.append(
            f"| {p['label']} | {p['utc']} | {p['probe_ms']:.2f} | {', '.join(f'{x:.2f}' for x in p['loadavg'])} |"
        )
    lines += ["", f"{r['speed_probe_note']}.", "", "## Commands", ""]
    lines += [f"    {c}" for c in r["commands"]]
    lines += ["", "## Configurations", "", "Differences between the arms:", ""]
    lines += [f"- {d}" for d in r["configs"]["differences"]]
    lines += [
        "",
        "OpenSpiel Config:",
        "",
        "```json",
        json.dumps(r["configs"]["openspiel"], indent=1),
        "```",
        "",
        "polyzero config (resolved, from the last checkpoint):",
        "",
        "```json",
        json.dumps(r["configs"]["polyzero"], indent=1),
        "```",
        "",
        "## Versions",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in r["versions"].items()]
    if r["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in r["notes"]]
    return "\n".join(lines) + "\n"


def _baseline_lines(r: dict) -> list[str]:
    """The paragraph that names the earlier report whose AlphaZero the MuZero arm is compared with."""
    if "baseline" not in r:
        return []
    b = r["baseline"]
    return [
        "",
        f"AlphaZero was not trained in this run: the comparison's AlphaZero is the polyzero arm of "
        f"`{b['name']}` (report of {b['generated_utc']}, polyzero {b['polyzero_git']}; first command "
        f"`{b['first_command']}`).",
    ]


def _unchecked(p: dict) -> str:
    """Why an equal-steps point is not checked, or nothing (reports before the field: none)."""
    if p.get("below_alphazero_steps"):
        return " (fewer steps than AlphaZero's first mark: not at equal steps, not checked)"
    return "" if p["checked"] else " (first quarter: not checked)"


def _targets_markdown(t: dict) -> list[str]:
    """The report's Targets section: each target, met or not, and the points it rests on."""
    lines = []
    for k in ("vs_1x_90pct_within_60min", "vs_10x_60pct_within_60min"):
        v = t[k]
        lines.append(
            f"- `{k}`: met = {v['met']}"
            + (f", first at {v['first_mark_min']:g} min" if v.get("first_mark_min") else "")
            + (f" ({v['note']})" if v.get("note") else "")
        )
    if "muzero_80pct_of_alphazero_1x" in t:
        m = t["muzero_80pct_of_alphazero_1x"]
        since = m.get("met_from_min")
        lines.append(
            f"- `muzero_80pct_of_alphazero_1x` (connect_four_muzero): met at every mark = {m['met']}; "
            + (f"met from {since:g} min to the end of training" if since is not None else "not met at the last mark")
        )
        for p in m["points"]:
            ratio = f" ({p['muzero'] / p['alphazero']:.2f} of it)" if p["alphazero"] else ""
            lines.append(
                f"  - {p['mark_min']:g} min: MuZero {p['muzero']:.3f} vs AlphaZero {p['alphazero']:.3f}{ratio}"
            )
    if "muzero_90pct_of_alphazero_1x_equal_steps" in t:
        m = t["muzero_90pct_of_alphazero_1x_equal_steps"]
        lines.append(
            f"- `muzero_90pct_of_alphazero_1x_equal_steps` (connect_four_muzero, after the first quarter): "
            f"met = {m['met']}"
        )
        for p in m["points"]:
            lines.append(
                f"  - {p['mark_min']:g} min, step {p['learning_step']}: MuZero {p['muzero']:.3f} vs AlphaZero "
                f"{p['alphazero']:.3f} ({p['ratio'] if p['ratio'] is None else format(p['ratio'], '.2f')} of it) "
                f"at its {p['alphazero_mark_min']:g}-min mark (step "
                f"{p['alphazero_learning_step']}){_unchecked(p)}"
            )
    a = t["ahead_of_openspiel_at_every_point"]
    lines.append(f"- `ahead_of_openspiel_at_every_point`: met = {a['met']}")
    for p in a["points"]:
        lines.append(
            f"  - {p['mark_min']:g} min, {p['level']}: polyzero {p['polyzero']:.3f} vs OpenSpiel "
            f"{p['openspiel']:.3f} ({'ahead' if p['ahead'] else 'NOT ahead'}"
            f"{', beyond the CIs' if p['ahead_beyond_ci'] else ''})"
        )
    return lines
