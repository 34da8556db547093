"""benchmarks/connect_four_results.py: a MuZero run trained alone is compared with an
earlier report's AlphaZero, at the same mark and at the mark nearest in learning steps;
a baseline that is not there is a usage error."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import connect_four_alphazero as bench  # noqa: E402
import connect_four_render as render  # noqa: E402
import connect_four_results as results  # noqa: E402


def _point(mark_min, step, score):
    return {"mark_min": mark_min, "minutes": mark_min, "learning_step": step, "1x": {"score": score}}


def test_equal_steps_takes_alphazeros_nearest_mark_and_checks_after_the_first_quarter():
    az = [_point(10, 250, 0.8), _point(20, 500, 0.9), _point(30, 750, 0.95)]
    mz = [_point(10, 100, 0.1), _point(20, 260, 0.75), _point(30, 480, 0.85)]
    out = results.equal_steps(mz, az, budget_min=60)
    near = [(p["alphazero_mark_min"], p["alphazero"]) for p in out["points"]]
    assert near == [(10, 0.8), (10, 0.8), (20, 0.9)]
    assert [p["checked"] for p in out["points"]] == [False, True, True]
    # 0.75 >= 0.9 * 0.8 and 0.85 >= 0.9 * 0.9: met, though the unchecked first mark is far below
    assert out["met"] is True
    mz[2]["1x"]["score"] = 0.8  # < 0.81
    assert results.equal_steps(mz, az, budget_min=60)["met"] is False


def test_a_muzero_mark_below_alphazeros_first_in_steps_is_shown_not_checked():
    """AlphaZero's nearest mark there has more steps: not a comparison at equal steps."""
    az = [_point(10, 250, 0.8), _point(20, 500, 0.9)]
    mz = [_point(20, 100, 0.1), _point(30, 240, 0.2), _point(40, 250, 0.75)]
    out = results.equal_steps(mz, az, budget_min=40)
    assert [p["alphazero_learning_step"] for p in out["points"]] == [250, 250, 250]
    assert [p["below_alphazero_steps"] for p in out["points"]] == [True, True, False]
    assert [p["checked"] for p in out["points"]] == [False, False, True]
    assert out["met"] is True  # 0.75 >= 0.72 at 250 steps; 0.1 and 0.2 are not at equal steps
    assert results.equal_steps(mz[:2], az, budget_min=40)["met"] is None  # nothing at equal steps
    lines = render._targets_markdown(results.targets({"muzero": mz}, az, budget_min=40))
    assert sum("fewer steps than AlphaZero's first mark" in line for line in lines) == 2


def test_targets_compare_muzero_with_the_baseline_when_the_run_has_no_alphazero():
    az = [_point(10, 250, 0.8), _point(20, 500, 0.9)]
    curves = {"muzero": [_point(10, 250, 0.7), _point(20, 500, 0.5)]}
    t = results.targets(curves, az, budget_min=20)
    wall = t["muzero_80pct_of_alphazero_1x"]["points"]
    assert [(p["muzero"], p["alphazero"], p["met"]) for p in wall] == [(0.7, 0.8, True), (0.5, 0.9, False)]
    assert t["muzero_90pct_of_alphazero_1x_equal_steps"]["met"] is False  # 0.5 < 0.9 * 0.9
    assert t["vs_1x_90pct_within_60min"]["met"] is None  # no AlphaZero trained here


def test_the_baseline_report_is_trimmed_to_the_budget_and_named():
    curve, about = results.baseline_alphazero("connect_four_alphazero_muzero64k", 60)
    assert [p["mark_min"] for p in curve] == [10, 20, 30, 40, 50, 60]
    assert about["polyzero_git"] and about["generated_utc"].startswith("2026-11-28")


def test_a_missing_baseline_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["report", "--arms", "muzero", "--work", str(tmp_path / "w"), "--baseline", "no_such_report"])
    assert exit_.value.code == 2 and "no_such_report" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
