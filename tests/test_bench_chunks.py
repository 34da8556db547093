"""benchmarks/common.py train_in_chunks with a cosine learning rate: each chunk sets
train.steps to its own end, so the schedule's length is train.lr_steps and a chunked run
follows one curve (not a decay restarted per chunk); without lr_steps it is refused."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common  # noqa: E402
from conftest import SMALL_RUN  # noqa: E402
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
