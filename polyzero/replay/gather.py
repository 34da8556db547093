"""A minibatch's rows taken out of a replay's arrays, each example under the board
symmetry drawn for it, in one Numba pass per array.

`polyzero.games.symmetry.augment` does the same in NumPy: a fancy-index gather per
array, then per symmetry a `flatnonzero`, a gather, a take and a scatter per array
(AlphaGo Zero's augmentation; Connect Four's mirror, tic-tac-toe's eight). On the
small learners those ~15 NumPy calls were most of a minibatch's sampling (Student of
Games' CVPN at batch 32: the gathers 0.12 ms and the mirror 0.19 ms inside training's
loop, where the code runs with cold caches after each update; 2026-11-29's journal,
docs/journal/2026-11-29-learner-sampling-loss.md). Here each array is one call that
copies example i's row, or permutes it by the symmetry's index as it copies: the same
values bit for bit (a copy; tests/test_replay_gather.py), the random draws left to the
caller, in the same order as before.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..games.symmetry import Symmetry, apply_symmetries


@nb.njit(cache=True)
def _gather_bytes(sources, outs, table_of, tables, index, pick):
    """outs[a][i] = sources[a][index[i]] for every array a (rows as bytes), the row's
    bytes permuted by tables[table_of[a]][pick[i] - 1] where the array has a table and
    pick[i] > 0 (`apply_symmetries`' gather, element by element)."""
    for a in range(len(sources)):
        src, out, t = sources[a], outs[a], table_of[a]
        for i in range(index.shape[0]):
            row = src[index[i]]
            if t < 0 or pick[i] == 0:
                out[i] = row
            else:
                perm = tables[t][pick[i] - 1]
                target = out[i]
                for j in range(perm.shape[0]):
                    target[j] = row[perm[j]]


def row_tables(symmetries: list[Symmetry], row_size: int, key_kind: str) -> np.ndarray:
    """Each symmetry's gather index over a whole flattened row of `row_size` entries
    [len(symmetries), row_size]: `obs` rows hold one or more observations
    (`obs_index` on each), `policy` rows one or more vectors over the actions
    (`action_index` on the last axis), as `apply_symmetries` reads them."""
    tables = []
    for sym in symmetries:
        perm = sym.obs_index if key_kind == "obs" else sym.action_index
        size = perm.size
        if row_size % size:
            raise ValueError(f"a row of {row_size} entries does not split into pieces of {size}")
        tables.append((np.arange(row_size // size)[:, None] * size + perm[None, :]).reshape(-1))
    return np.asarray(tables, np.int64).reshape(len(symmetries), row_size)


class SymmetricGather:
    """A replay's minibatch transform: gathers the rows at `index` and puts example i
    under symmetries[pick[i] - 1] (0: as stored), the observations of `obs_keys` and
    the last axis of `policy_keys` (`apply_symmetries`' arguments, without action
    keys); the result is `apply_symmetries(arrays[index], pick)`'s bit for bit.

    Called as a transform, `augment`'s replacement (`transform(batch, rng)`: draw the
    symmetries, apply them); a storage that knows it (`ReplayBuffer.sample`) draws
    them with `draw` and hands `gather` its arrays and index, one pass per array."""

    def __init__(self, symmetries: list[Symmetry], obs_keys=("obs",), policy_keys=("policy",)):
        self.symmetries = list(symmetries)
        self.obs_keys, self.policy_keys = tuple(obs_keys), tuple(policy_keys)
        self._tables: dict[tuple[str, int], np.ndarray] = {}
        self._held: tuple | None = None  # (the arrays last gathered from, their `_layout`)

    @property
    def picks(self) -> int:
        """How many choices each example's draw has: the identity and each symmetry."""
        return len(self.symmetries) + 1

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray | None:
        """Each example's symmetry, 0 the identity (`augment`'s draw); None without any."""
        if not self.symmetries:
            return None
        return rng.integers(0, len(self.symmetries) + 1, size=n)

    def __call__(self, batch: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`augment(batch, rng, ...)`: NumPy's draw, then `apply_symmetries`."""
        pick = self.draw(rng, len(next(iter(batch.values()))))
        return (
            batch if pick is None else apply_symmetries(batch, pick, self.symmetries, self.obs_keys, self.policy_keys)
        )

    def table(self, key: str, row_size: int) -> np.ndarray | None:
        """The permutation table of a key's rows, None for keys no symmetry moves."""
        kind = "obs" if key in self.obs_keys else "policy" if key in self.policy_keys else None
        if kind is None or not self.symmetries:
            return None
        if (key, row_size) not in self._tables:
            self._tables[key, row_size] = row_tables(self.symmetries, row_size, kind)
        return self._tables[key, row_size]

    def gather(self, arrays: dict[str, np.ndarray], index: np.ndarray, pick: np.ndarray | None) -> dict:
        """{key: arrays[key][index]}, each example under its symmetry (`pick`; None: as
        stored), every array in one compiled call; fresh arrays, as a fancy index gives."""
        n = len(index)
        outs = {key: np.empty((n, *a.shape[1:]), a.dtype) for key, a in arrays.items()}
        sources, table_of, tables = self._layout(arrays)
        pick = np.zeros(n, np.int64) if pick is None else pick
        _gather_bytes(sources, tuple(map(_as_bytes, outs.values())), table_of, tables, index, pick)
        return outs

    def _layout(self, arrays: dict[str, np.ndarray]):
        """The arrays' rows as bytes and each one's byte permutation table (kept while the
        storage holds the same arrays)."""
        held = tuple(arrays.items())
        if (
            self._held is None
            or len(held) != len(self._held[0])
            or any(k != k0 or a is not a0 for (k, a), (k0, a0) in zip(held, self._held[0]))
        ):
            tables: list[np.ndarray] = []
            table_of: list[int] = []
            for key, a in held:
                table = self.table(key, a[0].size if len(a) else 0)
                table_of.append(-1 if table is None else len(tables))
                if table is not None:  # element k of a row is bytes k * itemsize ... + itemsize - 1
                    size = a.dtype.itemsize
                    tables.append((table[..., None] * size + np.arange(size)).reshape(len(table), -1))
            layout = (
                tuple(_as_bytes(a) for _, a in held),
                np.asarray(table_of, np.int64),
                tuple(tables) or (np.zeros((1, 1), np.int64),),
            )
            self._held = (held, layout)
        return self._held[1]  # type: ignore[index]


def _as_bytes(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array's rows as bytes [len, row bytes] (a view)."""
    return array.reshape(len(array), -1).view(np.uint8)
