"""Batched observation tensors and legal-action masks for search and training."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyspiel
from open_spiel.python.observation import make_observation

from polyzero.errors import UsageError


def _check_out(out: np.ndarray, n: int, shape: tuple, dtype) -> np.ndarray:
    # A preallocated buffer may be larger than the batch (fixed-size buffers, variable
    # batches); we write its first n rows. It must be contiguous so a flat view aliases it.
    if out.dtype != dtype or out.shape[1:] != shape or out.shape[0] < n:
        raise ValueError(f"out must be {np.dtype(dtype).name} [>= {n}, *{shape}], got {out.dtype} {out.shape}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    return out[:n]


# Two-player games whose observation is the same for both players and whose rules
# are the same for both colours: the two colours' stone planes, swapped when the
# second player moves, give "my stones, their stones" (OpenSpiel's plane order).
COLOUR_PLANES = {"connect_four": (0, 1), "tic_tac_toe": (2, 1)}
# Games whose shared observation already says who moves (go: its fourth plane).
MOVER_IN_OBSERVATION = {"go"}
PERSPECTIVES = ("mover", "raw")


class ObservationEncoder:
    """Encodes states as float32 tensors from the perspective of the player to move.

    Shape is (C, H, W) for 3-D OpenSpiel observations, (1, H, W) for 2-D ones and (D,)
    otherwise. Terminal (and chance/simultaneous) nodes are encoded for player 0.
    Not thread-safe: one reusable pyspiel observer buffer backs every call.

    Many two-player OpenSpiel games (connect_four, tic_tac_toe, hex, breakthrough)
    give both players the same observation, with no word of who moves, while every
    value the network learns is the mover's. With `perspective = "mover"` such a
    game's colour planes are swapped when the second player moves (COLOUR_PLANES),
    or, where colours are not interchangeable, one more plane (or entry) says who
    moves: 1 for the second player. `"raw"` is OpenSpiel's tensor as it is (what
    runs saved before the option read).
    """

    def __init__(self, game: pyspiel.Game, perspective: str = "mover"):
        if not game.get_type().provides_observation_tensor:
            raise UsageError(f"game {game.get_type().short_name!r} provides no observation tensor")
        if perspective not in PERSPECTIVES:
            raise ValueError(f"perspective must be one of {PERSPECTIVES}, not {perspective!r}")
        raw = tuple(game.observation_tensor_shape())
        self.size = math.prod(raw)
        self.shape: tuple[int, ...]
        if len(raw) == 3:
            self.shape = raw
        elif len(raw) == 2:
            self.shape = (1, *raw)
        else:
            self.shape = (self.size,)
        self.swap: tuple[int, int] | None = None
        self.mover_entry = False
        name = game.get_type().short_name
        if perspective == "mover" and name not in MOVER_IN_OBSERVATION and _shared_view(game):
            if name in COLOUR_PLANES and len(self.shape) == 3:
                self.swap = COLOUR_PLANES[name]
            else:
                self.mover_entry = True
                self.shape = (self.shape[0] + 1, *self.shape[1:])
        self.is_spatial = len(self.shape) == 3
        # The observer API fills one preallocated buffer in C++: ~1.3 us a state against
        # 3-55 us for state.observation_tensor(), which builds a Python list (go 9x9: 1.3
        # vs 14.5 us, chess 1.8 vs 55 us). Fall back when a game has no such observer.
        obs = make_observation(game)
        tensor = getattr(obs, "tensor", None)
        self._obs = obs if tensor is not None and np.size(tensor) == self.size else None

    def encode(
        self, states: Sequence[pyspiel.State], out: np.ndarray | None = None, players: Sequence[int] | None = None
    ) -> np.ndarray:
        """float32 [len(states), *shape]; written into `out` (first rows) when given.
        `players`: whose perspective each state is encoded from (default: the player to
        move; a terminal state has none, so pass one to encode it other than for player 0)."""
        n = len(states)
        if out is None:
            out = np.empty((n, *self.shape), np.float32)
        else:
            out = _check_out(out, n, self.shape, np.float32)
        rows = out.reshape(n, -1)  # a view: out is contiguous
        flat = rows[:, : self.size]
        players = [s.current_player() for s in states] if players is None else list(players)
        obs = self._obs
        if obs is not None:
            tensor, set_from = obs.tensor, obs.set_from
            for i, (s, p) in enumerate(zip(states, players)):
                set_from(s, p if p >= 0 else 0)
                flat[i] = tensor
        else:
            for i, (s, p) in enumerate(zip(states, players)):
                flat[i] = s.observation_tensor(p if p >= 0 else 0)
        if self.swap is not None or self.mover_entry:
            second = np.array(players, np.int64) == 1
            if self.mover_entry:
                rows[:, self.size :] = second[:, None]
            elif second.any() and self.swap is not None:
                a, b = self.swap
                out[second, a], out[second, b] = out[second, b], out[second, a]
        return out

    def encode_one(self, state: pyspiel.State) -> np.ndarray:
        """float32 [*shape] for a single state."""
        return self.encode([state])[0]


def _shared_view(game: pyspiel.Game) -> bool:
    """Whether a two-player game shows both players the same observation: compared
    after the first decision (at the start a board is often empty either way)."""
    if game.num_players() != 2:
        return False
    state, decisions = game.new_initial_state(), 0
    for _ in range(50):
        if state.is_terminal():
            return False
        if not state.is_chance_node() and state.current_player() >= 0:
            if decisions == 1:
                return state.observation_tensor(0) == state.observation_tensor(1)
            decisions += 1
        state.apply_action(state.legal_actions()[0])
    return False


def legal_action_mask(states: Sequence[pyspiel.State], num_actions: int, out: np.ndarray | None = None) -> np.ndarray:
    """bool [B, num_actions]: True where the player to move may act.

    Terminal and chance nodes have no player action, so their rows are all False.
    """
    n = len(states)
    if out is None:
        out = np.zeros((n, num_actions), bool)
    else:
        out = _check_out(out, n, (num_actions,), np.bool_)
        out[:] = False
    # legal_actions_mask() is ~2x faster than scattering legal_actions() (go 9x9), and one
    # conversion of all the rows ~7x faster than a scatter per row (connect four, 64 rows).
    masks = [None if s.is_terminal() or s.is_chance_node() else s.legal_actions_mask() for s in states]
    if n and all(m is not None and len(m) == num_actions for m in masks):
        out[:] = masks
        return out
    for i, m in enumerate(masks):
        if m is not None:
            out[i, : len(m)] = m
    return out
