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
    assert four["collect_wait_share"] is None  # runs that did not log ray/collect_wait_s


@pytest.mark.parametrize("every_from", ["flag", "config"])
def test_the_wall_clock_between_steps_is_split_at_the_checkpoints(tmp_path, every_from):
    """Steps of 50 ms; 10 ms between steps, 100 ms after each 4th (a checkpoint): over
    rows 3-12, the shares after checkpoint steps and after the others, and the steps'
    new positions, whole games (not 512 each). The interval is the run's own
    (config.toml: an arm's override) over --checkpoint-every."""
    run = tmp_path / "ray-server-28-0.5-256-1-4"
    run.mkdir()
    if every_from == "config":
        (run / "config.toml").write_text("[train]\ncheckpoint_every = 4\n")
    rows, time, positions = [], 0.0, 0
    for step in range(1, 13):
        time += 0.05 + (0.1 if (step - 1) % 4 == 0 and step > 1 else 0.01)
        positions += (400, 600)[step % 2]
        rows.append({"kind": "train", "step": step, "time": time, "train_time": 0.05 * step})
        rows[-1] |= {"selfplay/positions": positions, "selfplay/positions_per_s": 1.0, "ray/collect_wait_s": 0.02}
    (run / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    (tmp_path / "busy-server-28-0.5-256-1-4.txt").write_text("[N/A]\n50\n")  # a sample nvidia-smi could not read
    out = tmp_path / "arms.json"
    flag = "4" if every_from == "flag" else "10"
    assert ray_arms.main([str(tmp_path), "--out", str(out), "--checkpoint-every", flag]) == 0
    (arm,) = json.loads(out.read_text())["arms"]
    span = rows[-1]["time"] - rows[3]["time"]  # rows from the first quarter (index 3) on
    assert abs(arm["checkpoint_share"] - 2 * 0.1 / span) < 1e-9  # after steps 4 and 8
    assert abs(arm["other_share"] - 6 * 0.01 / span) < 1e-9 and abs(arm["other_gap_ms_median"] - 10) < 1e-6
    assert arm["positions_per_step_quartiles"] == [400, 500, 600] and arm["gpu_busy_mean"] == 50.0
    assert abs(arm["collect_wait_share"] - 8 * 0.02 / span) < 1e-9  # the steps after the first row's
    assert f"| {arm['collect_wait_share']:.2f} | 400 / 500 / 600 |" in (tmp_path / "arms.md").read_text()


def test_a_directory_without_arms_is_refused_on_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        ray_arms.main([str(tmp_path), "--out", str(tmp_path / "arms.json")])
    assert exit_.value.code == 2 and "no ray-ARM run directories" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [(["--ray-only"], "--ray-only goes with --throughput"), (["--throughput", "-x"], "unknown option -x")],
)
def test_gpu_smoke_refuses_bad_options_before_running_anything(argv, message, tmp_path):
    import subprocess

    script = Path(__file__).resolve().parents[1] / "scripts" / "gpu_smoke.sh"
    done = subprocess.run(["bash", str(script), *argv, str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and not (tmp_path / "out").exists()
