"""Board symmetries for data augmentation.

A symmetry maps a position to one whose value is the same and whose policy is the
same up to a permutation of the actions: Connect Four's left-right mirror, the
eight rotations and reflections of tic-tac-toe's and go's square boards. Each is
stored as two gather indices, so a batch of examples is transformed with one
NumPy take per symmetry: obs'.flat = obs.flat[obs_index], policy' = policy[action_index].
AlphaGo Zero augmented its data this way; AlphaZero did not (docs/alphazero.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyspiel


@dataclass(frozen=True)
class Symmetry:
    obs_index: np.ndarray  # int64 [prod(obs_shape)]
    action_index: np.ndarray  # int64 [num_actions]


def _square_maps(n: int) -> list[np.ndarray]:
    """The 8 dihedral maps of an n x n board as cell gather indices [n * n]."""
    cells = np.arange(n * n).reshape(n, n)
    maps = []
    for flip in (False, True):
        board = cells.T if flip else cells
        for k in range(4):
            maps.append(np.rot90(board, k).reshape(-1))
    return maps


def _column_mirror(rows: int, cols: int) -> np.ndarray:
    return np.arange(rows * cols).reshape(rows, cols)[:, ::-1].reshape(-1)


def _planes(cell_map: np.ndarray, planes: int) -> np.ndarray:
    """The cell map applied to every plane of a (planes, H, W) tensor, as a flat index."""
    cells = len(cell_map)
    return (np.arange(planes)[:, None] * cells + cell_map[None, :]).reshape(-1)


def board_symmetries(game: pyspiel.Game, obs_shape: tuple[int, ...]) -> list[Symmetry]:
    """The game's symmetries other than the identity (empty when none is known)."""
    name = game.get_type().short_name
    if len(obs_shape) != 3:
        return []
    planes, h, w = obs_shape
    actions = game.num_distinct_actions()
    if name == "connect_four":  # actions are columns
        cell = _column_mirror(h, w)
        return [Symmetry(_planes(cell, planes), np.arange(w)[::-1].copy())]
    if name in ("tic_tac_toe", "go") and h == w and actions in (h * w, h * w + 1):
        out = []
        for cell in _square_maps(h)[1:]:
            act = np.arange(actions)
            act[: h * w] = cell  # go's pass (the last action) stays
            out.append(Symmetry(_planes(cell, planes), act))
        return out
    return []


def action_planes(game: pyspiel.Game, obs_shape: tuple[int, ...]) -> np.ndarray | None:
    """Where each action acts on the board, as float32 [num_actions, H * W] masks: the
    plane MuZero's dynamics reads beside the hidden state (Appendix E: Go's stone as a
    one at its point). Connect Four's action is a column, which the piece can land
    anywhere in: the whole column. None where actions are not known to be spatial."""
    if len(obs_shape) != 3:
        return None
    _, h, w = obs_shape
    actions = game.num_distinct_actions()
    if game.get_type().short_name == "connect_four" and actions == w:
        return np.tile(np.eye(w, dtype=np.float32), (1, h))  # row-major: column a of every row
    if actions == h * w:  # one action per cell: tic-tac-toe, hex, ...
        return np.eye(actions, dtype=np.float32)
    return None


def augment(
    batch: dict[str, np.ndarray],
    rng: np.random.Generator,
    symmetries: list[Symmetry],
    obs_keys: tuple[str, ...] = ("obs",),
    policy_keys: tuple[str, ...] = ("policy",),
    action_keys: tuple[str, ...] = (),
) -> dict[str, np.ndarray]:
    """Each example under a uniformly drawn symmetry or the identity (in place)."""
    if not symmetries:
        return batch
    pick = rng.integers(0, len(symmetries) + 1, size=len(batch[obs_keys[0]]))  # 0: the identity
    return apply_symmetries(batch, pick, symmetries, obs_keys, policy_keys, action_keys)


def apply_symmetries(
    batch: dict[str, np.ndarray],
    pick: np.ndarray,
    symmetries: list[Symmetry],
    obs_keys: tuple[str, ...] = ("obs",),
    policy_keys: tuple[str, ...] = ("policy",),
    action_keys: tuple[str, ...] = (),
) -> dict[str, np.ndarray]:
    """Example i under symmetries[pick[i] - 1] (0: unchanged), in place: its observations
    (each array of `obs_keys` holds one or more per example: [B, ..., *obs_shape]),
    the last axis of each policy array (AlphaZero's policy, MuZero's K + 1 unrolled
    policies) and each array of actions taken (MuZero's unrolled actions: the move a is
    seen as the move whose policy entry a's lands on)."""
    if not symmetries:
        return batch
    size = symmetries[0].obs_index.size
    flats = [batch[key].reshape(len(batch[key]), -1, size) for key in obs_keys]
    for k, sym in enumerate(symmetries, start=1):
        rows = np.flatnonzero(pick == k)
        if not len(rows):
            continue
        for flat in flats:
            flat[rows] = flat[rows][..., sym.obs_index]
        for key in policy_keys:
            batch[key][rows] = batch[key][rows][..., sym.action_index]
        seen_as = np.argsort(sym.action_index)
        for key in action_keys:
            batch[key][rows] = seen_as[batch[key][rows]]
    return batch
