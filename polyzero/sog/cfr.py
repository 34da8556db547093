"""Public-tree CFR: regret-matching+, linearly weighted averaging, simultaneous
updates (Student of Games paper, "Search via GT-CFR": the regret update phase
runs CFR on the public tree with these three choices, Fig. 7).

The tree is a `polyzero.games.public_states.PublicTree`. Each iteration walks its
public states twice, vectorised over the worlds of each: down, to propagate every
player's reach (their ranges over information states); up, to compute values and
counterfactual regrets. With the whole game's public tree this is the same
algorithm as OpenSpiel's `_CFRSolver(game, alternating_updates=False,
linear_averaging=True, regret_matching_plus=True)`, iteration for iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polyzero.games.public_states import CHANCE, DECISION, TERMINAL, PublicTree


def regret_matching(cumulative_regret: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Policy proportional to positive regret; uniform over legal actions where
    no regret is positive. Rows are information states, columns actions."""
    positive = np.where(legal, np.maximum(cumulative_regret, 0.0), 0.0)
    total = positive.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def regret_matching_plus_update(cumulative_regret: np.ndarray, regret: np.ndarray) -> np.ndarray:
    """Regret-matching+: R <- max(R + r, 0)."""
    return np.maximum(cumulative_regret + regret, 0.0)


def linear_average_update(cumulative_policy: np.ndarray, iteration: int, own_reach: np.ndarray,
                          policy: np.ndarray) -> np.ndarray:
    """Linear averaging: iteration t's policy weighs t times its player's reach."""
    return cumulative_policy + iteration * own_reach[:, None] * policy


def average_of(cumulative_policy: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Normalised cumulative policy; uniform where nothing was accumulated."""
    total = cumulative_policy.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, cumulative_policy / np.where(total > 0, total, 1.0), uniform)


@dataclass
class _Decision:
    """Arrays for one decision public state: worlds W, acting-player infos I, actions A."""

    player: int
    actions: list[int]  # the node's action ids (union over its worlds)
    info: np.ndarray  # [W] acting player's information state of each world
    membership: np.ndarray  # [I, W] 1 where the world is in the information state
    first_world: np.ndarray  # [I] one world of each information state
    legal: np.ndarray  # [I, A] bool
    edges: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]  # (child, worlds, action cols, child worlds)
    cumulative_regret: np.ndarray
    cumulative_policy: np.ndarray
    policy: np.ndarray


class PublicTreeCFR:
    """CFR over a public tree with simultaneous updates, RM+ and linear averaging."""

    def __init__(self, tree: PublicTree):
        self.tree = tree
        self.num_players = tree.num_players
        self.iteration = 0
        self.decisions: dict[int, _Decision] = {}
        self._chance_edges: dict[int, list] = {}
        self._terminal_values: dict[int, np.ndarray] = {}
        self._chance_reach = [np.array([w.chance_reach for w in n.worlds]) for n in tree.nodes]
        for index, node in enumerate(tree.nodes):
            if node.kind == DECISION:
                self.decisions[index] = self._decision_arrays(node)
            elif node.kind == CHANCE:
                self._chance_edges[index] = self._chance_arrays(node)
            elif node.kind == TERMINAL:
                self._terminal_values[index] = np.array([w.state.returns() for w in node.worlds])
        self.reach = [None] * len(tree.nodes)  # [W, players] after each iteration's walk down
        self.values = [None] * len(tree.nodes)  # [W, players] expected returns under the policy

    @staticmethod
    def _group(transitions, column):
        by_child: dict[int, list] = {}
        for t in transitions:
            by_child.setdefault(t.child, []).append((t.world, column(t), t.child_world))
        return [(c, *(np.array(x) for x in zip(*rows))) for c, rows in by_child.items()]

    def _decision_arrays(self, node) -> _Decision:
        p = node.player
        actions = sorted({t.action for t in node.transitions})
        col = {a: k for k, a in enumerate(actions)}
        info = np.array([w.info_states[p] for w in node.worlds])
        num_info = len(node.info_states[p])
        membership = np.zeros((num_info, len(node.worlds)))
        membership[info, np.arange(len(node.worlds))] = 1.0
        first_world = np.array([np.flatnonzero(info == i)[0] for i in range(num_info)])
        legal = np.zeros((num_info, len(actions)), bool)
        for t in node.transitions:
            legal[info[t.world], col[t.action]] = True
        edges = self._group(node.transitions, lambda t: col[t.action])
        zeros = np.zeros((num_info, len(actions)))
        return _Decision(p, actions, info, membership, first_world, legal, edges,
                         zeros.copy(), zeros.copy(), regret_matching(zeros, legal))

    def _chance_arrays(self, node):
        return [(c, worlds, probs, child_worlds)
                for c, worlds, probs, child_worlds in self._group(node.transitions, lambda t: t.probability)]

    # -- one iteration -----------------------------------------------------------------

    def iterate(self) -> None:
        """One CFR iteration: every player updates at once (simultaneous updates)."""
        self.iteration += 1
        self._walk_down()
        self._walk_up()

    def _walk_down(self) -> None:
        nodes = self.tree.nodes
        self.reach[0] = np.ones((len(nodes[0].worlds), self.num_players))
        for index, node in enumerate(nodes):  # breadth-first order: parents first
            reach = self.reach[index]
            if index in self.decisions:
                d = self.decisions[index]
                for child, worlds, cols, child_worlds in d.edges:
                    child_reach = self._ensure(child)
                    r = reach[worlds].copy()
                    r[:, d.player] *= d.policy[d.info[worlds], cols]
                    child_reach[child_worlds] = r
            elif index in self._chance_edges:
                for child, worlds, _, child_worlds in self._chance_edges[index]:
                    self._ensure(child)[child_worlds] = reach[worlds]

    def _ensure(self, index: int) -> np.ndarray:
        n = len(self.tree.nodes[index].worlds)
        if self.reach[index] is None or self.reach[index].shape[0] != n:
            self.reach[index] = np.zeros((n, self.num_players))
        return self.reach[index]

    def _walk_up(self) -> None:
        for index in range(len(self.tree.nodes) - 1, -1, -1):  # children before parents
            node = self.tree.nodes[index]
            if node.kind == TERMINAL:
                self.values[index] = self._terminal_values[index]
            elif node.kind == CHANCE:
                value = np.zeros((len(node.worlds), self.num_players))
                for child, worlds, probs, child_worlds in self._chance_edges[index]:
                    np.add.at(value, worlds, probs[:, None] * self.values[child][child_worlds])
                self.values[index] = value
            else:
                self.values[index] = self._update_decision(index, self.decisions[index])

    def _update_decision(self, index: int, d: _Decision) -> np.ndarray:
        num_worlds = len(d.info)
        child_values = np.zeros((num_worlds, len(d.actions), self.num_players))
        for child, worlds, cols, child_worlds in d.edges:
            child_values[worlds, cols] = self.values[child][child_worlds]
        policy = d.policy[d.info]  # [W, A]
        value = np.einsum("wa,wap->wp", policy, child_values)
        # Counterfactual reach: chance times every other player's reach.
        reach = self.reach[index]
        others = np.prod(np.delete(reach, d.player, axis=1), axis=1) * self._chance_reach[index]
        advantage = child_values[:, :, d.player] - value[:, d.player][:, None]
        regret = d.membership @ (others[:, None] * advantage)
        regret = np.where(d.legal, regret, 0.0)
        d.cumulative_policy = linear_average_update(
            d.cumulative_policy, self.iteration, reach[d.first_world, d.player], d.policy)
        d.cumulative_regret = regret_matching_plus_update(d.cumulative_regret, regret)
        d.policy = regret_matching(d.cumulative_regret, d.legal)
        return value

    # -- results ---------------------------------------------------------------------

    def average_policy(self) -> dict[str, dict[int, float]]:
        """{information-state string: {action: probability}} for every decision."""
        return self._policies(lambda d: average_of(d.cumulative_policy, d.legal))

    def current_policy(self) -> dict[str, dict[int, float]]:
        return self._policies(lambda d: d.policy)

    def _policies(self, table_of) -> dict[str, dict[int, float]]:
        out = {}
        for index, d in self.decisions.items():
            names = self.tree.nodes[index].info_states[d.player]
            table = table_of(d)
            for i, name in enumerate(names):
                out[name] = {a: float(table[i, k]) for k, a in enumerate(d.actions) if d.legal[i, k]}
        return out

    def root_value(self) -> np.ndarray:
        """Expected returns of the last iteration's policies, from the root's worlds."""
        weights = self._chance_reach[0] / self._chance_reach[0].sum()
        return weights @ self.values[0]

    def tabular_average_policy(self):
        """The average policy as OpenSpiel's `TabularPolicy` (for its exploitability
        and best-response tools)."""
        from open_spiel.python.policy import TabularPolicy

        table = TabularPolicy(self.tree.game)
        for info, probs in self.average_policy().items():
            row = table.policy_for_key(info)
            row[:] = 0.0
            for action, p in probs.items():
                row[action] = p
        return table
