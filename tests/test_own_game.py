"""A game of the user's own (docs/adding_a_game.md): examples/take_away.py, named in
POLYZERO_GAMES, loads, passes the conformance check, and trains and plays from the CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polyzero.errors import UsageError
from polyzero.games import check_game, load_game
from polyzero.games.registry import GAMES_ENV

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "examples/take_away.py"
SMALL = [
    "train.steps=2",
    "train.positions_per_step=64",
    "train.minibatches_per_step=2",
    "train.batch_size=32",
    "train.replay_size=256",
    "search.num_simulations=8",
    "selfplay.concurrent_games=16",
    "eval.every=0",
    "eval.final_games=0",
    "threads=1",
]


def test_the_example_game_loads_and_passes_the_conformance_check(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(GAMES_ENV, EXAMPLE)
    game = load_game("take_away(stones=9,max_take=2)")
    assert game.num_distinct_actions() == 2 and game.max_game_length() == 9
    assert os.environ[GAMES_ENV] == str(ROOT / EXAMPLE)  # absolute, for Ray workers
    report = check_game(game, num_games=6, seed=0)
    assert report.games_played == 6 and report.max_length <= 9
    with pytest.raises(UsageError, match="take_away"):
        load_game("take_away(stones=0)")


def test_a_missing_or_broken_game_module_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setenv(GAMES_ENV, str(tmp_path / "nowhere.py"))
    with pytest.raises(UsageError, match="no such game file"):
        load_game("tic_tac_toe")
    broken = tmp_path / "broken_game.py"
    broken.write_text("raise RuntimeError('oops')\n")
    monkeypatch.setenv(GAMES_ENV, str(broken))
    with pytest.raises(UsageError, match=r"cannot import game module .*broken_game.py.*oops"):
        load_game("tic_tac_toe")
    monkeypatch.setenv(GAMES_ENV, "no_such_module_anywhere")
    with pytest.raises(UsageError, match="no_such_module_anywhere"):
        load_game("tic_tac_toe")


def _cli(*args, cwd=ROOT):
    env = {**os.environ, GAMES_ENV: EXAMPLE, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "polyzero", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_cli_trains_and_plays_the_example_game(tmp_path):
    run = tmp_path / "run"
    sets = [x for s in SMALL for x in ("--set", s)]
    proc = _cli("train", "take_away", "--run-dir", str(run), "--no-progress", *sets)
    assert proc.returncode == 0, proc.stderr
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert max(steps) == 2
    proc = _cli("arena", f"{run}@8", "mcts-solver:8", "--game", "take_away", "--games", "4")
    assert proc.returncode == 0, proc.stderr
    assert "score" in proc.stdout and "take_away" in proc.stdout
