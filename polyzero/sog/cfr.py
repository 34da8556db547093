"""Public-tree CFR: regret-matching+, linearly weighted averaging, simultaneous
updates (Student of Games paper, "Search via GT-CFR": the regret update phase
runs CFR on the public tree with these three choices, Fig. 7).

The same class runs on a growing tree (GT-CFR, `polyzero.sog.gtcfr`): `sync()`
picks up public states appended to the tree since the last call (appending keeps
parents before children), non-terminal nodes without children are leaves whose
per-world values come from `leaf_values` (a value function, "Search via GT-CFR"),
and `root_reach` fixes the ranges at the root (a subgame or re-solving root).

The tree is a `polyzero.games.public_states.PublicTree`. Each iteration walks its
public states twice, vectorised over the worlds of each: down, to propagate every
player's reach (their ranges over information states); up, to compute values and
counterfactual regrets. With the whole game's public tree this is the same
algorithm as OpenSpiel's `_CFRSolver(game, alternating_updates=False,
linear_averaging=True, regret_matching_plus=True)`, iteration for iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from polyzero.games.public_states import CHANCE, DECISION, TERMINAL, PublicState, PublicTree


def regret_matching(cumulative_regret: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Policy proportional to positive regret; uniform over legal actions where
    no regret is positive. Rows are information states, columns actions."""
    positive = np.maximum(cumulative_regret, 0.0) * legal
    total = positive.sum(axis=1, keepdims=True)
    if total.size and total.min() > 0:  # the usual case, without the uniform rows' work
        return positive / total
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def ranges_from_reach(node: PublicState, reach: np.ndarray, player: int) -> np.ndarray:
    """A player's range at a node from its reach per world ([W, players]): the reach of
    each information state's last world (a player's reach is the same in all the worlds
    of one of its information states)."""
    return np.array(reach[node.last_world[player], player], dtype=float)


def others_reach(reach: np.ndarray, player: int) -> np.ndarray:
    """Per world ([W, players] reach): the product of every other player's reach."""
    if reach.shape[1] == 2:  # two players: the other's column, without np.delete's copy
        return reach[:, 1 - player]
    return np.prod(np.delete(reach, player, axis=1), axis=1)


def counterfactual_reach_rows(chance: np.ndarray, reach: np.ndarray, players: np.ndarray) -> np.ndarray:
    """Per row ([rows, players] reach, each row's acting player, -1 for none): chance
    reach times every reach but the acting player's."""
    others = chance.copy()
    for q in range(reach.shape[1]):
        others *= np.where(players == q, 1.0, reach[:, q])
    return others


def regret_matching_plus_update(cumulative_regret: np.ndarray, regret: np.ndarray) -> np.ndarray:
    """Regret-matching+: R <- max(R + r, 0)."""
    return np.maximum(cumulative_regret + regret, 0.0)


def linear_average_update(
    cumulative_policy: np.ndarray, iteration: int, own_reach: np.ndarray, policy: np.ndarray
) -> np.ndarray:
    """Linear averaging: iteration t's policy weighs t times its player's reach."""
    return cumulative_policy + iteration * own_reach[:, None] * policy


def average_of(cumulative_policy: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Normalised cumulative policy, rows [I, A] or one row [A]; uniform where nothing was
    accumulated (a row's sum is the same whether it is summed alone or in its array)."""
    total = cumulative_policy.sum(axis=-1, keepdims=True)
    if total.size and total.min() > 0:
        return cumulative_policy / total
    uniform = legal / legal.sum(axis=-1, keepdims=True)
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
    # Counterfactual action values and counterfactual reach per information state
    # from the last iteration (GT-CFR's PUCT reads their ratio).
    action_cfv: np.ndarray | None = None
    cf_reach: np.ndarray | None = None
    stats: dict = field(default_factory=dict)
    # The edges concatenated for the walk down: (worlds, their infos, action cols,
    # [(child, start, end, child worlds)]), one gather for all children.
    down: tuple = ()

    def __post_init__(self) -> None:
        if self.edges and not self.down:
            worlds = np.concatenate([e[1] for e in self.edges])
            ends = np.cumsum([len(e[1]) for e in self.edges])
            spans = [(e[0], end - len(e[1]), end, e[3]) for e, end in zip(self.edges, ends)]
            self.down = (worlds, self.info[worlds], np.concatenate([e[2] for e in self.edges]), spans)


def _group(transitions, column, base: int) -> list:
    """[(child - base, worlds, column values, child worlds)] per child, in the order the
    transitions first reach each."""
    by_child: dict[int, list] = {}
    for t in transitions:
        by_child.setdefault(t.child - base, []).append((t.world, column(t), t.child_world))
    return [(c, *(_frozen(np.array(x)) for x in zip(*rows))) for c, rows in by_child.items()]


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # shared by every tree holding the node: read only
    return array


@dataclass(frozen=True)
class _DecisionShape:
    """A decision node's arrays that its worlds and moves fix (see `_Decision`), children
    counted from the node's first; read only (several trees' CFRs may share them)."""

    player: int
    actions: list[int]
    info: np.ndarray
    membership: np.ndarray
    first_world: np.ndarray
    legal: np.ndarray
    edges: list
    down: tuple
    policy: np.ndarray  # regret matching of zero regrets (uniform over the legal actions)


def _decision_shape(node, base: int) -> _DecisionShape:
    p = node.player
    actions = sorted({t.action for t in node.transitions})
    col = {a: k for k, a in enumerate(actions)}
    info = node.world_info[p]
    num_info = len(node.info_states[p])
    membership = np.zeros((num_info, len(node.worlds)))
    membership[info, np.arange(len(node.worlds))] = 1.0
    first_world = np.array([np.flatnonzero(info == i)[0] for i in range(num_info)])
    legal = np.zeros((num_info, len(actions)), bool)
    for t in node.transitions:
        legal[info[t.world], col[t.action]] = True
    edges = _group(node.transitions, lambda t: col[t.action], base)
    worlds = np.concatenate([e[1] for e in edges])
    ends = np.cumsum([len(e[1]) for e in edges])
    spans = [(e[0], end - len(e[1]), end, e[3]) for e, end in zip(edges, ends)]
    down = (_frozen(worlds), _frozen(info[worlds]), _frozen(np.concatenate([e[2] for e in edges])), spans)
    policy = regret_matching(np.zeros((num_info, len(actions))), legal)
    arrays = (membership, first_world, legal, policy)
    membership, first_world, legal, policy = (_frozen(a) for a in arrays)
    return _DecisionShape(p, actions, info, membership, first_world, legal, edges, down, policy)


def _chance_shape(node, base: int) -> list:
    return _group(node.transitions, lambda t: t.probability, base)


LeafValuesFn = Callable[[list[int], list[np.ndarray]], list[np.ndarray]]


class PublicTreeCFR:
    """CFR over a public tree with simultaneous updates, RM+ and linear averaging.

    `root_reach` ([root worlds, players]) multiplies every reach (the ranges a
    subgame starts from; ones for the whole game). `leaf_values(indices, reaches)`
    gives the per-world values [W, players] of leaves (non-terminal nodes without
    children) from their reach [W, players]; the whole batch comes in one call.
    `initial_regrets(index, actions)` may give a decision node that joins the tree
    its starting cumulative regrets ([acting player's infos, actions]; None: zeros).
    """

    def __init__(
        self,
        tree: PublicTree,
        root_reach: np.ndarray | None = None,
        leaf_values: LeafValuesFn | None = None,
        initial_regrets: Callable[[int, list[int]], np.ndarray | None] | None = None,
    ):
        self.tree = tree
        self.initial_regrets = initial_regrets
        self.num_players = tree.num_players
        self.iteration = 0
        self.decisions: dict[int, _Decision] = {}
        self._chance_edges: dict[int, list] = {}
        self._terminal_values: dict[int, np.ndarray] = {}
        self._chance_reach: list[np.ndarray] = []
        self._built_transitions: list[int] = []
        self.leaves: list[int] = []
        self.leaf_values = leaf_values
        self.root_reach = root_reach
        self.reach: list = []  # [W, players] after each iteration's walk down
        self.values: list = []  # [W, players] expected returns under the policy
        self._leaf_cache: dict[int, np.ndarray] = {}
        self._synced_revision = None  # the tree's `revision` (a SearchTree's) at the last sync
        self.sync()

    def sync(self) -> None:
        """Build arrays for public states appended to the tree and rebuild those
        that gained children (regrets and averages carried over by action). A tree that
        counts its expansions (`SearchTree.revision`) and has not grown since: nothing to do."""
        nodes = self.tree.nodes
        revision = getattr(self.tree, "revision", None)
        if revision is not None and revision == self._synced_revision and len(self._chance_reach) == len(nodes):
            return
        self._synced_revision = revision
        for index in range(len(self._chance_reach), len(nodes)):
            node = nodes[index]
            self._chance_reach.append(np.array([w.chance_reach for w in node.worlds]))
            self._built_transitions.append(-1)
            if node.kind == TERMINAL:
                self._terminal_values[index] = np.array([w.state.returns() for w in node.worlds])
            self.reach.append(None)
            self.values.append(None)
        for index, node in enumerate(nodes):
            if node.kind == TERMINAL or self._built_transitions[index] == len(node.transitions):
                continue
            self._built_transitions[index] = len(node.transitions)
            if not node.transitions:
                continue  # a leaf
            if node.kind == DECISION:
                old = self.decisions.get(index)
                new = self._decision_arrays(index, node)
                if old is not None:
                    for k, action in enumerate(old.actions):
                        j = new.actions.index(action)
                        new.cumulative_regret[:, j] = old.cumulative_regret[:, k]
                        new.cumulative_policy[:, j] = old.cumulative_policy[:, k]
                    new.policy = regret_matching(new.cumulative_regret, new.legal)
                elif (
                    self.initial_regrets is not None and (start := self.initial_regrets(index, new.actions)) is not None
                ):
                    new.cumulative_regret = np.where(new.legal, start, 0.0)
                    new.policy = regret_matching(new.cumulative_regret, new.legal)
                self.decisions[index] = new
            else:
                self._chance_edges[index] = self._chance_arrays(index, node)
        self.leaves = [i for i, n in enumerate(nodes) if n.kind != TERMINAL and not n.transitions]

    def _shape(self, index: int, node, kind: str, build):
        """What a node's arrays hold that depends only on its worlds and moves, children
        counted from its first (`_decision_shape`, `_chance_shape`): made once for all
        the trees that attached the same shared expansion (`SearchTree.structure`: their
        moves are the same, in the same order, their children added in the same order)."""
        structure = getattr(self.tree, "structure", None)
        cache = structure(index) if structure is not None else None
        key = (kind, len(node.transitions))
        shape = cache.get(key) if cache is not None else None
        if shape is None:
            shape = build(node, min(node.children.values()))
            if cache is not None:
                cache[key] = shape
        return shape

    def _decision_arrays(self, index: int, node) -> _Decision:
        shape = self._shape(index, node, DECISION, _decision_shape)
        base = min(node.children.values())
        worlds, infos, cols, spans = shape.down
        zeros = np.zeros(shape.legal.shape)
        return _Decision(
            shape.player,
            shape.actions,
            shape.info,
            shape.membership,
            shape.first_world,
            shape.legal,
            [(base + k, w, c, cw) for k, w, c, cw in shape.edges],
            zeros,
            zeros.copy(),
            shape.policy,
            down=(worlds, infos, cols, [(base + k, start, end, cw) for k, start, end, cw in spans]),
        )

    def _chance_arrays(self, index: int, node):
        base = min(node.children.values())
        return [(base + k, w, probs, cw) for k, w, probs, cw in self._shape(index, node, CHANCE, _chance_shape)]

    # -- one iteration -----------------------------------------------------------------

    def iterate(self) -> None:
        """One CFR iteration: every player updates at once (simultaneous updates)."""
        self.begin_iteration()
        self._evaluate_leaves()
        self.end_iteration()

    def begin_iteration(self) -> None:
        """An iteration's first half, up to its leaves' values: the reach of every
        public state under the current policies (`leaf_reaches` then holds the leaves')."""
        self.iteration += 1
        self._walk_down(lambda d: d.policy)

    def end_iteration(self) -> None:
        """The iteration's second half, once `set_leaf_values` gave the leaves' values:
        values up the tree, regrets and averages updated."""
        self._walk_up(update=True)

    def leaf_reaches(self) -> list[np.ndarray]:
        return [self.reach[i] for i in self.leaves]

    def set_leaf_values(self, values: list[np.ndarray]) -> None:
        self._leaf_cache = dict(zip(self.leaves, values))

    def evaluate_average(self, best_response: int | None = None, reuse_leaves: bool = False) -> None:
        """Reach and per-world values of the average policies, no update. With
        `best_response=b`, player b best-responds inside the tree instead (leaf values
        stay those of the average ranges; `reuse_leaves` keeps the last leaf batch)."""
        self._walk_down(lambda d: average_of(d.cumulative_policy, d.legal))
        if not reuse_leaves:
            self._evaluate_leaves()
        self._walk_up(update=False, best_response=best_response)

    def _walk_down(self, policy_of) -> None:
        nodes = self.tree.nodes
        shape, given = (len(nodes[0].worlds), self.num_players), self.root_reach
        # ones x the given reach is the given reach: a float copy of it, no multiplication
        self.reach[0] = np.ones(shape) if given is None else np.broadcast_to(given, shape).astype(float)
        decisions, chance = self.decisions, self._chance_edges
        for index in range(len(nodes)):  # breadth-first order: parents first
            reach = self.reach[index]
            d = decisions.get(index)
            if d is not None:
                worlds, infos, cols, spans = d.down
                r = reach[worlds]  # a copy: every edge's worlds at once
                r[:, d.player] *= policy_of(d)[infos, cols]
                for child, start, end, child_worlds in spans:
                    self._ensure(child)[child_worlds] = r[start:end]
            elif index in chance:
                for child, worlds, _, child_worlds in chance[index]:
                    self._ensure(child)[child_worlds] = reach[worlds]

    def _evaluate_leaves(self) -> None:
        if not self.leaves:
            return
        if self.leaf_values is None:
            raise ValueError("the tree has leaves but no value function was given")
        self.set_leaf_values(self.leaf_values(self.leaves, self.leaf_reaches()))

    def _ensure(self, index: int) -> np.ndarray:
        n = len(self.tree.nodes[index].worlds)
        if self.reach[index] is None or self.reach[index].shape[0] != n:
            self.reach[index] = np.zeros((n, self.num_players))
        return self.reach[index]

    def _walk_up(self, update: bool = True, best_response: int | None = None) -> None:
        for index in range(len(self.tree.nodes) - 1, -1, -1):  # children before parents
            node = self.tree.nodes[index]
            if node.kind == TERMINAL:
                self.values[index] = self._terminal_values[index]
            elif not node.transitions:
                self.values[index] = self._leaf_cache[index]
            elif node.kind == CHANCE:
                value = np.zeros((len(node.worlds), self.num_players))
                for child, worlds, probs, child_worlds in self._chance_edges[index]:
                    np.add.at(value, worlds, probs[:, None] * self.values[child][child_worlds])
                self.values[index] = value
            elif update:
                self.values[index] = self._update_decision(index, self.decisions[index])
            else:
                self.values[index] = self._value_decision(index, self.decisions[index], best_response)

    def _child_values(self, d: _Decision) -> np.ndarray:
        child_values = np.zeros((len(d.info), len(d.actions), self.num_players))
        for child, worlds, cols, child_worlds in d.edges:
            child_values[worlds, cols] = self.values[child][child_worlds]
        return child_values

    def counterfactual_reach(self, index: int, player: int) -> np.ndarray:
        """Per world: chance reach times every other player's reach."""
        return others_reach(self.reach[index], player) * self._chance_reach[index]

    def _value_decision(self, index: int, d: _Decision, best_response: int | None) -> np.ndarray:
        child_values = self._child_values(d)
        if best_response is not None and d.player == best_response:
            others = self.counterfactual_reach(index, d.player)
            cfv = d.membership @ (others[:, None] * child_values[:, :, d.player])
            cfv = np.where(d.legal, cfv, -np.inf)
            policy = np.zeros_like(cfv)
            policy[np.arange(len(cfv)), np.argmax(cfv, axis=1)] = 1.0
        else:
            policy = average_of(d.cumulative_policy, d.legal)
        return np.einsum("wa,wap->wp", policy[d.info], child_values)

    def _update_decision(self, index: int, d: _Decision) -> np.ndarray:
        child_values = self._child_values(d)
        p = d.player
        policy = d.policy[d.info]  # [W, A]
        value = np.einsum("wa,wap->wp", policy, child_values)
        # Counterfactual reach: chance times every other player's reach.
        reach = self.reach[index]
        others = self.counterfactual_reach(index, p)
        weights, own = others[:, None], child_values[:, :, p]
        d.action_cfv = d.membership @ (weights * own)
        d.cf_reach = d.membership @ others
        regret = d.membership @ (weights * (own - value[:, p, None]))
        regret = np.where(d.legal, regret, 0.0)
        d.cumulative_policy = linear_average_update(
            d.cumulative_policy, self.iteration, reach[d.first_world, p], d.policy
        )
        d.cumulative_regret = regret_matching_plus_update(d.cumulative_regret, regret)
        d.policy = regret_matching(d.cumulative_regret, d.legal)
        return value

    def counterfactual_values(self, index: int, player: int) -> np.ndarray:
        """cfv_i(s) = sum over the worlds w in s of chance(w) * reach_-i(w) * v_i(w),
        from the last walk, for each of `player`'s information states at a node."""
        node = self.tree.nodes[index]
        weights = self.counterfactual_reach(index, player) * self.values[index][:, player]
        return np.bincount(node.world_info[player], weights=weights, minlength=len(node.info_states[player]))

    def ranges(self, index: int, player: int) -> np.ndarray:
        """A player's own reach of each of its information states at a node (last walk)."""
        return ranges_from_reach(self.tree.nodes[index], self.reach[index], player)

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
