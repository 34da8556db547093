"""Nothing lost with Winograd's convolutions (issue 54's guarantees under issue 60's
default, `net.winograd = "auto"`): on Connect Four with a residual tower and games enough
that self-play's evaluator runs F(6 x 4, 3 x 3), a run interrupted in the middle of a
search, and one killed while a checkpoint is written, resume to the bits of the
uninterrupted run (weights, counters, replay). The resumed trainer chooses the same
tile again: the board and the games in flight are the checkpoint's."""

import gc
import os
import signal

import pytest
import torch

from polyzero.config import build_config
from polyzero.train import checkpoint as ckpt
from polyzero.train.driver import Interrupted, Trainer
from polyzero.train.selfplay import SelfPlayActor

CONV = [
    "train.steps=2",
    "train.checkpoint_every=1",
    "train.positions_per_step=24",
    "train.minibatches_per_step=1",
    "train.batch_size=8",
    "train.replay_size=256",
    "search.num_simulations=2",
    "selfplay.concurrent_games=48",  # the fewest that "auto" runs Winograd for (AUTO_MIN_GAMES)
    "net.channels=8",
    "net.blocks=1",
    "net.value_hidden=4",
    "net.inference=onnx",
    "eval.every=0",
    "eval.final_games=0",
    "threads=1",
    "seed=5",
]


class SimulatedKill(BaseException):
    """SIGKILL in-process: nothing after the instant it is raised at runs."""


def _create(run, steps=2):
    return Trainer.create(
        build_config("connect_four", "alphazero", overrides=[*CONV, f"train.steps={steps}"]), run, progress=False
    )


def _finished(run):
    latest = ckpt.latest_checkpoint(run)
    return ckpt.read_learner(latest)["net"], ckpt.read_state(latest), (latest / "replay.npz").read_bytes()


def _assert_same(run, want):
    weights, state, replay = want
    got, have, data = _finished(run)
    assert all(torch.equal(got[k], weights[k]) for k in weights)
    for key in ("step", "pending", "sample_rng"):
        assert have[key] == state[key], key
    assert have["actor"]["stats"] == state["actor"]["stats"]
    assert data == replay


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    run = tmp_path_factory.mktemp("conv") / "run"
    trainer = _create(run)
    w = trainer.actor_evaluator._winograd
    assert w is not None and (w.m_h, w.m_w) == (6, 4)  # self-play: F(6 x 4)
    assert trainer.agent_player().evaluate._winograd is None  # evaluation: the direct convolution
    trainer.run()
    out = _finished(run)
    del trainer
    gc.collect()
    return out


def test_an_interrupt_in_a_search_resumes_to_the_uninterrupted_runs_bits(tmp_path, monkeypatch, reference):
    original, calls = SelfPlayActor.search_moves, {"n": 0}

    def deliver(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 6:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, *args, **kwargs)

    run = tmp_path / "run"
    trainer = _create(run)
    monkeypatch.setattr(SelfPlayActor, "search_moves", deliver)
    with pytest.raises(Interrupted):
        trainer.run()
    monkeypatch.setattr(SelfPlayActor, "search_moves", original)
    del trainer
    gc.collect()
    resumed = Trainer.resume(run, progress=False)
    assert resumed.actor_evaluator._winograd is not None
    resumed.run()
    _assert_same(run, reference)


def test_a_kill_while_a_checkpoint_is_written_resumes_to_the_uninterrupted_runs_bits(tmp_path, monkeypatch, reference):
    calls = {"n": 0}

    def hook(at):
        if at == "written":
            calls["n"] += 1
            if calls["n"] == 2:  # step 1's checkpoint (step 0's is the first)
                raise SimulatedKill(at)

    run = tmp_path / "run"
    trainer = _create(run)
    monkeypatch.setattr(ckpt, "_fault_hook", hook)
    with pytest.raises(SimulatedKill):
        trainer.run()
    monkeypatch.setattr(ckpt, "_fault_hook", lambda at: None)
    del trainer
    gc.collect()
    Trainer.resume(run, progress=False).run()
    _assert_same(run, reference)
