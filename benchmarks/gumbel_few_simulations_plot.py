"""gumbel_few_simulations' figure: the learning curves and the head-to-head scores."""

from __future__ import annotations

from pathlib import Path


def plot(result: dict, path: Path, levels: tuple[str, ...]) -> None:
    """Score against training minutes: vs MCTS-Solver 1x and 10x per (search, n), and
    Gumbel's head-to-head score against pUCT per n; Wilson 95% intervals. `levels`: the
    MCTS-Solver levels ("1x", "10x")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def bars(ax, pts, **kw):
        ax.errorbar(
            [p["minutes"] for p in pts],
            [p["score"] for p in pts],
            capsize=3,
            yerr=[[p["score"] - p["ci95"][0] for p in pts], [p["ci95"][1] - p["score"] for p in pts]],
            **kw,
        )

    fig, axes = plt.subplots(1, 3, figsize=(15, 4), sharey=True)
    colors = dict(
        zip(
            sorted({int(k.split("-n")[1]) for k in result["curves"]}),
            ("tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange", "tab:brown"),
        )
    )
    for ax, level in zip(axes, levels):
        for key, pts in result["curves"].items():
            search, n = key.split("-n")
            pts = [{"minutes": p["minutes"], **p[level]} for p in pts if p.get(level)]
            if pts:
                bars(
                    ax,
                    pts,
                    color=colors[int(n)],
                    ls="-" if search == "gumbel" else "--",
                    marker="o" if search == "gumbel" else "s",
                    label=f"{search}, n = {n}",
                )
        ax.set_title(f"vs MCTS-Solver {level} ({result['eval_sims'] * int(level[:-1])} sims)")
    for key, pts in result["duels"].items():
        if pts:
            bars(axes[2], pts, color=colors[int(key[1:])], marker="o", label=f"n = {key[1:]}")
    axes[2].axhline(0.5, color="grey", lw=0.8)
    axes[2].set_title("Gumbel against pUCT, same n, seed and minute")
    for ax in axes:
        ax.set_xlabel("training wall clock (min, 1 core each)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel(f"score at {result['eval_sims']} sims, pooled over seeds")
    fig.suptitle(f"gumbel_few_simulations: {result['algo']} on {result['game']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
