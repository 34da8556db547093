"""How far a value function is from a game's equilibrium counterfactual values.

The whole game is solved by public-tree CFR (`FlatCFR` on the full public
tree); at every non-terminal public state below the root, the average policies'
ranges form a query and their counterfactual values are the exact answer. The
error of a value function is the mean absolute difference of its counterfactual
values over the information states those ranges reach, in the game's units
(chips for poker). For games whose public tree fits in memory (Kuhn, Leduc).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.public_states import TERMINAL, PublicTree

from .flat_cfr import FlatCFR
from .values import Query, ValueFunction, counterfactual_reach, info_of, world_reach


@dataclass
class EquilibriumBeliefs:
    queries: list[Query]
    values: list[list[np.ndarray]]  # per query, per player: exact counterfactual values
    masks: list[list[np.ndarray]]  # per query, per player: information states reached by the beliefs


def equilibrium_beliefs(
    game: pyspiel.Game, iterations: int = 1000, tree: PublicTree | None = None
) -> EquilibriumBeliefs:
    """The public belief states of an approximate equilibrium (CFR+ for `iterations`) and its values."""
    tree = tree or PublicTree(game)
    solver = FlatCFR(tree)
    for _ in range(iterations):
        solver.iterate()
    solver.evaluate_average()
    queries, values, masks = [], [], []
    for index, node in enumerate(tree.nodes):
        if index == 0 or node.kind == TERMINAL:
            continue
        ranges = [solver.ranges(index, p) for p in range(game.num_players())]
        reach = world_reach(node, ranges)
        mass = [
            np.bincount(
                info_of(node, p), weights=counterfactual_reach(node, reach, p), minlength=len(node.info_states[p])
            )
            for p in range(game.num_players())
        ]
        if not any(m.sum() > 1e-9 for m in mass):
            continue
        queries.append(Query(node, ranges))
        values.append([solver.counterfactual_values(index, p) for p in range(game.num_players())])
        masks.append([m > 1e-9 for m in mass])
    return EquilibriumBeliefs(queries, values, masks)


def value_error(value_fn: ValueFunction, beliefs: EquilibriumBeliefs) -> float:
    """Mean absolute error of `value_fn`'s counterfactual values over the reached information states."""
    answers = value_fn.evaluate(beliefs.queries)
    errors = []
    for answer, exact, masks in zip(answers, beliefs.values, beliefs.masks):
        for p, mask in enumerate(masks):
            errors.append(np.abs(np.asarray(answer.values[p]) - exact[p])[mask])
    return float(np.mean(np.concatenate(errors)))
