"""Atari end to end (MuZero Appendix I's ALE protocol): the shipped preset trains and
resumes through the same pipeline as every other game, on real ALE frames."""

import json
import sys
from pathlib import Path

from polyzero.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import atari_fire_probe  # noqa: E402

TINY = [
    "--set",
    "train.steps=2",
    "--set",
    "train.positions_per_step=24",
    "--set",
    "train.batch_size=8",
    "--set",
    "train.minibatches_per_step=1",
    "--set",
    "search.num_simulations=4",
    "--set",
    "selfplay.concurrent_games=2",
    "--set",
    "muzero.chunk_length=12",
    "--set",
    "eval.every=0",
    "--set",
    "eval.final_games=0",
    "--set",
    "threads=1",
    "--set",
    "train.checkpoint_every=1",
    "--no-progress",
]


def test_atari_breakout_trains_and_resumes_on_ale_frames(tmp_path, capsys, monkeypatch):
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config
    from polyzero.games import load_game

    cfg = build_config("atari-breakout", "muzero")
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    assert algo.encoder.shape[1:] == (96, 96) and algo.encoder.shape[0] >= 4  # 4 frames and their actions
    assert cfg.muzero.support == 300 and cfg.muzero.downsample == "on"  # Appendix F's network
    run = tmp_path / "atari"
    assert (
        main(["train", "atari-breakout", "--algo", "muzero", "--run-dir", str(run), *TINY, "--set", "train.steps=1"])
        == 0
    )
    assert main(["train", "--resume", str(run), "--set", "train.steps=2", "--no-progress"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "selfplay/positions" in r]
    assert [r["step"] for r in steps] == [1, 2] and steps[-1]["selfplay/positions"] >= 48

    # the FIRE probe reads the run's checkpoints through their evaluation search
    monkeypatch.setattr(atari_fire_probe, "RESULTS", tmp_path)
    atari_fire_probe.main(["--run", str(run), "--steps", "2", "--episodes", "2", "--decisions", "3", "--out", "probe"])
    probe = json.loads((tmp_path / "probe.json").read_text())
    assert probe["actions"][1] == "FIRE" and [c["step"] for c in probe["checkpoints"]] == [2]
    (row,) = probe["checkpoints"]
    assert row["decisions"] == 6 and row["fire_played"] == row["played"][1] and sum(row["played"]) == 1
    assert abs(sum(row["prior"]) - 1) < 1e-3 and len(row["prior"]) == 4
    assert "| 2 | 6 |" in (tmp_path / "probe.md").read_text()
