"""A trained (or untrained) agent as a player: one batched search for all the
games in which it is to move, no exploration noise, the most visited action; and
one game's search on an engine's clock (:meth:`SearchPlayer.analyse`)."""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from ..errors import UsageError
from ..search.mcts import SearchHooks, SearchResult
from ..search.params import SearchParams
from ..search.policy import select_moves


class SearchPlayer:
    """`sample_moves` > 0 samples the first moves of a game in proportion to the
    visits (tau = 1) instead of playing the most visited action: two deterministic
    players would otherwise replay the same two games in a whole match.
    `move_seconds` plays on a clock: each state is searched alone for that long
    (:meth:`analyse`; the params' num_simulations caps it), as an engine would."""

    def __init__(self, algo, evaluate, params: SearchParams, name: str, seed: int = 0,
                 sample_moves: int = 0, move_seconds: float | None = None):
        if move_seconds is not None and not move_seconds > 0:
            raise UsageError(f"move_seconds must be positive, not {move_seconds}")
        self.algo = algo
        self.evaluate = evaluate
        self.params = params
        self.name = name
        self.sample_moves = sample_moves
        self.move_seconds = move_seconds
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, states: Sequence) -> list[int]:
        sample = np.array([len(s.history()) < self.sample_moves for s in states])
        if self.move_seconds is None:
            result = self.algo.search(self.evaluate, states, self.params, self.rng, add_noise=False)
            return [int(a) for a in select_moves(result, sample, 1.0, self.rng)]
        return [int(select_moves(self.analyse(s, seconds=self.move_seconds), sample[i:i + 1], 1.0, self.rng)[0])
                for i, s in enumerate(states)]

    def analyse(self, state, seconds: float | None = None, stop: Callable[[], bool] | None = None,
                simulations: int | None = None) -> SearchResult:
        """One game's search as an engine's ``genmove`` / ``go`` runs it: up to
        `simulations` (default: the params' num_simulations, which sizes the tree),
        ending sooner `seconds` from now or once `stop()` is true (both checked between
        network calls; the first round always runs), `params.leaf_batch` leaves of the
        tree per network call. Read ``root_visits[0]``, ``root_q[0]``, ``root_prior[0]``,
        ``root_value[0]`` and ``tree.principal_variation(0)`` for analysis lines, and
        :meth:`best_move` for the move."""
        params = self.params.params(num_simulations=simulations)
        hooks = SearchHooks(deadline=None if seconds is None else time.monotonic() + seconds, stop=stop)
        return self.algo.search(self.evaluate, [state], params, self.rng, add_noise=False, hooks=hooks)

    def best_move(self, result: SearchResult) -> int:
        """The move `act` would play after `result`: the search's own choice (a Gumbel
        root's) or the most visited action, ties broken at random."""
        return int(select_moves(result, np.zeros(1, bool), 1.0, self.rng)[0])
