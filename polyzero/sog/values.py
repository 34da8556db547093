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
from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.public_states import PublicState, PublicTree, public_observation_function

from .flat_cfr import FlatCFR


@dataclass
class Query:
    """A public belief state: the public state and both players' ranges."""

    public_state: PublicState
    ranges: list[np.ndarray]


@dataclass
class Evaluation:
    values: list[np.ndarray]  # per player: counterfactual value of each information state
    policy: np.ndarray | None = None  # acting player's prior, [infos, num_distinct_actions]


class ValueFunction(ABC):
    """Counterfactual values (and optional priors) for a batch of public belief states."""

    @abstractmethod
    def evaluate(self, queries: list[Query]) -> list[Evaluation]:
        ...


def world_reach(node: PublicState, ranges: list[np.ndarray]) -> np.ndarray:
    """[W, players]: each player's range spread over the node's worlds."""
    return np.array([[ranges[p][w.info_states[p]] for p in range(len(ranges))] for w in node.worlds])


def info_of(node: PublicState, player: int) -> np.ndarray:
    return np.array([w.info_states[player] for w in node.worlds], dtype=int)


def counterfactual_reach(node: PublicState, reach: np.ndarray, player: int) -> np.ndarray:
    """Per world: chance reach times the other players' reach."""
    chance = np.array([w.chance_reach for w in node.worlds])
    return chance * np.prod(np.delete(reach, player, axis=1), axis=1)


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

    def __init__(self, game: pyspiel.Game, root: PublicState, max_depth: int | None = None,
                 observe=None):
        self.game = game
        self.observe = observe or public_observation_function(game)
        self.num_players = game.num_players()
        self._type = game.get_type()
        self.nodes = [PublicState(root.key, root.kind, root.player, root.worlds, root.info_states, None, 0)]
        self._grow(max_depth, None)


class ExactValueFunction(ValueFunction):
    """A leaf's subgame solved by CFR+ for the given ranges.

    Each query runs `iterations` iterations of public-tree CFR (`FlatCFR`) on the leaf's whole
    subtree, with the ranges fixed at its root, and returns the counterfactual
    values of the average policies (and the acting player's average policy as
    the prior). With `warm_start` (default) a public state's solver keeps its
    cumulative regrets from the previous query (the ranges of consecutive GT-CFR
    iterations differ little); the average restarts at each query. With
    `tolerance`, it keeps solving in chunks of `iterations` until the subgame's
    exploitability (mean of both best-response gains, in the game's units and
    the subgame's chance-and-range weighting) is at most that, or `max_iterations`.
    """

    def __init__(self, game: pyspiel.Game, iterations: int = 100, warm_start: bool = True,
                 tolerance: float | None = None, max_iterations: int = 10_000):
        self.game = game
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
            values = [solver.counterfactual_values(0, p) for p in range(self.game.num_players())]
            policy = solver.root_average_policy(self.num_actions)
            out.append(Evaluation(values, policy))
        return out

