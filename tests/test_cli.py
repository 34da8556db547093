"""The command line: clear one-line errors with exit code 2, and the verbs end to end."""

import subprocess
import sys

import pytest

from polyzero.cli import main
from polyzero.train.checkpoint import latest_checkpoint

TINY = [
    "--set",
    "train.steps=2",
    "--set",
    "train.positions_per_step=32",
    "--set",
    "train.batch_size=16",
    "--set",
    "train.minibatches_per_step=1",
    "--set",
    "search.num_simulations=4",
    "--set",
    "selfplay.concurrent_games=8",
    "--set",
    "eval.every=1",
    "--set",
    "eval.games=4",
    "--set",
    "eval.final_games=4",
    "--set",
    "eval.simulations=4",
    "--set",
    "threads=1",
    "--no-progress",
]


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("polyzero: error: ") and "\n" not in err, err
    return err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["train", "conect_four"], "unknown game 'conect_four'"),
        (["train", "kuhn_poker"], "imperfect information"),
        (["train", "backgammon", "--algo", "muzero"], "muzero does not support 'backgammon': it has chance nodes"),
        (["train", "cartpole", "--algo", "alphazero"], "stochastic environment"),
        (["train", "tic_tac_toe", "--set", "train.learning_rat=0.1"], "did you mean train.learning_rate"),
        (["train", "tic_tac_toe", "--set", "train.steps=abc"], "train.steps must be of type int"),
        (["train", "tic_tac_toe", "--set", "search.selection=pucb"], "search.selection must be one of"),
        (["train", "tic_tac_toe", "--set", "train.batch_size=0"], "train.batch_size must be positive"),
        (["train", "tic_tac_toe", "--config", "/nonexistent.toml"], "config file not found"),
        (
            ["train", "tic_tac_toe", "--algo", "alphago"],
            "unknown algorithm 'alphago'; available: alphazero, muzero, ndmz, sog",
        ),
        (["train", "connect_four(rows=5,size=3)"], "has no parameter 'size'"),
        (["train", "--resume", "/nonexistent/run"], "holds no checkpoint"),
        (["train"], "train needs a GAME"),
        (["arena", "random", "wizard", "--game", "tic_tac_toe", "--games", "2"], "unknown player 'wizard'"),
        (["arena", "random", "mcts:0", "--game", "tic_tac_toe", "--games", "2"], "mcts:0"),
        (["arena", "random", "random"], "needs --game"),
        (["plot", "/nonexistent/run"], "no metrics"),
    ],
)
def test_usage_errors(capsys, monkeypatch, tmp_path, argv, expected):
    monkeypatch.chdir(tmp_path)
    assert expected in _error(capsys, argv)
    assert not list(tmp_path.glob("runs/*")), "a refused train command left a run directory behind"


def test_bad_toml_and_cuda(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\nsteps = 3\n")
    assert "not valid TOML" in _error(capsys, ["train", "tic_tac_toe", "--config", str(bad)])
    import torch

    if not torch.cuda.is_available():
        assert "no CUDA device" in _error(capsys, ["train", "tic_tac_toe", "--device", "cuda"])


def test_no_traceback_for_user_mistakes():
    proc = subprocess.run(
        [sys.executable, "-m", "polyzero", "train", "conect_four"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "connect_four" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "polyzero", "train", "--bogus-flag"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("cli") / "run"
    assert main(["train", "tic_tac_toe", "--run-dir", str(run), "--seed", "2"] + TINY) == 0
    return run


def test_train_prints_final_scores(tiny_run, capsys):
    assert latest_checkpoint(tiny_run).name == "step_000002"
    assert (tiny_run / "config.toml").read_text().count("[train]") == 1


def test_existing_run_is_not_overwritten(tiny_run, capsys):
    before = (tiny_run / "metrics.jsonl").read_bytes()
    err = _error(capsys, ["train", "tic_tac_toe", "--run-dir", str(tiny_run)] + TINY)
    assert "already holds a run" in err
    assert (tiny_run / "metrics.jsonl").read_bytes() == before


def test_arena_with_a_run_directory(tiny_run, capsys):
    assert main(["arena", f"{tiny_run}@8", "random", "--games", "6", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "score" in out and "6 games" in out


def test_arena_refuses_a_corrupt_checkpoint(tiny_run, tmp_path, capsys):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(latest_checkpoint(tiny_run), broken)
    (broken / "learner.pt").write_bytes(b"not a checkpoint")
    assert "corrupt" in _error(capsys, ["arena", str(broken), "random", "--games", "2"])
    assert "trained on 'tic_tac_toe'" in _error(
        capsys, ["arena", str(tiny_run), "random", "--game", "connect_four", "--games", "2"]
    )


def test_plot(tiny_run, capsys):
    assert main(["plot", str(tiny_run)]) == 0
    assert (tiny_run / "plots" / "losses.png").stat().st_size > 0
    assert (tiny_run / "plots" / "scores.png").stat().st_size > 0


def test_play_in_the_terminal(monkeypatch, capsys):
    import io

    # An illegal id, a move by name, then the first legal id until the game ends.
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(["9", "x(0,0)"] + [str(i) for i in range(9)] * 3)))
    assert main(["play", "tic_tac_toe", "--agent", "random", "--human-seat", "0"]) == 0
    out = capsys.readouterr().out
    assert "returns" in out.lower() or "result" in out.lower()
