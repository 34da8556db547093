"""Why does a Student of Games run stop improving? (`polyzero sog-probe RUN`)

Two measurements against exact answers, for games whose public tree fits in memory
(Kuhn, Leduc, small Liar's Dice and Scotland Yard):

1. **The CVPN against exact counterfactual values, by depth** (and over a run's
   checkpoints, by training time): the whole game solved by CFR+
   (`value_error.equilibrium_beliefs`); at every public state below the root the
   equilibrium's ranges are the query, its counterfactual values the answer. The
   error is reported per information state as a *normalised* value (the
   counterfactual value over the information state's chance-and-opponent reach:
   its expected return, in the game's units, what the CVPN predicts; paper,
   "Counterfactual value-and-policy networks") and grouped by the public state's
   depth (public actions below the root): over the information states reached,
   and weighted by each one's probability under the equilibrium (what an
   equilibrium's play meets; deep public states with large pots are rare).
2. **Query-solving targets against exact re-solves**: queries the run's solvers
   would see (its query buffer at the checkpoint), each solved three ways: the
   network's own answer, the run's solver (GT-CFR(s_solve, c_solve) with the
   network at its leaves: the training target, "Computing training targets"),
   and an exact re-solve of the query's subgame (CFR+ for the same ranges,
   `ExactValueFunction`). A target no closer to the exact answer than the
   network's own prediction cannot teach it anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyspiel

from polyzero.games.public_states import PublicTree

from .cvpn import NetworkValueFunction
from .value_error import EquilibriumBeliefs, equilibrium_beliefs
from .values import ExactValueFunction, Query, counterfactual_reach, info_of, world_reach

REACHED = 1e-9  # chance-and-opponent reach below which an information state has no value


def normalised(query: Query, cfv: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Counterfactual values -> each information state's expected return (cfv over its
    chance-and-opponent reach), and each information state's probability under the
    query's beliefs (chance x both ranges; 0 where the query does not reach it)."""
    node = query.public_state
    reach = world_reach(node, query.ranges)
    values, weights = [], []
    for p in range(len(cfv)):
        mass = np.bincount(
            info_of(node, p), weights=counterfactual_reach(node, reach, p), minlength=len(node.info_states[p])
        )
        mask = mass > REACHED
        values.append(np.divide(np.asarray(cfv[p], float), mass, out=np.zeros(len(mass)), where=mask))
        weights.append(np.where(mask, mass * np.asarray(query.ranges[p], float), 0.0))
    return values, weights


def _errors(query: Query, a: list[np.ndarray], b: list[np.ndarray], per_query: bool) -> tuple[np.ndarray, np.ndarray]:
    """Absolute differences of two answers' normalised values at the information states the
    query reaches, and their weights: each information state's probability (`per_query`:
    normalised to sum 1 per player within the query, so that every query counts alike)."""
    va, weights = normalised(query, a)
    vb, _ = normalised(query, b)
    errors, out = [], []
    for p in range(len(a)):
        reached = weights[p] > 0
        w = weights[p][reached]
        errors.append(np.abs(va[p] - vb[p])[reached])
        out.append(w / w.sum() if per_query and w.sum() > 0 else w)
    return np.concatenate(errors), np.concatenate(out)


@dataclass
class DepthTable:
    """Mean absolute error per depth (public actions below the root) and overall: over the
    information states reached, and weighted by their probability."""

    errors: dict[str, dict[int, list[tuple[float, float]]]] = field(default_factory=dict)

    def add(self, name: str, depth: int, errors: tuple[np.ndarray, np.ndarray]) -> None:
        self.errors.setdefault(name, {}).setdefault(depth, []).extend(zip(*map(list, errors)))

    def summary(self) -> dict[str, dict]:
        def mean(pairs):
            e, w = np.array(pairs).reshape(-1, 2).T
            return float(e.mean()), float(np.average(e, weights=w)) if w.sum() > 0 else None

        out = {}
        for name, table in self.errors.items():
            everything = [pair for pairs in table.values() for pair in pairs]
            by_depth = {d: mean(pairs) for d, pairs in sorted(table.items())}
            out[name] = {
                "all": mean(everything)[0],
                "all_weighted": mean(everything)[1],
                "by_depth": {d: m[0] for d, m in by_depth.items()},
                "by_depth_weighted": {d: m[1] for d, m in by_depth.items()},
                "count": {d: len(pairs) for d, pairs in sorted(table.items())},
            }
        return out


def network_error(value_fn: NetworkValueFunction, beliefs: EquilibriumBeliefs) -> dict:
    """The CVPN's normalised-value error against the equilibrium's, by depth."""
    table = DepthTable()
    answers = value_fn.evaluate(beliefs.queries)
    for query, answer, exact in zip(beliefs.queries, answers, beliefs.values):
        table.add("network", query.public_state.depth, _errors(query, answer.values, exact, per_query=False))
    return table.summary()["network"]


def target_error(
    game: pyspiel.Game, value_fn: NetworkValueFunction, settings, queries: list[Query], exact_iterations: int, seed: int
) -> dict:
    """On each query: the network's answer, the solver's training target and an exact
    re-solve; errors (normalised values) of the first two against the third, by depth.
    `settings`: the run's solver search (GT-CFR(s_solve, c_solve))."""
    from .selfplay import solve_query

    exact_fn = ExactValueFunction(game, iterations=exact_iterations, warm_start=False, best_response_values=False)
    table = DepthTable()
    for i, query in enumerate(queries):
        exact = exact_fn.evaluate([query])[0].values
        target = solve_query(game, query, value_fn, settings, np.random.default_rng([seed, i]))
        network = value_fn.evaluate([query])[0].values
        depth = query.public_state.depth
        table.add("network", depth, _errors(query, network, exact, per_query=True))
        table.add("target", depth, _errors(query, target, exact, per_query=True))
        table.add("target_vs_network", depth, _errors(query, target, network, per_query=True))
    return table.summary()


def exact_beliefs(game: pyspiel.Game, iterations: int, max_public_states: int) -> EquilibriumBeliefs:
    """The equilibrium's belief states and values; a ValueError for games too large."""
    from .players import EXACT_LEAF_WORLDS

    tree = PublicTree(game, max_worlds=EXACT_LEAF_WORLDS)
    if len(tree.nodes) > max_public_states:
        raise ValueError(f"{game} has {len(tree.nodes):,} public states (more than {max_public_states:,})")
    return equilibrium_beliefs(game, iterations, tree)


def spread_checkpoints(points: list[dict], n: int) -> list[dict]:
    """The first of `points` and the `n` nearest to n even marks over their "minutes"
    (checkpoints spread over a run's training time)."""
    if not points:
        return []
    last = points[-1]["minutes"]
    picks = [points[0]]
    for k in range(1, n + 1):
        best = min(points, key=lambda p: abs(p["minutes"] - last * k / n))
        if best not in picks:
            picks.append(best)
    return picks
