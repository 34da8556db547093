"""NumPy's `Generator.choice(n, k, replace=False)` and `Generator.integers(0, n, k)` in
Numba, drawing from the generator's own PCG64 state: the same numbers and the same
state afterwards, bit for bit (tests/test_replay_draws.py compares both, on both of
`choice`'s paths, and tests/test_replay_gather.py the replays' samples), so a replay
can draw and gather a minibatch in one compiled call.

Why: inside training's loop (after each update's network passes) every NumPy call
starts with cold caches, and the generator's methods cost 0.1-0.2 ms each there
(argument handling over a large Cython module) where they take 15-40 us in a tight
loop; a compiled call that draws, sorts and gathers pays that once
(docs/journal/2026-11-29-learner-sampling-loss.md).

What is reproduced (numpy/random/_generator.pyx, src/distributions/distributions.c):
a bounded draw in [0, rng] with rng < 2^32 is Lemire's method on `next_uint32`
(`buffered_bounded_lemire_uint32`; PCG64's `next_uint32` hands out the two halves of
one 64-bit output, which the C function called here keeps in the state as NumPy's
does); `choice` without replacement and with shuffling is Floyd's algorithm over a
hash set followed by a shuffle of the k drawn, or, where n > 10,000 and k > n // 50,
a shuffle of the last k of arange(n); `integers(0, n, k)` is k bounded draws in
[0, n - 1]. The fast path is taken only for a PCG64 generator (`bit_state`). The
kernels hold the GIL (no `nogil`), as NumPy's calls hold the generator's lock: no other
Python thread draws from the generator or writes the replay's arrays meanwhile.
"""

from __future__ import annotations

import ctypes

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def _next_uint32(typingctx, function, state):
    """`function(state)`: a bit generator's `next_uint32` (its C function and state
    given as addresses: a compiled function that holds no pointer caches to disk)."""
    sig = types.uint32(types.intp, types.intp)

    def codegen(context, builder, signature, args):
        byte_ptr = ir.IntType(8).as_pointer()
        fn_type = ir.FunctionType(ir.IntType(32), [byte_ptr])
        fn = builder.inttoptr(args[0], fn_type.as_pointer())
        return builder.call(fn, [builder.inttoptr(args[1], byte_ptr)])

    return sig, codegen


@nb.njit(cache=True)
def bounded(state, rng):
    """A draw in [0, rng] (0 <= rng < 2^32): NumPy's `random_bounded_uint64(state, 0,
    rng, 0, False)`, Lemire's rejection on 32-bit outputs."""
    if rng == 0:
        return np.int64(0)
    if rng == 0xFFFFFFFF:
        return np.int64(_next_uint32(state[0], state[1]))
    rng_excl = np.uint64(rng) + np.uint64(1)
    m = np.uint64(_next_uint32(state[0], state[1])) * rng_excl
    leftover = m & np.uint64(0xFFFFFFFF)
    if leftover < rng_excl:
        threshold = (np.uint64(0xFFFFFFFF) - np.uint64(rng)) % rng_excl
        while leftover < threshold:
            m = np.uint64(_next_uint32(state[0], state[1])) * rng_excl
            leftover = m & np.uint64(0xFFFFFFFF)
    return np.int64(m >> np.uint64(32))


@nb.njit(cache=True)
def choice(state, pop, size):
    """`Generator.choice(pop, size, replace=False)` (shuffle=True), 0 < size <= pop < 2^32."""
    if pop > 10000 and size > pop // 50:  # the tail shuffle
        full = np.arange(pop)
        for i in range(pop - 1, max(pop - size, 1) - 1, -1):
            j = bounded(state, i)
            full[i], full[j] = full[j], full[i]
        return full[pop - size :].copy()
    mask = np.int64(1.2 * size)  # Floyd's algorithm over a hash set of the smallest 2^m > 1.2 size
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> shift
    seen = np.full(mask + 1, -1, np.int64)
    out = np.empty(size, np.int64)
    for j in range(pop - size, pop):
        val = bounded(state, j)
        loc = val & mask
        while seen[loc] != -1 and seen[loc] != val:
            loc = (loc + 1) & mask
        if seen[loc] == -1:
            seen[loc] = val
            out[j - pop + size] = val
        else:  # val was drawn before: j instead
            loc = j & mask
            while seen[loc] != -1:
                loc = (loc + 1) & mask
            seen[loc] = j
            out[j - pop + size] = j
    for i in range(size - 1, 0, -1):  # the shuffle of the drawn
        j = bounded(state, i)
        out[i], out[j] = out[j], out[i]
    return out


@nb.njit(cache=True)
def integers(state, high, size):
    """`Generator.integers(0, high, size)` (int64), 0 < high <= 2^32."""
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = bounded(state, high - 1)
    return out


def bit_state(rng: np.random.Generator) -> np.ndarray | None:
    """The addresses of `rng`'s PCG64 `next_uint32` and of its state, the compiled draws'
    `state` argument; None for another bit generator (its draws stay NumPy's)."""
    bits = getattr(rng, "bit_generator", None)  # a legacy RandomState has none
    if type(bits) is not np.random.PCG64:
        return None
    c = bits.ctypes
    return np.array([ctypes.cast(c.next_uint32, ctypes.c_void_p).value, c.state_address], np.int64)


class StateOf:
    """`bit_state(rng)` kept for the generator last asked about (held, so that its
    address is not another generator's later)."""

    def __init__(self):
        self.rng, self.state = None, None

    def __call__(self, rng: np.random.Generator) -> np.ndarray | None:
        if rng is not self.rng:
            self.rng, self.state = rng, bit_state(rng)
        return self.state

    def __getstate__(self) -> dict:
        """Nothing held in a copy or a pickle: the addresses are this generator's in this
        process, and a copied generator (the same object to its copied holder) has its own."""
        return {"rng": None, "state": None}


@nb.njit(cache=True)
def window_draws(state, alive, size, uses, max_updates, picks):
    """SlidingWindow's draws in one call: `size` distinct slots of `alive`
    (`rng.choice(alive, size, replace=False)`, sorted), each slot's use counted, whether
    one is used up now, and each example's symmetry (`rng.integers(0, picks, size)`;
    none drawn where picks is 1)."""
    index = np.sort(alive[choice(state, alive.shape[0], size)])
    used_up = False
    for i in index:
        uses[i] += 1
        used_up |= uses[i] >= max_updates
    pick = integers(state, picks, size) if picks > 1 else np.zeros(size, np.int64)
    return index, pick, used_up


@nb.njit(cache=True)
def uniform_draws(state, filled, size, picks):
    """ReplayBuffer's draws: `rng.integers(0, filled, size)`, then each example's symmetry."""
    index = integers(state, filled, size)
    pick = integers(state, picks, size) if picks > 1 else np.zeros(size, np.int64)
    return index, pick
