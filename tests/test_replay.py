"""The replay storages' shared row schema, and replay.npz files written before it."""

import io

import numpy as np

from polyzero.nets.ndmz import ActionLayout
from polyzero.replay import NDMZReplay, ReplayBuffer
from polyzero.replay.schema import OUTCOME, POLICY


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_an_alphazero_replay_saved_with_the_old_value_column_loads_as_outcome():
    replay = ReplayBuffer(8, {"obs": ((2,), np.float32), POLICY: ((3,), np.float32), OUTCOME: ((), np.float32)})
    old = _npz(
        _meta=np.array([3, 3, 5], np.int64),
        obs=np.ones((3, 2), np.float32),
        policy=np.full((3, 3), 1 / 3, np.float32),
        value=np.array([1, -1, 0], np.float32),
    )
    replay.load_bytes(old)
    assert len(replay) == 3 and replay.total_added == 5
    np.testing.assert_array_equal(replay.data[OUTCOME][:3], [1, -1, 0])
    again = ReplayBuffer(8, {"obs": ((2,), np.float32), POLICY: ((3,), np.float32), OUTCOME: ((), np.float32)})
    again.load_bytes(replay.to_bytes())  # and a new file holds the new name
    np.testing.assert_array_equal(again.data[OUTCOME][:3], [1, -1, 0])


def test_an_ndmz_replay_saved_with_the_old_column_names_loads_under_the_schema():
    layout = ActionLayout(3, 2)
    replay = NDMZReplay(8, (2,), layout, unroll_steps=1)
    n, a = 4, layout.size
    old = {
        "_meta": np.array([n], np.int64),
        "obs": np.ones((n, 2), np.float32),
        "action": np.arange(n),
        "identity": np.array([0, 2, 1, 3]),
        "choice_target": np.full((n, a), 0.25, np.float32),
        "chance_target": np.full((n, a), 0.5, np.float32),
        "value": np.array([1, 1, -1, -1], np.float32),
        "reward": np.zeros(n, np.float32),
        "sampleable": np.array([True, False, True, False]),
        "position": np.arange(n),
        "seg_end": np.full(n, n),
        "done": np.ones(n, bool),
    }
    replay.load_bytes(_npz(**old))
    np.testing.assert_array_equal(replay.data[POLICY][:n], old["choice_target"])
    np.testing.assert_array_equal(replay.data["chance_policy"][:n], old["chance_target"])
    np.testing.assert_array_equal(replay.data[OUTCOME][:n], old["value"])
    batch = replay.sample(6, np.random.default_rng(0))
    assert set(batch) >= {"obs", "actions", "target_policy", "target_value", "target_reward", "weight", "index"}


def _ndmz_segment(n: int, a: int, first: int, sampleable) -> dict[str, np.ndarray]:
    return {
        "obs": np.full((n, 2), first, np.float32),
        "action": np.arange(first, first + n),
        "identity": np.zeros(n, np.int64),
        "policy": np.zeros((n, a), np.float32),
        "chance_policy": np.zeros((n, a), np.float32),
        "outcome": np.zeros(n, np.float32),
        "reward": np.zeros(n, np.float32),
        "sampleable": np.asarray(sampleable),
        "done": np.array([True]),
    }


def test_ndmz_sampling_draws_from_every_sampleable_step_stored_so_far():
    """The sampleable slots are kept between additions: an addition, an overwrite of the
    oldest steps and a load must each be seen by the next minibatch."""
    layout = ActionLayout(3, 2)
    replay = NDMZReplay(6, (2,), layout, unroll_steps=1)
    rng = np.random.default_rng(0)
    replay.add(_ndmz_segment(3, layout.size, 0, [True, False, False]))
    assert set(replay.sample(20, rng)["index"]) == {0}
    replay.add(_ndmz_segment(3, layout.size, 3, [False, True, True]))
    assert set(replay.sample(40, rng)["index"]) == {0, 4, 5}
    replay.add(_ndmz_segment(2, layout.size, 6, [False, True]))  # overwrites slots 0 and 1
    assert set(replay.sample(40, rng)["index"]) == {1, 4, 5}
    fresh = NDMZReplay(6, (2,), layout, unroll_steps=1)
    fresh.add(_ndmz_segment(2, layout.size, 0, [False, True]))
    fresh.sample(4, rng)
    fresh.load_bytes(replay.to_bytes())
    assert set(fresh.sample(40, rng)["index"]) == {1, 4, 5}
