"""The simulation loop every search kind runs, over B independent trees.

What a node is comes from the :class:`SearchModel` (AlphaZero: the real game
stepped and a network; MuZero: a learned dynamics function; NDMZ: learned
identity and chance nodes); the rule, the Q normalisation and the leaf batch
from :class:`~polyzero.search.params.SearchParams`; a Gumbel root
(:mod:`polyzero.search.gumbel`) and the caller's :class:`SearchHooks` plug in
at the root. Each round is three calls, whatever B is: the selection kernel,
the model, the backup kernel (:mod:`polyzero.search.kernels`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import UsageError
from . import kernels
from .params import SearchParams
from .policy import masked_softmax, mix_dirichlet
from .tree import CHANCE, DECISION, TERMINAL, Tree


@dataclass
class Expansion:
    """The model's account of one node per row (rows of inactive trees are ignored)."""

    prior_logits: np.ndarray  # float32 [M, A]
    value: np.ndarray  # float [M], for the player to move at the node
    legal: np.ndarray  # bool [M, A], actions selection may take from the node
    reward: np.ndarray  # float [M], received on the edge into the node by the parent's mover
    discount: np.ndarray  # float [M], with sign: -gamma if the opponent moves next
    terminal: np.ndarray  # bool [M]
    chance: np.ndarray | None = None  # bool [M]: a chance node (prior_logits = log probabilities)
    kind: np.ndarray | None = None  # int8 [M]: the node kinds of polyzero.search.tree (over terminal, chance)

    def node_kinds(self) -> np.ndarray:
        if self.kind is not None:
            return self.kind
        kind = np.where(self.terminal, TERMINAL, DECISION).astype(np.int8)
        if self.chance is not None:
            kind[np.asarray(self.chance, bool) & (kind == DECISION)] = CHANCE
        return kind

    def packed(self) -> tuple:
        """The tuple the backup kernel reads."""
        return (self.prior_logits, self.legal, self.value, self.reward, self.discount, self.node_kinds())


class SearchModel(Protocol):
    """What the search asks of a simulator or a learned model. Optional: `has_chance`
    (its expansions may be chance or identity nodes, drawn by numba's generator),
    `ndmz_tree` (its tree follows NDMZ's Appendix A: :data:`~polyzero.search.params.NDMZ_RULE`),
    and `step_leaves(tree, parent_node, action, new_node)`, the same as `step` for a flat
    list of leaves of any trees, which leaf batching needs."""

    num_actions: int

    def initial(self) -> Expansion:
        """Evaluate the B roots (node 0 of each tree)."""

    def step(self, parent_node: np.ndarray, action: np.ndarray, new_node: np.ndarray, active: np.ndarray) -> Expansion:
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


@dataclass(frozen=True)
class SearchHooks:
    """What a caller adds to one search without touching the core (passed through
    ``Algorithm.search``).

    * root_action_fn(sim, tree) -> int [B]: a root action per tree for simulation
      `sim` (-1: the rule decides), ahead of the rule and a Gumbel root (KataGo's
      forced playouts, :mod:`polyzero.goexploit.katago`); sequential searches only;
    * deadline: a ``time.monotonic()`` instant; no network call starts after it (an
      engine's clock: :meth:`within`);
    * stop() -> bool: polled between network calls; true ends the search (UCI's
      ``stop``, a GUI's interrupt).

    A search always completes its first round, so a move can be read off.
    """

    root_action_fn: RootActionFn | None = None
    deadline: float | None = None
    stop: Callable[[], bool] | None = None

    @classmethod
    def within(cls, seconds: float, **kwargs) -> SearchHooks:
        """Hooks whose deadline is `seconds` from now."""
        return cls(deadline=time.monotonic() + seconds, **kwargs)

    def out_of_time(self) -> bool:
        return (self.deadline is not None and time.monotonic() >= self.deadline) or (
            self.stop is not None and bool(self.stop())
        )


NO_HOOKS = SearchHooks()


def start_tree(
    model: SearchModel, params: SearchParams, rng: np.random.Generator, add_noise: bool
) -> tuple[Tree, Expansion, np.ndarray]:
    """Evaluate the B roots and store them as node 0 of fresh trees; returns the
    tree, the root expansion (its arrays copied: models reuse their buffers) and
    the root prior after Dirichlet noise (when `add_noise`)."""
    root = model.initial()
    root = Expansion(
        *(
            np.array(x, copy=True)
            for x in (root.prior_logits, root.value, root.legal, root.reward, root.discount, root.terminal)
        )
    )
    batch, num_actions = root.prior_logits.shape
    if np.any(root.terminal):
        raise ValueError("cannot search from a terminal state")
    legal_root = root.legal.astype(np.bool_)
    if not legal_root.any(axis=1).all():
        raise ValueError("a root has no legal action")
    tree = Tree.allocate(batch, params.num_simulations + 1, num_actions)
    prior = masked_softmax(root.prior_logits, legal_root)
    if add_noise and params.dirichlet_fraction > 0:
        prior = mix_dirichlet(prior, legal_root, params.dirichlet_alpha, params.dirichlet_fraction, rng)
    tree.prior[:, 0] = prior
    tree.legal[:, 0] = legal_root
    tree.value[:, 0] = root.value
    tree.raw_value[:, 0] = root.value
    # An NDMZ tree counts backups only (Appendix A); elsewhere N counts the expansion.
    tree.visits[:, 0] = 0 if getattr(model, "ndmz_tree", False) else 1
    if getattr(model, "has_chance", False):
        kernels.seed_chance(int(rng.integers(2**31)))
    return tree, root, prior


def simulate(
    model: SearchModel, params: SearchParams, tree: Tree, hooks: SearchHooks | None = None, gumbel_root=None
) -> int:
    """The simulation loop on a started tree; returns the number of model calls
    (the root's included). `gumbel_root` (a :class:`~polyzero.search.gumbel.GumbelRoot`)
    makes the roots Gumbel roots (Sequential Halving, chosen inside the selection
    kernel). With ``params.leaf_batch`` k > 1 each model call evaluates up to k
    leaves of every tree (:func:`_simulate_batched`)."""
    hooks = hooks or NO_HOOKS
    if params.leaf_batch > 1:
        return _simulate_batched(model, params, tree, hooks)
    batch = tree.batch_size
    arrays = kernels.pack(tree)
    rules = tuple(params.rules(getattr(model, "ndmz_tree", False)))
    leaves = kernels.make_leaves(batch)
    packed = tuple(leaves)
    forced = np.full(batch, -1, np.int32)  # -1: the rule (or the Gumbel root) decides
    if gumbel_root is None:
        gumbel_logits, considered = np.zeros((batch, 1)), np.full((1, batch), -1, np.int32)
    else:
        gumbel_logits, considered = gumbel_root.gumbel_logits, gumbel_root.considered
    root = (forced, gumbel_logits, considered, 0)
    clock = hooks.deadline is not None or hooks.stop is not None
    fused = getattr(model, "simulate_fused", None) if getattr(model, "fused", False) else None
    if fused is not None and hooks.root_action_fn is None and not clock:
        # A learned MLP model: every simulation in one compiled call (search.fused).
        fused(arrays, rules, root, packed, params.num_simulations, gumbel_root is not None)
        return 1 + params.num_simulations
    chunks = kernels.tree_chunks(batch)
    # Chance outcomes are drawn from numba's generator, seeded on this thread only.
    if chunks == 1 or getattr(model, "has_chance", False):
        select = functools.partial(kernels.select_leaves, arrays, rules)
    else:
        select = functools.partial(kernels.select_leaves_parallel, chunks, arrays, rules)
    backup = (
        functools.partial(kernels.expand_and_backup, arrays, rules)
        if chunks == 1
        else functools.partial(kernels.expand_and_backup_parallel, chunks, arrays, rules)
    )
    node, action, kind, new_node = (x[:, 0] for x in (leaves.node, leaves.action, leaves.kind, leaves.new_node))
    calls = 1
    for sim in range(params.num_simulations):
        if hooks.root_action_fn is not None or gumbel_root is not None:
            if hooks.root_action_fn is not None:
                forced = np.asarray(hooks.root_action_fn(sim, tree), np.int32)
            root = (forced, gumbel_logits, considered, 0 if gumbel_root is None else sim)
        select(root, packed, 1)
        exp = model.step(node, action, new_node, kind == kernels.NEW_LEAF)
        calls += 1
        backup(
            packed,
            (
                exp.prior_logits,
                exp.legal,
                exp.value,
                exp.reward,
                exp.discount,
                exp.node_kinds() if exp.kind is None else exp.kind,
            ),
            1,
            False,
        )
        if clock and hooks.out_of_time():
            break
    return calls


def _simulate_batched(model: SearchModel, params: SearchParams, tree: Tree, hooks: SearchHooks) -> int:
    """Leaf batching in one tree (as KataGo and lc0): each round selects up to k leaves
    per tree with virtual loss, evaluates them in one model call, and backs them up;
    rounds continue until every tree has had `num_simulations` simulations (collisions
    take none) or the hooks' clock runs out."""
    k = params.leaf_batch
    if not hasattr(model, "step_leaves"):
        raise UsageError(
            f"search.leaf_batch = {k} needs a model that evaluates many leaves of one "
            f"tree in one call; {type(model).__name__} does not (use leaf_batch = 1)"
        )
    if hooks.root_action_fn is not None:
        raise UsageError("forced root actions (katago.forced_playouts) need search.leaf_batch = 1")
    batch = tree.batch_size
    arrays = kernels.pack(tree)
    rules = tuple(params.rules(getattr(model, "ndmz_tree", False)))
    leaves = kernels.make_leaves(batch, k, params.num_simulations)
    packed = tuple(leaves)
    root = (np.full(batch, -1, np.int32), np.zeros((batch, 1)), np.full((k, batch), -1, np.int32), 0)
    calls = 1
    expansion = None
    while leaves.remaining.max() > 0:
        kernels.select_leaves(arrays, rules, root, packed, k)
        m = int(leaves.flat_count[0])
        if m:  # else every leaf was a terminal node seen again: no model call
            expansion = model.step_leaves(
                leaves.flat_tree[:m], leaves.flat_parent[:m], leaves.flat_action[:m], leaves.flat_node[:m]
            ).packed()
            calls += 1
        kernels.expand_and_backup(arrays, rules, packed, expansion, k, True)
        if hooks.out_of_time():
            break
    return calls


def finish(tree: Tree, prior: np.ndarray, calls: int) -> SearchResult:
    """The visit-count result of a finished search."""
    visits, q = tree.root_child_stats()
    return SearchResult(
        tree=tree,
        root_prior=prior,
        root_visits=visits,
        root_q=q,
        root_value=tree.value[:, 0].copy(),
        root_raw_value=tree.raw_value[:, 0].copy(),
        model_calls=calls,
    )


def selection_scores(tree: Tree, params: SearchParams, b: int, node: int = 0) -> np.ndarray:
    """float64 [A]: the selection rule's score of every action at `node` of tree `b`
    (-inf where illegal), by the search's own kernel (Q normalisation and unvisited-Q
    rule included)."""
    return kernels.action_scores(kernels.pack(tree), tuple(params.rules()), b, node)
