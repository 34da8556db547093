"""Growing-tree CFR (Student of Games paper, "Search via GT-CFR", Fig. 7) and the
re-solving gadget ("Modified continual re-solving").

GT-CFR starts from a tree holding the search's public state and all its
children, then alternates:

1. the regret update phase: ceil(1/c) iterations of public-tree CFR with
   simultaneous updates, regret-matching+ and linear averaging
   (`polyzero.sog.cfr.PublicTreeCFR`; in perfect-information games the same
   iterations vectorised per tree level, `polyzero.sog.perfect_cfr.PerfectInfoCFR`);
   non-terminal leaves are evaluated by the
   value function in one batch per iteration, terminals by the game;
2. the expansion phase: c expansion simulations on average (exactly
   floor(t c) simulations after t CFR iterations, so c = 0.1 is one every ten
   iterations and c = 4 is four per iteration, sharing virtual losses). A
   simulation samples a world from the beliefs at the search's public state
   (an information state from a player's range, then a world in it), walks down
   with pi_select = 1/2 pi_PUCT + 1/2 pi_CFR and adds the children of the first
   leaf it reaches: the top k by prior (k = 1 in perfect-information games, all
   children otherwise). When k < all, an interior node's action whose child is
   not in the tree yet ends the walk by adding that child.

SoG(s, c) is `GTCFR.run(simulations=s, expansions_per_update=c)`: T = round(s / c)
CFR iterations, with floor(t c) expansions done before iteration t + 1 (so
floor((T - 1) c) of the s simulations run: those after the last iteration
would change nothing).

PUCT (Fig. 7's pi_PUCT) at information state s of the acting player i:
argmax_a Q(s, a) + C P(s, a) sqrt(N(s) + 1) / (1 + N(s, a)), with
Q(s, a) = v_i(s, a) / (sum over worlds of s of chance reach x opponent reach)
(the counterfactual action value normalised by the opponent's reach, from the
last CFR iteration) mapped to [0, 1] by the game's utility range, P the prior
from the value function's policy output (uniform where there is none) and N the
visit counts over information states, accumulated over the search. Virtual loss:
an edge already taken k times in the current expansion phase counts as k visits
of value 0 (a loss) in Q. pi_select mixes: with probability 1/2 the PUCT
argmax, else a sample of CFR's linearly averaged policy at s.

Perfect-information shortcut ("Performance guarantees for continual
re-solving"): every public state holds one world, so a leaf is evaluated once at
range 1 and its values scaled by the opponent's reach afterwards (stored as the
per-world value, which is what the CFR walk multiplies by the reach); value
calls grow as O(T) rather than O(kT^2).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.chance import sample_chance
from polyzero.games.public_states import CHANCE, DECISION, TERMINAL

from .cfr import (
    PublicTreeCFR,
    average_of,
    others_reach,
    ranges_from_reach,
    regret_matching,
    regret_matching_plus_update,
)
from .draws import draw, short_sum
from .perfect_cfr import PerfectInfoCFR
from .search_tree import SearchTree
from .values import Evaluation, Query, ValueFunction, answer_all, per_world_values, world_reach


@dataclass
class SoGSettings:
    """SoG(s, c) and the search's other settings."""

    simulations: int = 100  # s: expansion simulations per search
    expansions_per_update: float = 1.0  # c: expansions per CFR iteration (fractional allowed)
    puct_c: float = 1.0  # the PUCT constant C
    top_k: int | None = None  # children added per expansion; None: 1 (perfect information) or all
    max_depth: int | None = None  # depth-limited mode: no public state deeper than this below the root
    alpha: float = 0.5  # re-solving: opponent range alpha r + (1 - alpha) r_prev
    min_iterations: int = 1  # CFR iterations when s / c rounds to fewer
    solve_iterations: int = 100  # the exact value function's CFR+ iterations per leaf query
    # A node joining the tree starts from the regrets the value function's solver of
    # its subgame reached there (ExactValueFunction), not from zero.
    inherit_regrets: bool = True
    # How the player picks its move from the re-solved policy: "sample" (sound self-play,
    # the paper) or "argmax", its most probable action -- for perfect-information games,
    # where a pure move is optimal, as AlphaZero plays its most visited one in evaluation.
    final: str = "sample"

    def iterations(self) -> int:
        if self.simulations <= 0:
            return self.min_iterations
        return max(self.min_iterations, int(round(self.simulations / self.expansions_per_update)))


def is_perfect_information(game: pyspiel.Game) -> bool:
    return game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION


@dataclass
class Gadget:
    """The re-solving gadget ("Modified continual re-solving"; Burch et al. 2014):
    at each of the opponent's information states at the root, follow (F) into the
    subgame or terminate (T) and receive `terminate` (the opponent's counterfactual
    values from the previous search). F/T are learned by RM+ with linear
    averaging like every other decision; the opponent enters the subgame with
    range alpha pi_F + (1 - alpha) `previous_range`."""

    player: int  # the opponent
    terminate: np.ndarray  # [opponent infos] counterfactual values
    previous_range: np.ndarray  # [opponent infos]
    alpha: float = 0.5

    def __post_init__(self):
        n = len(self.terminate)
        self.cumulative_regret = np.zeros((n, 2))
        self.cumulative_policy = np.zeros((n, 2))
        self.legal = np.ones((n, 2), bool)
        self.policy = regret_matching(self.cumulative_regret, self.legal)

    def range(self, average: bool = False) -> np.ndarray:
        policy = average_of(self.cumulative_policy, self.legal) if average else self.policy
        return self.alpha * policy[:, 0] + (1 - self.alpha) * self.previous_range

    def update(self, iteration: int, follow: np.ndarray) -> None:
        values = np.stack([follow, self.terminate], axis=1)
        value = (self.policy * values).sum(axis=1)
        self.cumulative_policy += iteration * self.policy
        self.cumulative_regret = regret_matching_plus_update(self.cumulative_regret, values - value[:, None])
        self.policy = regret_matching(self.cumulative_regret, self.legal)


class GTCFR:
    """One GT-CFR search over a `SearchTree` (see the module docstring).

    `root_ranges` fixes both players' ranges at the tree's root (ones: the game's
    root); with a `gadget`, the opponent's range there comes from the gadget.
    `search_root` is the public state the search is for: expansion simulations
    start there (in re-solving it is below the tree's root).
    """

    def __init__(
        self,
        tree: SearchTree,
        value_fn: ValueFunction,
        settings: SoGSettings,
        rng: np.random.Generator,
        search_root: int = 0,
        root_ranges: list[np.ndarray] | None = None,
        gadget: Gadget | None = None,
    ):
        self.tree = tree
        self.game = tree.game
        self.value_fn = value_fn
        self.settings = settings
        self.rng = rng
        self.search_root = search_root
        self.num_players = tree.num_players
        root = tree.nodes[0]
        self.root_ranges = root_ranges or [np.ones(len(s)) for s in root.info_states]
        self.gadget = gadget
        self.perfect_information = is_perfect_information(self.game)
        self.top_k = settings.top_k if settings.top_k is not None else (1 if self.perfect_information else None)
        self.num_actions = self.game.num_distinct_actions()
        low, high = self.game.min_utility(), self.game.max_utility()
        self._value_range = (low, high if high > low else low + 1.0)
        self.priors: dict[int, np.ndarray] = {}
        self.visits: dict[int, np.ndarray] = {}
        self._shortcut: dict[int, np.ndarray] = {}
        self.value_calls = 0  # public belief states sent to the value function
        self.expansions = 0
        self._fixed_root_reach = None
        # One world per public state: the level-vectorised CFR (the same iterations, faster).
        cfr = PerfectInfoCFR if self.perfect_information else PublicTreeCFR
        self.cfr = cfr(
            tree, self._root_reach(), self._leaf_values, self._inherited_regrets if settings.inherit_regrets else None
        )

    # -- the regret update phase --------------------------------------------------

    def _root_reach(self, average: bool = False) -> np.ndarray:
        """The root's reach; without a gadget the ranges are fixed, so it is built once
        (the CFR only reads it)."""
        if self.gadget is None:
            if self._fixed_root_reach is None:
                self._fixed_root_reach = world_reach(self.tree.nodes[0], self.root_ranges)
            return self._fixed_root_reach
        ranges = list(self.root_ranges)
        ranges[self.gadget.player] = self.gadget.range(average)
        return world_reach(self.tree.nodes[0], ranges)

    def _leaf_values(self, indices: list[int], reaches: list[np.ndarray]) -> list[np.ndarray]:
        """The CFR's leaf callback outside an iteration (the average policies' walks, whose
        queries weigh 0 in an average): the leaves' per-world values, asking the value
        function at once (`_leaf_queries`, its `evaluate`, `_leaf_answers`)."""
        pending = self._leaf_queries(indices, reaches, 0.0)
        return self._leaf_answers(pending, self.value_fn.evaluate(pending[0]) if pending[0] else [])

    def _leaf_queries(self, indices: list[int], reaches: list[np.ndarray], weight: float) -> tuple:
        """The value function's queries for these leaves (perfect information: those not
        valued yet, at range 1), with what `_leaf_answers` needs to read the answers."""
        out: dict[int, np.ndarray] = {}
        queries, asked = [], []
        for index, reach in zip(indices, reaches):
            node = self.tree.nodes[index]
            if self.perfect_information and index in self._shortcut:
                out[index] = self._shortcut[index]
                continue
            if self.perfect_information:
                ranges = [np.ones(len(s)) for s in node.info_states]
            else:
                ranges = [ranges_from_reach(node, reach, p) for p in range(self.num_players)]
            queries.append(Query(node, ranges, weight))
            asked.append((index, reach if not self.perfect_information else np.ones_like(reach)))
        return queries, asked, out, indices

    def _leaf_answers(self, pending: tuple, answers: list) -> list[np.ndarray]:
        """Per-world values of the leaves from the value function's answers to `pending`'s queries."""
        queries, asked, out, indices = pending
        self.value_calls += len(queries)
        for (index, reach), ev in zip(asked, answers):
            node = self.tree.nodes[index]
            values = per_world_values(node, reach, ev.values)
            if ev.policy is not None:
                self.priors[index] = ev.policy
            if self.perfect_information:
                self._shortcut[index] = values
            out[index] = values
        return [out[i] for i in indices]

    def _inherited_regrets(self, index: int, actions: list[int]) -> np.ndarray | None:
        return self.value_fn.regrets_at(self.tree.nodes[index], actions)

    def iterate(self) -> None:
        """One CFR iteration over the current tree (and the gadget, if any)."""
        answer_all(self.iterate_steps(), self.value_fn)

    def iterate_steps(self) -> Generator[list[Query], list[Evaluation], None]:
        """`iterate` as a generator: it yields the iteration's leaf queries (if any) and
        takes the value function's answers, so that a driver may answer several
        searches' queries in one call (`polyzero.sog.lockstep`). A leaf's values depend
        on its public state and the ranges this iteration's walk down gives it, nothing
        else (Algorithm 2's regret update phase), so when they are computed is free."""
        self.cfr.sync()
        self.cfr.root_reach = self._root_reach()
        self.cfr.begin_iteration()
        if self.cfr.leaves:
            weight = self.cfr.iteration  # this iteration's linear-averaging weight
            pending = self._leaf_queries(self.cfr.leaves, self.cfr.leaf_reaches(), weight)
            answers = (yield pending[0]) if pending[0] else []
            self.cfr.set_leaf_values(self._leaf_answers(pending, answers))
        self.cfr.end_iteration()
        if self.gadget is not None:
            node = self.tree.nodes[0]
            ranges = list(self.root_ranges)
            ranges[self.gadget.player] = np.ones(len(node.info_states[self.gadget.player]))
            # follow values: the opponent's counterfactual values at the root (own reach excluded)
            reach = world_reach(node, ranges)
            info = node.world_info[self.gadget.player]
            others = node.world_chance * others_reach(reach, self.gadget.player)
            follow = np.bincount(
                info, weights=others * self.cfr.values[0][:, self.gadget.player], minlength=len(self.gadget.terminate)
            )
            self.gadget.update(self.cfr.iteration, follow)

    # -- the expansion phase -------------------------------------------------------

    def run(
        self, simulations: int | None = None, expansions_per_update: float | None = None, iterations: int | None = None
    ) -> None:
        """SoG(s, c): s expansion simulations, c per CFR iteration; `iterations`
        overrides the number of CFR iterations (round(s / c) by default)."""
        answer_all(self.run_steps(simulations, expansions_per_update, iterations), self.value_fn)

    def run_steps(
        self, simulations: int | None = None, expansions_per_update: float | None = None, iterations: int | None = None
    ) -> Generator[list[Query], list[Evaluation], None]:
        """`run` as a generator of its CFR iterations' leaf queries (`iterate_steps`)."""
        s = self.settings.simulations if simulations is None else simulations
        c = self.settings.expansions_per_update if expansions_per_update is None else expansions_per_update
        total = (
            iterations
            if iterations is not None
            else max(self.settings.min_iterations, int(round(s / c)) if s > 0 else self.settings.min_iterations)
        )
        done = 0
        for t in range(1, total + 1):
            if t > 1:  # expansions after iteration t - 1, seen by iteration t onwards
                target = min(s, int(math.floor((t - 1) * c + 1e-9)))
                if target > done:
                    self.expansion_phase(target - done)
                    done = target
            yield from self.iterate_steps()
        self.cfr.sync()

    def expansion_phase(self, simulations: int) -> None:
        virtual: dict[tuple[int, int, int], int] = {}
        self._virtual = virtual
        for _ in range(simulations):
            self.simulate(virtual)
        self._virtual = {}
        self.cfr.sync()

    def _sample_root_world(self) -> int:
        """A world of the search root, drawn with chance x reach (`draw`: rng.choice's)."""
        index = self.search_root
        chance = self.tree.nodes[index].world_chance
        reach = self.cfr.reach[index]
        weights = chance * (np.prod(reach, axis=1) if reach is not None else 1.0)
        total = weights.sum()
        if total <= 0:
            weights, total = chance, chance.sum()
        return draw(self.rng, (weights / total).tolist())

    def simulate(self, virtual: dict) -> int | None:
        """One expansion simulation; returns the index of the node expanded (None
        when the walk ends at a terminal or at the depth limit)."""
        tree = self.tree
        index, world = self.search_root, self._sample_root_world()
        path = []
        expanded = None
        while True:
            node = tree.nodes[index]
            if node.kind == TERMINAL:
                break
            if tree.is_leaf(index):
                if self.settings.max_depth is None or node.depth < self.settings.max_depth:
                    self._expand_leaf(index)
                    expanded = index
                break
            state = node.worlds[world].state
            if node.kind == CHANCE:
                action = sample_chance(state, self.rng, apply=False)
            else:
                player = node.player
                info = node.worlds[world].info_states[player]
                action = self._select(index, info, state.legal_actions())
                path.append((index, info, action))
            move = tree.moves[index].get((world, action))
            if move is None:  # k < all: this action's child is not in the tree yet
                tree.expand(index, {action})
                expanded = index
                break
            index, world = move
        for index, info, action in path:
            counts = self._visits(index)
            counts[info, action] += 1
            virtual[(index, info, action)] = virtual.get((index, info, action), 0) + 1
        self.expansions += 1
        return expanded

    def _visits(self, index: int) -> np.ndarray:
        if index not in self.visits:
            node = self.tree.nodes[index]
            self.visits[index] = np.zeros((len(node.info_states[node.player]), self.num_actions))
        return self.visits[index]

    def _expand_leaf(self, index: int) -> None:
        node = self.tree.nodes[index]
        if node.kind != DECISION or self.top_k is None:
            self.tree.expand(index)
            return
        legal = sorted({a for w in node.worlds for a in w.state.legal_actions()})
        if self.top_k >= len(legal):
            self.tree.expand(index)
            return
        prior = self._prior(index)
        score = prior.sum(axis=0)[legal] + 1e-12 * self.rng.random(len(legal))  # random tie-break
        chosen = {legal[i] for i in np.argsort(-score)[: self.top_k]}
        self.tree.expand(index, chosen)

    def _prior(self, index: int) -> np.ndarray:
        if index not in self.priors:
            node = self.tree.nodes[index]
            ranges = [np.ones(len(s)) for s in node.info_states]
            ev = self.value_fn.evaluate([Query(node, ranges)])[0]
            self.value_calls += 1
            if ev.policy is None:
                policy = np.zeros((len(node.info_states[node.player]), self.num_actions))
                for w in node.worlds:
                    legal = w.state.legal_actions()
                    policy[w.info_states[node.player], legal] = 1.0 / len(legal)
                ev.policy = policy
            self.priors[index] = ev.policy
        return self.priors[index]

    def _select(self, index: int, info: int, legal: list[int]) -> int:
        """pi_select = 1/2 pi_PUCT + 1/2 pi_CFR at one information state. The arithmetic
        on a few actions is Python's on floats, numpy's operation for operation (sums
        `short_sum`, draws `draw`; tests/test_sog_step_exact.py)."""
        d = self.cfr.decisions.get(index)
        if self.rng.random() < 0.5:
            return legal[int(np.argmax(self._puct_scores(index, info, legal, d)))]
        p = [0.0] * len(legal)
        if d is not None:
            at = dict(zip(d.actions, average_of(d.cumulative_policy[info], d.legal[info]).tolist()))
            p = [at.get(a, 0.0) for a in legal]
        total = short_sum(p)
        if total <= 0:
            p, total = [1.0] * len(legal), float(len(legal))
        return legal[draw(self.rng, [x / total for x in p])]

    def _puct_scores(self, index: int, info: int, legal: list[int], d) -> list[float]:
        low, high = self._value_range
        parent, q_of = 0.5, {}
        if d is not None and d.action_cfv is not None and d.cf_reach[info] > 0:
            q = (d.action_cfv[info] / d.cf_reach[info] - low) / (high - low)
            parent = float(average_of(d.cumulative_policy[info], d.legal[info]) @ q)
            q_of = {a: v for a, v in zip(d.actions, q.tolist()) if not math.isnan(v)}
        counts = self._visits(index)[info][legal].tolist()
        virtual = [self._virtual.get((index, info, a), 0) for a in legal] if self._virtual else [0] * len(legal)
        qs = [q_of.get(a, parent) for a in legal]
        qs = [q * (n - v) / max(n, 1) if n > 0 else q for q, n, v in zip(qs, counts, virtual)]
        prior = self.priors.get(index)
        p = prior[info][legal].tolist() if prior is not None else [1.0] * len(legal)
        total = short_sum(p)
        p = [x / total for x in p] if total > 0 else [1.0 / len(legal)] * len(legal)
        root, c = math.sqrt(short_sum(counts) + 1), self.settings.puct_c
        noise = self.rng.random(len(legal)).tolist()
        return [q + c * x * root / (1 + n) + 1e-9 * e for q, x, n, e in zip(qs, p, counts, noise)]

    _virtual: dict = {}

    # -- results -------------------------------------------------------------------

    def average_policy(self) -> dict[str, dict[int, float]]:
        return self.cfr.average_policy()

    def full_average_policy(self) -> dict[str, dict[int, float]]:
        """The search's policy over the whole game below its root, the average
        policy of Theorem 1 (CFR-D's, Burch et al. 2014): at each information
        state, the linearly averaged CFR policy of the iterations it spent inside
        the tree plus the averaged leaf solves of the iterations it spent below
        the frontier (`ValueFunction.policy_sums`, e.g.
        `ExactValueFunction(average_policies=True)`)."""
        if self.value_fn.policy_sums is None:
            raise ValueError(
                "the value function keeps no policy sums below the leaves "
                "(use ExactValueFunction(average_policies=True))"
            )
        sums = {name: dict(row) for name, row in self.value_fn.policy_sums.items()}
        for index, d in self.cfr.decisions.items():
            for i, name in enumerate(self.tree.nodes[index].info_states[d.player]):
                row = sums.setdefault(name, {})
                for k in np.flatnonzero(d.legal[i]):
                    row[d.actions[k]] = row.get(d.actions[k], 0.0) + d.cumulative_policy[i, k]
        out = {}
        for name, row in sums.items():
            total = sum(row.values())
            out[name] = {a: (v / total if total > 0 else 1.0 / len(row)) for a, v in row.items()}
        return out

    def summary(self) -> Summary:
        """Ranges and counterfactual values at every public state of the tree under
        the average policies: what a later re-solve reads. The counterfactual values
        are those of each player's best response inside the tree to the other's
        average policy (leaves valued at the average ranges), an upper bound on what
        the player can get, so the gadget built from them is safe."""
        self.cfr.sync()
        self.cfr.root_reach = self._root_reach(average=True)
        self.cfr.evaluate_average()
        nodes = self.tree.nodes
        ranges = {i: [self.cfr.ranges(i, p) for p in range(self.num_players)] for i in range(len(nodes))}
        cfv = {i: [None] * self.num_players for i in range(len(nodes))}
        for b in range(self.num_players):
            self.cfr.evaluate_average(best_response=b, reuse_leaves=True)
            for i in range(len(nodes)):
                cfv[i][b] = self.cfr.counterfactual_values(i, b)
        return Summary(self.tree, ranges, cfv)


@dataclass
class Summary:
    """What a search leaves for the next re-solve: per public state of its tree,
    each player's range and counterfactual values under the average policies."""

    tree: SearchTree
    ranges: dict[int, list[np.ndarray]]
    cfv: dict[int, list[np.ndarray]]

    def closest(self, key: tuple[str, ...]) -> int | None:
        """The deepest public state of the tree on the way to `key` (None if even
        the root is not a prefix of it)."""
        best = None
        for n in range(len(self.tree.nodes[0].key), len(key) + 1):
            index = self.tree.index_of.get(key[:n])
            if index is not None:
                best = index
        return best
