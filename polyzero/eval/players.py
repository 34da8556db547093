"""Players: anything that picks moves for a batch of concurrent games.

Reference players (`random`, `mcts:SIMS`, `mcts-solver:SIMS`; `optimal` for Nannon) live here; learned
agents come from loaders named in `polyzero.plugins` (imported on first use) or
added with `register_player_loader`, so this layer does not import the training code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import pyspiel

from ..errors import UsageError

__all__ = [
    "Player",
    "RandomPlayer",
    "MCTSPlayer",
    "OptimalPlayer",
    "reference_player",
    "register_player_loader",
    "make_player",
]


class Player(Protocol):
    """Batched player: `act` gets every game where it is to move in one call,
    so learned agents can answer with one batched tree search."""

    name: str

    def reset(self, seed: int) -> None: ...

    def act(self, states: Sequence[pyspiel.State]) -> list[int]: ...


class RandomPlayer:
    """Uniform over the legal actions."""

    reads_hidden_state = False  # legal actions are part of the information state

    def __init__(self, seed: int = 0):
        self.name = "random"
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        out = []
        for state in states:
            legal = state.legal_actions()
            out.append(int(legal[self._rng.integers(len(legal))]))
        return out


class MCTSPlayer:
    """OpenSpiel's C++ MCTS with random rollouts; `solve=True` is MCTS-Solver.

    The bot keeps no tree between moves, so one bot serves every concurrent game.
    Games written in Python (Nannon, Scotland Yard, ...) get OpenSpiel's Python
    MCTS with the same settings: its C++ bot crashes on them in this build.
    It searches the true state, so it is refused on games with hidden information.
    """

    reads_hidden_state = True

    def __init__(self, game, simulations: int, solve: bool, uct_c: float = 2.0, rollouts: int = 1, seed: int = 0):
        self.game = game
        self.simulations = simulations
        self.solve = solve
        self.uct_c = uct_c
        self.rollouts = rollouts
        self.name = f"{'mcts-solver' if solve else 'mcts'}:{simulations}"
        self.reset(seed)

    def reset(self, seed: int) -> None:
        # Evaluator and bot both keep RNGs; rebuild them so a reset replays exactly.
        if type(self.game).__module__.startswith("pyspiel"):
            self._evaluator = pyspiel.RandomRolloutEvaluator(self.rollouts, seed)
            self._bot = pyspiel.MCTSBot(
                self.game, self._evaluator, self.uct_c, self.simulations, 1000, self.solve, seed, False
            )
            return
        from open_spiel.python.algorithms import mcts

        rng = np.random.RandomState(seed)
        self._bot = mcts.MCTSBot(
            self.game,
            self.uct_c,
            self.simulations,
            mcts.RandomRolloutEvaluator(self.rollouts, rng),
            solve=self.solve,
            random_state=rng,
        )

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        return [int(self._bot.step(state)) for state in states]


class OptimalPlayer:
    """Nannon's optimal player: the policy of exact value iteration
    (polyzero.games.nannon_solver; the NDMZ paper's reference opponent, Section 4.1).
    Solved once per parameter set and cached on disk (`polyzero solve`)."""

    reads_hidden_state = False  # Nannon has perfect information

    def __init__(self, game, seed: int = 0):
        import sys

        from ..games.nannon_solver import shared_solution

        if game.get_type().short_name != "nannon":
            raise UsageError(
                f"player 'optimal' needs a nannon game (an exact solution); '{game.get_type().short_name}' has none"
            )
        self.name = "optimal"
        self.solution = shared_solution(game, progress=sys.stderr.isatty())

    def reset(self, seed: int) -> None:
        pass  # deterministic

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        return [self.solution.action(state) for state in states]


def reference_player(spec: str, game, seed: int = 0) -> Player | None:
    """`random`, `optimal` (Nannon), `sy-heuristic` (Scotland Yard), `mcts:SIMS`, `mcts-solver:SIMS`, else the reference
    loaders `polyzero.plugins` names (Student of Games' `cfr:ITERS`, `ismcts:SIMS`,
    `sog:S,C`; external engines' `gtp:`, `uci:`, ...); None otherwise."""
    if spec == "random":
        return RandomPlayer(seed)
    if spec == "optimal":
        return OptimalPlayer(game, seed)
    if spec == "sy-heuristic":
        from ..games.scotland_yard_heuristic import ScotlandYardHeuristicPlayer

        return ScotlandYardHeuristicPlayer(game, seed)
    kind, sep, sims = spec.partition(":")
    if sep and kind in ("mcts", "mcts-solver"):
        from ..validation import spec_count

        return MCTSPlayer(game, spec_count(spec, sims, "simulations"), solve=(kind == "mcts-solver"), seed=seed)
    for loader in _loaders(reference=True):
        player = loader(spec, game, seed)
        if player is not None:
            return player
    return None


Loader = Callable[[str, object, int], "Player | None"]
_LOADERS: list[Loader] = []
_REFERENCE_LOADERS: list[Loader] = []
_DISCOVERED = False  # the run loaders were imported
_REFERENCE_DISCOVERED = False


def register_player_loader(fn: Loader, reference: bool = False) -> None:
    """Add `fn(spec, game, seed) -> Player | None`, tried after the reference players
    (`reference=True`: a player that needs no run, which `reference_player` offers too)."""
    loaders = _REFERENCE_LOADERS if reference else _LOADERS
    if fn not in loaders:  # registering twice is harmless
        loaders.append(fn)


def _loaders(reference: bool) -> list[Loader]:
    """The loaders `polyzero.plugins` names (and, for runs, those of installed packages'
    entry points), each imported once, on the first spec that needs them."""
    global _DISCOVERED, _REFERENCE_DISCOVERED
    if not (_REFERENCE_DISCOVERED if reference else _DISCOVERED):
        import importlib

        from ..plugins import ENTRY_POINT_GROUP, PLAYER_LOADERS, REFERENCE_PLAYER_LOADERS

        for target in REFERENCE_PLAYER_LOADERS if reference else PLAYER_LOADERS:
            module, _, name = target.partition(":")
            register_player_loader(getattr(importlib.import_module(module), name), reference)
        if not reference:
            from importlib.metadata import entry_points

            for ep in entry_points(group=ENTRY_POINT_GROUP):
                register_player_loader(ep.load())
        if reference:
            _REFERENCE_DISCOVERED = True
        else:
            _DISCOVERED = True
    return _REFERENCE_LOADERS if reference else _LOADERS


def make_player(spec: str, game, seed: int = 0) -> Player:
    """A reference player, else the first loader that accepts `spec` (the run-directory
    loader needs no registration: see `polyzero.plugins`). A player that reads the true
    state is refused on a game with hidden information (`check_player_view`)."""
    from ..games.capabilities import check_player_view

    player = reference_player(spec, game, seed)
    if player is None:
        player = next(
            (p for p in (loader(spec, game, seed) for loader in _loaders(reference=False)) if p is not None), None
        )
    if player is not None:
        check_player_view(game, player)
        return player
    raise UsageError(
        f"unknown player '{spec}': expected random, mcts:SIMS, mcts-solver:SIMS, sy-heuristic, "
        "cfr:ITERS, ismcts:SIMS, sog:S,C, gtp:'CMD', uci:'CMD', gnugo:LEVEL, pachi:PLAYOUTS, "
        "stockfish:SKILL[:NODES], or a run directory / checkpoint file"
    )
