"""Selection: every tree walked from its root to a leaf, in one compiled call.

A call takes the packed tree (:class:`~polyzero.search.tree.TreeArrays` as a tuple),
the constants (:class:`~polyzero.search.params.Rules` as a tuple), the root's
controls ``root = (forced [B], gumbel_logits [B, A], considered [S, B], sim)`` and
the :class:`~polyzero.search.kernels.leaves.Leaves` it fills.

With k = 1 it is the sequential search: one leaf per tree, nothing in the tree
changes. With k > 1 (leaf batching, as KataGo and lc0 do) it descends each tree
up to k times; every descent that reaches a new edge creates that node at once as
PENDING and puts a virtual loss on its path (one visit of the worst normalised
Q, :func:`polyzero.search.kernels.scores.scores_into`), so the next descent of
the batch prefers other lines. A descent that runs into a PENDING node is a
collision: it takes no simulation, only a slot (at most k of them per call).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..params import GUMBEL_INTERIOR_RULE, NDMZ_RULE, Rules
from ..tree import CHANCE, IDENTITY, PENDING, TERMINAL, TreeArrays
from .gumbel import gumbel_interior_action, gumbel_root_action, sigma_bounds
from .leaves import COLLISION, NEW_LEAF, NO_LEAF, TERMINAL_LEAF, Leaves
from .scores import best_action, ndmz_action


@nb.njit(cache=True)
def select_leaves(tree, rules, root, leaves, k):
    """Up to `k` leaves of every tree into `leaves` (see the module docstring)."""
    t = TreeArrays(*tree)
    lv = Leaves(*leaves)
    lv.flat_count[0] = 0
    _select_range(0, t.children.shape[0], t, Rules(*rules), root, lv, k)


@nb.njit(cache=True, parallel=True)
def select_leaves_parallel(num_chunks, tree, rules, root, leaves, k):
    """:func:`select_leaves` with the trees split into `num_chunks` ranges walked in
    parallel; k must be 1 (leaf batching lists its leaves in one flat order) and the
    trees free of chance nodes (their draws use numba's per-thread generator)."""
    t = TreeArrays(*tree)
    r = Rules(*rules)
    lv = Leaves(*leaves)
    batch = t.children.shape[0]
    for c in nb.prange(num_chunks):
        _select_range(c * batch // num_chunks, (c + 1) * batch // num_chunks, t, r, root, lv, 1)


@nb.njit(cache=True)
def _select_range(lo, hi, t, r, root, lv, k):
    num_actions = t.children.shape[2]
    bufs = (np.empty(num_actions), np.empty(num_actions), np.empty(num_actions))
    slots = lv.node.shape[1]
    for b in range(lo, hi):
        wanted = 1 if k == 1 else min(k, lv.remaining[b])
        taken = 0
        used = 0
        while taken < wanted and used < slots:
            kind, node, a = _descend(t, r, root, b, taken, bufs)
            lv.kind[b, used] = kind
            lv.node[b, used] = node
            lv.action[b, used] = a
            lv.new_node[b, used] = t.num_nodes[b]
            if kind != COLLISION:
                taken += 1
            if k > 1:
                leaf = node
                if kind == NEW_LEAF:
                    leaf = _add_pending(t, b, node, a)
                    m = lv.flat_count[0]
                    lv.flat_tree[m], lv.flat_parent[m], lv.flat_action[m], lv.flat_node[m] = b, node, a, leaf
                    lv.flat_count[0] = m + 1
                _add_virtual(t, b, leaf)
            used += 1
        lv.count[b] = used
        for j in range(used, slots):
            lv.kind[b, j] = NO_LEAF
        if k > 1:
            lv.remaining[b] -= taken


@nb.njit(cache=True, inline="always")
def _descend(t, r, root, b, j, bufs):
    """One walk down tree b: (leaf kind, node, action) as :class:`Leaves` holds them.
    At the root, forced[b] >= 0 forces the action (KataGo's forced playouts); else
    considered[sim + j, b] >= 0 makes it a Gumbel root (Sequential Halving, Algorithm 2);
    else the rule chooses: pUCT (rules 0, 1), Eq. 14 (GUMBEL_INTERIOR_RULE) or NDMZ's
    (NDMZ_RULE). Chance and identity nodes draw their child by its prior (roulette
    wheel, as NMCTS and McGammon; NDMZ paper Section 2.3 and Appendix A)."""
    forced, gumbel_logits, considered, sim = root
    q_buf, n_buf, s_buf = bufs
    glo, ghi = sigma_bounds(r.gumbel_norm, t, b, r.vmin, r.vmax)
    node = 0
    depth = 0
    while True:
        kind = t.kind[b, node]
        if kind == TERMINAL:
            return TERMINAL_LEAF, node, -1
        if kind == PENDING:
            return COLLISION, node, -1
        if kind == CHANCE or kind == IDENTITY:
            a = _sample_outcome(t.prior, t.legal, b, node)
        elif depth == 0 and forced[b] >= 0:
            a = forced[b]
        elif depth == 0 and considered[sim + j, b] >= 0:
            a = gumbel_root_action(t, b, gumbel_logits[b], considered[sim + j, b], r.gumbel_norm,
                                   glo, ghi, r.c_visit, r.c_scale, q_buf, n_buf, s_buf)
        elif r.rule == GUMBEL_INTERIOR_RULE:
            a = gumbel_interior_action(t, b, node, r.gumbel_norm, glo, ghi, r.c_visit, r.c_scale,
                                       q_buf, n_buf, s_buf)
        elif r.rule == NDMZ_RULE:
            a = ndmz_action(t, b, node, r.c_puct)
        else:
            a = best_action(t, r, b, node, s_buf)
        child = t.children[b, node, a]
        if child < 0:
            return NEW_LEAF, node, a
        node = child
        depth += 1


@nb.njit(cache=True, inline="always")
def _add_pending(t, b, parent, a):
    """Create the child of `parent` along `a` as PENDING (leaf batching); its index."""
    n = t.num_nodes[b]
    t.num_nodes[b] = n + 1
    t.children[b, parent, a] = n
    t.parent[b, n] = parent
    t.action[b, n] = a
    t.depth[b, n] = t.depth[b, parent] + 1
    t.kind[b, n] = PENDING
    return n


@nb.njit(cache=True, inline="always")
def _add_virtual(t, b, node):
    """One descent in flight from the root to `node`."""
    while node >= 0:
        t.virtual[b, node] += 1
        node = t.parent[b, node]


@nb.njit(cache=True)
def _sample_outcome(prior, legal, b, node):
    """A child of chance (or identity) node `node` drawn by its probability (the prior)."""
    u = np.random.random()
    acc = 0.0
    last = -1
    for a in range(prior.shape[2]):
        if legal[b, node, a]:
            acc += prior[b, node, a]
            last = a
            if u < acc:
                return a
    return last  # rounding: the probabilities summed to just under u


@nb.njit(cache=True)
def seed_chance(seed):
    """Seed the generator chance nodes draw from (Numba keeps its own, per thread)."""
    np.random.seed(seed)
