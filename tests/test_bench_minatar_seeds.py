"""MuZero Reanalyze's named presets, `minatar_muzero.py --max-positions`, and `report
--seeds`: the mean return per arm over seeds and Reanalyze minus plain MuZero at equal
environment steps with its 95% t-interval (synthetic evaluation rows; no training)."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common  # noqa: E402
import minatar_muzero  # noqa: E402
import minatar_muzero_seeds  # noqa: E402
from polyzero.cli import main as cli_main  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.presets import preset_file, preset_summary  # noqa: E402

T975_2 = 4.302652729911275  # Student's t, 97.5% quantile, 2 degrees of freedom
SMALL = "muzero_reanalyze-small_minatar-breakout"
APPENDIX_H = "muzero_reanalyze-appendix-h_minatar-breakout"


@pytest.mark.parametrize(
    "name, bootstrap, n, weight",
    [(SMALL, "search", 10, 1.0), (APPENDIX_H, "network", 5, 0.25)],
)
def test_reanalyze_presets_set_what_they_say(name, bootstrap, n, weight):
    info = preset_summary(name)
    assert (info["algo"], info["game"]) == ("muzero", "minatar-breakout")
    cfg = build_config(config_file=str(preset_file(name)))
    mz = cfg.muzero
    assert (mz.reanalyse_fraction, mz.reanalyse_bootstrap, mz.td_steps, mz.value_loss_weight) == (
        0.8,
        bootstrap,
        n,
        weight,
    )
    assert mz.reanalyse_c_scale == 0.01 and cfg.search.c_scale == 0.1  # re-searched targets only
    assert cfg.train.positions_per_step * 2 == cfg.train.batch_size * cfg.train.minibatches_per_step  # 2.0 per state
    assert cfg.net.channels == 32 and cfg.search.kind == "gumbel"  # over the shipped MinAtar preset


def test_presets_are_listed_and_the_benchmark_arms_are_built_from_them(capsys):
    assert cli_main(["presets"]) == 0
    out = capsys.readouterr().out
    assert SMALL in out and APPENDIX_H in out
    assert minatar_muzero.ARMS["reanalyze_small"] == minatar_muzero.preset_overrides(SMALL)
    assert set(minatar_muzero.ARMS["reanalyze"]) == {  # the arm older results were measured with
        "muzero.reanalyse_fraction=0.8",
        'muzero.reanalyse_bootstrap="network"',
        "muzero.td_steps=5",
        "muzero.value_loss_weight=0.25",
        "train.positions_per_step=512",
    }


def test_max_positions_stops_at_the_learning_step_that_reaches_it():
    assert minatar_muzero._stop_overrides("reanalyze_small", 51200) == [
        "train.steps=100",
        "muzero.temperature_schedule=false",
    ]
    assert minatar_muzero._stop_overrides("muzero", 51300)[0] == "train.steps=201"  # 256 per step, rounded up
    assert minatar_muzero._stop_overrides("muzero", 0) == ["train.steps=1000000"]


def _curve(work: Path, arm: str, returns: list[float], every: int = 12800) -> None:
    (work / "eval").mkdir(parents=True, exist_ok=True)
    for k, ret in enumerate(returns, start=1):
        rec = {"mean_return": ret, "ci_low": ret - 0.1, "ci_high": ret + 0.1, "returns": [ret] * 4}
        rec.update(step=25 * k, positions=every * k + 7, train_time=60.0 * k)
        (work / "eval" / f"{arm}-step_{25 * k:06d}.json").write_text(json.dumps(rec))


def _report(tmp_path, monkeypatch, gaps: list[float]) -> dict:
    """Three seeds; Reanalyze's curve is the control's plus `gaps[seed]` at every checkpoint."""
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    template = str(tmp_path / "s{seed}")
    for seed, gap in enumerate(gaps):
        work = Path(template.format(seed=seed))
        control = [0.4, 0.5 + seed / 10, 1.0, 2.0]
        _curve(work, "muzero_reanalyze_ratio", control)
        _curve(work, "reanalyze_small", [c + gap for c in control])
    argv = ["report", "--seeds", "0,1,2", "--work", template, "--out", "t", "--max-positions", "51200"]
    minatar_muzero.main([*argv, "--arms", "reanalyze_small,muzero_reanalyze_ratio"])
    return json.loads((tmp_path / "results" / "t_seeds.json").read_text())


def test_mean_per_checkpoint_and_difference_over_seeds(tmp_path, monkeypatch):
    result = _report(tmp_path, monkeypatch, [0.2, 0.5, 0.8])
    control = result["arms"]["muzero_reanalyze_ratio"]
    assert [c["step"] for c in control] == [25, 50, 75, 100]
    second = control[1]
    assert second["seeds"] == [0, 1, 2] and second["returns"] == pytest.approx([0.5, 0.6, 0.7])
    half = T975_2 * 0.1 / math.sqrt(3)
    assert second["mean"] == pytest.approx(0.6) and second["ci95"] == pytest.approx([0.6 - half, 0.6 + half])
    (d,) = result["reanalyze_vs_plain"]
    assert (d["reanalyze"], d["plain"]) == ("reanalyze_small", "muzero_reanalyze_ratio")
    assert [x["difference"] for x in d["per_seed"].values()] == pytest.approx([0.2, 0.5, 0.8])
    half = T975_2 * 0.3 / math.sqrt(3)
    assert d["mean"] == pytest.approx(0.5) and d["ci95"] == pytest.approx([0.5 - half, 0.5 + half])
    assert d["ci95"][0] < 0 and d["ahead"] is False  # a positive mean, but the interval reaches below 0
    md = (tmp_path / "results" / "t_seeds.md").read_text()
    assert "seed 1: " in md and (tmp_path / "results" / "t_seeds.png").stat().st_size > 0


def test_ahead_only_when_the_interval_lies_above_zero(tmp_path, monkeypatch):
    assert _report(tmp_path, monkeypatch, [0.4, 0.5, 0.6])["reanalyze_vs_plain"][0]["ahead"] is True
    wide = _report(tmp_path, monkeypatch, [-0.2, 0.5, 1.2])["reanalyze_vs_plain"][0]  # mean 0.5, interval over 0
    assert wide["ci95"][0] < 0 < wide["mean"] and wide["ahead"] is False
    assert "not ahead" in (tmp_path / "results" / "t_seeds.md").read_text()


def test_difference_interpolates_over_the_steps_both_reached():
    rows = [{"positions": 10, "mean_return": 0.0, "ci_low": 0, "ci_high": 0}]
    rows.append({"positions": 30, "mean_return": 2.0, "ci_low": 2, "ci_high": 2})
    short = [{"positions": 20, "mean_return": 0.0, "ci_low": 0, "ci_high": 0}]
    d = minatar_muzero_seeds.difference_over_seeds(
        {0: {"reanalyze_small": rows, "muzero": short}}, "reanalyze_small", "muzero"
    )
    seed = d["per_seed"]["0"]
    assert seed["positions"] == 20 and d["ci95"] is None and d["ahead"] is False  # one seed: no interval
    assert seed["difference"] == pytest.approx(seed["reanalyze"]) and 0.2 < seed["reanalyze"] < 0.35


@pytest.mark.parametrize(
    "argv", [["train", "--seeds", "0,1"], ["report", "--seeds", "0,0"], ["train", "--max-positions", "-1"]]
)
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        minatar_muzero.main(argv)
    assert stop.value.code == 2 and "error:" in capsys.readouterr().err


def test_a_seed_without_evaluations_is_named(tmp_path):
    _curve(tmp_path / "s0", "muzero_reanalyze_ratio", [0.4])
    with pytest.raises(SystemExit, match=r"seed\(s\) \[1\]"):
        minatar_muzero.main(["report", "--seeds", "0,1", "--work", str(tmp_path / "s{seed}")])


def test_queue_runs_evals_after_their_training_and_skips_those_of_failed_runs(tmp_path, monkeypatch):
    import minatar_muzero_queue as queue

    fake = tmp_path / "fake.py"  # a job: records its arguments; the arm "bad" fails
    fake.write_text(
        "import sys, time\n"
        f"open({str(tmp_path / 'calls')!r}, 'a').write(' '.join(sys.argv[1:4]) + '\\n')\n"
        "time.sleep(0.2 if sys.argv[1] == 'train' else 0)\n"
        "sys.exit(sys.argv[3] == 'bad')\n"
    )
    monkeypatch.setattr(queue, "SCRIPT", fake)
    jobs = queue.parse_jobs("eval:a:0,train:a:0,train:bad:0,eval:bad:0")
    assert queue.run(jobs, 2, ["--x"], tmp_path, poll_s=0.05) == 1  # one job failed
    calls = (tmp_path / "calls").read_text().split("\n")
    assert set(calls[:2]) == {"train --arms a", "train --arms bad"} and calls[2] == "eval --arms a"
    assert "eval --arms bad" not in calls
    with pytest.raises(SystemExit, match="PHASE:ARM:SEED"):
        queue.parse_jobs("train:a")


def test_one_seed_report_compares_the_small_preset_too(tmp_path, monkeypatch):
    monkeypatch.setattr(minatar_muzero, "RESULTS", tmp_path / "results")
    _curve(tmp_path, "muzero_reanalyze_ratio", [0.0, 0.4])
    _curve(tmp_path, "reanalyze_small", [1.0, 2.0])
    (tmp_path / "eval" / "random.json").write_text(json.dumps({"mean_return": 0.4, "ci_low": 0.3, "ci_high": 0.5}))
    targets = minatar_muzero.report(
        minatar_muzero.argparse.Namespace(seed=0, budget_min=30, search="gumbel", episodes=100, set=[], out="t"),
        tmp_path,
    )["targets"]
    assert targets["reanalyze_vs_plain"] == {}
    assert targets["reanalyze_small_vs_plain"]["muzero_reanalyze_ratio"]["ahead"] is True
    assert "`reanalyze_small` against `muzero_reanalyze_ratio`" in (tmp_path / "results" / "t.md").read_text()


@pytest.mark.parametrize("bad", ["runs/x", "../x", "", ".hidden", "a\\b"])
def test_out_takes_a_plain_results_name_and_refuses_a_path(bad, capsys):
    assert common.results_name("minatar_muzero_102k") == "minatar_muzero_102k"
    with pytest.raises(SystemExit) as exit_info:
        minatar_muzero.main(["report", "--out", bad])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--out" in err and "not a plain name" in err
