"""AlphaZero mode of the search: the real game is stepped inside the tree.

Legal actions are masked at every node and terminal nodes take the game's
true outcome instead of the network's value (MuZero paper, Appendix A, on
what AlphaZero uses the rules for).

Chance events use the game's known probabilities (NMCTS / McGammon, NDMZ
paper Section 2.3): a chance node's "actions" are its outcomes, its prior
their probabilities, and the search samples an outcome there in proportion
to them (roulette-wheel selection). A chance node keeps the perspective of
the player who moved into it, and is valued when it is created by one
sampled outcome: the decision state it leads to is evaluated by the network
(chance states themselves, such as a position before the dice are rolled,
are never training positions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..games import legal_action_mask
from ..games.chance import sample_chance
from ..search.loop import Expansion

EvaluateFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class SimulatorModel:
    """A :class:`~polyzero.search.mcts.SearchModel` over OpenSpiel states.

    `evaluate(obs [M, ...]) -> (logits [M, A], value [M])` is the network; it
    is called once per simulation on the non-terminal new leaves of all trees
    (or, with leaf batching, once per batch of leaves: :meth:`step_leaves`).
    The tree is `width` wide: at least A, and as wide as the game's chance
    outcomes (pig: 2 actions, 6 outcomes); columns past A are never a player's.
    """

    def __init__(
        self,
        roots: Sequence,
        encoder,
        evaluate: EvaluateFn,
        num_actions: int,
        discount: float = 1.0,
        rng: np.random.Generator | None = None,
        width: int | None = None,
    ):
        self.encoder = encoder
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.evaluate = evaluate
        self.policy_actions = num_actions
        self.has_chance = bool(width)  # the game has chance outcomes (max_chance_outcomes > 0)
        num_actions = max(num_actions, width or 0)
        self.num_actions = num_actions
        self.discount = discount
        self.states = [[s] for s in roots]
        self.players = [[s.current_player()] for s in roots]
        self.returns = [[s.returns()] for s in roots]  # lists: cheaper than arrays per node
        self._allocate(len(roots))
        self.network_calls = 0

    def _allocate(self, rows: int) -> None:
        """Output buffers for `rows` rows (a tree each, or a batch of leaves)."""
        self._obs = np.zeros((rows,) + tuple(self.encoder.shape), np.float32)
        self._legal = np.zeros((rows, self.num_actions), np.bool_)
        self._logits = np.zeros((rows, self.num_actions), np.float32)
        self._value = np.zeros(rows, np.float64)
        self._reward = np.zeros(rows, np.float64)
        self._discount = np.ones(rows, np.float64)
        self._terminal = np.zeros(rows, np.bool_)
        self._chance = np.zeros(rows, np.bool_)

    def _evaluate_rows(self, rows: list[int], states: list) -> None:
        """Network outputs and legal masks for `states`, written at `rows`."""
        legal = legal_action_mask(states, self.policy_actions)
        if self.num_actions == self.policy_actions:
            self._legal[rows] = legal
        else:
            self._legal[rows] = False
            self._legal[rows, : self.policy_actions] = legal
        obs = self.encoder.encode(states, out=self._obs[: len(states)])
        logits, value = self.evaluate(obs)
        self.network_calls += 1
        self._logits[rows, : self.policy_actions] = logits
        self._value[rows] = value

    def initial(self) -> Expansion:
        rows = list(range(len(self.states)))
        self._evaluate_rows(rows, [t[0] for t in self.states])
        self._terminal[:] = False
        return self._expansion()

    def step(self, parent_node, action, new_node, active) -> Expansion:
        trees = np.flatnonzero(active)
        return self._step_rows(trees, trees, parent_node[trees], action[trees], new_node[trees])

    def step_leaves(self, tree, parent_node, action, new_node) -> Expansion:
        """`step` for a flat list of leaves of any trees (leaf batching); row i is leaf i.
        A tree's leaves come in the order of their node indices."""
        if len(tree) > len(self._value):
            self._allocate(len(tree))
        return self._step_rows(range(len(tree)), tree, parent_node, action, new_node)

    def _step_rows(self, out_rows, trees, parents, actions, new_nodes) -> Expansion:
        rows, live = [], []
        chance_rows = {}  # row -> (outcome probabilities, reward after the chance node, same player?)
        self._terminal[:] = False
        self._chance[:] = False
        for r, b, p, a, n in zip(_ints(out_rows), _ints(trees), _ints(parents), _ints(actions), _ints(new_nodes)):
            tree_states = self.states[b]
            state = tree_states[p].clone()
            state.apply_action(a)
            assert len(tree_states) == n, "nodes must be stored in creation order"
            tree_states.append(state)
            mover = self.players[b][p]
            returns = state.returns()
            self.returns[b].append(returns)
            self._reward[r] = returns[mover] - self.returns[b][p][mover]
            nxt = state.current_player()
            is_chance = state.is_chance_node()
            self.players[b].append(mover if is_chance else nxt)
            if state.is_terminal():
                self._terminal[r] = True
                self._discount[r] = self.discount
            elif is_chance:
                self._chance[r] = True
                self._discount[r] = self.discount
                after, outcomes = self._resolve_chance(state)
                gained = after.returns()[mover] - returns[mover]
                if after.is_terminal():
                    chance_rows[r] = (outcomes, gained, None)
                else:
                    chance_rows[r] = (outcomes, gained, after.current_player() == mover or len(returns) == 1)
                    rows.append(r)
                    live.append(after)
            else:
                same = nxt == mover or len(returns) == 1
                self._discount[r] = self.discount if same else -self.discount
                rows.append(r)
                live.append(state)
        if rows:
            self._evaluate_rows(rows, live)
        for r, (outcomes, gained, same) in chance_rows.items():
            # The chance node's value for its mover: the sampled outcome's reward plus the
            # value of the decision state it led to (zero after the game ended).
            after_value = 0.0 if same is None else (1.0 if same else -1.0) * self.discount * self._value[r]
            self._value[r] = gained + after_value
            self._legal[r] = False
            self._logits[r] = -np.inf
            for outcome, p in outcomes.items():
                self._legal[r, outcome] = p > 0
                self._logits[r, outcome] = np.log(p) if p > 0 else -np.inf
        return self._expansion()

    def _resolve_chance(self, state):
        """(the decision or terminal state one sampled run of chance events leads to,
        the first chance node's outcome probabilities)."""
        after = state.clone()
        outcomes = dict(after.chance_outcomes())
        while after.is_chance_node():
            sample_chance(after, self.rng)
        return after, outcomes

    def _expansion(self) -> Expansion:
        return Expansion(
            self._logits, self._value, self._legal, self._reward, self._discount, self._terminal, self._chance
        )


def _ints(values) -> list[int]:
    """Python ints: indexing lists and stepping OpenSpiel with them is cheaper than with NumPy's."""
    return values.tolist() if isinstance(values, np.ndarray) else [int(v) for v in values]
