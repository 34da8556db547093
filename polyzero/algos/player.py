"""A trained (or untrained) agent as a player: one batched search for all the
games in which it is to move, no exploration noise, the most visited action; one
game's search on an engine's clock (:meth:`SearchPlayer.search`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import UsageError
from ..search.mcts import SearchHooks, SearchResult
from ..search.params import SearchParams
from ..search.policy import select_moves
from ..search.tree import CHANCE


class SearchPlayer:
    """`sample_moves` > 0 samples the first moves of a game in proportion to the
    visits (tau = 1) instead of playing the most visited action: two deterministic
    players would otherwise replay the same two games in a whole match.
    `move_seconds` plays on a clock: each state is searched alone for that long
    (:meth:`search`; the params' num_simulations caps it), as an engine would.
    Its search starts from the true state, so it is refused on games with hidden information."""

    reads_hidden_state = True

    def __init__(
        self,
        algo,
        evaluate,
        params: SearchParams,
        name: str,
        seed: int = 0,
        sample_moves: int = 0,
        move_seconds: float | None = None,
    ):
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
        return [
            int(select_moves(self.search(s, seconds=self.move_seconds), sample[i : i + 1], 1.0, self.rng)[0])
            for i, s in enumerate(states)
        ]

    def search(
        self,
        state,
        seconds: float | None = None,
        stop: Callable[[], bool] | None = None,
        simulations: int | None = None,
    ) -> SearchResult:
        """One game's search as an engine's ``genmove`` / ``go`` runs it: up to
        `simulations` (default: the params' num_simulations, which also sizes the tree),
        ending sooner `seconds` from now or once `stop()` is true (both checked between
        network calls; the first round always runs), with the params' ``leaf_batch``
        leaves of the tree per network call, no root noise. The result holds the root's
        visits, Q, prior and value (row 0) and the tree (:func:`principal_variation`);
        ``select_moves(result, np.zeros(1, bool), 1.0, rng)`` is the move `act` plays."""
        params = self.params.params(num_simulations=simulations)
        hooks = SearchHooks(deadline=None if seconds is None else time.monotonic() + seconds, stop=stop)
        return self.algo.search(self.evaluate, [state], params, self.rng, add_noise=False, hooks=hooks)

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
            out.append(
                {
                    "value": float(result.root_value[b]),
                    "network_value": float(result.root_raw_value[b]),
                    "simulations": int(result.root_visits[b].sum()),
                    "moves": [
                        {
                            "action": int(a),
                            "visits": int(result.root_visits[b, a]),
                            "q": None if np.isnan(result.root_q[b, a]) else float(result.root_q[b, a]),
                            "prior": float(result.root_prior[b, a]),
                        }
                        for a in legal
                    ],
                    "pv": principal_variation(result.tree, b, pv_length),
                    "action": int(chosen[b]),
                }
            )
        return out


def principal_variation(tree, b: int, length: int, node: int = 0) -> list[int]:
    """The actions of the most visited path from `node` (the root by default) of tree b,
    up to the first chance node (its columns are outcomes, not actions) or unexpanded node."""
    pv: list[int] = []
    while len(pv) < length and tree.kind[b, node] != CHANCE:
        kids = tree.children[b, node]
        visits = np.where(kids >= 0, tree.visits[b, np.maximum(kids, 0)], -1)
        if visits.max() <= 0:
            break
        action = int(visits.argmax())
        pv.append(action)
        node = int(kids[action])
    return pv
