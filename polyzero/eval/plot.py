"""Learning curves from a run directory's metrics.jsonl."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..errors import UsageError

__all__ = ["read_metrics", "plot_run", "plot_runs"]

LOSS_KEYS = ("loss/total", "loss/value", "loss/policy", "loss/l2")


def read_metrics(run_dir) -> list[dict]:
    """The records of `run_dir/metrics.jsonl`, skipping lines that do not parse
    (a crashed run can leave a truncated last line)."""
    path = Path(run_dir) / "metrics.jsonl"
    records = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("step"), (int, float)):
            records.append(rec)
    if not records:
        raise UsageError(f"no metrics in {path}")
    return records


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _series(records, key) -> tuple[list[float], list[float], list[float]]:
    """(steps, minutes, values) for the records that have a finite `key`."""
    steps, mins, vals = [], [], []
    for r in records:
        v = _num(r.get(key))
        if v is None:
            continue
        steps.append(float(r["step"]))
        mins.append((_num(r.get("time")) or 0.0) / 60.0)
        vals.append(v)
    return steps, mins, vals


def _opponents(records) -> list[str]:
    seen = {}
    for r in records:
        for k in r:
            if k.startswith("eval/") and k.endswith("/score"):
                seen.setdefault(k[len("eval/") : -len("/score")], None)
    return list(seen)


def _figure():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    axes[0].set_xlabel("learning step")
    axes[1].set_xlabel("wall-clock minutes")
    return plt, fig, axes


def _save(plt, fig, axes, path: Path, ylabel: str, title: str) -> Path:
    for ax in axes:
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_losses(runs: dict[str, list[dict]], path: Path) -> Path | None:
    plt, fig, axes = _figure()
    for label, records in runs.items():
        for key in LOSS_KEYS:
            steps, mins, vals = _series(records, key)
            if not vals:
                continue
            name = key if len(runs) == 1 else f"{label} {key}"
            axes[0].plot(steps, vals, label=name)
            axes[1].plot(mins, vals, label=name)
    if not axes[0].lines:
        plt.close(fig)
        return None
    return _save(plt, fig, axes, path, "loss", "training losses")


def _plot_band(
    axes, records, prefix: str, value_key: str, name: str, low: str = "ci_low", high: str = "ci_high"
) -> None:
    """`prefix/value_key` against steps and minutes, with its `prefix/low..high` band."""
    steps, mins, score = _series(records, f"{prefix}/{value_key}")
    lows = _series(records, f"{prefix}/{low}")[2]
    highs = _series(records, f"{prefix}/{high}")[2]
    # A band only when every scored record has both ends; otherwise they would misalign.
    band = len(lows) == len(highs) == len(score)
    for ax, xs in ((axes[0], steps), (axes[1], mins)):
        (line,) = ax.plot(xs, score, marker=".", label=name)
        if band:
            ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.2)


def _plot_returns(runs: dict[str, list[dict]], path: Path) -> Path | None:
    """Single-agent runs: the mean episode return of the evaluations, 95% CI, and
    thinly the mean return of the self-play episodes that ended in each learning step."""
    plt, fig, axes = _figure()
    for label, records in runs.items():
        if any("eval/return/mean" in r for r in records):
            _plot_band(axes, records, "eval/return", "mean", "mean return" if len(runs) == 1 else label)
        steps, mins, selfplay = _series(records, "selfplay/mean_return")
        if selfplay:
            name = "self-play" if len(runs) == 1 else f"{label} self-play"
            for ax, xs in ((axes[0], steps), (axes[1], mins)):
                ax.plot(xs, selfplay, linewidth=0.7, alpha=0.6, label=name)
    if not axes[0].lines:
        plt.close(fig)
        return None
    return _save(plt, fig, axes, path, "mean episode return, 95% CI", "evaluation returns")


def _plot_exploitability(runs: dict[str, list[dict]], path: Path) -> Path | None:
    """Student of Games runs: the search player's exploitability, min-max band over seeds."""
    plt, fig, axes = _figure()
    for label, records in runs.items():
        if any("eval/exploitability/mean" in r for r in records):
            _plot_band(
                axes,
                records,
                "eval/exploitability",
                "mean",
                "mean over seeds" if len(runs) == 1 else label,
                low="min",
                high="max",
            )
    if not axes[0].lines:
        plt.close(fig)
        return None
    for ax in axes:
        ax.set_yscale("log")
    return _save(plt, fig, axes, path, "exploitability (min-mean-max over seeds)", "exploitability")


def _plot_scores(runs: dict[str, list[dict]], path: Path) -> Path | None:
    plt, fig, axes = _figure()
    for label, records in runs.items():
        for opp in _opponents(records):
            name = f"vs {opp}" if len(runs) == 1 else f"{label} vs {opp}"
            _plot_band(axes, records, f"eval/{opp}", "score", name)
    if not axes[0].lines:
        plt.close(fig)
        return None
    for ax in axes:
        ax.set_ylim(-0.02, 1.02)
    return _save(plt, fig, axes, path, "score (W + D/2) / N, 95% CI", "evaluation scores")


def plot_runs(run_dirs, out_dir) -> list[Path]:
    """Overlay several runs, labelled by directory name; returns the PNGs written."""
    run_dirs = [Path(d) for d in run_dirs]
    runs: dict[str, list[dict]] = {}
    for d in run_dirs:
        label = d.resolve().name or str(d)
        while label in runs:  # two runs with the same leaf name still get separate lines
            label += "'"
        runs[label] = read_metrics(d)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        _plot_losses(runs, out / "losses.png"),
        _plot_scores(runs, out / "scores.png"),
        _plot_returns(runs, out / "returns.png"),
        _plot_exploitability(runs, out / "exploitability.png"),
    ]
    return [p for p in written if p is not None]


def plot_run(run_dir, out_dir=None) -> list[Path]:
    """`losses.png`, `scores.png`, for single-agent runs `returns.png` and for Student of Games runs
    `exploitability.png` (vs step and vs wall-clock) in `out_dir` (default RUN_DIR/plots)."""
    run_dir = Path(run_dir)
    return plot_runs([run_dir], out_dir if out_dir is not None else run_dir / "plots")
