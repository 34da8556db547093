"""benchmarks/ndmz_subnormal_onset.py and ndmz_train_speed.py's pure parts: seconds per
step by window, subnormal weights per checkpoint, the split's rows."""

import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import ndmz_subnormal_onset as onset  # noqa: E402
import ndmz_train_speed as speed  # noqa: E402


def test_step_times_by_window_take_the_last_record_of_a_repeated_step(tmp_path):
    recs = [{"kind": "train", "step": s, "train_time": 2.0 * s} for s in range(0, 41)]
    recs.insert(25, {"kind": "eval", "step": 20, "train_time": 999.0})  # not a train record
    recs.append({"kind": "train", "step": 40, "train_time": 100.0})  # a resumed session's step 40
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    rows = onset.step_times(tmp_path, 20)
    assert [(r["from"], r["to"]) for r in rows] == [(0, 20), (20, 40)]
    assert rows[0]["s_per_step"] == 2.0
    assert rows[1]["s_per_step"] == (100.0 - 40.0) / 20


def test_subnormals_are_counted_per_tensor_at_the_chosen_checkpoints(tmp_path):
    for step, tiny in ((0, 0.0), (50, 3e-39), (60, 3e-39)):
        w = torch.ones(4, 5)
        w[:, 3:] = tiny
        ckpt = tmp_path / "checkpoints" / f"step_{step:06d}"
        ckpt.mkdir(parents=True)
        torch.save({"net": {"a.weight": w, "b.bias": torch.full((3,), 1e-30)}}, ckpt / "learner.pt")
    rows = onset.subnormals(tmp_path, every=50)
    assert [r["step"] for r in rows] == [0, 50]  # 60 is not a multiple of 50
    assert rows[0]["total"] == 0 and rows[0]["subnormal"] == {}
    assert rows[1]["subnormal"] == {"a.weight": 8}  # 1e-30 is normal


def test_the_split_rows_add_up_to_the_step():
    parts = {
        "step": 10.0,
        "collect": 4.0,
        "search": 3.0,
        "search_network": 1.0,
        "updates": 5.5,
        "replay_sample": 0.5,
        "learner_update": 4.5,
    }
    values = [get(parts) for _, get in speed.SPLIT_ROWS]
    assert values == [1.0, 2.0, 1.0, 0.5, 4.5, 0.5, 0.5]
    assert sum(values) == parts["step"]
