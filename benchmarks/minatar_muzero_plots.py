"""The figures of `minatar_muzero.py`'s one-seed reports (the seeds' report draws its own)."""

from __future__ import annotations

from pathlib import Path


def one_axis(curves, random, path: Path) -> None:
    """MinAtar's figure: each arm's mean return (95% interval bars) against environment
    steps on a log axis, random play's mean beside them."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for arm, pts in curves.items():
        if pts:
            ax.errorbar(
                [p["positions"] for p in pts],
                [p["mean_return"] for p in pts],
                yerr=[[p["mean_return"] - p["ci_low"] for p in pts], [p["ci_high"] - p["mean_return"] for p in pts]],
                marker=".",
                label=arm,
            )
    ax.axhline(random["mean_return"], color="grey", linestyle="--", label="random")
    ax.set_xscale("log")  # the 0.1-samples-per-state arm covers several times the others' steps
    ax.set_xticks([1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6])
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1000:g}k"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return, 95% CI")
    ax.set_title("MinAtar Breakout")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def three_axes(r: dict, path: Path) -> None:
    """Mean return (95% interval as a band) against environment steps, learning steps
    and training minutes, random play's mean and interval beside it in each panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes_keys = (
        ("environment steps", lambda p: p["positions"]),
        ("learning steps", lambda p: p["step"]),
        ("training wall clock (minutes)", lambda p: p["train_time"] / 60),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True)
    rnd = r["random"]
    for ax, (label, x) in zip(axes, axes_keys):
        for arm, pts in r["curves"].items():
            xs = [x(p) for p in pts]
            (line,) = ax.plot(xs, [p["mean_return"] for p in pts], marker=".", label=arm)
            ax.fill_between(
                xs, [p["ci_low"] for p in pts], [p["ci_high"] for p in pts], color=line.get_color(), alpha=0.2
            )
        if label == "learning steps":
            for arm, rows in r.get("selfplay", {}).items():
                ax.plot([x["step"] for x in rows], [x["mean_return"] for x in rows], ":", label=f"{arm} self-play")
        ax.axhline(rnd["mean_return"], color="grey", linestyle="--", label="random play")
        ax.axhspan(rnd["ci_low"], rnd["ci_high"], color="grey", alpha=0.15)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean episode return, 95% CI")
    axes[0].legend()
    axes[1].legend()
    seeds = "one seed" if len(r["seeds"]) == 1 else f"{len(r['seeds'])} seeds"
    fig.suptitle(f"MuZero on {r['title']}, {seeds}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
