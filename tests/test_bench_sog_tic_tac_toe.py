"""benchmarks/sog_tic_tac_toe.py's bookkeeping: cells pooled per training seed, the mean
over training seeds with its t-interval, the target, and the agents' specs."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common  # noqa: E402
import sog_tic_tac_toe as bench  # noqa: E402


def _cells(work: Path, seed: int, pairing: str, results: list[tuple[int, int, int]]) -> None:
    args = bench.parse_args(["report", "--work", str(work)])
    (work / "eval").mkdir(parents=True, exist_ok=True)
    for k, (w, d, l) in enumerate(results):  # noqa: E741
        rec = {"wins": w, "draws": d, "losses": l, "machine": "m", "seconds": 1.0}
        (work / "eval" / f"{bench.cell_name(args, seed, pairing, k)}.json").write_text(json.dumps(rec))


def test_report_pools_search_seeds_and_averages_training_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "results")
    work = tmp_path / "work"
    heads = {0: [(2, 0, 0), (1, 1, 0)], 1: [(1, 0, 1), (1, 0, 1)], 2: [(2, 0, 0), (0, 2, 0)]}
    for seed, results in heads.items():
        _cells(work, seed, "trained_vs_untrained", results)
        _cells(work, seed, "trained_vs_ref", [(0, 2, 0), (0, 1, 1)])
        _cells(work, seed, "untrained_vs_ref", [(0, 0, 2)] * 2)
    for seed in heads:  # the minimax probe's cells, untrained and trained
        for step, error in ((0, 0.75), (100, 0.35 + 0.05 * seed)):
            rec = {
                "all": {
                    "value_error": error,
                    "sign_agreement": 0.7,
                    "policy_on_optimal": 0.6,
                    "uniform_on_optimal": 0.58,
                }
            }
            (work / "eval" / f"probe-seed{seed}-step{step}.json").write_text(json.dumps(rec))
    argv = ["report", "--work", str(work), "--search-seeds", "2", "--out", "t"]
    bench.main(argv)
    result = json.loads((tmp_path / "results" / "t.json").read_text())
    seed0 = result["per_training_seed"]["0"]["trained_vs_untrained"]
    assert (seed0["wins"], seed0["draws"], seed0["losses"], seed0["games"]) == (3, 1, 0, 4)
    assert seed0["score"] == pytest.approx(0.875) and seed0["by_search_seed"] == [1.0, 0.75]
    assert seed0["wilson95"] == pytest.approx(list(common.wilson(0.875, 4)))
    across = result["across_training_seeds"]
    assert across["trained_vs_untrained"]["values"] == pytest.approx([0.875, 0.5, 0.75])
    mean, lo, hi = common.interval([0.875, 0.5, 0.75])
    assert across["trained_vs_untrained"]["mean"] == pytest.approx(mean)
    assert across["trained_vs_untrained"]["t95"] == pytest.approx([lo, hi])
    assert lo < 0.5 and result["target_met"] is False  # ahead on average, not clearly
    assert across["gain_vs_ref"]["mean"] == pytest.approx(0.375)  # 0.375 - 0 on every seed
    probe = result["probe"]
    assert probe["trained"]["mean"]["value_error"]["mean"] == pytest.approx(0.4)
    assert probe["untrained"]["1"]["value_error"] == 0.75
    text = (tmp_path / "results" / "t.md").read_text()
    assert "| trained | 0.350 (0.70) / 0.60 | 0.400 (0.70) / 0.60 | 0.450 (0.70) / 0.60 | 0.400 [" in text
    assert "trained vs untrained" in text and "**not met**" in text and "sog_tic_tac_toe.py all --work" in text
    # Clearly ahead on every seed: the target is met.
    for seed in heads:
        _cells(work, seed, "trained_vs_untrained", [(2, 0, 0), (1, 1, 0)])
    bench.main(argv)
    assert json.loads((tmp_path / "results" / "t.json").read_text())["target_met"] is True


def test_report_on_an_empty_work_directory_is_refused_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "results")
    with pytest.raises(SystemExit) as exc:
        bench.main(["report", "--work", str(tmp_path / "nowhere"), "--out", "t"])
    assert exc.value.code == 2 and "no games or probe results" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_agents_share_search_and_differ_only_in_the_network(tmp_path):
    args = bench.parse_args(["eval", "--work", str(tmp_path), "--steps", "40", "--final", "argmax"])
    trained, untrained = bench.spec(args, 1, "trained"), bench.spec(args, 1, "untrained")
    assert trained.split(",net=")[0] == untrained.split(",net=")[0] == "sog:100,1,final=argmax"
    assert trained.endswith("seed1/checkpoints/step_000040") and untrained.endswith("seed1/checkpoints/step_000000")
    assert bench.spec(args, 1, "ref") == "mcts:100"
    names = {bench.cell_name(a, 1, "trained_vs_ref", 0) for a in (args, bench.parse_args(["eval", "--steps", "40"]))}
    assert len(names) == 2  # argmax and sampling agents keep their own cells
    with pytest.raises(SystemExit):
        bench.parse_args(["eval", "--games", "3"])  # seats would not alternate evenly
