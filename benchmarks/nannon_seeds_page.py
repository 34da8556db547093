"""The `report --seeds` page (benchmarks/nannon_seeds.py): the Markdown (the tables by
mark, per seed, by learning step, the runs beside, the target's verdict) and the figure
(the mean over seeds at each mark with its 95% interval, and NDMZ's search agent per
seed over learning steps)."""

from __future__ import annotations

import functools
from pathlib import Path

from nannon_seeds import AGENTS, SCORES, TARGET, TARGET_SEEDS, preferred
from seed_cells import cell_text

_fmt = functools.partial(cell_text, digits=4, missing="")


def _table(cells: list[dict], marks: list[float], label: str) -> list[str]:
    """A row per method and agent, a column per mark: the mean [95% interval] of each score."""
    lines = []
    for score in SCORES:
        if not any(c["score"] == score for c in cells):
            continue
        lines += [
            "",
            f"{label}: {score.replace('_', ' ')} (mean [95% t-interval] over seeds)",
            "",
            "| method | agent | seeds | " + " | ".join(f"{m:g} min" for m in marks) + " |",
            "|---|---|---|" + "---:|" * len(marks),
        ]
        for method in sorted({c["method"] for c in cells}):
            for agent in AGENTS:
                mine = {c["mark"]: c for c in cells if (c["method"], c["agent"], c["score"]) == (method, agent, score)}
                if mine:
                    seeds = sorted({s for c in mine.values() for s in c["seeds"]}, key=str)
                    row = " | ".join(_some_seeds(mine.get(m), seeds) for m in marks)
                    lines.append(f"| {method} | {agent} | {','.join(map(str, seeds))} | {row} |")
    return lines


def _some_seeds(cell: dict | None, seeds: list) -> str:
    """The cell's text, naming its seeds where it has fewer than its row (a seed without a
    checkpoint near that mark)."""
    text = _fmt(cell)
    if cell is not None and len(cell["seeds"]) < len(seeds):
        text += f" (seed{'s' * (len(cell['seeds']) > 1)} {','.join(map(str, cell['seeds']))} only)"
    return text


def _vs_optimal(cells: list[dict], method: str, agent: str) -> str | None:
    """The score `method`'s `agent` has against the optimal player: exact, else sampled."""
    return preferred({c["score"] for c in cells if (c["method"], c["agent"]) == (method, agent)}, "optimal")


def _search_vs_optimal(cells: list[dict]) -> str:
    """The score NDMZ's search agent has against the optimal player: exact, else sampled."""
    return _vs_optimal(cells, "ndmz", "search") or "exact_vs_optimal"


def _per_seed(cells: list[dict]) -> list[str]:
    """Each method's agent vs optimal per seed (search where it has one, else raw): each seed's
    checkpoint (minutes and learning step) and score, so steps per minute show where the
    machines differed."""
    lines = []
    for method in sorted({c["method"] for c in cells}):
        agent = next(a for a in ("search", "raw") if any((c["method"], c["agent"]) == (method, a) for c in cells))
        score = _vs_optimal(cells, method, agent)
        mine = [c for c in cells if (c["method"], c["agent"], c["score"]) == (method, agent, score)]
        if not mine:
            continue
        seeds = sorted({s for c in mine for s in c["seeds"]}, key=str)
        title = f"{method} {agent} agent, {score.replace('_', ' ')}, per seed (the checkpoint's training minutes and "
        title += "step, a step being a round of 300 games):" if method == "td" else "step):"
        lines += ["", title, "", "| mark | " + " | ".join(f"seed {s}" for s in seeds) + " |"]
        lines.append("|---:|" + "---:|" * len(seeds))
        for c in mine:
            have = {
                s: f"{v:.4f} ({m:.1f} min, step {n})"
                for s, v, m, n in zip(*(c[k] for k in ("seeds", "values", "minutes", "steps")))
            }
            lines.append(f"| {c['mark']:g} | " + " | ".join(have.get(s, "") for s in seeds) + " |")
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
        "Exact scores are expected scores (both seats, opening roll included) of every decision tabulated; "
        "sampled ones (an agent too slow to tabulate, or a board too large) are a seed's score over its sampled "
        "games, so their interval over seeds holds the games' noise too. "
        "A seed's point at a mark is its evaluated checkpoint nearest the mark in training minutes "
        f"(within half the spacing); marks {', '.join(f'{m:g}' for m in result['marks'])} min.",
    ]
    larger = result["search_sampled"]
    if larger:
        lines += _order_lines(result["order"])
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
    if larger:
        return lines
    return lines + ["", f"Target ({tgt['rule']}): {_verdict(tgt)}."]


def _order_lines(order: dict | None) -> list[str]:
    """Issue 56's target on 12-5-6, the paper's order at the last mark: a row per opponent."""
    if not order:
        return [
            "",
            "Target, the paper's order (NDMZ, Fig. 2 and Section 4.4): not read, for it needs NDMZ, AlphaZero "
            "and TD(lambda) at the last mark.",
        ]
    lines = [
        "",
        f"Target, the paper's order (NDMZ, Fig. 2 and Section 4.4): NDMZ and AlphaZero, each playing with "
        f"search, above TD(lambda), greedy on its value, at {order['mark']:g} minutes, against random play "
        f"(the paper's metric) and against the optimal player (ours), each with at least {TARGET_SEEDS} seeds: "
        f"**{order['verdict']}**. Mean [95% t-interval] over seeds (exact: every decision tabulated; sampled: "
        "each seed's score from sampled games); 'apart': the intervals do not overlap.",
        "",
        "| opponent | NDMZ | AlphaZero | TD(lambda) |",
        "|---|---:|---:|---:|",
    ]
    for opponent in ("random", "optimal"):
        row = order[opponent]
        cells = []
        for method in ("ndmz", "alphazero", "td"):
            m = row[method]
            text = f"{_fmt(m)} ({m['score'].split('_')[0]}, n = {len(m['seeds'])})"
            if method != "td":
                text += (", above" if m["above_td"] else ", below") + (", apart" if m["apart"] else "")
            cells.append(text)
        lines.append(f"| {opponent} | " + " | ".join(cells) + " |")
    return lines


def _stored_lines(stored: dict) -> list[str]:
    """Which seeds' checkpoints came from a stored results file (--seed-results), not a work directory."""
    lines = []
    for s, x in stored.items():
        trained = "/".join(c[:10] for c in x["train_git"]) or "is not stored in the file"
        load = x["load_while_training"]
        load_text = f"mean {load['mean']:.2f}, max {load['max']:.2f}" if load else "not stored"
        lines += [
            "",
            f"Seed {s.split()[0]}'s evaluated {'/'.join(x.get('methods', []))} checkpoints come from the stored "
            f"results file `{x['file']}` (written at "
            f"commit {x['git'][:10]} by `{x.get('command', 'not stored')}`; its work directory is gone): its "
            f"training commit {trained}, its load while training {load_text}.",
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
        search, raw = (f"{x[a]:.4f}" + " (sampled)" * (a in x.get("sampled", [])) for a in ("search", "raw"))
        lines.append(f"| {x['seed']} | {x['step']} | {x['minutes']:.1f} | {search} | {raw} |")
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
        score = _search_vs_optimal(mixed["cells"])
        ndmz = [c for c in mixed["cells"] if c["agent"] == "search" and c["score"] == score]
        lines += [
            "",
            f"NDMZ search agent, {score.replace('_', ' ')}, over seeds {', '.join(map(str, mixed['seeds']))}, "
            "the earlier run "
            "counted as one more (a different commit, so not the target's verdict): "
            + "; ".join(f"{c['mark']:g} min {_fmt(c)} (n = {len(c['values'])})" for c in ndmz)
            + (f". Read this way the target would be {_verdict(mixed['target'])}." if mixed["target"] else "."),
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
        "NDMZ at equal learning steps, this run beside it (vs optimal; the minutes each reached the step in):",
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


def plot(result: dict, path: Path) -> None:
    """Left: exact score vs the optimal player over training minutes, each method and agent's
    mean over seeds with its 95% interval as a band and the seeds' points. Right: NDMZ's
    search agent per seed over learning steps (training is deterministic in its steps, so
    this axis does not depend on how busy the machine was)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    _plot_minutes(left, result)
    _plot_steps(right, result)
    for ax in (left, right):
        if not result["search_sampled"]:  # 6-3-6's target; 12-5-6's is the order
            ax.axhline(TARGET, linestyle="--", color="gray", linewidth=1)
            ax.annotate(f"target {TARGET}", (0, TARGET), fontsize=7, color="gray", va="bottom")
        ax.set_ylabel("score against the optimal player (exact, else sampled)")
        if ax.get_legend_handles_labels()[0]:  # none where no method has a plotted agent
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _cell_sets(result: dict) -> list[tuple[str, list[dict]]]:
    """(label suffix, cells): this run's, and the --baseline run's if given."""
    sets = [("", result["cells"])]
    base = result["baseline"]
    if base:
        sets.append((f" (seed {base['seed']}, {base['git'][:7]})", base["cells"]))
    if result.get("against"):
        sets.append((f" ({Path(result['against']['file']).stem})", result["against"]["cells"]))
    return sets


def _plot_minutes(ax, result: dict) -> None:
    for suffix, cells in _cell_sets(result):
        for method in sorted({c["method"] for c in cells}):
            for agent in AGENTS:
                mine = [
                    c
                    for c in cells
                    if (c["method"], c["agent"]) == (method, agent) and c["score"].endswith("vs_optimal")
                ]
                if not mine:
                    continue
                style = "-" if not suffix else ":"
                means = [c["mean"] for c in mine]
                (line,) = ax.plot(
                    [c["mark"] for c in mine], means, marker="o", linestyle=style, label=f"{method} {agent}{suffix}"
                )
                banded = [c for c in mine if c["ci95"]]
                if banded:
                    lo, hi = [c["ci95"][0] for c in banded], [c["ci95"][1] for c in banded]
                    ax.fill_between([c["mark"] for c in banded], lo, hi, color=line.get_color(), alpha=0.15)
                    for c in banded:
                        ax.scatter(c["minutes"], c["values"], s=8, color=line.get_color(), alpha=0.6)
    means = [c["mean"] for _, cells in _cell_sets(result) for c in cells if c["score"].endswith("vs_optimal")]
    if means:  # two seeds' intervals at the untrained point would set the scale
        ax.set_ylim(min(means) - 0.05, max(max(means), TARGET * (not result["search_sampled"])) + 0.02)
    ax.set_xlabel("training time (minutes)")
    ax.set_title(f"{result['game']}: mean over seeds {','.join(map(str, result['seeds']))} (95% t-interval)")


def _plot_steps(ax, result: dict) -> None:
    for seed in sorted({x["seed"] for x in result["by_step"]}, key=str):
        pts = [(x["step"], x["search"]) for x in result["by_step"] if x["seed"] == seed]
        style = ":" if "@" in str(seed) else "-"
        ax.plot(*zip(*pts), marker="o", linestyle=style, label=f"ndmz search, seed {seed}")
    ax.set_xlabel("learning steps")
    ax.set_title("NDMZ search agent per seed, over learning steps")
