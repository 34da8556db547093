"""A uniform experience replay buffer of fixed size |B| over named arrays (AlphaZero's
positions; columns named by `polyzero.replay.schema`)."""

from __future__ import annotations

import io
import os
from typing import Any, BinaryIO

import numpy as np

from .draws import StateOf, uniform_draws
from .gather import SymmetricGather
from .npz import read_into
from .schema import stored_name


class ReplayBuffer:
    """Ring buffer of examples; the oldest are overwritten once full."""

    def __init__(self, capacity: int, specs: dict[str, tuple[tuple[int, ...], type]], transform=None):
        """`transform(batch, rng)`, when given, changes each sampled batch (augmentation;
        a `SymmetricGather` gathers and transforms in one pass per array, the same arrays)."""
        self.capacity = capacity
        self.transform = transform
        self.data: dict[str, np.ndarray] = {
            k: np.zeros((capacity, *shape), dtype) for k, (shape, dtype) in specs.items()
        }
        self.size = 0
        self.next = 0  # slot the next example goes to
        self.total_added = 0
        self._plain = SymmetricGather([])  # the gather without symmetries
        self._state_of = StateOf()

    def __len__(self) -> int:
        return self.size

    def add(self, examples: dict[str, np.ndarray]) -> int:
        """Store the examples; returns how many were added."""
        n = len(next(iter(examples.values())))
        if n == 0:
            return 0
        if n > self.capacity:  # only the newest fit
            examples = {k: v[-self.capacity :] for k, v in examples.items()}
            n = self.capacity
        idx = (self.next + np.arange(n)) % self.capacity
        for k, arr in self.data.items():
            arr[idx] = examples[k]
        self.next = (self.next + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
        self.total_added += n
        return n

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        gather = self._plain if self.transform is None else self.transform
        state = self._state_of(rng) if isinstance(gather, SymmetricGather) else None
        if state is not None:  # drawn and gathered in two compiled calls (replay/draws.py, gather.py)
            idx, pick = uniform_draws(state, self.size, n, gather.picks)
            return gather.gather(self.data, idx, pick)
        idx = rng.integers(0, self.size, size=n)
        batch = {k: v[idx] for k, v in self.data.items()}
        return self.transform(batch, rng) if self.transform is not None else batch

    # ------------------------------------------------------------ persistence
    def write_npz(self, fh: BinaryIO) -> None:
        """Write the buffer as an npz into the open binary file `fh` (a checkpoint's
        `replay.npz` is written so: array by array, never whole in memory)."""
        meta = np.array([self.size, self.next, self.total_added], np.int64)
        arrays: dict[str, Any] = {k: v[: self.size] for k, v in self.data.items()}
        np.savez(fh, _meta=meta, **arrays)

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        self.write_npz(buf)
        return buf.getvalue()

    def load_bytes(self, raw: bytes) -> None:
        self.load_npz(io.BytesIO(raw))

    def load_npz(self, file: str | os.PathLike | BinaryIO) -> None:
        """Load what `write_npz` wrote, from a path or an open binary file, each array
        straight into the buffer (`npz.read_into`: no second copy of it in memory)."""
        with np.load(file, allow_pickle=False) as f:
            size, nxt, total = (int(x) for x in f["_meta"])
            if size > self.capacity:
                raise ValueError(f"checkpointed replay holds {size} examples, more than capacity {self.capacity}")
            for k, arr in self.data.items():
                name = stored_name(f.files, type(self).__name__, k) or k
                if name not in f.files or not read_into(f, name, arr[:size]):
                    arr[:size] = f[name]
        self.size, self.next, self.total_added = size, nxt % self.capacity, total
