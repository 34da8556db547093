"""Run metrics: one JSON object per line in RUN/metrics.jsonl, mirrored to TensorBoard.

Every record has "step" (learning step), "time" (wall-clock seconds since the
run began, summed over resumed sessions) and "kind" ("train", "eval", "selfplay").
"""

from __future__ import annotations

import json
from pathlib import Path

from .checkpoint import atomic_write


class MetricsLog:
    def __init__(self, run_dir: Path, tensorboard: bool = True):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(Path(run_dir) / "tensorboard"))
            except ImportError:  # tensorboard is optional at run time
                self.writer = None

    def truncate_after(self, step: int) -> int:
        """Drop records newer than `step` (after a resume from that checkpoint)."""
        if not self.path.exists():
            return 0
        kept, dropped = [], 0
        for line in self.path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                dropped += 1
                continue
            if rec.get("step", 0) <= step:
                kept.append(line)
            else:
                dropped += 1
        atomic_write(self.path, ("\n".join(kept) + "\n" if kept else "").encode())
        return dropped

    def log(self, kind: str, step: int, time: float, values: dict) -> None:
        rec = {"kind": kind, "step": step, "time": round(time, 3), **values}
        with open(self.path, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        if self.writer is not None:
            for k, v in values.items():
                if isinstance(v, (int, float)):
                    self.writer.add_scalar(k, v, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def read_metrics(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out
