"""Public-tree CFR on a fixed, leafless tree, vectorised over the whole tree.

The same algorithm as `polyzero.sog.cfr.PublicTreeCFR` (simultaneous updates,
regret-matching+, linear averaging; tested equal iteration for iteration), for
the trees that never grow and end in terminals only: an exact leaf query's
subgame (`ExactValueFunction`) and the whole game (`value_error`). Every world
of every public state gets one row of flat arrays and every information state
one row of the regret and policy tables, so an iteration is a few numpy calls
per tree level instead of several per public state; a Leduc subgame solves
many times faster this way.
"""

from __future__ import annotations

import numpy as np

from polyzero.games.public_states import CHANCE, DECISION, TERMINAL, PublicTree

from .cfr import average_of, counterfactual_reach_rows, others_reach, ranges_from_reach, regret_matching


class FlatCFR:
    """CFR+ with simultaneous updates on a leafless public tree.

    `root_reach` ([root worlds, players]) fixes the ranges at the root, as in
    `PublicTreeCFR`. After `iterate()` or `evaluate_average()`, `reach` and
    `values` ([worlds of the whole tree, players]) hold the walk's results.
    """

    def __init__(self, tree: PublicTree, root_reach: np.ndarray | None = None):
        self.tree = tree
        self.num_players = players = tree.num_players
        self.root_reach = root_reach
        self.iteration = 0
        nodes = tree.nodes
        if any(n.kind != TERMINAL and not n.transitions for n in nodes):
            raise ValueError("FlatCFR needs a tree that ends in terminals (no leaves)")
        self._offset = offset = np.cumsum([0] + [len(n.worlds) for n in nodes])
        self._root_worlds = len(nodes[0].worlds)
        n = int(offset[-1])
        self.chance = np.array([w.chance_reach for node in nodes for w in node.worlds])
        self._returns = np.zeros((n + 1, players))  # row n: the value 0 of an illegal action

        # Information-state rows: one per (decision node, acting player's information state).
        self._row_names: list[str] = []
        self._row_actions: list[list[int]] = []
        row_base, row_of_world = {}, np.full(n, -1)
        width = max([len({t.action for t in nd.transitions}) for nd in nodes if nd.kind == DECISION] or [1])
        level = np.zeros(len(nodes), int)
        parent = np.full(n, -1)
        edge_col = np.full(n, -1)  # the column of the action that led here (decision parents)
        edge_prob = np.ones(n)  # the chance probability that led here (chance parents)
        child_of = {}  # (parent world, column) -> child world
        cols_of_node = {}
        for i, node in enumerate(nodes):
            g0 = offset[i]
            if node.kind == TERMINAL:
                self._returns[g0 : offset[i + 1]] = [w.state.returns() for w in node.worlds]
                continue
            if node.kind == DECISION:
                actions = sorted({t.action for t in node.transitions})
                cols_of_node[i] = {a: k for k, a in enumerate(actions)}
                row_base[i] = len(self._row_names)
                self._row_names += node.info_states[node.player]
                self._row_actions += [actions] * len(node.info_states[node.player])
                row_of_world[g0 : offset[i + 1]] = [row_base[i] + w.info_states[node.player] for w in node.worlds]
            for t in node.transitions:
                g, c = g0 + t.world, offset[t.child] + t.child_world
                level[t.child] = level[i] + 1
                parent[c] = g
                if node.kind == CHANCE:
                    edge_prob[c] = t.probability
                else:
                    edge_col[c] = cols_of_node[i][t.action]
                    child_of[g, edge_col[c]] = c
        rows = len(self._row_names)
        self.legal = np.zeros((rows, width), bool)
        self._row_player = np.zeros(rows, int)
        self._first_world = np.zeros(rows, int)
        decision_worlds = np.flatnonzero(row_of_world >= 0)
        self._dw = decision_worlds
        self._dw_row = row_of_world[decision_worlds]
        self._dw_player = np.array(
            [nodes[i].player for i in np.searchsorted(offset, decision_worlds, "right") - 1], int
        )
        self._row_player[self._dw_row] = self._dw_player
        self._first_world[self._dw_row] = decision_worlds  # any world: they share the own reach
        self._dw_child = np.full((len(decision_worlds), width), n)  # n: illegal (value 0)
        for k, g in enumerate(decision_worlds):
            for col in range(width):
                c = child_of.get((g, col))
                if c is not None:
                    self._dw_child[k, col] = c
                    self.legal[self._dw_row[k], col] = True
        self._levels = self._index_levels(
            level, np.diff(offset), parent, edge_col, edge_prob, row_of_world, decision_worlds
        )
        self.cumulative_regret = np.zeros((rows, width))
        self.cumulative_policy = np.zeros((rows, width))
        self.policy = regret_matching(self.cumulative_regret, self.legal)
        self.reach = np.zeros((n, players))
        self.values = np.zeros((n + 1, players))

    def _index_levels(self, level, worlds_per_node, parent, edge_col, edge_prob, row_of_world, decision_worlds) -> list:
        """Per level below the root (`level`: each node's depth): its worlds, their
        parents, the decision edges among them."""
        world_level = np.repeat(level, worlds_per_node)
        levels = []
        for depth in range(1, int(level.max()) + 1):
            worlds = np.flatnonzero(world_level == depth)
            up = parent[worlds]
            decision = edge_col[worlds] >= 0
            uniq, inverse = np.unique(up, return_inverse=True)
            # decision worlds at the level above (best responses are chosen there, bottom-up)
            above = np.flatnonzero(np.isin(decision_worlds, uniq))
            levels.append(
                (
                    worlds,
                    up,
                    decision,
                    row_of_world[up[decision]],
                    edge_col[worlds[decision]],
                    self._row_player[row_of_world[up[decision]]],
                    edge_prob[worlds],
                    uniq,
                    inverse,
                    above,
                )
            )
        return levels

    # -- walks ---------------------------------------------------------------------

    def _walk_down(self, policy: np.ndarray) -> None:
        reach = self.reach
        reach[: self._root_worlds] = 1.0 if self.root_reach is None else self.root_reach
        for worlds, up, decision, rows, cols, players, *_ in self._levels:
            r = reach[up]
            r[np.flatnonzero(decision), players] *= policy[rows, cols]
            reach[worlds] = r

    def _walk_up(self, policy: np.ndarray, best_response: int | None = None) -> None:
        values = self.values
        values[:] = self._returns
        for worlds, _up, decision, rows, cols, _, prob, uniq, inverse, above in reversed(self._levels):
            if best_response is not None:
                self._best_respond(policy, above, best_response)
            weight = prob.copy()
            weight[decision] = policy[rows, cols]
            for p in range(self.num_players):
                values[uniq, p] = np.bincount(inverse, weights=weight * values[worlds, p], minlength=len(uniq))

    def _others(self) -> np.ndarray:
        """Per decision world: chance reach times every other player's reach."""
        return counterfactual_reach_rows(self.chance[self._dw], self.reach[self._dw], self._dw_player)

    def _row_sums(self, per_world: np.ndarray, subset=slice(None)) -> np.ndarray:
        """Sum [decision worlds, columns] into [information-state rows, columns]."""
        rows = self._dw_row[subset]
        width = per_world.shape[1]
        flat = np.bincount(
            (rows[:, None] * width + np.arange(width)).ravel(), weights=per_world.ravel(), minlength=self.legal.size
        )
        return flat.reshape(self.legal.shape)

    def _action_values(self, subset=slice(None)) -> np.ndarray:
        """[decision worlds, columns]: the acting player's value after each action."""
        children = self._dw_child[subset]
        return self.values[children, self._dw_player[subset][:, None]]

    def _best_respond(self, policy: np.ndarray, subset: np.ndarray, player: int) -> None:
        subset = subset[self._dw_player[subset] == player]
        if not len(subset):
            return
        others = self._others()[subset]
        cfv = self._row_sums(others[:, None] * self._action_values(subset), subset)
        rows = np.unique(self._dw_row[subset])
        best = np.argmax(np.where(self.legal[rows], cfv[rows], -np.inf), axis=1)
        policy[rows] = 0.0
        policy[rows, best] = 1.0

    # -- iterations ------------------------------------------------------------------

    def iterate(self) -> None:
        """One CFR iteration: every player updates at once (simultaneous updates)."""
        self.iteration += 1
        policy = self.policy
        self._walk_down(policy)
        self._walk_up(policy)
        action_values = self._action_values()
        own_value = self.values[self._dw, self._dw_player]
        regret = self._row_sums(self._others()[:, None] * (action_values - own_value[:, None]))
        regret = np.where(self.legal, regret, 0.0)
        own_reach = self.reach[self._first_world, self._row_player]
        self.cumulative_policy += self.iteration * own_reach[:, None] * policy
        self.cumulative_regret = np.maximum(self.cumulative_regret + regret, 0.0)
        self.policy = regret_matching(self.cumulative_regret, self.legal)

    def average(self) -> np.ndarray:
        return average_of(self.cumulative_policy, self.legal)

    def evaluate_average(self, best_response: int | None = None) -> None:
        """Reach and values of the average policies; with `best_response=b`,
        player b best-responds instead (chosen bottom-up, level by level)."""
        policy = self.average()
        self._walk_down(policy)
        self._walk_up(policy, best_response)

    def reset(self, keep_regrets: bool) -> None:
        """Start a new solve: the average restarts; the regrets are kept or cleared."""
        self.iteration = 0
        self.cumulative_policy[:] = 0.0
        if not keep_regrets:
            self.cumulative_regret[:] = 0.0
            self.policy = regret_matching(self.cumulative_regret, self.legal)

    # -- results ---------------------------------------------------------------------

    def _worlds(self, index: int) -> slice:
        return slice(self._offset[index], self._offset[index + 1])

    def counterfactual_values(self, index: int, player: int) -> np.ndarray:
        """cfv_i(s) = sum over the worlds w in s of chance(w) * reach_-i(w) * v_i(w),
        from the last walk, for each of `player`'s information states at a node."""
        node, worlds = self.tree.nodes[index], self._worlds(index)
        weights = self.chance[worlds] * others_reach(self.reach[worlds], player) * self.values[worlds, player]
        info = [w.info_states[player] for w in node.worlds]
        return np.bincount(info, weights=weights, minlength=len(node.info_states[player]))

    def ranges(self, index: int, player: int) -> np.ndarray:
        """A player's own reach of each of its information states at a node (last walk)."""
        return ranges_from_reach(self.tree.nodes[index], self.reach[self._worlds(index)], player)

    def root_columns(self) -> dict[int, int]:
        """{action: column} of the root's rows (the root's actions in sorted order)."""
        return {a: k for k, a in enumerate(self._row_actions[0])} if self._row_actions else {}

    def root_average_policy(self, num_actions: int) -> np.ndarray | None:
        """The acting player's average policy at a decision root, [infos, num_actions]."""
        root = self.tree.nodes[0]
        if root.kind != DECISION:
            return None
        count = len(root.info_states[root.player])
        out = np.zeros((count, num_actions))
        out[:, self._row_actions[0]] = self.average()[:count, : len(self._row_actions[0])]
        return out

    def average_policy(self) -> dict[str, dict[int, float]]:
        """{information-state string: {action: probability}} for every decision."""
        table = self.average()
        return {
            name: {a: float(table[r, k]) for k, a in enumerate(actions) if self.legal[r, k]}
            for r, (name, actions) in enumerate(zip(self._row_names, self._row_actions))
        }

    def exploitability(self) -> float:
        """Mean over the players of the gain of a best response to the average
        policies, from the root's worlds and ranges (in the game's units)."""
        self.evaluate_average()
        root = slice(0, self._root_worlds)
        chance, reach = self.chance[root], self.reach[root].copy()
        equilibrium = (chance * np.prod(reach, axis=1)) @ self.values[root]
        gains = []
        for b in range(self.num_players):
            self.evaluate_average(best_response=b)
            gains.append(float((chance * np.prod(reach, axis=1)) @ self.values[root, b] - equilibrium[b]))
        return float(np.mean(gains))
