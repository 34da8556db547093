"""The `report --seeds` figure (benchmarks/nannon_seeds.py): the mean over seeds at each
mark with its 95% interval, and NDMZ's search agent per seed over learning steps."""

from __future__ import annotations

from pathlib import Path

from nannon_seeds import AGENTS, TARGET


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
        ax.axhline(TARGET, linestyle="--", color="gray", linewidth=1)
        ax.annotate(f"target {TARGET}", (0, TARGET), fontsize=7, color="gray", va="bottom")
        ax.set_ylabel("exact score against the optimal player")
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
                key = (method, agent, "exact_vs_optimal")
                mine = [c for c in cells if (c["method"], c["agent"], c["score"]) == key]
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
    means = [c["mean"] for _, cells in _cell_sets(result) for c in cells if c["score"] == "exact_vs_optimal"]
    if means:  # two seeds' intervals at the untrained point would set the scale
        ax.set_ylim(min(means) - 0.05, max(max(means), TARGET) + 0.02)
    ax.set_xlabel("training time (minutes)")
    ax.set_title(f"{result['game']}: mean over seeds {','.join(map(str, result['seeds']))} (95% t-interval)")


def _plot_steps(ax, result: dict) -> None:
    for seed in sorted({x["seed"] for x in result["by_step"]}, key=str):
        pts = [(x["step"], x["search"]) for x in result["by_step"] if x["seed"] == seed]
        style = ":" if "@" in str(seed) else "-"
        ax.plot(*zip(*pts), marker="o", linestyle=style, label=f"ndmz search, seed {seed}")
    ax.set_xlabel("learning steps")
    ax.set_title("NDMZ search agent per seed, over learning steps")
