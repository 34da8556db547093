"""benchmarks/sog_leduc.py over several training seeds: marks keep the seeds' points
together and the report takes the mean over training seeds of each seed's mean."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common  # noqa: E402
import sog_leduc  # noqa: E402


def _cell(work: Path, name: str, spec: str, values: list[float], **point) -> None:
    (work / "eval").mkdir(parents=True, exist_ok=True)
    rec = {"spec": spec, "values": values, "unit": "reward units", "seed_seconds": 1.0, "machines": ["m"], **point}
    (work / "eval" / f"{name}.json").write_text(json.dumps(rec))


def test_checkpoints_nearest_each_mark_with_the_untrained_one_first(tmp_path):
    for step, seconds in ((0, 0), (10, 290), (20, 610), (30, 1190)):
        path = tmp_path / "run" / "checkpoints" / f"step_{step:06d}"
        path.mkdir(parents=True)
        (path / "state.json").write_text(json.dumps({"step": step, "train_time": seconds}))
    args = type("A", (), {"marks": [5, 10, 20, 21], "points": 5})()
    picks = sog_leduc.chosen(args, tmp_path)
    assert [(p["step"], p["mark"]) for p in picks] == [(0, 0.0), (10, 5.0), (20, 10.0), (30, 20.0)]


def test_report_merges_training_seeds_at_common_marks(tmp_path, monkeypatch):
    monkeypatch.setattr(sog_leduc, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    work = tmp_path / "sog_glasses"
    _cell(work, "ismcts-100", "ismcts:100", [0.5, 0.7])
    for seed, (untrained, trained) in enumerate(((0.40, 0.20), (0.30, 0.10))):
        w = sog_leduc.work_dir(type("A", (), {"work": work})(), seed)
        for step, mark, base in ((0, 0.0, untrained), (40, 10.0, trained)):
            point = {"step": step, "minutes": mark + seed, "mark": mark}
            _cell(w, f"step{step:06d}-sog33", f"sog:33,1,net=x{seed}", [base + 0.1, base + 0.1], **point)
            _cell(w, f"step{step:06d}-sog100", f"sog:100,1,net=x{seed}", [base, base + 0.02], **point)
        _cell(
            w, "step000050-sog100", f"sog:100,1,net=y{seed}", [0.01], step=50, minutes=20.0, mark=20.0
        ) if seed else None
    argv = ["report", "--game", "scotland_yard", "--work", str(work), "--train-seeds", "0", "1", "--out", "t"]
    sog_leduc.main(argv)
    result = json.loads((tmp_path / "results" / "t.json").read_text())
    merged = {(r["spec"], r["mark"]): r for r in result["across_training_seeds"]}
    assert set(merged) == {(f"sog:{s},1", m) for s in (33, 100) for m in (0.0, 10.0)}  # mark 20: one seed only
    assert merged[("sog:100,1", 10.0)]["mean"] == pytest.approx((0.21 + 0.11) / 2)
    assert merged[("sog:100,1", 10.0)]["values"] == pytest.approx([0.21, 0.11])
    shape = result["targets"]["across_training_seeds"]
    assert shape["falls_with_training"]["100"]["falls"] and shape["falls_with_search"]["falls"]
    assert shape["vs_ismcts"]["ismcts:100"]["sog100_below"]
    assert result["targets"]["training_seed_1"]["falls_with_search"]["final_by_sims"] == [[100, 0.01]]
    assert (tmp_path / "results" / "t.png").stat().st_size > 0
    assert "Across training seeds" in (tmp_path / "results" / "t.md").read_text()


def test_eval_cells_grow_with_more_seeds_and_keep_them_with_fewer(tmp_path, monkeypatch):
    calls = []

    def fake_value(game, spec, seed):
        calls.append((spec, seed))
        return {"spec": spec, "seed": seed, "value": 0.1 * seed, "unit": "u", "seconds": 1.0, "machine": "m"}

    monkeypatch.setattr(sog_leduc, "seed_value", fake_value)
    work = tmp_path / "w"
    cell = work / "eval" / "ismcts-100.json"
    for seeds, expected in ((1, 1), (3, 3), (1, 3)):
        sog_leduc.main(
            ["eval", "--game", "scotland_yard", "--work", str(work), "--ismcts", "100"] + ["--anchor-seeds", str(seeds)]
        )
        assert len(json.loads(cell.read_text())["values"]) == expected
    assert calls == [("ismcts:100", 0), ("ismcts:100", 1), ("ismcts:100", 2)]  # each seed once
