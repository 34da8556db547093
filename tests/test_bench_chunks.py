"""benchmarks/common.py train_in_chunks with a cosine learning rate: each chunk sets
train.steps to its own end, so the schedule's length is train.lr_steps and a chunked run
follows one curve (not a decay restarted per chunk); without lr_steps it is refused."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common  # noqa: E402
from conftest import SMALL_RUN, assert_same_final_weights  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.errors import UsageError  # noqa: E402
from polyzero.train.driver import Trainer  # noqa: E402
from polyzero.train.learner import learning_rate  # noqa: E402

COSINE = [*SMALL_RUN, "train.lr_schedule=cosine", "train.learning_rate=0.01"]


def _lr(trainer) -> float:
    return trainer.learner.optimizer.param_groups[0]["lr"]


def test_lr_steps_sets_the_cosine_length_apart_from_train_steps():
    cfg = build_config("tic_tac_toe", "alphazero", overrides=[*COSINE, "train.steps=8", "train.lr_steps=4"]).train
    # U = 4 steps x 2 minibatches = 8 updates, whatever train.steps says
    assert learning_rate(cfg, 4) == pytest.approx(0.005)
    assert learning_rate(cfg, 8) == pytest.approx(0.0, abs=1e-12)


def test_chunked_training_follows_one_cosine_and_resumes_on_it(tmp_path):
    run = tmp_path / "run"
    cfg = build_config("tic_tac_toe", "alphazero", overrides=[*COSINE, "train.steps=4", "train.lr_steps=4"])
    trainer = Trainer.create(cfg, run, progress=False)
    common.train_in_chunks(trainer, 60, 2, "t", steps=2)
    # update 3 of U = 8 (a decay restarted per chunk would have U = 4: (1 + cos(3 pi / 4)) / 2)
    assert _lr(trainer) == pytest.approx(0.01 * (1 + math.cos(3 * math.pi / 8)) / 2)
    resumed = Trainer.resume(run, progress=False)
    assert resumed.learner.updates == 4
    common.train_in_chunks(resumed, 60, 2, "t", steps=4)
    assert _lr(resumed) == pytest.approx(0.01 * (1 + math.cos(7 * math.pi / 8)) / 2)


def test_a_cosine_without_lr_steps_is_refused(tmp_path):
    cfg = build_config("tic_tac_toe", "alphazero", overrides=[*COSINE, "train.steps=4"])
    trainer = Trainer.create(cfg, tmp_path / "run", progress=False)
    with pytest.raises(UsageError, match="train.lr_steps"):
        common.train_in_chunks(trainer, 60, 2, "t", steps=2)


def test_a_chunked_and_resumed_cosine_run_is_bit_for_bit_the_uninterrupted_one(tmp_path):
    """Chunks of one step, then a resume from the checkpoint mid-schedule: the same weights
    as one run of train.steps = train.lr_steps (a decay restarted per chunk or on resume
    would move them)."""
    overrides = [*COSINE, "train.steps=4", "train.lr_steps=4"]
    Trainer.create(
        build_config("tic_tac_toe", "alphazero", overrides=overrides), tmp_path / "whole", progress=False
    ).run()
    chunked = Trainer.create(
        build_config("tic_tac_toe", "alphazero", overrides=overrides), tmp_path / "parts", progress=False
    )
    common.train_in_chunks(chunked, 60, 1, "t", steps=2)
    del chunked
    resumed = Trainer.resume(tmp_path / "parts", progress=False)
    common.train_in_chunks(resumed, 60, 1, "t", steps=4)
    assert_same_final_weights(tmp_path / "whole", tmp_path / "parts")


def test_a_run_saved_before_lr_steps_existed_resumes_on_its_own_cosine(tmp_path):
    """A config.toml without train.lr_steps (written before it existed) loads, and its
    cosine still runs over train.steps, as before: resumed to 3 steps, the last of its 6
    updates runs at lr (1 + cos(5 pi / 6)) / 2."""
    old = Trainer.create(
        build_config("tic_tac_toe", "alphazero", overrides=[*COSINE, "train.steps=2"]), tmp_path, progress=False
    )
    old.run()
    del old
    for toml in tmp_path.rglob("config.toml"):
        text = toml.read_text()
        assert "lr_steps = 0\n" in text
        toml.write_text(text.replace("lr_steps = 0\n", ""))
    resumed = Trainer.resume(tmp_path, ["train.steps=3"], progress=False)
    assert resumed.cfg.train.lr_steps == 0 and resumed.learner.updates == 4
    resumed.run()
    assert _lr(resumed) == pytest.approx(0.01 * (1 + math.cos(5 * math.pi / 6)) / 2)


def test_the_nannon_benchmark_refuses_a_cosine_without_lr_steps_before_its_run_exists(tmp_path, capsys):
    """One line and exit code 2, and no run left behind: a resume reads no --set, so a run
    created before the refusal would be refused again with train.lr_steps given."""
    import nannon_636

    work = tmp_path / "work"
    with pytest.raises(SystemExit) as stop:
        nannon_636.main(["train", "--method", "ndmz", "--work", str(work), "--set", "train.lr_schedule=cosine"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "train.lr_steps" in err and len(err.strip().splitlines()) == 1
    assert not (work / "ndmz" / "run").exists()
