"""A ring of game segments in trajectory order: the storage MuZero's and NDMZ's
replays share.

Each segment (a finished game, or a chunk of a long one) is stored contiguously,
so the steps that follow a stored position are found by index: position t + k of
the segment holding slot s sits in slot (s + k) mod capacity, and is still the
same segment's as long as t + k is before the segment's end (newer segments
overwrite the oldest slots first, never the ones after a live position).
"""

from __future__ import annotations

import io
import os
from typing import Any, BinaryIO

import numpy as np

from .npz import read_into
from .schema import stored_name


class SegmentRing:
    # Per-position arrays a segment brings (besides "sampleable"), set by subclasses.
    STEP_KEYS: tuple[str, ...] = ()
    # Arrays a checkpoint written before they existed lacks: they load as zeros.
    OPTIONAL_KEYS: tuple[str, ...] = ()

    def __init__(self, capacity: int, arrays: dict[str, np.ndarray]):
        self.capacity = capacity
        c = capacity
        self.data = {
            **arrays,
            "sampleable": np.zeros(c, np.bool_),  # False for a chunk's look-ahead context
            "position": np.zeros(c, np.int64),  # absolute index of this position
            "seg_end": np.zeros(c, np.int64),  # absolute index one past the segment's end
            "done": np.zeros(c, np.bool_),  # the segment ends where its episode ended
        }
        self.next_abs = 0  # absolute index the next position gets
        self._sampleable_slots = None  # cache of sampleable_slots(), dropped when the ring changes

    def __len__(self) -> int:
        return min(self.next_abs, self.capacity)

    @property
    def total_added(self) -> int:
        return self.next_abs

    def add(self, segment: dict[str, np.ndarray]) -> int:
        """Store one segment (its STEP_KEYS arrays, `sampleable`, and a flag `done`);
        returns how many sampleable positions it added."""
        n = len(segment["action"])
        if n == 0:
            return 0
        if n > self.capacity:
            raise ValueError(f"a segment of {n} positions does not fit a replay of {self.capacity}")
        absolute = self.next_abs + np.arange(n)
        slots = absolute % self.capacity
        d = self.data
        for key in self.STEP_KEYS + ("sampleable",):
            d[key][slots] = segment[key]
        d["position"][slots] = absolute
        d["seg_end"][slots] = self.next_abs + n
        d["done"][slots] = bool(np.asarray(segment["done"]).reshape(-1)[0])
        self._stored(slots)
        self.next_abs += n
        self._sampleable_slots = None
        return int(np.count_nonzero(segment["sampleable"]))

    def sampleable_slots(self) -> np.ndarray:
        """The slots of the stored sampleable positions, in slot order (kept between
        additions: finding them reads the whole ring, which costs more than a minibatch)."""
        if self._sampleable_slots is None:
            self._sampleable_slots = np.flatnonzero(self.data["sampleable"][: len(self)])
        return self._sampleable_slots

    def _stored(self, slots: np.ndarray) -> None:
        """Hook: `slots` were just written (a prioritized replay sets their priority)."""

    def unroll_index(self, slots: np.ndarray, k_steps: int):
        """For t + k, k = 0..K after each slot: absolute positions [B, K+1], segment
        ends [B, 1], whether t + k is inside the segment, and its ring slot."""
        ks = np.arange(k_steps + 1)
        pos = self.data["position"][slots][:, None] + ks
        end = self.data["seg_end"][slots][:, None]
        return pos, end, pos < end, (slots[:, None] + ks) % self.capacity

    def last_slot(self, slots: np.ndarray) -> np.ndarray:
        """[B, 1]: the ring slot of the last position of each slot's segment."""
        d = self.data
        return (slots[:, None] + (d["seg_end"][slots][:, None] - 1 - d["position"][slots][:, None])) % self.capacity

    # ------------------------------------------------------------ persistence
    def _extra_state(self) -> dict[str, np.ndarray]:
        return {}

    def _load_extra_state(self, arrays) -> None:
        pass

    def write_npz(self, fh: BinaryIO) -> None:
        """Write the ring as an npz into the open binary file `fh` (a checkpoint's
        `replay.npz` is written so: array by array, never whole in memory)."""
        filled = len(self)
        arrays: dict[str, Any] = {**self._extra_state(), **{k: v[:filled] for k, v in self.data.items()}}
        np.savez(fh, _meta=np.array([self.next_abs], np.int64), **arrays)

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        self.write_npz(buf)
        return buf.getvalue()

    def load_bytes(self, raw: bytes) -> None:
        self.load_npz(io.BytesIO(raw))

    def load_npz(self, file: str | os.PathLike | BinaryIO) -> None:
        """Load what `write_npz` wrote, from a path or an open binary file, each array
        straight into the ring (`npz.read_into`: no second copy of it in memory)."""
        with np.load(file, allow_pickle=False) as f:
            next_abs = int(f["_meta"][0])
            filled = min(next_abs, self.capacity)
            for k, arr in self.data.items():
                name = stored_name(f.files, type(self).__name__, k)
                if name is None and k in self.OPTIONAL_KEYS:
                    arr[:] = 0
                    continue
                name = name or k
                if name in f.files and read_into(f, name, arr[:filled]):  # saved with its shape
                    continue
                saved = f[name]
                if saved.shape[0] != filled or saved.shape[1:] != arr.shape[1:]:
                    raise ValueError(
                        f"checkpointed replay array {k!r} has shape {saved.shape}, "
                        f"expected ({filled}, {', '.join(map(str, arr.shape[1:]))})"
                    )
                arr[:filled] = saved
            self._load_extra_state(f)
        self.next_abs = next_abs
        self._sampleable_slots = None
