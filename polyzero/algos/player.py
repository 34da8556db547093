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

    def analyse(self, states: Sequence, pv_length: int = 8) -> list[dict]:
        """What the search thinks of each state, without playing: per legal action its
        visit count N(s, a), value Q(s, a) and prior P(s, a) (values for the player to
        move, in [-1, 1] on board games), the root's value before and after search, and
        the principal variation (the most visited child from the root down); `action`
        is the move this search plays (never sampled)."""
        result = self.algo.search(self.evaluate, states, self.params, self.rng, add_noise=False)
        chosen = select_moves(result, np.zeros(len(states), bool), 1.0, self.rng)
        out = []
        for b, state in enumerate(states):
            legal = state.legal_actions()
            out.append({
                "value": float(result.root_value[b]),
                "network_value": float(result.root_raw_value[b]),
                "simulations": int(result.root_visits[b].sum()),
                "moves": [{"action": int(a), "visits": int(result.root_visits[b, a]),
                           "q": None if np.isnan(result.root_q[b, a]) else float(result.root_q[b, a]),
                           "prior": float(result.root_prior[b, a])} for a in legal],
                "pv": principal_variation(result.tree, b, pv_length),
                "action": int(chosen[b]),
            })
        return out


def principal_variation(tree, b: int, length: int, node: int = 0) -> list[int]:
    """The actions of the most visited path from `node` (the root by default) of tree b,
    up to the first chance node (its columns are outcomes, not actions) or unexpanded node."""
    pv = []
    while len(pv) < length and not tree.chance[b, node]:
        kids = tree.children[b, node]
        visits = np.where(kids >= 0, tree.visits[b, np.maximum(kids, 0)], -1)
        if visits.max() <= 0:
            break
        action = int(visits.argmax())
        pv.append(action)
        node = int(kids[action])
    return pv
