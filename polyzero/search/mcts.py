"""Batched Monte Carlo tree search over B independent trees.

The loop is the same for every algorithm; what differs plugs in:
* a :class:`SearchModel` says what a node is (AlphaZero: the real game
  stepped and a network; MuZero: a learned dynamics function),
* :class:`~polyzero.search.params.SearchParams` picks the selection rule and
  the Q normalisation,
* an optional Gumbel root (:mod:`polyzero.search.gumbel`) makes the root
  action of each simulation Sequential Halving's, inside the selection kernel;
  an optional ``root_action_fn`` forces root actions from Python (KataGo's
  forced playouts, :mod:`polyzero.goexploit.katago`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from . import kernels
from .params import SearchParams
from .policy import masked_softmax, mix_dirichlet
from .tree import Tree


@dataclass
class Expansion:
    """The model's account of one node per tree (rows of inactive trees are ignored)."""

    prior_logits: np.ndarray  # float32 [B, A]
    value: np.ndarray  # float [B], for the player to move at the node
    legal: np.ndarray  # bool [B, A], actions selection may take from the node
    reward: np.ndarray  # float [B], received on the edge into the node by the parent's mover
    discount: np.ndarray  # float [B], with sign: -gamma if the opponent moves next
    terminal: np.ndarray  # bool [B]
    chance: np.ndarray | None = None  # bool [B]: a chance node (prior_logits = log probabilities)


class SearchModel(Protocol):
    """What the search asks of a simulator or a learned model (`has_chance`, if
    present and true: its expansions may be chance nodes)."""

    num_actions: int

    def initial(self) -> Expansion:
        """Evaluate the B roots (node 0 of each tree)."""

    def step(self, parent_node: np.ndarray, action: np.ndarray, new_node: np.ndarray,
             active: np.ndarray) -> Expansion:
        """For trees with active[b]: the node reached by `action[b]` from
        `parent_node[b]`, to be stored as node `new_node[b]`."""


@dataclass
class SearchResult:
    tree: Tree
    root_prior: np.ndarray  # float32 [B, A], after root noise
    root_visits: np.ndarray  # int32 [B, A]
    root_q: np.ndarray  # float64 [B, A], NaN where unvisited
    root_value: np.ndarray  # float64 [B], the root's mean value after search
    root_raw_value: np.ndarray  # float64 [B], the model's value before search
    model_calls: int
    # Set by searches that decide more than visit counts (a Gumbel root): the
    # policy target pi' for training and the action to play (A_{n+1}).
    policy_target: np.ndarray | None = None  # float32 [B, A]
    action: np.ndarray | None = None  # int64 [B]


RootActionFn = Callable[[int, Tree], np.ndarray]


def search(model: SearchModel, params: SearchParams, rng: np.random.Generator,
           add_noise: bool = False) -> SearchResult:
    """The search `params.kind` names, over any model: every algorithm calls this."""
    if params.kind == "puct":
        return run_search(model, params, rng, add_noise=add_noise)
    if params.kind in ("gumbel", "full_gumbel"):
        from .gumbel import gumbel_search  # gumbel builds on this module

        return gumbel_search(model, params, rng, add_noise=add_noise)
    raise ValueError(f"unknown search kind {params.kind!r}")


def run_search(model: SearchModel, params: SearchParams, rng: np.random.Generator,
               add_noise: bool = False, root_action_fn: RootActionFn | None = None) -> SearchResult:
    """Run `params.num_simulations` simulations on every tree; each simulation
    is one model call for all B leaves (the root is evaluated before the loop,
    so the root's children receive exactly num_simulations visits)."""
    tree, root, prior = start_tree(model, params, rng, add_noise)
    calls = simulate(model, params, tree, root_action_fn)
    return finish(tree, prior, calls)


def start_tree(model: SearchModel, params: SearchParams, rng: np.random.Generator,
               add_noise: bool) -> tuple[Tree, Expansion, np.ndarray]:
    """Evaluate the B roots and store them as node 0 of fresh trees; returns the
    tree, the root expansion (its arrays copied: models reuse their buffers) and
    the root prior after Dirichlet noise (when `add_noise`)."""
    root = model.initial()
    root = Expansion(*(np.array(x, copy=True) for x in (
        root.prior_logits, root.value, root.legal, root.reward, root.discount, root.terminal)))
    batch, num_actions = root.prior_logits.shape
    if np.any(root.terminal):
        raise ValueError("cannot search from a terminal state")
    legal_root = root.legal.astype(np.bool_)
    if not legal_root.any(axis=1).all():
        raise ValueError("a root has no legal action")
    tree = Tree.allocate(batch, params.num_simulations + 1, num_actions)
    prior = masked_softmax(root.prior_logits, legal_root)
    if add_noise and params.dirichlet_fraction > 0:
        prior = mix_dirichlet(prior, legal_root, params.dirichlet_alpha,
                              params.dirichlet_fraction, rng)
    tree.prior[:, 0] = prior
    tree.legal[:, 0] = legal_root
    tree.value[:, 0] = root.value
    tree.raw_value[:, 0] = root.value
    tree.visits[:, 0] = 1
    if getattr(model, "has_chance", False):
        kernels.seed_chance(int(rng.integers(2**31)))
    return tree, root, prior


def simulate(model: SearchModel, params: SearchParams, tree: Tree,
             root_action_fn: RootActionFn | None = None, gumbel_root=None) -> int:
    """The simulation loop on a started tree; returns the number of model calls
    (the root's included). `gumbel_root` (a :class:`~polyzero.search.gumbel.GumbelRoot`)
    makes the roots Gumbel roots (Sequential Halving, chosen inside the selection
    kernel); `root_action_fn` forces root actions ahead of either rule."""
    batch = tree.batch_size
    chunks = kernels.tree_chunks(batch)
    expand_and_backup = kernels.expand_and_backup if chunks == 1 else \
        functools.partial(kernels.expand_and_backup_parallel, chunks)
    # Chance outcomes are drawn from numba's generator, seeded on this thread only.
    select_paths = kernels.select_paths if chunks == 1 or getattr(model, "has_chance", False) \
        else functools.partial(kernels.select_paths_parallel, chunks)
    rule, norm, unvisited = params.codes
    leaf_node = np.zeros(batch, np.int32)
    leaf_action = np.zeros(batch, np.int32)
    leaf_kind = np.zeros(batch, np.int8)
    no_root_action = np.full(batch, -1, np.int32)  # -1 also: not a Gumbel root
    gumbel_logits = np.zeros((batch, 1)) if gumbel_root is None else gumbel_root.gumbel_logits
    no_chance = np.zeros(batch, np.bool_)
    calls = 1
    for sim in range(params.num_simulations):
        root_action = no_root_action if root_action_fn is None else \
            np.asarray(root_action_fn(sim, tree), np.int32)
        considered = no_root_action if gumbel_root is None else gumbel_root.considered[sim]
        select_paths(
            tree.children, tree.visits, tree.value, tree.raw_value, tree.reward, tree.discount,
            tree.prior, tree.legal, tree.terminal, tree.q_min, tree.q_max, root_action,
            gumbel_logits, considered, rule, norm, unvisited, params.c_puct, params.c1,
            params.c2, params.value_min, params.value_max, params.gumbel_norm, params.c_visit,
            params.c_scale, leaf_node, leaf_action, leaf_kind, tree.chance)
        active = leaf_kind == kernels.NEW_LEAF
        new_node = tree.num_nodes.copy()
        exp = model.step(leaf_node, leaf_action, new_node, active)
        calls += 1
        expand_and_backup(
            tree.children, tree.parent, tree.action, tree.depth, tree.visits, tree.value,
            tree.raw_value, tree.reward, tree.discount, tree.prior, tree.legal,
            tree.terminal, tree.num_nodes, tree.q_min, tree.q_max, leaf_node, leaf_action,
            leaf_kind, exp.prior_logits, exp.legal, exp.value, exp.reward, exp.discount,
            exp.terminal, tree.chance, no_chance if exp.chance is None else exp.chance,
            params.chance_code)
    return calls


def finish(tree: Tree, prior: np.ndarray, calls: int) -> SearchResult:
    """The visit-count result of a finished search."""
    return SearchResult(
        tree=tree,
        root_prior=prior,
        root_visits=tree.root_child_visits(),
        root_q=tree.root_child_q(),
        root_value=tree.value[:, 0].copy(),
        root_raw_value=tree.raw_value[:, 0].copy(),
        model_calls=calls,
    )
