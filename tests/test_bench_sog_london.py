"""benchmarks/sog_london.py: head-to-head batches per side, cached and resumed, and
the report's win rates with Wilson intervals."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import sog_london  # noqa: E402


def test_batches_per_side_resume_and_report(tmp_path, monkeypatch):
    monkeypatch.setattr(sog_london, "RESULTS", tmp_path / "results")
    common = ["--game", "scotland_yard", "--work", str(tmp_path), "--out", "t", "--batch", "3"]
    sog_london.main(["play", "--match", "sy-heuristic", "random", "--games", "3", *common])
    first = json.loads((tmp_path / "t" / "eval" / "sy_heuristic__random" / "batch_0000.json").read_text())
    assert first["games_per_side"] == 3 and first["a_decisions"] > 0 and first["b_decisions"] > 0
    sog_london.main(["play", "--match", "sy-heuristic", "random", "--games", "6", *common])  # adds one batch
    batches = sorted((tmp_path / "t" / "eval" / "sy_heuristic__random").glob("batch_*.json"))
    assert len(batches) == 2 and json.loads(batches[0].read_text()) == first  # the first one kept
    sog_london.main(["report", *common])
    (row,) = json.loads((tmp_path / "results" / "t.json").read_text())["matchups"]
    wins = sum(json.loads(b.read_text())["a_mrx_wins"] for b in batches)
    assert row["games_per_side"] == 6 and row["a_as_mrx"]["wins"] == wins
    low, high = row["a_as_mrx"]["ci95"]
    assert 0 <= low <= wins / 6 <= high <= 1 and high - low > 0.2  # six games: a wide interval
    assert "| `sy-heuristic` | `random` | 6 |" in (tmp_path / "results" / "t.md").read_text()
