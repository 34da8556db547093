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
   depth (public actions below the root).
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
    chance-and-opponent reach), and which information states the query reaches."""
    node = query.public_state
    reach = world_reach(node, query.ranges)
    values, masks = [], []
    for p in range(len(cfv)):
        mass = np.bincount(info_of(node, p), weights=counterfactual_reach(node, reach, p),
                           minlength=len(node.info_states[p]))
        mask = mass > REACHED
        values.append(np.divide(np.asarray(cfv[p], float), mass, out=np.zeros(len(mass)), where=mask))
        masks.append(mask)
    return values, masks


def _errors(query: Query, a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """Absolute differences of two answers' normalised values at the reached information states."""
    va, masks = normalised(query, a)
    vb, _ = normalised(query, b)
    return np.concatenate([np.abs(va[p] - vb[p])[masks[p]] for p in range(len(a))])


@dataclass
class DepthTable:
    """Mean absolute error per depth (public actions below the root), and overall."""

    errors: dict[str, dict[int, list[float]]] = field(default_factory=dict)

    def add(self, name: str, depth: int, errors: np.ndarray) -> None:
        self.errors.setdefault(name, {}).setdefault(depth, []).extend(map(float, errors))

    def depths(self) -> list[int]:
        return sorted({d for table in self.errors.values() for d in table})

    def summary(self) -> dict[str, dict]:
        out = {}
        for name, table in self.errors.items():
            everything = [e for errors in table.values() for e in errors]
            out[name] = {"all": float(np.mean(everything)) if everything else None,
                         "by_depth": {d: float(np.mean(e)) for d, e in sorted(table.items())},
                         "count": {d: len(e) for d, e in sorted(table.items())}}
        return out


def network_error(value_fn: NetworkValueFunction, beliefs: EquilibriumBeliefs) -> dict:
    """The CVPN's normalised-value error against the equilibrium's, by depth."""
    table = DepthTable()
    answers = value_fn.evaluate(beliefs.queries)
    for query, answer, exact in zip(beliefs.queries, answers, beliefs.values):
        table.add("network", query.public_state.depth, _errors(query, answer.values, exact))
    return table.summary()["network"]


def target_error(game: pyspiel.Game, value_fn: NetworkValueFunction, settings, queries: list[Query],
                 exact_iterations: int, seed: int) -> dict:
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
        table.add("network", depth, _errors(query, network, exact))
        table.add("target", depth, _errors(query, target, exact))
        table.add("target_vs_network", depth, _errors(query, target, network))
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
