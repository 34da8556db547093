"""polyzero/replay/gather.py: a minibatch gathered under the drawn symmetries in one
pass per array equals NumPy's fancy index and `apply_symmetries` bit for bit, and the
replays that use it draw what they drew before."""

import numpy as np
import pytest

from polyzero.games import load_game
from polyzero.games.symmetry import augment, board_symmetries
from polyzero.replay import ReplayBuffer
from polyzero.replay.gather import SymmetricGather


def _arrays(rng, n, obs_shape, actions):
    return {
        "obs": rng.standard_normal((n, *obs_shape)).astype(np.float32),
        "policy": rng.random((n, 2, actions)).astype(np.float32),  # two policies per example
        "legal": rng.random((n, actions)) < 0.5,
        "outcome": rng.standard_normal(n).astype(np.float32),
        "player": rng.integers(0, 2, n),
    }


@pytest.mark.parametrize("game, shape", [("connect_four", (3, 6, 7)), ("tic_tac_toe", (3, 3, 3))])
def test_the_gather_equals_fancy_index_then_apply_symmetries(game, shape):
    symmetries = board_symmetries(load_game(game), shape)
    assert symmetries
    rng = np.random.default_rng(0)
    actions = symmetries[0].action_index.size
    arrays = _arrays(rng, 50, shape, actions)
    gather = SymmetricGather(symmetries, obs_keys=("obs",), policy_keys=("policy", "legal"))
    for _ in range(5):
        index = rng.integers(0, 50, 17)
        seen = []
        for fast in (True, False):
            draws = np.random.default_rng(7)
            if fast:
                seen.append(gather.gather(arrays, index, gather.draw(draws, len(index))))
            else:
                batch = {k: v[index] for k, v in arrays.items()}
                seen.append(augment(batch, draws, symmetries, obs_keys=("obs",), policy_keys=("policy", "legal")))
        got, want = seen
        assert got.keys() == want.keys()
        for k in want:
            assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
            assert got[k].tobytes() == want[k].tobytes(), k
    # the mirror did move something: a gather without symmetries differs
    plain = SymmetricGather([]).gather(arrays, index, None)
    assert all(np.array_equal(plain[k], arrays[k][index]) for k in arrays)
    assert not np.array_equal(plain["obs"], got["obs"])


def test_a_replay_with_the_gather_samples_what_augment_gave():
    game = load_game("connect_four")
    symmetries = board_symmetries(game, (3, 6, 7))
    specs = {"obs": ((3, 6, 7), np.float32), "policy": ((7,), np.float32), "outcome": ((), np.float32)}
    rng = np.random.default_rng(1)
    data = {k: rng.random((300, *shape)).astype(dtype) for k, (shape, dtype) in specs.items()}
    replays = [
        ReplayBuffer(256, specs, SymmetricGather(symmetries)),
        ReplayBuffer(256, specs, lambda b, r: augment(b, r, symmetries)),
    ]
    for replay in replays:
        replay.add(data)
    for bits in (np.random.PCG64, np.random.MT19937):  # the compiled draws, and NumPy's for another generator
        draws = [np.random.Generator(bits(3)), np.random.Generator(bits(3))]
        for _ in range(4):
            got, want = (r.sample(32, d) for r, d in zip(replays, draws))
            assert all(got[k].tobytes() == want[k].tobytes() for k in want)
        assert draws[0].random() == draws[1].random()  # the same state after


@pytest.mark.parametrize("size, draw", [(20, 7), (9000, 32), (65536, 32), (65536, 128), (70000, 2000)])
def test_choice_of_an_array_is_the_array_at_the_choice_of_its_length(size, draw):
    """SlidingWindow.sample draws `alive[rng.choice(len(alive), ...)]`: the draws of
    `rng.choice(alive, ...)` (both of NumPy's paths: Floyd's and the tail shuffle)."""
    alive = np.sort(np.random.default_rng(size).choice(size * 2, size, replace=False))
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(3):
        assert np.array_equal(a.choice(alive, draw, replace=False), alive[b.choice(len(alive), draw, replace=False)])
    assert a.random() == b.random()
