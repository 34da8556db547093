"""AlphaZero mode of the search: the real game is stepped inside the tree.

Legal actions are masked at every node and terminal nodes take the game's
true outcome instead of the network's value (MuZero paper, Appendix A, on
what AlphaZero uses the rules for).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..search.mcts import Expansion

EvaluateFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class SimulatorModel:
    """A :class:`~polyzero.search.mcts.SearchModel` over OpenSpiel states.

    `evaluate(obs [M, ...]) -> (logits [M, A], value [M])` is the network; it
    is called once per simulation on the non-terminal new leaves of all trees.
    """

    def __init__(self, roots: Sequence, encoder, evaluate: EvaluateFn, num_actions: int,
                 discount: float = 1.0):
        self.encoder = encoder
        self.evaluate = evaluate
        self.num_actions = num_actions
        self.discount = discount
        self.states = [[s] for s in roots]
        self.players = [[s.current_player()] for s in roots]
        self.returns = [[np.asarray(s.returns())] for s in roots]
        batch = len(roots)
        self._obs = np.zeros((batch,) + tuple(encoder.shape), np.float32)
        self._legal = np.zeros((batch, num_actions), np.bool_)
        self._logits = np.zeros((batch, num_actions), np.float32)
        self._value = np.zeros(batch, np.float64)
        self._reward = np.zeros(batch, np.float64)
        self._discount = np.ones(batch, np.float64)
        self._terminal = np.zeros(batch, np.bool_)
        self.network_calls = 0

    def _evaluate_rows(self, rows: list[int], states: list) -> None:
        """Network outputs and legal masks for `states`, written at `rows`."""
        self._legal[rows] = False
        for r, s in zip(rows, states):
            self._legal[r, s.legal_actions()] = True
        obs = self.encoder.encode(states, out=self._obs[: len(states)])
        logits, value = self.evaluate(obs)
        self.network_calls += 1
        self._logits[rows] = logits
        self._value[rows] = value

    def initial(self) -> Expansion:
        rows = list(range(len(self.states)))
        self._evaluate_rows(rows, [t[0] for t in self.states])
        self._terminal[:] = False
        return self._expansion()

    def step(self, parent_node, action, new_node, active) -> Expansion:
        rows, live = [], []
        self._terminal[:] = False
        for b in np.flatnonzero(active):
            p = parent_node[b]
            state = self.states[b][p].clone()
            state.apply_action(int(action[b]))
            assert len(self.states[b]) == new_node[b], "nodes must be stored in creation order"
            self.states[b].append(state)
            mover = self.players[b][p]
            returns = np.asarray(state.returns())
            self.returns[b].append(returns)
            self._reward[b] = returns[mover] - self.returns[b][p][mover]
            nxt = state.current_player()
            self.players[b].append(nxt)
            if state.is_terminal():
                self._terminal[b] = True
                self._discount[b] = self.discount
            else:
                same = nxt == mover or len(returns) == 1
                self._discount[b] = self.discount if same else -self.discount
                rows.append(b)
                live.append(state)
        if rows:
            self._evaluate_rows(rows, live)
        return self._expansion()

    def _expansion(self) -> Expansion:
        return Expansion(self._logits, self._value, self._legal, self._reward,
                         self._discount, self._terminal)
