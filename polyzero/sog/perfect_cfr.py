"""Public-tree CFR on a growing tree of a perfect-information game, vectorised
per tree level.

The same algorithm as `polyzero.sog.cfr.PublicTreeCFR` (simultaneous updates,
regret-matching+, linear averaging, leaves valued in one batch per iteration;
tested equal iteration for iteration), for the trees GT-CFR grows in
perfect-information games such as Connect Four. There every public state holds
one world and each player one information state, so `PublicTreeCFR`'s handful
of numpy calls per public state work on arrays of one element, and a search at
100 simulations spends most of its time in that bookkeeping. Here each public
state is one row of flat arrays and holds the regret, the policy and the average
of the action that leads to it (its parent's edge), so an iteration is a few
numpy calls per tree level. Public states that GT-CFR appends are picked up by
`sync()` as they come (appending keeps parents before children, and each new
child is a new row).
"""

from __future__ import annotations

import numpy as np

from polyzero.games.public_states import CHANCE, DECISION, TERMINAL, PublicTree

from .cfr import PublicTreeCFR, _Decision, counterfactual_reach_rows, others_reach


class PerfectInfoCFR(PublicTreeCFR):
    """`PublicTreeCFR` for trees whose public states each hold one world.

    It keeps `PublicTreeCFR`'s interface (`sync`, `iterate`, `evaluate_average`,
    `decisions`, `reach[index]` and `values[index]` as [1, players] rows,
    `counterfactual_values`, `ranges`, the policies), with its own storage:
    per public state n, `_parent[n]`, and for the edge into n its weight
    (`_prob` at chance parents, `_policy` at decision parents), cumulative
    regret and cumulative policy.
    """

    def __init__(self, tree: PublicTree, root_reach: np.ndarray | None = None, leaf_values=None, initial_regrets=None):
        # PublicTreeCFR's per-node lists are replaced by the flat rows below.
        self.tree = tree
        self.root_reach = root_reach
        self.leaf_values = leaf_values
        self.initial_regrets = initial_regrets
        self.num_players = tree.num_players
        self.iteration = 0
        self._size = 0  # public states picked up so far
        self._rows(64)
        self._children: list[list[int]] = []  # per public state, its children in the order added
        self._levels: list[list[int]] = []  # per depth >= 1, its public states
        self._level_arrays: list[tuple | None] = []
        self._decision_edges = np.zeros(0, int)  # the public states with a decision parent
        self.leaves: list[int] = []
        self._leaf_cache: dict[int, np.ndarray] = {}
        self.sync()

    def _rows(self, capacity: int) -> None:
        players = self.num_players

        def grow(name, shape, dtype=float, fill=0):
            old = getattr(self, name, None)
            new = np.full((capacity, *shape), fill, dtype)
            if old is not None:
                new[: len(old)] = old
            setattr(self, name, new)

        grow("_parent", (), int, -1)
        grow("_player", (), int, -1)  # the acting player of a decision, -1 otherwise
        grow("_terminal", (), bool, False)
        grow("_action", (), int, -1)  # the action that leads here
        grow("_prob", (), float, 1.0)  # the chance probability that leads here (1 below decisions)
        grow("_chance", ())  # the world's chance reach
        grow("_returns", (players,))
        grow("_regret", ())
        grow("_cum_policy", ())
        grow("_policy", ())
        grow("_action_cfv", ())  # the parent's counterfactual value of the action that leads here
        grow("_cf_reach", ())  # chance times every other player's reach, at decisions
        grow("_cfv_valid", (), bool, False)  # _action_cfv and _cf_reach are from an update since the last change
        grow("_reach", (players,))
        grow("_values", (players,))

    # -- the tree as it grows --------------------------------------------------------

    def sync(self) -> None:
        """Rows for public states appended since the last call; the policy of every
        decision that gained children is recomputed (regrets and averages of its
        earlier actions carried over, as `PublicTreeCFR.sync` does)."""
        nodes = self.tree.nodes
        if len(nodes) == self._size:
            return
        if len(nodes) > len(self._parent):
            self._rows(2 * len(nodes))
        fresh_parents: dict[int, bool] = {}  # decision parent -> it had no children before
        for n in range(self._size, len(nodes)):
            node = nodes[n]
            if len(node.worlds) != 1:
                raise ValueError("PerfectInfoCFR needs public states of one world each")
            self._children.append([])
            self._chance[n] = node.worlds[0].chance_reach
            if node.kind == TERMINAL:
                self._terminal[n] = True
                self._returns[n] = node.worlds[0].state.returns()
            elif node.kind == DECISION:
                self._player[n] = node.player
            if n == 0:
                continue
            p = node.parent
            self._parent[n] = p
            t = next(t for t in reversed(nodes[p].transitions) if t.child == n)
            self._action[n] = t.action
            if nodes[p].kind == CHANCE:
                self._prob[n] = t.probability
            elif p not in fresh_parents:
                fresh_parents[p] = not self._children[p]
            self._children[p].append(n)
            while len(self._levels) < node.depth:
                self._levels.append([])
                self._level_arrays.append(None)
            self._levels[node.depth - 1].append(n)
            self._level_arrays[node.depth - 1] = None
        self._size = n = len(nodes)
        parents = self._parent[:n]
        self._decision_edges = np.flatnonzero((parents >= 0) & (self._player[np.maximum(parents, 0)] >= 0))
        self._num_children = np.bincount(parents[1:], minlength=n)
        self.leaves = np.flatnonzero(~self._terminal[:n] & (self._num_children == 0)).tolist()
        for p, fresh in fresh_parents.items():
            children = self._children[p]
            start = self.initial_regrets(p, self._sorted_actions(p)) if fresh and self.initial_regrets else None
            if start is not None:
                order = np.argsort(self._action[children])
                self._regret[np.asarray(children)[order]] = np.asarray(start, float).reshape(-1)
            self._cfv_valid[p] = False
            self._policy[children] = self._regret_matching(np.asarray(children))

    def _sorted_actions(self, index: int) -> list[int]:
        return sorted(int(a) for a in self._action[self._children[index]])

    def _level(self, depth: int) -> tuple:
        """Arrays of one level: its public states, their parents (and each parent's
        position among the level's distinct parents), and which enter from a decision."""
        cached = self._level_arrays[depth]
        if cached is None:
            nodes = np.asarray(self._levels[depth])
            parents = self._parent[nodes]
            uniq, inverse = np.unique(parents, return_inverse=True)
            players = self._player[parents]
            decision = np.flatnonzero(players >= 0)
            cached = (nodes, parents, uniq, inverse, decision, players[decision])
            self._level_arrays[depth] = cached
        return cached

    def _over_siblings(self, edges: np.ndarray, mass: np.ndarray) -> np.ndarray:
        """Each edge's share of its siblings' total `mass`; uniform where the total is 0."""
        parents = self._parent[edges]
        total = np.bincount(parents, weights=mass, minlength=self._size)[parents]
        return np.where(total > 0, mass / np.where(total > 0, total, 1.0), 1.0 / self._num_children[parents])

    def _regret_matching(self, edges: np.ndarray) -> np.ndarray:
        """Each edge's policy: positive regret over its siblings', uniform where none is positive."""
        return self._over_siblings(edges, np.maximum(self._regret[edges], 0.0))

    def _average(self) -> np.ndarray:
        """Per row: the linearly averaged policy of the decision edge into it (1 elsewhere)."""
        edges = self._decision_edges
        out = self._prob[: self._size].copy()
        out[edges] = self._over_siblings(edges, self._cum_policy[edges])
        return out

    def _weights(self) -> np.ndarray:
        out = self._prob[: self._size].copy()
        out[self._decision_edges] = self._policy[self._decision_edges]
        return out

    # -- walks -----------------------------------------------------------------------

    def _walk_down(self, weights: np.ndarray) -> None:
        reach = self._reach
        reach[0] = 1.0 if self.root_reach is None else np.asarray(self.root_reach).reshape(-1)
        for depth in range(len(self._levels)):
            nodes, parents, _, _, decision, players = self._level(depth)
            r = reach[parents]
            r[decision, players] *= weights[nodes[decision]]
            reach[nodes] = r

    def _evaluate_leaves(self) -> None:
        if not self.leaves:
            return
        if self.leaf_values is None:
            raise ValueError("the tree has leaves but no value function was given")
        self.set_leaf_values(self.leaf_values(self.leaves, self.leaf_reaches()))

    def leaf_reaches(self) -> list[np.ndarray]:
        return [self._reach[i : i + 1] for i in self.leaves]

    def set_leaf_values(self, values: list[np.ndarray]) -> None:
        self._leaf_cache = dict(zip(self.leaves, values))

    def _walk_up(self, weights: np.ndarray, best_response: int | None = None) -> None:
        values = self._values
        n = self._size
        values[:n] = self._returns[:n]
        for index, v in self._leaf_cache.items():
            values[index] = v[0]
        others = self._others() if best_response is not None else None
        for depth in reversed(range(len(self._levels))):
            nodes, parents, uniq, inverse, decision, players = self._level(depth)
            w = weights[nodes]
            if best_response is not None:
                w = w.copy()
                self._best_respond(w, nodes, parents, best_response, others)
            for p in range(self.num_players):
                values[uniq, p] = np.bincount(inverse, weights=w * values[nodes, p], minlength=len(uniq))

    def _others(self) -> np.ndarray:
        """Per row: chance reach times every reach but its acting player's (decisions)."""
        n = self._size
        return counterfactual_reach_rows(self._chance[:n], self._reach[:n], self._player[:n])

    def _best_respond(self, w: np.ndarray, nodes, parents, player: int, others: np.ndarray) -> None:
        """Player `player` takes, at each of its decisions on the level above, the
        action of highest counterfactual value (the smallest action among ties, as
        `PublicTreeCFR`'s argmax over its sorted columns)."""
        mine = np.flatnonzero(self._player[parents] == player)
        if not len(mine):
            return
        cfv = others[parents[mine]] * self._values[nodes[mine], player]
        order = np.lexsort((self._action[nodes[mine]], -cfv, parents[mine]))
        first = np.ones(len(order), bool)
        first[1:] = parents[mine][order][1:] != parents[mine][order][:-1]
        w[mine] = 0.0
        w[mine[order[first]]] = 1.0

    # -- iterations ------------------------------------------------------------------

    def iterate(self) -> None:
        """One CFR iteration: every player updates at once (simultaneous updates)."""
        self.begin_iteration()
        self._evaluate_leaves()
        self.end_iteration()

    def begin_iteration(self) -> None:
        """The iteration up to its leaves' values (`PublicTreeCFR.begin_iteration`)."""
        self.iteration += 1
        self._iteration_weights = self._weights()
        self._walk_down(self._iteration_weights)

    def end_iteration(self) -> None:
        """The rest of the iteration once `set_leaf_values` gave the leaves' values."""
        self._walk_up(self._iteration_weights)
        edges = self._decision_edges
        if not len(edges):
            return
        parents = self._parent[edges]
        players = self._player[parents]
        others = self._others()[parents]
        child_value = self._values[edges, players]
        self._action_cfv[edges] = others * child_value
        self._cf_reach[parents] = others
        regret = others * (child_value - self._values[parents, players])
        self._cum_policy[edges] += self.iteration * self._reach[parents, players] * self._policy[edges]
        self._regret[edges] = np.maximum(self._regret[edges] + regret, 0.0)
        self._policy[edges] = self._regret_matching(edges)
        self._cfv_valid[parents] = True

    def evaluate_average(self, best_response: int | None = None, reuse_leaves: bool = False) -> None:
        weights = self._average()
        self._walk_down(weights)
        if not reuse_leaves:
            self._evaluate_leaves()
        self._walk_up(weights, best_response)

    # -- what GT-CFR reads -------------------------------------------------------------

    @property
    def reach(self) -> _Rows:
        return _Rows(self._reach)

    @property
    def values(self) -> _Rows:
        return _Rows(self._values)

    @property
    def decisions(self) -> _Decisions:
        return _Decisions(self)

    def decision(self, index: int) -> _Decision | None:
        """`PublicTreeCFR.decisions[index]`'s arrays for one public state (a decision
        with children), columns in action order."""
        if index >= self._size or self._player[index] < 0 or not self._children[index]:
            return None
        children = np.asarray(self._children[index])
        children = children[np.argsort(self._action[children])]
        valid = self._cfv_valid[index]  # PublicTreeCFR's are None until an update walk after the last sync
        return _Decision(
            int(self._player[index]),
            self._action[children].tolist(),
            np.zeros(1, int),
            np.ones((1, 1)),
            np.zeros(1, int),
            np.ones((1, len(children)), bool),
            [],
            self._regret[children][None],
            self._cum_policy[children][None],
            self._policy[children][None],
            self._action_cfv[children][None] if valid else None,
            np.array([self._cf_reach[index]]) if valid else None,
        )

    def counterfactual_values(self, index: int, player: int) -> np.ndarray:
        others = others_reach(self._reach[index : index + 1], player)
        return self._chance[index] * others * self._values[index : index + 1, player]

    def ranges(self, index: int, player: int) -> np.ndarray:
        return np.array([self._reach[index, player]])

    def root_value(self) -> np.ndarray:
        return self._values[0].copy()


class _Rows:
    """`rows[i]`: row i of a flat [public states, players] array as [1, players]."""

    def __init__(self, array: np.ndarray):
        self._array = array

    def __getitem__(self, index: int) -> np.ndarray:
        return self._array[index : index + 1]


class _Decisions:
    """The mapping `PublicTreeCFR.decisions` is, built on demand from the rows."""

    def __init__(self, cfr: PerfectInfoCFR):
        self._cfr = cfr

    def get(self, index: int, default=None):
        d = self._cfr.decision(index)
        return default if d is None else d

    def __getitem__(self, index: int) -> _Decision:
        d = self._cfr.decision(index)
        if d is None:
            raise KeyError(index)
        return d

    def __contains__(self, index: int) -> bool:
        return self._cfr.decision(index) is not None

    def items(self):
        for index in range(self._cfr._size):
            d = self._cfr.decision(index)
            if d is not None:
                yield index, d
