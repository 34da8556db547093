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


def test_mark_steps_pick_those_checkpoints_only(tmp_path):
    for step, seconds in ((0, 0), (10, 290), (20, 610), (30, 1190)):
        path = tmp_path / "run" / "checkpoints" / f"step_{step:06d}"
        path.mkdir(parents=True)
        (path / "state.json").write_text(json.dumps({"step": step, "train_time": seconds}))
    args = type("A", (), {"marks": None, "mark_steps": [12, 30], "points": 5})()
    picks = sog_leduc.chosen(args, tmp_path)
    assert [(p["step"], p["mark"], p["mark_unit"]) for p in picks] == [(10, 12.0, "steps"), (30, 30.0, "steps")]


def test_train_in_chunks_stops_at_the_step_asked_for():
    class Trainer:
        step, train_time = 0, 0.0
        cfg = type(
            "C",
            (),
            {"train": type("T", (), {"steps": 0, "checkpoint_every": 0, "lr_schedule": "constant", "lr_steps": 0})()},
        )()

        def run(self):
            self.step, self.train_time = self.cfg.train.steps, self.train_time + 1000.0

    trainer = Trainer()
    common.train_in_chunks(trainer, 0.0, 20, "t", steps=50)  # the minutes budget, spent, is not asked
    assert trainer.step == 50 and trainer.train_time == 3000.0
    common.train_in_chunks(trainer, 60.0, 20, "t")  # by the clock: 50 minutes spent, one more chunk
    assert trainer.step == 70


def test_report_pairs_an_arm_with_its_baseline_seed_by_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(sog_leduc, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    arms = {"upd": ((300.0, 200.0), (280.0, 150.0), (320.0, 170.0)), "pre": ((330.0, 260.0), (290.0, 200.0))}
    arms["pre"] += ((300.0, 190.0),)
    for arm, seeds in arms.items():
        for seed, by_mark in enumerate(seeds):
            w = sog_leduc.work_dir(type("A", (), {"work": tmp_path / arm})(), seed)
            for mark, value in zip((100, 200), by_mark):
                point = {"step": mark, "minutes": mark / 40, "mark": float(mark), "mark_unit": "steps"}
                _cell(w, f"step{mark:06d}-sog100", f"sog:100,1,net={arm}{seed}", [value - 5, value + 5], **point)
    argv = ["report", "--work", str(tmp_path / "upd"), "--train-seeds", "0", "1", "2", "--out", "t"]
    sog_leduc.main(argv + ["--baseline-work", str(tmp_path / "pre")])
    result = json.loads((tmp_path / "results" / "t.json").read_text())
    pairs = {r["mark"]: r for r in result["baseline"]["paired"]}
    assert pairs[200.0]["differences"] == pytest.approx([-60.0, -50.0, -20.0])
    assert pairs[200.0]["mean"] == pytest.approx(-130.0 / 3)
    assert pairs[200.0]["ci95"][0] < pairs[200.0]["mean"] < pairs[200.0]["ci95"][1]
    assert pairs[100.0]["differences"] == pytest.approx([-30.0, -10.0, 20.0])
    base = {r["mark"]: r["mean"] for r in result["baseline"]["across_training_seeds"]}
    assert base == pytest.approx({100.0: 920.0 / 3, 200.0: 650.0 / 3})
    text = (tmp_path / "results" / "t.md").read_text()
    assert (
        "mark (steps)" in text and "minus the baseline" in text and "| 200 steps | -60.000, -50.000, -20.000 |" in text
    )


def test_value_errors_pair_by_seed_and_mark(tmp_path, monkeypatch):
    monkeypatch.setattr(sog_leduc, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    errors = {"upd": (1.0, 1.2, 0.9), "pre": (1.4, 1.5, 1.0)}
    for arm, by_seed in errors.items():
        for seed, err in enumerate(by_seed):
            w = sog_leduc.work_dir(type("A", (), {"work": tmp_path / arm})(), seed)
            _cell(w, "step000050-sog100", "sog:100,1,net=x", [300.0], step=50, minutes=5.0, mark=50.0)
            (w / "eval" / "value_error").mkdir(parents=True)
            rec = {"step": 50, "minutes": 5.0, "mark": 50.0, "all": err, "all_weighted": err / 2}
            (w / "eval" / "value_error" / "step000050.json").write_text(json.dumps(rec))
    argv = ["report", "--work", str(tmp_path / "upd"), "--train-seeds", "0", "1", "2", "--out", "t"]
    sog_leduc.main(argv + ["--baseline-work", str(tmp_path / "pre")])
    (row,) = json.loads((tmp_path / "results" / "t.json").read_text())["value_error"]
    assert row["mark"] == 50.0 and row["all"]["values"] == pytest.approx([1.0, 1.2, 0.9])
    assert row["difference_all"]["values"] == pytest.approx([-0.4, -0.3, -0.1])
    assert row["difference_all_weighted"]["mean"] == pytest.approx(-0.8 / 6)
    lo, hi = row["difference_all"]["ci95"]
    assert lo < -0.8 / 3 < hi
    assert "| 50 | 1.000, 1.200, 0.900 | 1.033 |" in (tmp_path / "results" / "t.md").read_text()


def test_eval_value_error_measures_each_chosen_checkpoint_once(tmp_path, monkeypatch):
    import polyzero.sog.probe as probe
    import polyzero.sog.trainer as trainer

    calls = []
    monkeypatch.setattr(probe, "exact_beliefs", lambda game, iterations, most: calls.append(iterations) or "B")
    monkeypatch.setattr(trainer, "load_cvpn", lambda path: (path, None))
    monkeypatch.setattr(probe, "network_error", lambda fn, beliefs: {"all": len(fn), "all_weighted": 0.5})
    for step in (0, 50, 100):
        path = tmp_path / "w" / "run" / "checkpoints" / f"step_{step:06d}"
        path.mkdir(parents=True)
        (path / "state.json").write_text(json.dumps({"step": step, "train_time": 6.0 * step}))
    fake = {"value": 1.0, "unit": "u", "seconds": 1.0, "machine": "m"}
    monkeypatch.setattr(sog_leduc, "seed_value", lambda game, spec, seed: {"spec": spec, "seed": seed, **fake})
    argv = [
        "eval",
        "--work",
        str(tmp_path / "w"),
        "--ismcts",
        "--seeds",
        "1",
        "--final-sims",
        "0",
        "--value-error",
        "7",
    ]
    for _ in range(2):
        sog_leduc.main(argv + ["--mark-steps", "50", "100"])
    done = sorted(p.name for p in (tmp_path / "w" / "eval" / "value_error").iterdir())
    assert done == ["step000050.json", "step000100.json"] and calls == [7]  # the equilibrium solved once
    rec = json.loads((tmp_path / "w" / "eval" / "value_error" / "step000100.json").read_text())
    assert rec["mark"] == 100.0 and rec["iterations"] == 7 and rec["all"] == len(rec["path"])


@pytest.mark.parametrize(
    "bad",
    [["--budget-steps", "0"], ["--seeds", "-1"], ["--budget-min", "nan"], ["--sims", "0"], ["--mark-steps", "-5"]],
)
def test_bad_numbers_are_refused_before_any_work(tmp_path, bad, capsys):
    with pytest.raises(SystemExit) as exit_info:
        sog_leduc.main(["train", "--work", str(tmp_path / "w"), *bad])
    assert exit_info.value.code == 2 and bad[0] in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
