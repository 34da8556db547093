"""benchmarks/nannon_636.py report --seeds: each seed's evaluated checkpoints aligned at
the marks, the mean and 95% t-interval over seeds, and issue 56's target read from the
mean at a mark (never a seed's best checkpoint)."""

import json
import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common  # noqa: E402
import nannon_636  # noqa: E402
import nannon_seeds  # noqa: E402

T975_2 = 4.302652729911275  # Student's t, 97.5% quantile, 2 degrees of freedom


def _row(work: Path, method: str, step: int, minutes: float, search: float, raw: float = 0.3) -> None:
    (work / "eval").mkdir(parents=True, exist_ok=True)
    rec = {
        "method": method,
        "step": step,
        "minutes": minutes,
        "raw": {"exact_vs_optimal": raw, "exact_vs_random": raw + 0.4},
        "search": {"exact_vs_optimal": search, "exact_vs_random": search + 0.4},
    }
    if method == "ndmz":
        rec["dynamics"] = {"top_move": [1.0, 0.9 + step / 10000], "uniform": [0.5, 0.5]}
    (work / "eval" / f"{method}-step{step:06d}.json").write_text(json.dumps(rec))


def _seeds(tmp_path: Path, finals: list[float]) -> str:
    """Three seeds: the untrained point, one near 30 min, one near 60 min (seed 2's 30-min
    checkpoint is 16 minutes off: beyond half the spacing); a seed's best is at 40 min."""
    template = str(tmp_path / "s{seed}")
    for seed, final in enumerate(finals):
        work = Path(template.format(seed=seed))
        _row(work, "ndmz", 0, 0.0, 0.1)
        _row(work, "ndmz", 100, 30.4 if seed < 2 else 46.0, 0.40 + seed / 100)
        _row(work, "ndmz", 200, 59.6 + seed / 10, final)
        _row(work, "ndmz", 300, 65.0, 0.9)  # past the budget: never counted
    _row(Path(template.format(seed=0)), "ndmz", 150, 40.0, 0.7)  # a best checkpoint off the marks
    return template


def _report(tmp_path, monkeypatch, finals) -> dict:
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    template = _seeds(tmp_path, finals)
    nannon_636.main(["report", "--seeds", "0,1,2", "--work", template, "--points", "2", "--out", "t"])
    return json.loads((tmp_path / "results" / "t_seeds.json").read_text())


def test_mean_and_t_interval_at_each_mark(tmp_path, monkeypatch):
    result = _report(tmp_path, monkeypatch, [0.48, 0.49, 0.50])
    assert result["marks"] == [0.0, 30.0, 60.0]
    cells = {(c["agent"], c["score"], c["mark"]): c for c in result["cells"]}
    final = cells[("search", "exact_vs_optimal", 60.0)]
    assert final["seeds"] == [0, 1, 2] and final["values"] == pytest.approx([0.48, 0.49, 0.50])
    assert final["minutes"] == pytest.approx([59.6, 59.7, 59.8])
    half = T975_2 * 0.01 / math.sqrt(3)
    assert final["mean"] == pytest.approx(0.49)
    assert final["ci95"] == pytest.approx([0.49 - half, 0.49 + half])
    assert cells[("search", "exact_vs_random", 60.0)]["mean"] == pytest.approx(0.89)
    mid = cells[("search", "exact_vs_optimal", 30.0)]
    assert mid["seeds"] == [0, 1] and mid["values"] == pytest.approx([0.40, 0.41])  # seed 2 too far off
    assert result["target"]["met"] is False  # seed 0's best (0.7 at 40 min) is no mark's mean
    assert result["target"]["best_mark"] == 60.0
    assert result["dynamics_at_last"]["mean"] == pytest.approx([1.0, 0.92])
    past = [x for x in result["by_step"] if x["seed"] == 2]  # every evaluated step, past the budget too
    assert [x["step"] for x in past] == [0, 100, 200, 300]
    assert [x["search"] for x in past] == pytest.approx([0.1, 0.42, 0.5, 0.9])
    md = (tmp_path / "results" / "t_seeds.md").read_text()
    assert "**not met**" in md and "0.4900 [" in md and "sampled vs" not in md  # exact scores only: no empty tables
    assert "0.4050 [" in md and "(seeds 0,1 only)" in md  # the 30-min mean is over two seeds, and says so
    assert "| 30 | 0.4000 (30.4 min, step 100) | 0.4100 (30.4 min, step 100) |  |" in md
    assert (tmp_path / "results" / "t_seeds.png").stat().st_size > 0


def test_target_met_by_the_mean_at_a_mark(tmp_path, monkeypatch):
    result = _report(tmp_path, monkeypatch, [0.49, 0.50, 0.51])
    assert result["target"]["met"] is True and result["target"]["marks_meeting"] == [60.0]
    assert "**met**" in (tmp_path / "results" / "t_seeds.md").read_text()


def test_one_seed_has_no_interval():
    cells = nannon_seeds.across_seeds(
        {0: [{"method": "td", "step": 0, "minutes": 0.0, "raw": {"exact_vs_optimal": 0.2}}]}, [0.0, 10.0], 60
    )
    assert [(c["mean"], c["ci95"]) for c in cells] == [(0.2, None)]


@pytest.mark.parametrize("seeds", ["0,x", "1,1", ","])
def test_bad_seed_list_is_a_usage_error(seeds, capsys):
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(["report", "--seeds", seeds])
    assert stop.value.code == 2 and "expected" in capsys.readouterr().err


def test_a_seed_without_evaluations_is_named(tmp_path, capsys):
    _row(tmp_path / "s0", "ndmz", 0, 0.0, 0.1)
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(["report", "--seeds", "0,1", "--work", str(tmp_path / "s{seed}")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and f"seed 1: no evaluated checkpoints in {tmp_path / 's1'}" in err


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{t}/s0", "no {{seed}} in it"),  # every seed would read one directory: n identical values
        ("{t}/s{{seed}}{{", "not a directory template"),
        ("{t}/s{{seed}}{{run}}", "not a directory template"),
        ("{t}/s{{seed}}{{0}}", "not a directory template"),
    ],
)
def test_a_work_template_that_is_not_one_per_seed_is_a_usage_error(tmp_path, capsys, template, message):
    _row(tmp_path / "s0", "ndmz", 0, 0.0, 0.1)
    for flag in ("--work", "--with-work"):
        other = ["--work", str(tmp_path / "s{seed}")] if flag == "--with-work" else []
        with pytest.raises(SystemExit) as stop:
            nannon_636.main(["report", "--seeds", "0,1", *other, flag, template.format(t=tmp_path)])
        err = capsys.readouterr().err.strip().splitlines()
        assert stop.value.code == 2 and len(err) == 1 and message.format() in err[0]


def test_two_seeds_do_not_settle_the_target_and_an_earlier_run_stands_beside(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    template = _seeds(tmp_path, [0.50, 0.50, 0.50])
    earlier = {
        "seed": 0,
        "git": "abcdef1234",
        "rows": [json.loads(p.read_text()) for p in (tmp_path / "s0" / "eval").glob("*.json")],
    }
    earlier["rows"][0]["method"] = "td"  # one more method, one seed: no interval
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    argv = ["report", "--seeds", "1,2", "--work", template, "--points", "2", "--out", "t"]
    nannon_636.main([*argv, "--baseline", str(tmp_path / "earlier.json")])
    result = json.loads((tmp_path / "results" / "t_seeds.json").read_text())
    assert result["target"]["best_mean"] == pytest.approx(0.5)
    assert not result["target"]["met"] and not result["target"]["enough_seeds"]
    mixed = result["baseline"]["with_it"]
    assert mixed["seeds"] == [1, 2, "0@abcdef1"] and mixed["target"]["met"]
    final = [c for c in mixed["cells"] if (c["agent"], c["score"], c["mark"]) == ("search", "exact_vs_optimal", 60.0)]
    assert final[0]["values"] == pytest.approx([0.5, 0.5, 0.5])
    assert any(c["method"] == "td" and c["ci95"] is None for c in result["baseline"]["cells"])
    assert {x["seed"] for x in result["by_step"]} == {1, 2, "0@abcdef1"}
    assert "**not established**" in (tmp_path / "results" / "t_seeds.md").read_text()


def test_a_lever_run_beside_the_same_seed_of_an_earlier_seeds_report(tmp_path, monkeypatch):
    """--against: the earlier report's cells over this run's seeds only, and both runs at equal steps."""
    earlier = _report(tmp_path, monkeypatch, [0.48, 0.49, 0.50])  # seeds 0, 1, 2 -> t_seeds.json
    (tmp_path / "default.json").write_text(json.dumps(earlier))
    lever = tmp_path / "lever_s{seed}"
    _row(Path(str(lever).format(seed=0)), "ndmz", 0, 0.0, 0.1)
    _row(Path(str(lever).format(seed=0)), "ndmz", 200, 55.0, 0.495, raw=0.497)
    argv = ["report", "--seeds", "0", "--work", str(lever), "--points", "2", "--out", "lever"]
    nannon_636.main([*argv, "--against", str(tmp_path / "default.json")])
    result = json.loads((tmp_path / "results" / "lever_seeds.json").read_text())
    beside = {(c["agent"], c["score"], c["mark"]): c for c in result["against"]["cells"]}
    final = beside[("search", "exact_vs_optimal", 60.0)]
    assert final["seeds"] == [0] and final["mean"] == pytest.approx(0.48) and final["ci95"] is None
    assert {x["seed"] for x in result["by_step"]} == {0, "0@default"}
    md = (tmp_path / "results" / "lever_seeds.md").read_text()
    assert "| 0 | 200 | 0.4950 | 0.4800 | 0.4970 | 0.3000 | 55.0 | 59.6 |" in md


@pytest.mark.parametrize(
    ("earlier", "extra", "message"),
    [
        (None, [], "No such file"),
        ("not json", [], "not JSON"),
        ({"rows": []}, [], "no 'cells'"),
        ({"cells": [], "by_step": [{"seed": 5, "step": 0}], "git": "x", "train_git": {}}, [], r"seed\(s\) \[0\]"),
        (None, ["--baseline"], "No such file"),
    ],
)
def test_a_bad_against_or_baseline_file_is_one_line_and_exit_code_2(tmp_path, capsys, earlier, extra, message):
    _row(tmp_path / "s0", "ndmz", 0, 0.0, 0.1)
    path = tmp_path / "earlier.json"
    if earlier is not None:
        path.write_text(earlier if isinstance(earlier, str) else json.dumps(earlier))
    flag = extra or ["--against"]
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(["report", "--seeds", "0", "--work", str(tmp_path / "s{seed}"), *flag, str(path)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1
    assert re.search(message, err)


def test_against_without_seeds_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(["report", "--against", "x.json"])
    assert stop.value.code == 2 and "--against goes with report --seeds" in capsys.readouterr().err


def test_a_seed_from_a_stored_one_seed_results_file(tmp_path, monkeypatch):
    """--seed-results 0=FILE: seed 0's rows from its one-seed report (its work directory gone)
    give the same cells as its work directory did, and the report names the file, its commit
    and the training commit and load the one-seed report stored."""
    whole = _report(tmp_path, monkeypatch, [0.48, 0.49, 0.50])  # seeds 0, 1, 2 from their work directories
    s0 = tmp_path / "s0"
    (s0 / "train_commits.txt").write_text("2026-11-30T11:39:54Z bda40dd0123456789\n")
    (s0 / "loadavg.jsonl").write_text('{"loadavg": [3.0, 1, 1]}\n{"loadavg": [5.0, 1, 1]}\n')
    monkeypatch.setattr(nannon_636, "RESULTS", tmp_path / "results")
    nannon_636.main(["report", "--method", "ndmz", "--work", str(s0), "--out", "one"])
    for path in (s0 / "eval").glob("*.json"):
        path.unlink()  # the machine restarted
    stored = tmp_path / "results" / "one.json"
    argv = ["report", "--seeds", "0,1,2", "--work", str(tmp_path / "s{seed}"), "--points", "2", "--out", "t"]
    nannon_636.main([*argv, "--seed-results", f"0={stored}"])
    result = json.loads((tmp_path / "results" / "t_seeds.json").read_text())
    assert result["cells"] == whole["cells"] and result["target"] == whole["target"]
    assert sorted(result["work"]) == ["1", "2"] and result["stored"]["0"]["file"] == str(stored)
    assert result["train_git"]["0"] == ["bda40dd0123456789"]
    assert result["load_while_training"]["0"]["mean"] == pytest.approx(4.0)
    md = (tmp_path / "results" / "t_seeds.md").read_text()
    assert f"Seed 0's evaluated ndmz checkpoints come from the stored results file `{stored}`" in md
    assert "its training commit bda40dd012, its load while training mean 4.00, max 5.00" in md
    assert result["stored"]["0"]["command"].endswith(f"report --method ndmz --work {s0} --out one")


def test_a_stored_file_without_commit_or_load_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    template = _seeds(tmp_path, [0.48, 0.49, 0.50])
    rows = [json.loads(p.read_text()) for p in (tmp_path / "s2" / "eval").glob("*.json")]
    (tmp_path / "old.json").write_text(json.dumps({"seed": 2, "git": "097b288468aa", "rows": rows}))
    argv = ["report", "--seeds", "1,2", "--work", template, "--points", "2", "--out", "t"]
    nannon_636.main([*argv, "--seed-results", f"2={tmp_path / 'old.json'}"])
    result = json.loads((tmp_path / "results" / "t_seeds.json").read_text())
    assert result["train_git"]["2"] == [] and result["load_while_training"]["2"] is None
    md = (tmp_path / "results" / "t_seeds.md").read_text()
    assert (
        "(written at commit 097b288468 by `not stored`; its work directory is gone): its training commit is not stored"
        in md
    )
    assert "its load while training not stored." in md


@pytest.mark.parametrize(
    ("spec", "stored", "message"),
    [
        ("x", None, "expected SEED=FILE"),
        ("a=f.json", None, "expected SEED=FILE"),
        ("3={f}", {"seed": 3, "rows": []}, "seed 3 is not one of --seeds"),
        ("0={f}", {"seed": 1, "rows": []}, "the file is seed 1's"),
        ("0={f}", {"cells": []}, "no 'rows'"),
    ],
)
def test_a_bad_seed_results_is_one_line_and_exit_code_2(tmp_path, capsys, spec, stored, message):
    _row(tmp_path / "s1", "ndmz", 0, 0.0, 0.1)
    if stored is not None:
        (tmp_path / "f.json").write_text(json.dumps(stored))
    argv = ["report", "--seeds", "0,1", "--work", str(tmp_path / "s{seed}")]
    with pytest.raises(SystemExit) as stop:
        nannon_636.main([*argv, "--seed-results", spec.format(f=tmp_path / "f.json")])
    err = capsys.readouterr().err  # argparse's usage lines, then one error line; no traceback
    assert stop.value.code == 2 and message in err.strip().splitlines()[-1] and "Traceback" not in err


def test_seed_results_without_seeds_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(["report", "--seed-results", "0=x.json"])
    assert stop.value.code == 2 and "--seed-results goes with report --seeds" in capsys.readouterr().err


def _sampled_row(work: Path, method: str, step: int, minutes: float, vs_optimal: float, vs_random: float) -> None:
    """A 12-5-6 checkpoint: the search agent's scores sampled ([score, low, high]); the raw
    agent's exact, and sampled beside them; TD(lambda) plays raw only."""
    (work / "eval").mkdir(parents=True, exist_ok=True)
    raw = {
        "exact_vs_optimal": vs_optimal - 0.01,
        "exact_vs_random": vs_random - 0.01,
        "sampled_vs_optimal": [0.0, 0.0, 0.1],  # superseded by the exact score: never read
        "sampled_vs_random": [0.0, 0.0, 0.1],
    }
    rec = {"method": method, "step": step, "minutes": minutes, "raw": raw}
    if method != "td":
        band = [vs_optimal - 0.01, vs_optimal + 0.01]
        rec["search"] = {"sampled_vs_optimal": [vs_optimal, *band], "sampled_vs_random": [vs_random, 0.9, 0.99]}
    (work / "eval" / f"{method}-step{step:06d}.json").write_text(json.dumps(rec))


LARGER = ["--game", "nannon(points=12,checkers=5,die_sides=6)", "--points", "1", "--out", "b"]


def _larger_board(tmp_path: Path, td_final: list[float], td_random: float = 0.93) -> tuple[str, str]:
    """Three seeds of 12-5-6: NDMZ in one work directory, AlphaZero and TD(lambda) in another."""
    ndmz, others = str(tmp_path / "n_s{seed}"), str(tmp_path / "o_s{seed}")
    for seed in range(3):
        _sampled_row(Path(ndmz.format(seed=seed)), "ndmz", 0, 0.0, 0.05, 0.5)
        _sampled_row(Path(ndmz.format(seed=seed)), "ndmz", 900, 59.9, 0.43 + seed / 100, 0.935)
        _sampled_row(Path(others.format(seed=seed)), "alphazero", 1100, 60.0, 0.40 + seed / 100, 0.92)
        _sampled_row(Path(others.format(seed=seed)), "td", 400, 60.0, td_final[seed], td_random)
    return ndmz, others


def test_a_larger_board_reads_sampled_scores_and_the_papers_order(tmp_path, monkeypatch):
    """12-5-6: the search agent's sampled scores are averaged over seeds (a raw agent's exact
    score supersedes its sampled one), methods trained apart join from --with-work, and the
    target is the paper's order at the last mark, per opponent, with whether the intervals are apart."""
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    ndmz, others = _larger_board(tmp_path, [0.42, 0.425, 0.43])  # TD exact: 0.415
    argv = ["report", "--seeds", "0,1,2", "--work", ndmz, "--with-work", others, *LARGER]
    nannon_636.main(argv)
    result = json.loads((tmp_path / "results" / "b_seeds.json").read_text())
    cells = {(c["method"], c["agent"], c["score"], c["mark"]): c for c in result["cells"]}
    search = cells[("ndmz", "search", "sampled_vs_optimal", 60.0)]
    assert search["values"] == pytest.approx([0.43, 0.44, 0.45]) and search["ci95"] is not None
    assert cells[("ndmz", "raw", "exact_vs_optimal", 60.0)]["mean"] == pytest.approx(0.43)
    assert not any(score.startswith("sampled_") and agent == "raw" for _, agent, score, _ in cells)
    assert [x["sampled"] for x in result["by_step"]] == [["search"]] * 6
    order = result["order"]
    assert order["enough_seeds"] and not order["holds"]  # AlphaZero's 0.41 vs optimal is below TD's 0.415
    assert order["verdict"] == "does not hold" and result["target"] is None
    assert order["optimal"]["ndmz"]["above_td"] and order["optimal"]["ndmz"]["score"] == "sampled_vs_optimal"
    assert order["optimal"]["td"]["score"] == "exact_vs_optimal"
    assert not order["optimal"]["alphazero"]["above_td"] and not order["optimal"]["alphazero"]["apart"]
    assert order["random"]["ndmz"]["apart"] is True  # every seed 0.935, TD's every seed 0.92
    assert sorted(result["work"]) == sorted(
        [str(s) for s in range(3)] + [f"{s} {others.format(seed=s)}" for s in range(3)]
    )
    md = (tmp_path / "results" / "b_seeds.md").read_text()
    assert "**does not hold**" in md and "0.4300 (sampled)" in md and "0.495" not in md
    assert "| optimal | 0.4400 [" in md
    # every method's seeds with their learning steps at a mark (machines of different speed show)
    assert "alphazero search agent, sampled vs optimal, per seed" in md
    assert "| 60 | 0.4000 (60.0 min, step 1100) | 0.4100 (60.0 min, step 1100) |" in md
    assert "td raw agent, exact vs optimal, per seed (the checkpoint's training minutes and step, a step" in md
    assert "| 60 | 0.4100 (60.0 min, step 400) | 0.4150 (60.0 min, step 400) | 0.4200 (60.0 min, step 400) |" in md


def test_the_order_holds_when_both_are_above_td_on_both_scores(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    ndmz, others = _larger_board(tmp_path, [0.30, 0.31, 0.32], td_random=0.90)
    argv = ["report", "--seeds", "0,1,2", "--work", ndmz, "--with-work", others, *LARGER]
    _sampled_row(Path(others.format(seed=1)), "ndmz", 5, 1.0, 0.1, 0.5)  # NDMZ trained in both: which is it?
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(argv)
    assert stop.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith(f"in both {ndmz.format(seed=1)} and {others.format(seed=1)}")
    )
    (Path(others.format(seed=1)) / "eval" / "ndmz-step000005.json").unlink()
    nannon_636.main(argv)
    result = json.loads((tmp_path / "results" / "b_seeds.json").read_text())
    assert result["order"]["holds"] and result["order"]["optimal"]["alphazero"]["apart"]
    assert "**holds, every interval apart from TD(lambda)'s**" in (tmp_path / "results" / "b_seeds.md").read_text()


def test_the_order_needs_three_seeds_and_says_when_intervals_overlap(tmp_path, monkeypatch):
    """Means in the paper's order over two seeds are not established; over three seeds with
    an interval overlapping TD(lambda)'s they hold in the means only."""
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    ndmz, others = _larger_board(tmp_path, [0.30, 0.31, 0.32], td_random=0.90)
    argv = ["report", "--work", ndmz, "--with-work", others, *LARGER]
    nannon_636.main([*argv, "--seeds", "0,1"])
    order = json.loads((tmp_path / "results" / "b_seeds.json").read_text())["order"]
    assert not order["holds"] and not order["enough_seeds"]
    assert order["verdict"].startswith("not established") and "the means in the paper's order" in order["verdict"]
    _sampled_row(Path(others.format(seed=2)), "td", 400, 60.0, 0.44, 0.90)  # TD's seed 2 above AlphaZero's 0.42
    nannon_636.main([*argv, "--seeds", "0,1,2"])
    order = json.loads((tmp_path / "results" / "b_seeds.json").read_text())["order"]
    assert order["holds"] and not order["optimal"]["alphazero"]["apart"]
    assert order["verdict"] == "holds in the means, some intervals overlapping TD(lambda)'s"


def test_the_board_decides_the_target_not_the_cells(tmp_path, monkeypatch):
    """12-5-6 with TD(lambda) alone reads the order (not read: NDMZ and AlphaZero missing),
    never 6-3-6's 0.495; a 6-3-6 report with all three methods reads 0.495, not the order."""
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    _, others = _larger_board(tmp_path, [0.30, 0.31, 0.32])
    for seed in range(3):
        (Path(others.format(seed=seed)) / "eval" / "alphazero-step001100.json").unlink()
    nannon_636.main(["report", "--seeds", "0,1,2", "--work", others, *LARGER])
    result = json.loads((tmp_path / "results" / "b_seeds.json").read_text())
    md = (tmp_path / "results" / "b_seeds.md").read_text()
    assert result["search_sampled"] and result["order"] is None and result["target"] is None
    assert "the paper's order (NDMZ, Fig. 2 and Section 4.4): not read" in md and "0.495" not in md
    template = _seeds(tmp_path, [0.49, 0.50, 0.51])
    for seed in range(3):
        for method in ("alphazero", "td"):
            _row(Path(template.format(seed=seed)), method, 100, 59.7, 0.45)
    nannon_636.main(["report", "--seeds", "0,1,2", "--work", template, "--points", "2", "--out", "t"])
    result = json.loads((tmp_path / "results" / "t_seeds.json").read_text())
    md = (tmp_path / "results" / "t_seeds.md").read_text()
    assert not result["search_sampled"] and result["order"] is None and result["target"]["met"]
    assert "paper's order" not in md and "**met**" in md


def test_a_directory_named_twice_for_a_seed_is_refused(tmp_path, capsys):
    ndmz, others = _larger_board(tmp_path, [0.30, 0.31, 0.32])
    for extra in ([ndmz], [others, others]):
        argv = ["report", "--seeds", "0,1,2", "--work", ndmz, *[x for e in extra for x in ("--with-work", e)]]
        with pytest.raises(SystemExit) as stop:
            nannon_636.main([*argv, *LARGER])
        err = capsys.readouterr().err.strip().splitlines()
        assert stop.value.code == 2 and err[-1].endswith("is given twice")


def test_a_seeds_methods_from_two_stored_files(tmp_path, monkeypatch, capsys):
    """Seed 0's NDMZ and its AlphaZero and TD(lambda), each stored by its own one-seed report
    (their work directories gone): read from two --seed-results files, the same cells as from
    the work directories; the same file twice, or a method in two files, is refused."""
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    ndmz, others = _larger_board(tmp_path, [0.30, 0.31, 0.32], td_random=0.90)
    argv = ["report", "--seeds", "0,1,2", "--work", ndmz, "--with-work", others, *LARGER]
    nannon_636.main(argv)
    whole = json.loads((tmp_path / "results" / "b_seeds.json").read_text())
    files = []
    for template in (ndmz, others):
        work = Path(template.format(seed=0))
        rows = [json.loads(p.read_text()) for p in (work / "eval").glob("*.json")]
        files.append(tmp_path / f"{work.name}.json")
        files[-1].write_text(json.dumps({"seed": 0, "git": "abc", "rows": rows}))
        for path in (work / "eval").glob("*.json"):
            path.unlink()
    stored = [x for f in files for x in ("--seed-results", f"0={f}")]
    nannon_636.main([*argv, *stored])
    result = json.loads((tmp_path / "results" / "b_seeds.json").read_text())
    assert result["cells"] == whole["cells"] and result["order"] == whole["order"]
    second = f"0 {files[1]}"
    assert sorted(result["stored"]) == ["0", second] and result["stored"][second]["methods"] == ["alphazero", "td"]
    md = (tmp_path / "results" / "b_seeds.md").read_text()
    assert "Seed 0's evaluated alphazero/td checkpoints come from the stored results file" in md
    for extra, message in (([stored[-1]], "given twice"), ([f"0={files[0]}"], "given twice")):
        with pytest.raises(SystemExit) as stop:
            nannon_636.main([*argv, *stored, "--seed-results", *extra])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"seed": 0, "rows": json.loads(files[0].read_text())["rows"]}))
    with pytest.raises(SystemExit) as stop:
        nannon_636.main([*argv, *stored, "--seed-results", f"0={both}"])
    assert stop.value.code == 2 and "ndmz checkpoints in both" in capsys.readouterr().err


@pytest.mark.parametrize(("game", "with_target"), [("nannon", True), (LARGER[1], False)])
def test_a_one_seed_report_names_the_0_49_target_only_on_the_board_it_belongs_to(
    tmp_path, monkeypatch, game, with_target
):
    """6-3-6's target (NDMZ search >= 0.49 within 60 minutes) is no target on 12-5-6, whose
    target is the order over seeds: the one-seed report leaves it out there."""
    monkeypatch.setattr(nannon_636, "RESULTS", tmp_path / "results")
    _sampled_row(tmp_path / "w", "ndmz", 900, 59.9, 0.43, 0.935)
    nannon_636.main(["report", "--game", game, "--work", str(tmp_path / "w"), "--points", "1", "--out", "one"])
    targets = json.loads((tmp_path / "results" / "one.json").read_text())["targets"]
    assert ("ndmz_search_ge_0.49_within_60min" in targets) is with_target
    assert targets["ndmz_top_move_ge_0.95_every_k"] is False  # the sampled row carries no dynamics
    assert ("0.49" in (tmp_path / "results" / "one.md").read_text()) is with_target
