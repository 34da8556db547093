"""Value functions for GT-CFR's leaves (Student of Games paper, "Search via
GT-CFR" and Fig. 6: a query is a public belief state beta = (s_pub, r), the
answer counterfactual values for every information state of both players and
optionally a prior policy for the acting player).

Conventions (the ones `PublicTreeCFR` and `FlatCFR` use):
- ``ranges[p]``: player p's own reach probability of each of its information
  states at the public state (index = position in ``PublicState.info_states[p]``);
  chance is not part of a range, it is in the worlds' ``chance_reach``.
- ``values[p][s] = sum over worlds w in s of chance(w) * reach_-p(w) * v_p(w)``:
  the counterfactual value of information state s, ``v_p(w)`` player p's
  expected return from world w when both play the subgame's solution.
- ``policy``: ``[acting player's information states, game.num_distinct_actions()]``.

`ExactValueFunction` solves the leaf's subgame with CFR+ (regret-matching+,
linear averaging, simultaneous updates) for the given ranges; it is exact up to
the solve's exploitability and meant for small games and tests. Part 2 of
Student of Games plugs a network in through the same `ValueFunction` interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.public_states import PublicState, PublicTree, public_observation_function

from .cfr import others_reach
from .flat_cfr import FlatCFR


@dataclass
class Query:
    """A public belief state: the public state and both players' ranges."""

    public_state: PublicState
    ranges: list[np.ndarray]
    # The query's weight in its search's average policy: t for the leaves of CFR
    # iteration t (linear averaging), 0 when the values are only read.
    weight: float = 0.0


@dataclass
class Evaluation:
    values: list[np.ndarray]  # per player: counterfactual value of each information state
    policy: np.ndarray | None = None  # acting player's prior, [infos, num_distinct_actions]


class ValueFunction(ABC):
    """Counterfactual values (and optional priors) for a batch of public belief states.

    A value function that solves the subgames below the leaves may also keep
    `policy_sums` ({information state: {legal action: sum of weight x own reach x
    policy}}) so that the search can report its whole policy (`GTCFR.full_average_policy`).
    """

    policy_sums: dict[str, dict[int, float]] | None = None
    # Sees every batch of queries before it is answered (`NetworkValueFunction`'s query
    # collection; `polyzero.sog.lockstep` sets it per search).
    listener: Callable[[list[Query]], None] | None = None

    def regrets_at(self, node: PublicState, actions: list[int]) -> np.ndarray | None:
        """Cumulative regrets [acting player's information states, `actions`] that a
        solve of the subgame below `node` reached at its root, for the node joining
        the search tree (None: it starts from zero, as with a network)."""
        return None

    @abstractmethod
    def evaluate(self, queries: list[Query]) -> list[Evaluation]: ...


def answer_all(steps: Generator[list[Query], list[Evaluation], None], value_fn: ValueFunction) -> None:
    """Run a search's step generator (`GTCFR.run_steps`) to its end, answering each
    batch of queries it yields with one `value_fn.evaluate` call."""
    try:
        queries = next(steps)
        while True:
            queries = steps.send(value_fn.evaluate(queries))
    except StopIteration:
        pass


def world_reach(node: PublicState, ranges: list[np.ndarray]) -> np.ndarray:
    """[W, players]: each player's range spread over the node's worlds."""
    info = node.world_info
    return np.stack([np.asarray(ranges[p])[info[p]] for p in range(len(ranges))], axis=1)


def info_of(node: PublicState, player: int) -> np.ndarray:
    """[W] (read-only): each world's information state of `player`."""
    return node.world_info[player]


def counterfactual_reach(node: PublicState, reach: np.ndarray, player: int) -> np.ndarray:
    """Per world: chance reach times the other players' reach."""
    return node.world_chance * others_reach(reach, player)


# Below this many queries a batch is cheaper query by query: the batched forms'
# concatenations cost more than they save (measured on Leduc: even at about 5-8).
BATCH_FROM = 8


def bincount_parts(indices: list[np.ndarray], weights: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """`np.bincount(indices[j], part j's weights, minlength=sizes[j])` for every part j
    in one call, the parts' bins one after another (and where each part's begin): a
    bin adds only its own part's weights, in their order, so each part's sums are the
    ones its own bincount gives, bit for bit."""
    starts = np.cumsum([0, *sizes[:-1]]).astype(int)
    index = np.concatenate([np.asarray(i) + start for i, start in zip(indices, starts)])
    return np.bincount(index, weights=weights, minlength=sum(sizes)), starts


def per_world_values(node: PublicState, reach: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """Counterfactual values per information state -> per-world values [W, players]:
    v_p(w) = cfv_p(s_p(w)) / sum over w' in s_p(w) of chance(w') reach_-p(w').
    Any split consistent with the cfvs gives the same regrets above the leaf (a
    player's regrets weigh its own values by chance and the others' reach only)."""
    out = np.zeros((len(node.worlds), reach.shape[1]))
    for p in range(reach.shape[1]):
        info = info_of(node, p)
        denom = np.bincount(info, weights=counterfactual_reach(node, reach, p), minlength=len(values[p]))
        per_info = np.divide(values[p], denom, out=np.zeros_like(values[p], dtype=float), where=denom > 0)
        out[:, p] = per_info[info]
    return out


class Subtree(PublicTree):
    """The public tree below one public state (the root's worlds as given)."""

    def __init__(self, game: pyspiel.Game, root: PublicState, max_depth: int | None = None, observe=None):
        self.game = game
        self.observe = observe or public_observation_function(game)
        self.num_players = game.num_players()
        self._type = game.get_type()
        self.nodes = [PublicState(root.key, root.kind, root.player, root.worlds, root.info_states, None, 0)]
        self._grow(max_depth, None)


class ExactValueFunction(ValueFunction):
    """A leaf's subgame solved by CFR+ for the given ranges.

    Each query runs `iterations` iterations of public-tree CFR (`FlatCFR`) on the leaf's whole
    subtree, with the ranges fixed at its root, and returns each player's
    counterfactual values when it best-responds to the other's average policy
    (and the acting player's average policy as the prior). Best-response values
    are the safe ones (the values a re-solving gadget uses): where a range puts
    no weight, the average policies' values are arbitrary and can hide what a
    player gains by steering into the subgame (with them, GT-CFR's Leduc
    exploitability after 100 iterations was 6x higher, `docs/student_of_games.md`).
    `best_response_values=False` returns the average policies' values instead.

    With `average_policies`, the solves are also averaged the way CFR-D does
    (Burch et al. 2014; the policy of the paper's Theorem 1): each query adds its
    weight x own reach x the solved policy to `policy_sums`, so the frontier's
    subgames get the linearly averaged policy of the iterations that queried
    them.

    With `warm_start` (default) a public state's solver keeps its
    cumulative regrets from the previous query (the ranges of consecutive GT-CFR
    iterations differ little); the average restarts at each query. With
    `tolerance`, it keeps solving in chunks of `iterations` until the subgame's
    exploitability (mean of both best-response gains, in the game's units and
    the subgame's chance-and-range weighting) is at most that, or `max_iterations`.
    """

    def __init__(
        self,
        game: pyspiel.Game,
        iterations: int = 100,
        warm_start: bool = True,
        tolerance: float | None = None,
        max_iterations: int = 10_000,
        best_response_values: bool = True,
        average_policies: bool = False,
    ):
        self.game = game
        self.best_response_values = best_response_values
        self.policy_sums = {} if average_policies else None
        self.iterations = iterations
        self.warm_start = warm_start
        self.tolerance = tolerance
        self.max_iterations = max_iterations
        self.num_actions = game.num_distinct_actions()
        self._observe = public_observation_function(game)
        self._solvers: dict[tuple, FlatCFR] = {}
        self.queries = 0
        self.solve_iterations = 0

    def solver_for(self, node: PublicState) -> FlatCFR:
        solver = self._solvers.get(node.key)
        if solver is None:
            solver = FlatCFR(Subtree(self.game, node, observe=self._observe))
            self._solvers[node.key] = solver
        return solver

    def solve(self, node: PublicState, ranges: list[np.ndarray]) -> FlatCFR:
        solver = self.solver_for(node)
        solver.root_reach = world_reach(node, ranges)
        solver.reset(keep_regrets=self.warm_start)
        done = 0
        while True:
            for _ in range(self.iterations):
                solver.iterate()
            done += self.iterations
            if self.tolerance is None or done >= self.max_iterations:
                break
            if solver.exploitability() <= self.tolerance:
                break
        self.solve_iterations += done
        solver.evaluate_average()
        return solver

    def evaluate(self, queries: list[Query]) -> list[Evaluation]:
        out = []
        for q in queries:
            self.queries += 1
            node = q.public_state
            solver = self.solve(node, q.ranges)
            if self.policy_sums is not None and q.weight:
                self._accumulate(solver, q.weight)
            values = []
            for p in range(self.game.num_players()):
                if self.best_response_values:
                    solver.evaluate_average(best_response=p)
                values.append(solver.counterfactual_values(0, p))
            policy = solver.root_average_policy(self.num_actions)
            out.append(Evaluation(values, policy))
        return out

    def regrets_at(self, node: PublicState, actions: list[int]) -> np.ndarray | None:
        solver = self._solvers.get(node.key)
        if solver is None or not solver.iteration:
            return None
        infos = len(node.info_states[node.player])
        columns = solver.root_columns()
        out = np.zeros((infos, len(actions)))
        for j, action in enumerate(actions):
            if action in columns:
                out[:, j] = solver.cumulative_regret[:infos, columns[action]]
        return out

    def _accumulate(self, solver: FlatCFR, weight: float) -> None:
        """policy_sums += weight x own reach x average policy, for every information
        state of the subgame (the solver's last walk is of its average policies)."""
        policy = solver.average() * (weight * solver.reach[solver._first_world, solver._row_player])[:, None]
        for row, (name, actions) in enumerate(zip(solver._row_names, solver._row_actions)):
            sums = self.policy_sums.setdefault(name, {})
            for k in np.flatnonzero(solver.legal[row]):
                sums[actions[k]] = sums.get(actions[k], 0.0) + policy[row, k]
