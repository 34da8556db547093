"""The Ray arms of `scripts/gpu_smoke.sh --throughput` as one report (issue 60, the one
GPU box): for each arm's run directory `ray-ARM` and its per-second GPU busy samples
`busy-ARM.txt` in OUT_DIR, the positions/s over the run's last three quarters (from the
cumulative count), the learning steps' own rates, and what bounds them: the learner's
steps/s, the milliseconds of a learning step (collecting, updates and weight
publication: the loop's `train_time`) and the share of wall clock in them (the rest:
checkpoints, the metrics, evaluation) and, of that rest, the share after the steps that
wrote a checkpoint and the median of the others' gaps, the new positions each step takes
(on average and per step: whole games, so not the same each step), the GPU's busy share
and the inference servers' batches.

    python benchmarks/ray_arms.py OUT_DIR --out benchmarks/results/NAME.json   # NAME.{json,md}
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_results  # noqa: E402
from polyzero.config import build_config, read_toml  # noqa: E402
from polyzero.train.metrics import read_metrics  # noqa: E402

FIELDS = "kind-workers-cpus-games-actors-servers"
PHASES = ("collect", "update", "publish")  # a learning step's step_time/*_s


def _mean_ms(seconds: list) -> float | None:
    """The mean in milliseconds; None where a row lacks it (runs before step_time/*)."""
    return None if not seconds or None in seconds else 1000 * float(np.mean(seconds))


def busy_samples(busy_file: Path) -> list[float]:
    """nvidia-smi's per-second busy percentages (a sample it could not read, "[N/A]", left out)."""
    words = busy_file.read_text().split() if busy_file.exists() else []
    return [float(w) for w in words if w.replace(".", "", 1).isdigit()]


def outside_steps(rows: list[dict], checkpoint_every: int) -> dict:
    """The wall clock between learning steps (after a row's time: its metrics logged, a
    checkpoint, the next step's start; before the next row's: the step's metrics, the
    inference servers' stats among them), as shares of the rows' span: after the steps
    that wrote a checkpoint (`train.checkpoint_every`) and after the others, with the
    median of the others' gaps in ms; the share the steps waited for the workers' results
    (`ray/collect_wait_s`, where logged); and the quartiles of the steps' new positions."""
    time, train_time = (np.array([r[k] for r in rows]) for k in ("time", "train_time"))
    gaps = np.diff(time) - np.diff(train_time)
    after_checkpoint = np.array([r["step"] % checkpoint_every == 0 for r in rows[:-1]])
    seconds = max(time[-1] - time[0], 1e-9)
    others = gaps[~after_checkpoint]
    new = np.diff([r["selfplay/positions"] for r in rows])
    waits = [r.get("ray/collect_wait_s") for r in rows[1:]]  # logged since 2026-11-30's second GPU session
    return {
        "collect_wait_share": None if None in waits else float(sum(waits) / seconds),
        "checkpoint_share": float(gaps[after_checkpoint].sum() / seconds),
        "other_share": float(others.sum() / seconds),
        "other_gap_ms_median": float(1000 * np.median(others)) if len(others) else 0.0,
        "positions_per_step_quartiles": [float(x) for x in np.percentile(new, [25, 50, 75])],
    }


def arm_summary(run: Path, busy_file: Path, checkpoint_every: int) -> dict:
    """One arm's figures, over the rows from the first quarter of its learning steps on
    (the rows before it hold Ray's and the workers' start)."""
    rows = [r for r in read_metrics(run) if r["kind"] == "train"]
    busy = busy_samples(busy_file)
    on = [i for i, x in enumerate(busy) if x > 0]
    steady = busy[on[0] : on[-1] + 1] if on else []
    out = {
        "arm": run.name.removeprefix("ray-"),
        "steps": len(rows),
        "gpu_busy_mean": float(np.mean(busy)) if busy else 0.0,
    }
    out["gpu_busy_while_busy"] = float(np.mean(steady)) if steady else 0.0
    if len(rows) < 2:
        return out
    a, b = rows[len(rows) // 4], rows[-1]
    seconds = max(b["time"] - a["time"], 1e-9)
    steps = max(b["step"] - a["step"], 1)
    q = np.percentile([r["selfplay/positions_per_s"] for r in rows[len(rows) // 4 :]], [25, 50, 75])
    out.update(
        positions_per_s=(b["selfplay/positions"] - a["selfplay/positions"]) / seconds,
        step_rate_quartiles=[float(x) for x in q],
        learner_steps_per_s=steps / seconds,
        step_ms=1000 * (b["train_time"] - a["train_time"]) / steps,
        # its phases (runs since step_time/* was logged): collecting, updates, publishing
        phase_ms=[_mean_ms([r.get(f"step_time/{p}_s") for r in rows[len(rows) // 4 :]]) for p in PHASES],
        step_share=(b["train_time"] - a["train_time"]) / seconds,
        positions_per_step=(b["selfplay/positions"] - a["selfplay/positions"]) / steps,
        rows_per_forward=b.get("ray/inference_rows_per_forward"),
        server_forwards=[v for k, v in sorted(b.items()) if k.startswith("ray/inference_server")],
    )
    out.update(outside_steps(rows[len(rows) // 4 :], checkpoint_every))
    return out


def run_order(run: Path) -> float:
    """When the arm's run ended: its log's last write (gpu_smoke.sh runs the arms in turn)."""
    log = run.parent / f"{run.name}.log"  # not with_suffix: "0.5" in an arm's name is no suffix
    return log.stat().st_mtime if log.exists() else 0.0


def markdown(arms: list[dict], command: str) -> str:
    lines = [
        "# Ray arms on one GPU box (Connect Four AlphaZero preset)",
        "",
        f"- command: `{command}`",
        f"- arm = {FIELDS} (`scripts/gpu_smoke.sh`); figures over each run's rows from the first quarter of its "
        "learning steps on; GPU busy: nvidia-smi's per-second samples, their mean over the run and from the "
        "first nonzero sample to the last",
        "",
        "| arm | learning steps | positions / s | per-step rate quartiles | learner steps / s | ms per learning "
        "step | of which collect / update / publish | share of wall clock in learning steps | new positions per "
        "step | GPU busy (mean / while busy) | rows per forward | forwards per server |",
        "|---|---:|---:|---|---:|---:|---|---:|---:|---|---:|---|",
    ]
    for a in arms:
        if "positions_per_s" not in a:
            lines.append(f"| {a['arm']} | {a['steps']} |" + " - |" * 10)
            continue
        q = " / ".join(f"{x:.0f}" for x in a["step_rate_quartiles"])
        rows = "-" if a["rows_per_forward"] is None else f"{a['rows_per_forward']:.0f}"
        servers = ", ".join(str(int(f)) for f in a["server_forwards"]) or "-"
        phases = " / ".join("-" if x is None else f"{x:.0f}" for x in a["phase_ms"])
        lines.append(
            f"| {a['arm']} | {a['steps']} | {a['positions_per_s']:.0f} | {q} | {a['learner_steps_per_s']:.2f} | "
            f"{a['step_ms']:.0f} | {phases} | {a['step_share']:.2f} | {a['positions_per_step']:.0f} | "
            f"{a['gpu_busy_mean']:.0f}% / {a['gpu_busy_while_busy']:.0f}% | {rows} | {servers} |"
        )
    return "\n".join(lines + between_steps(arms)) + "\n"


def between_steps(arms: list[dict]) -> list[str]:
    """The second table: the wall clock outside the learning steps, and the steps' new positions."""
    lines = [
        "",
        "Outside the learning steps (shares of wall clock over the same rows): after the steps that wrote a "
        "checkpoint, after the others (their metrics, the inference servers' stats among them) and the median "
        "gap after one of those; the share of wall clock the steps waited for the workers' results "
        "(`ray/collect_wait_s`, - where the run did not log it); and the new positions of a step (whole games: "
        "quartiles over the steps)",
        "",
        "| arm | share after checkpoint steps | share after other steps | median gap after other steps (ms) | "
        "share waiting for results | new positions per step (quartiles) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for a in arms:
        if "checkpoint_share" in a:
            q = " / ".join(f"{x:.0f}" for x in a["positions_per_step_quartiles"])
            wait = "-" if a["collect_wait_share"] is None else f"{a['collect_wait_share']:.2f}"
            lines.append(
                f"| {a['arm']} | {a['checkpoint_share']:.2f} | {a['other_share']:.2f} | "
                f"{a['other_gap_ms_median']:.0f} | {wait} | {q} |"
            )
    return lines


def every_of(run: Path, default: int) -> int:
    """The run's own train.checkpoint_every (its config.toml: an arm may override it), else `default`."""
    config = run / "config.toml"
    return int(read_toml(config)["train"]["checkpoint_every"]) if config.exists() else default


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", type=Path, help="gpu_smoke.sh's OUT_DIR (ray-ARM/ and busy-ARM.txt)")
    p.add_argument("--out", type=Path, required=True, help="NAME.json (NAME.md beside it)")
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        help="train.checkpoint_every of runs without a config.toml (default: the preset's)",
    )
    args = p.parse_args(argv)
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        p.error("--checkpoint-every must be positive")
    every = args.checkpoint_every or build_config("connect_four", "alphazero").train.checkpoint_every
    runs = sorted((d for d in args.out_dir.glob("ray-*") if d.is_dir()), key=run_order)
    if not runs:
        p.error(f"no ray-ARM run directories in {args.out_dir}")
    arms = [arm_summary(d, args.out_dir / f"busy-{d.name.removeprefix('ray-')}.txt", every_of(d, every)) for d in runs]
    command = " ".join(["python benchmarks/ray_arms.py", *(argv if argv is not None else sys.argv[1:])])
    write_results(args.out, {"command": command, "arms": arms}, markdown(arms, command))
    print(markdown(arms, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
