"""Selection: every tree walked from its root to a leaf, in one compiled call.

A call takes the packed tree (:class:`~polyzero.search.kernels.packed.TreeRef`),
the constants (:class:`~polyzero.search.params.Rules` as a tuple), the root's
controls ``root = (forced [B], gumbel_logits [B, A], considered [S, B], sim)`` and
the :class:`~polyzero.search.kernels.leaves.Leaves` it fills.

At each node of a walk: a terminal node ends it; a chance or identity node draws its
child by the prior (roulette wheel, as NMCTS and McGammon; NDMZ paper Section 2.3 and
Appendix A); at the root, forced[b] >= 0 forces the action (KataGo's forced playouts),
else considered[sim, b] >= 0 (simulation `sim`) makes it a Gumbel root (Sequential
Halving, Algorithm 2); elsewhere the rule chooses: pUCT (rules 0, 1), Eq. 14
(GUMBEL_INTERIOR_RULE) or NDMZ's (NDMZ_RULE). The walk ends at the first edge whose
child is not in the tree.

With k = 1 it is the sequential search: one leaf per tree, nothing in the tree
changes. With k > 1 (leaf batching, as KataGo and lc0 do) it descends each tree
up to k times; every descent that reaches a new edge creates that node at once as
PENDING and puts a virtual loss on its path (one visit of the worst normalised
Q, :func:`polyzero.search.kernels.scores.scores_into`), so the next descent of
the batch prefers other lines. A descent that runs into a PENDING node is a
collision: it takes no simulation, only a slot (2k slots per tree and call, so a
tree whose lines all end in pending nodes returns early).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..params import GUMBEL_INTERIOR_RULE, NDMZ_RULE, Rules
from ..tree import CHANCE, IDENTITY, PENDING, TERMINAL
from .gumbel import gumbel_interior_action, gumbel_root_action, sigma_bounds
from .leaves import COLLISION, NEW_LEAF, NO_LEAF, TERMINAL_LEAF, Leaves
from .packed import NO_REFCOUNTS, tree_arrays
from .scores import ndmz_action, prior_coefficients, scores_into

DESCENT_ROWS = 16  # prior-coefficient table rows per descent (a descent scores ~depth nodes)


@nb.njit(cache=True, nogil=True)
def select_leaves(t, rules, root, leaves, k):
    """Up to `k` leaves of every tree into `leaves` (see the module docstring)."""
    lv = Leaves(*leaves)
    lv.flat_count[0] = 0
    _select_range(0, t.children.shape[0], t, Rules(*rules), root, lv, k)


@nb.njit(cache=True, nogil=True, parallel=True)
def select_leaves_parallel(num_chunks, t, rules, root, leaves, k):
    """:func:`select_leaves` with the trees split into `num_chunks` ranges walked in
    parallel; k must be 1 (leaf batching lists its leaves in one flat order) and the
    trees free of chance nodes (their draws use numba's per-thread generator)."""
    r = Rules(*rules)
    lv = Leaves(*leaves)
    batch = t.children.shape[0]
    for c in nb.prange(num_chunks):
        _select_range(c * batch // num_chunks, (c + 1) * batch // num_chunks, t, r, root, lv, 1)


@nb.njit(cache=True, nogil=True)
def _select_range(lo, hi, t, r, root, lv, k):
    """Selection for trees lo..hi-1: :func:`select_trees` with its buffers and table."""
    num_actions = t.children.shape[2]
    bufs = (np.empty(num_actions), np.empty(num_actions), np.empty(num_actions))
    # N = 0..size-1's prior coefficients; no longer than about the nodes this call scores
    # (DESCENT_ROWS a descent), so that one tree of many simulations does not build a table
    # of every N each simulation; a node past it computes its own (the same bits).
    coefs = prior_coefficients(r, min(t.children.shape[1] + 1, DESCENT_ROWS * (hi - lo) * k))
    select_trees(lo, hi, tree_arrays(t), r, root, lv, k, coefs, bufs)


@nb.njit(cache=True, nogil=True, **NO_REFCOUNTS)
def select_trees(lo, hi, arrays, r, root, lv, k, coefs, bufs):
    """Selection for trees lo..hi-1 of the tree's arrays (:func:`.packed.tree_arrays`),
    given the prior-coefficient table `coefs` (:func:`.scores.prior_coefficients`, any
    length) and three float64 [A] scratch rows `bufs`.

    Compiled without reference counting (:data:`.packed.NO_REFCOUNTS`: with it, the
    scoring inlined at every node counted references to its arrays up and down, a third
    of the selection's time at B = 256). The per-node helpers take the arrays one by one
    (read from the structure at every node, they cost the selection ~40% at B = 16;
    benchmarks/kernel_packing.py)."""
    children = arrays[0]  # (TreeArrays' order)
    visits, virtual, value, raw_value, reward, discount, prior, legal, kinds, num_nodes, q_min, q_max = arrays[4:]
    forced, gumbel_logits, considered, sim = root
    q_buf, n_buf, s_buf = bufs
    slots = lv.node.shape[1]
    in_flight = k > 1
    for b in range(lo, hi):
        glo, ghi = sigma_bounds(r.gumbel_norm, q_min, q_max, b, r.vmin, r.vmax)
        tree_lo, tree_hi = q_min[b], q_max[b]
        wanted = 1 if k == 1 else min(k, lv.remaining[b])
        taken = 0
        used = 0
        while taken < wanted and used < slots:
            # One walk down tree b (the module docstring): to a new edge, a terminal node or, with
            # leaf batching, a node another descent of this call created.
            node, depth, a, leaf = 0, 0, -1, NEW_LEAF
            while True:
                kind = kinds[b, node]
                if kind == TERMINAL or kind == PENDING:
                    leaf = TERMINAL_LEAF if kind == TERMINAL else COLLISION
                    a = -1
                    break
                # Wrapped by hand, not one argument a line: the scoring kernels take the tree's arrays
                # one by one, inlined here (one more helper per node, taking them one by one or as a
                # tuple, made the selection 1.5x slower at B = 16).
                # fmt: off
                if kind == CHANCE or kind == IDENTITY:
                    a = _sample_outcome(prior, legal, b, node)
                elif depth == 0 and forced[b] >= 0:
                    a = forced[b]
                elif depth == 0 and considered[sim + taken, b] >= 0:
                    a = gumbel_root_action(children, visits, value, raw_value, reward, discount, prior, legal, b,
                                           gumbel_logits[b], considered[sim + taken, b], r.gumbel_norm, glo, ghi,
                                           r.c_visit, r.c_scale, q_buf, n_buf, s_buf)
                elif r.rule == GUMBEL_INTERIOR_RULE:
                    a = gumbel_interior_action(children, visits, value, raw_value, reward, discount, prior, legal,
                                               b, node, r.gumbel_norm, glo, ghi, r.c_visit, r.c_scale, q_buf,
                                               n_buf, s_buf)
                elif r.rule == NDMZ_RULE:
                    a = ndmz_action(children, visits, value, reward, discount, prior, legal, b, node, r.c_puct)
                else:
                    a = scores_into(children, visits, virtual, value, reward, discount, prior, legal, tree_lo,
                                    tree_hi, r, b, node, s_buf, coefs, in_flight)
                # fmt: on
                child = children[b, node, a]
                if child < 0:
                    break
                node = child
                depth += 1
            lv.kind[b, used], lv.node[b, used], lv.action[b, used] = leaf, node, a
            lv.new_node[b, used] = num_nodes[b]
            if in_flight:
                _in_flight(arrays, lv, b, leaf, node, a)
            if leaf != COLLISION:
                taken += 1
            used += 1
        lv.count[b] = used
        for j in range(used, slots):
            lv.kind[b, j] = NO_LEAF
        if in_flight:
            lv.remaining[b] -= taken


@nb.njit(cache=True, nogil=True, **NO_REFCOUNTS)
def _in_flight(t, lv, b, leaf, node, a):
    """Leaf batching: create a new leaf's node as PENDING and list it for the model, and
    put a virtual loss on the descent's path (`t`: the tree's arrays)."""
    if leaf == NEW_LEAF:
        n = _add_pending(t, b, node, a)
        m = lv.flat_count[0]
        lv.flat_tree[m], lv.flat_parent[m], lv.flat_action[m], lv.flat_node[m] = b, node, a, n
        lv.flat_count[0] = m + 1
        node = n
    _add_virtual(t, b, node)


@nb.njit(cache=True, nogil=True, inline="always")
def _add_pending(t, b, parent, a):
    """Create the child of `parent` along `a` as PENDING (leaf batching); its index.
    `t`: the tree's arrays (:func:`.packed.tree_arrays`)."""
    children, parents, action, depth, kinds, num_nodes = t[0], t[1], t[2], t[3], t[12], t[13]
    n = num_nodes[b]
    num_nodes[b] = n + 1
    children[b, parent, a] = n
    parents[b, n] = parent
    action[b, n] = a
    depth[b, n] = depth[b, parent] + 1
    kinds[b, n] = PENDING
    return n


@nb.njit(cache=True, nogil=True, inline="always")
def _add_virtual(t, b, node):
    """One descent in flight from the root to `node`."""
    parent, virtual = t[1], t[5]
    while node >= 0:
        virtual[b, node] += 1
        node = parent[b, node]


@nb.njit(cache=True, nogil=True)
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


@nb.njit(cache=True, nogil=True)
def seed_chance(seed):
    """Seed the generator chance nodes draw from (Numba keeps its own, per thread)."""
    np.random.seed(seed)
