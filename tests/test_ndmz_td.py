"""NDMZ's n-step value targets (`ndmz.td_steps`, NDMZReplay.bootstrapped): hand-computed
targets on hand-made trajectories, sign flips when the mover changes, the final outcome
near the end, and td_steps = 0 leaving the final-outcome targets as they were."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.algos.base import Trajectory
from polyzero.algos.ndmz import trajectory_steps
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.nets.ndmz import CHANCE, TERMINAL
from test_ndmz import SMALL as NANNON_RUN

SMALL = ["train.replay_size=64", "train.batch_size=8", "net.width=16", "ndmz.hidden_size=8", "threads=1"]
DIE = tuple((o, 1 / 6) for o in range(2, 8))


def _algo(td_steps: int):
    torch.set_num_threads(1)
    cfg = build_config("nannon", "ndmz", overrides=SMALL + [f"ndmz.td_steps={td_steps}"])
    return make_algorithm(cfg, load_game("nannon"))


def _alternating_game() -> Trajectory:
    """Four decisions, players 0, 1, 0, 1, a die roll after each of the first three;
    player 0 wins. Steps: c0 ch c1 ch c2 ch c3 T (slots 0..7)."""
    return Trajectory(
        observations=[np.full(35, i, np.float32) for i in range(4)],
        policies=[np.eye(8)[0]] * 4,
        players=[0, 1, 0, 1],
        actions=[0, 0, 0, 7],
        legal=[np.ones(8, bool)] * 4,
        root_values=[0.1, 0.2, 0.3, 0.4],
        returns_before=[0.0] * 4,
        returns=np.array([1.0, -1.0], np.float32),
        chance=[[(2, DIE)], [(3, DIE)], [(4, DIE)], []],
    )


def _targets(td_steps: int, traj: Trajectory, slots) -> np.ndarray:
    algo = _algo(td_steps)
    replay = algo.make_replay()  # K = 6
    replay.add(trajectory_steps(traj, algo.layout))
    return replay.unroll_targets(np.asarray(slots))["target_value"]


def test_root_values_are_stored_at_choice_steps():
    steps = trajectory_steps(_alternating_game(), _algo(1).layout)
    assert list(steps["identity"]) == [0, CHANCE, 1, CHANCE, 0, CHANCE, 1, TERMINAL]
    assert np.allclose(steps["root_value"], [0.1, 0, 0.2, 0, 0.3, 0, 0.4, 0])


@pytest.mark.parametrize(
    ("td_steps", "from_0", "from_2"),
    [
        # n = 1: the next decision's search value, the other player's: sign flipped. A chance
        # step bootstraps where its decision does; c3 has no decision after it (outcome -1).
        (1, [-0.2, -0.2, -0.3, -0.3, -0.4, -0.4, -1], [-0.3, -0.3, -0.4, -0.4, -1, -1, -1]),
        # n = 2: the same player's search value two decisions on; from c2 on the game ends
        # within two decisions: the final outcome (+1 for player 0's steps, -1 for player 1's).
        (2, [0.3, 0.3, 0.4, 0.4, 1, 1, -1], [0.4, 0.4, 1, 1, -1, -1, -1]),
    ],
)
def test_n_step_targets_of_a_hand_made_game(td_steps, from_0, from_2):
    """The unroll from c0 covers steps 0..6; from c2 (player 1's sample) steps 2..7 and one
    absorbing step past the end (the terminal step's value, -1). Values are for each step's
    owner: the mover at a decision, the last mover at a chance step."""
    value = _targets(td_steps, _alternating_game(), [0, 2])
    assert np.allclose(value[0], from_0) and np.allclose(value[1], from_2)


def test_targets_add_the_rewards_up_to_the_bootstrap_in_a_zero_sum_game():
    """Player 0 moves twice (the other passes without a decision here) and gains 0.5 on
    the way; player 1 moves last. n = 1: c0 gets 0.5 + nu(c1) = 0.7 (same player); c1 gets
    nothing more on the way and -nu(c2) = -0.3 (the other player); c2, the last decision,
    its outcome -0.5 (player 1 had -0.5 and ends at -1)."""
    traj = Trajectory(
        observations=[np.full(35, i, np.float32) for i in range(3)],
        policies=[np.eye(8)[0]] * 3,
        players=[0, 0, 1],
        actions=[0, 0, 0],
        legal=[np.ones(8, bool)] * 3,
        root_values=[0.1, 0.2, 0.3],
        returns_before=[0.0, 0.5, -0.5],
        returns=np.array([1.0, -1.0], np.float32),
        chance=[[], [(2, DIE)], []],
    )
    value = _targets(1, traj, [0])
    # steps: c0 c1 ch c2 T, then absorbing past the end (the terminal step's -0.5)
    assert np.allclose(value[0], [0.7, -0.3, -0.3, -0.5, -0.5, -0.5, -0.5])


def test_td_steps_zero_keeps_the_final_outcome_and_the_replay_as_it_was():
    traj = _alternating_game()
    outcome = [[1, 1, -1, -1, 1, 1, -1], [-1, -1, 1, 1, -1, -1, -1]]
    assert np.allclose(_targets(0, traj, [0, 2]), outcome)
    assert np.allclose(_targets(50, traj, [0, 2]), outcome)  # n past the game's end: the same
    assert "root_value" not in _algo(0).make_replay().data  # checkpoints unchanged with the option off


def test_a_replay_saved_without_root_values_loads_with_the_option_on():
    """Resuming an outcome-target run with td_steps: its stored steps have no search values,
    which load as zeros (their bootstrap is then 0, say so in the docs)."""
    old, new = _algo(0).make_replay(), _algo(2).make_replay()
    old.add(trajectory_steps(_alternating_game(), old.layout))
    new.load_bytes(old.to_bytes())
    assert np.allclose(new.data["root_value"][:8], 0) and len(new) == 8


def test_negative_td_steps_is_refused():
    with pytest.raises(UsageError, match="ndmz.td_steps must be non-negative"):
        build_config("nannon", "ndmz", overrides=["ndmz.td_steps=-1"]).validate()


def test_self_play_stores_the_search_values_and_targets_bootstrap_from_them(tmp_path):
    from polyzero.train.driver import Trainer

    small = NANNON_RUN + ["train.steps=1", "ndmz.td_steps=2"]
    trainer = Trainer.create(build_config("nannon", "ndmz", overrides=small), tmp_path / "run", progress=False)
    trainer.run()
    replay = trainer.replay
    d, n = replay.data, len(replay)
    choice = d["identity"][:n] < CHANCE
    assert np.all(d["root_value"][:n][~choice] == 0) and np.count_nonzero(d["root_value"][:n][choice]) > 0
    assert np.all(np.abs(d["root_value"][:n]) <= 1)
    value = replay.unroll_targets(replay.sampleable_slots())["target_value"][:, 0]
    # Nannon has no rewards before the end: each decision's target is +-1 or +-nu two decisions on.
    nu = np.abs(d["root_value"][:n][choice])
    assert np.all(np.isclose(np.abs(value)[:, None], np.append(nu, 1.0)[None]).any(1))
    assert np.mean(np.abs(value) < 1) > 0.5  # most decisions are more than two from the end
