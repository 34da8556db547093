"""polyzero/replay/draws.py's compiled draws against NumPy's own calls on the same
PCG64 state: the same numbers and the same generator state after (the 32-bit half
NumPy buffers included), on both of `choice`'s paths (Floyd's hash set and the tail
shuffle), so that a checkpoint's `bit_generator.state` and a resumed run's draws are
those of NumPy's calls."""

import copy as copy_module
import pickle

import numpy as np
import pytest

from polyzero.replay import ReplayBuffer
from polyzero.replay.draws import bit_state, choice, integers, uniform_draws, window_draws


@pytest.mark.parametrize(
    "pop, size",
    [(1, 1), (5, 5), (48, 8), (9000, 32), (10001, 201), (20000, 32), (20000, 401), (70000, 2000), (2**20, 64)],
)
def test_choice_draws_numpys_numbers_and_leaves_its_state(pop, size):
    ours, numpys = np.random.default_rng(pop), np.random.default_rng(pop)
    state = bit_state(ours)
    for _ in range(3):
        assert np.array_equal(choice(state, pop, size), numpys.choice(pop, size, replace=False))
        assert ours.bit_generator.state == numpys.bit_generator.state


@pytest.mark.parametrize(
    "high, size", [(1, 4), (2, 7), (3, 33), (256, 32), (2**16 + 3, 65), (2**31 - 1, 9), (2**32, 5)]
)
def test_integers_draws_numpys_numbers_and_leaves_its_state(high, size):
    ours, numpys = np.random.default_rng(high), np.random.default_rng(high)
    state = bit_state(ours)
    for _ in range(3):
        numpys_draw = numpys.integers(0, high, size=size)
        assert numpys_draw.dtype == np.int64
        assert np.array_equal(integers(state, high, size), numpys_draw)
        assert ours.bit_generator.state == numpys.bit_generator.state  # has_uint32 / uinteger too


def test_a_state_restored_from_a_checkpoint_draws_on_alike():
    """Draws compiled and NumPy's interleave on one generator; a state saved midway and
    set on a fresh generator (what a checkpoint's resume does) continues alike."""
    rng = np.random.default_rng(11)
    rng.integers(0, 7, size=3)  # an odd count of 32-bit draws: half an output buffered
    saved = rng.bit_generator.state
    assert saved["has_uint32"] == 1
    runs = []
    for compiled in (True, False):
        resumed = np.random.default_rng(0)
        resumed.bit_generator.state = saved
        state = bit_state(resumed)
        if compiled:
            index, pick = uniform_draws(state, 300, 32, 2)
            uses = np.zeros(120, np.int64)  # a use count per slot (the window's capacity)
            slots, pick2, _ = window_draws(state, np.arange(40) * 3, 9, uses, 5, 8)
            assert uses.sum() == 9 and np.all(uses[slots] == 1)  # each drawn slot's use counted
        else:
            index, pick = resumed.integers(0, 300, size=32), resumed.integers(0, 2, size=32)
            slots, pick2 = np.sort(resumed.choice(np.arange(40) * 3, 9, replace=False)), resumed.integers(0, 8, size=9)
        runs.append((index, pick, slots, pick2, resumed.random(), resumed.bit_generator.state))
    (a, b) = runs
    for x, y in zip(a[:4], b[:4]):
        assert np.array_equal(x, y)
    assert a[4] == b[4] and a[5] == b[5]


def test_another_bit_generator_has_no_compiled_state():
    assert bit_state(np.random.Generator(np.random.MT19937(0))) is None
    assert bit_state(np.random.Generator(np.random.PCG64DXSM(0))) is None
    assert bit_state(np.random.RandomState(0)) is None


def test_a_copied_replay_draws_from_the_copied_generator():
    """A replay and its generator deep-copied (or pickled) together: the copy's compiled
    draws move the copy's generator, not the original's (the held addresses are not copied)."""
    specs = {"obs": ((3,), np.float32), "outcome": ((), np.float32)}
    replay = ReplayBuffer(64, specs)
    replay.add({"obs": np.arange(96, dtype=np.float32).reshape(32, 3), "outcome": np.arange(32, dtype=np.float32)})
    rng = np.random.default_rng(4)
    replay.sample(8, rng)  # the addresses of rng's state now held
    copies = [copy_module.deepcopy((replay, rng)), pickle.loads(pickle.dumps((replay, rng)))]
    before, got = rng.bit_generator.state, []
    for other, other_rng in copies:
        got.append(other.sample(8, other_rng))
        assert rng.bit_generator.state == before
    want = replay.sample(8, rng)
    assert all(np.array_equal(g[k], want[k]) for g in got for k in want)
