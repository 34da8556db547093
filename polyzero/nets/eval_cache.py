"""A cache of network outputs by input row (the neural-network cache of Leela Chess
Zero and KataGo): self-play searches the same positions again and again, within a
move (the same opening in every game, the same replies in many trees) and across
moves (the subtree under the move played was expanded by the previous search), and
a network is a pure function of its input, so an evaluation computed once can be
read back instead of recomputed (`net.cache`, docs/configuration.md).

Exact: a hit returns the outputs the network gave that input, bit for bit. Under
ONNX Runtime a row's outputs do not depend on the other rows of its batch, so a
cached search is the uncached one (tests/test_eval_cache.py); under eager PyTorch
they may differ in the last bits between batch sizes. The owner clears the cache
whenever the weights change (:meth:`Evaluator.load_state_dict`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

EvaluateFn = Callable[[np.ndarray], tuple[np.ndarray, ...]]


_ONE_F32 = np.float32(1).view(np.uint32)


def row_keys(obs: np.ndarray) -> list[bytes]:
    """One hashable key per row of `obs`, equal exactly when the rows' bytes are equal.
    float32 rows of +0.0s and 1.0s only (board planes) are packed to bits, 32x shorter;
    others keep their bytes (the two forms differ in length, so they never collide)."""
    n = len(obs)
    if n == 0 or obs.size == 0:
        return [b""] * n
    flat = np.ascontiguousarray(obs).reshape(n, -1)
    if flat.dtype == np.float32:
        bits = flat.view(np.uint32)
        if ((bits == 0) | (bits == _ONE_F32)).all():
            flat = np.packbits(bits != 0, axis=1)
    # one bytes object per row in a single call (slicing one buffer per row costs ~30x more)
    return flat.view(f"V{flat.shape[1] * flat.itemsize}").ravel().tolist()


class EvaluationCache:
    """The outputs of the last `capacity` distinct input rows evaluated, evicted first in,
    first out (a ring of table slots). Outputs are any number of arrays with the batch
    first (AlphaZero's evaluator: logits [M, A], value [M]). Not thread-safe: one
    evaluator per thread, as each self-play actor, player and engine search has."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"cache capacity must be positive, not {capacity}")
        self.capacity = capacity
        self._slot_of: dict[bytes, int] = {}
        self._key_in: list[bytes | None] = [None] * capacity
        self._next = 0
        self._tables: list[np.ndarray] | None = None
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        """Forget every output (the weights changed); the counters stay."""
        self._slot_of.clear()
        self._key_in = [None] * self.capacity
        self._next = 0

    def __call__(self, obs: np.ndarray, evaluate: EvaluateFn) -> tuple[np.ndarray, ...]:
        """`evaluate(obs)`, computing only the rows not seen before (each distinct one once)."""
        n = len(obs)
        if n == 0:
            return evaluate(obs)
        keys = row_keys(obs)
        slot_of = self._slot_of
        slots = np.fromiter((slot_of.get(k, -1) for k in keys), np.int64, n)
        missing = np.flatnonzero(slots < 0)
        first: dict[bytes, int] = {}  # each distinct missing row, by its first occurrence
        for i in missing.tolist():
            first.setdefault(keys[i], i)
        new_rows = np.fromiter(first.values(), np.int64, len(first))
        self.misses += len(new_rows)  # rows evaluated
        self.hits += n - len(new_rows)  # rows read back (or repeated within this call)
        if len(new_rows) > self.capacity:
            return evaluate(obs)  # more new rows than the cache holds
        computed = evaluate(obs[new_rows]) if len(new_rows) else ()
        if self._tables is None:  # the first call: every row missed, so computed is set
            self._tables = [np.zeros((self.capacity, *c.shape[1:]), c.dtype) for c in computed]
        tables = self._tables
        # Read the hits before storing: storing may evict a slot this call hit.
        hit = slots >= 0
        outs = [np.empty((n, *t.shape[1:]), t.dtype) for t in tables]
        for out, table in zip(outs, tables):
            out[hit] = table[slots[hit]]
        if len(new_rows):
            self._store(tables, list(first), computed)
            # every missing row reads its outputs from the slot its key went to
            where = np.fromiter((slot_of[keys[i]] for i in missing.tolist()), np.int64, len(missing))
            for out, table in zip(outs, tables):
                out[missing] = table[where]
        return tuple(outs)

    def _store(self, tables: list[np.ndarray], keys: list[bytes], computed: tuple[np.ndarray, ...]) -> None:
        """Write the rows of `computed` (one per key) into the next slots of the ring
        (at most `capacity` rows, so none of them evicts another)."""
        m = len(keys)
        slots = (self._next + np.arange(m)) % self.capacity
        self._next = int((self._next + m) % self.capacity)
        for table, values in zip(tables, computed):
            table[slots] = values
        key_in, slot_of = self._key_in, self._slot_of
        for key, slot in zip(keys, slots.tolist()):
            old = key_in[slot]
            if old is not None:
                del slot_of[old]
            key_in[slot] = key
            slot_of[key] = slot
