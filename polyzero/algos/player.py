"""A trained (or untrained) agent as a player: one batched search for all the
games in which it is to move, no exploration noise, the most visited action."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..search.params import SearchParams
from ..search.policy import select_moves


class SearchPlayer:
    """`sample_moves` > 0 samples the first moves of a game in proportion to the
    visits (tau = 1) instead of playing the most visited action: two deterministic
    players would otherwise replay the same two games in a whole match."""

    def __init__(self, algo, evaluate, params: SearchParams, name: str, seed: int = 0,
                 sample_moves: int = 0):
        self.algo = algo
        self.evaluate = evaluate
        self.params = params
        self.name = name
        self.sample_moves = sample_moves
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, states: Sequence) -> list[int]:
        result = self.algo.search(self.evaluate, states, self.params, self.rng, add_noise=False)
        sample = np.array([len(s.history()) < self.sample_moves for s in states])
        return [int(a) for a in select_moves(result, sample, 1.0, self.rng)]
