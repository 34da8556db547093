"""Batched Monte Carlo tree search: the search kinds, dispatched by name.

Every algorithm calls :func:`search`; ``params.kind`` picks the root:

* ``puct`` (:func:`run_search`): pUCT at every node; visit counts are the result;
* ``gumbel`` / ``full_gumbel`` (:func:`polyzero.search.gumbel.gumbel_search`):
  Gumbel-Top-k and Sequential Halving at the root (Gumbel paper, Algorithm 2),
  which also return the policy target pi' and the action A_{n+1}.

The loop they share, the model protocol and the result live in
:mod:`polyzero.search.loop`; this module only chooses (so neither kind imports the
other).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .gumbel import gumbel_search
from .loop import (
    Expansion,
    RootActionFn,
    SearchHooks,
    SearchModel,
    SearchResult,
    finish,
    selection_scores,
    simulate,
    start_tree,
)
from .params import SearchParams


def run_search(
    model: SearchModel,
    params: SearchParams,
    rng: np.random.Generator,
    add_noise: bool = False,
    hooks: SearchHooks | None = None,
) -> SearchResult:
    """pUCT: `params.num_simulations` simulations on every tree (the root is evaluated
    before the loop, so the root's children receive exactly num_simulations visits
    unless the hooks' clock stops the search first)."""
    tree, _, prior = start_tree(model, params, rng, add_noise)
    calls = simulate(model, params, tree, hooks)
    return finish(tree, prior, calls)


KINDS: dict[str, Callable[..., SearchResult]] = {
    "puct": run_search,
    "gumbel": gumbel_search,
    "full_gumbel": gumbel_search,
}


def search(
    model: SearchModel,
    params: SearchParams,
    rng: np.random.Generator,
    add_noise: bool = False,
    hooks: SearchHooks | None = None,
) -> SearchResult:
    """The search `params.kind` names, over any model: every algorithm calls this."""
    return KINDS[params.kind](model, params, rng, add_noise=add_noise, hooks=hooks)


__all__ = [
    "Expansion",
    "KINDS",
    "RootActionFn",
    "SearchHooks",
    "SearchModel",
    "SearchResult",
    "run_search",
    "search",
    "selection_scores",
]
