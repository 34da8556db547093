"""The Ray arms of `scripts/gpu_smoke.sh --throughput` as one report (issue 60, the one
GPU box): for each arm's run directory `ray-ARM` and its per-second GPU busy samples
`busy-ARM.txt` in OUT_DIR, the positions/s over the run's last three quarters (from the
cumulative count), the learning steps' own rates, and what bounds them: the learner's
steps/s, the milliseconds of a learning step (collecting, updates and weight
publication: the loop's `train_time`) and the share of wall clock in them (the rest:
checkpoints, evaluation), the new positions each step takes, the GPU's busy share and
the inference servers' batches.

    python benchmarks/ray_arms.py OUT_DIR --out benchmarks/results/NAME.json   # NAME.{json,md}
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_results  # noqa: E402
from polyzero.train.metrics import read_metrics  # noqa: E402

FIELDS = "kind-workers-cpus-games-actors-servers"
PHASES = ("collect", "update", "publish")  # a learning step's step_time/*_s


def _mean_ms(seconds: list) -> float | None:
    """The mean in milliseconds; None where a row lacks it (runs before step_time/*)."""
    return None if not seconds or None in seconds else 1000 * float(np.mean(seconds))


def arm_summary(run: Path, busy_file: Path) -> dict:
    """One arm's figures, over the rows from the first quarter of its learning steps on
    (the rows before it hold Ray's and the workers' start)."""
    rows = [r for r in read_metrics(run) if r["kind"] == "train"]
    busy = [float(x) for x in busy_file.read_text().split()] if busy_file.exists() else []
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
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", type=Path, help="gpu_smoke.sh's OUT_DIR (ray-ARM/ and busy-ARM.txt)")
    p.add_argument("--out", type=Path, required=True, help="NAME.json (NAME.md beside it)")
    args = p.parse_args(argv)
    runs = sorted((d for d in args.out_dir.glob("ray-*") if d.is_dir()), key=run_order)
    if not runs:
        p.error(f"no ray-ARM run directories in {args.out_dir}")
    arms = [arm_summary(d, args.out_dir / f"busy-{d.name.removeprefix('ray-')}.txt") for d in runs]
    command = " ".join(["python benchmarks/ray_arms.py", *(argv if argv is not None else sys.argv[1:])])
    write_results(args.out, {"command": command, "arms": arms}, markdown(arms, command))
    print(markdown(arms, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
