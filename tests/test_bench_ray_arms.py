"""benchmarks/ray_arms.py: the GPU box's Ray arms read from their run directories."""

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import ray_arms  # noqa: E402


def _arm(out: Path, name: str, step_s: float, ended: float, servers: int = 0) -> None:
    """A run of 8 learning steps of 512 positions, `step_s` seconds each, 0.8 of it in
    the steps; its log last written at `ended`."""
    run = out / f"ray-{name}"
    run.mkdir(parents=True)
    rows = []
    for i in range(1, 9):
        row = {"kind": "train", "step": i, "time": i * step_s, "train_time": 0.8 * i * step_s}
        row |= {"selfplay/positions": 512 * i, "selfplay/positions_per_s": 512 / step_s}
        row |= {f"ray/inference_server{j}/forwards": 10 * i for j in range(servers)}
        if servers:  # a run that logs its steps' phases
            row |= {
                "step_time/collect_s": 0.5 * step_s,
                "step_time/update_s": 0.2 * step_s,
                "step_time/publish_s": 0.1 * step_s,
            }
        rows.append(row)
    (run / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    (out / f"busy-{name}.txt").write_text("0\n20\n40\n0\n")
    log = out / f"ray-{name}.log"
    log.write_text("")
    os.utime(log, (ended, ended))


def test_arms_are_reported_in_run_order_with_the_learners_pace(tmp_path):
    _arm(tmp_path, "server-28-0.5-256-1-4", 0.1, ended=2000.0, servers=4)
    _arm(tmp_path, "own-14-1-256-1-1", 0.2, ended=1000.0)
    assert ray_arms.main([str(tmp_path), "--out", str(tmp_path / "arms.json")]) == 0
    arms = json.loads((tmp_path / "arms.json").read_text())["arms"]
    assert [a["arm"] for a in arms] == ["own-14-1-256-1-1", "server-28-0.5-256-1-4"]  # not by name
    own, four = arms
    assert own["positions_per_s"] == 512 / 0.2 and four["positions_per_s"] == 512 / 0.1
    assert four["learner_steps_per_s"] == 10.0 and abs(four["step_ms"] - 80.0) < 1e-9
    assert abs(four["step_share"] - 0.8) < 1e-12 and four["positions_per_step"] == 512
    assert four["gpu_busy_mean"] == 15.0 and four["gpu_busy_while_busy"] == 30.0
    assert four["server_forwards"] == [80, 80, 80, 80] and own["server_forwards"] == []
    assert four["phase_ms"] == pytest.approx([50.0, 20.0, 10.0]) and own["phase_ms"] == [None, None, None]
    md = (tmp_path / "arms.md").read_text()
    assert "| server-28-0.5-256-1-4 | 8 | 5120 |" in md and "| 80, 80, 80, 80 |" in md
    assert "| 80 | 50 / 20 / 10 | 0.80 |" in md and "| 103 | - / - / - |" not in md
