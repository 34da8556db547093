"""Expansion and backup: each leaf's new node stored and its value backed up, in one
compiled call for every tree.

A call takes the packed tree and constants (as :mod:`.select`), the
:class:`~polyzero.search.kernels.leaves.Leaves` the selection filled, and the
model's answer ``expansion = (logits [M, A], legal [M, A], value [M], reward [M],
discount [M], kind [M])``. Sequential searches (k = 1) answer per tree (row b);
leaf-batched ones (``compact``) answer the flat list of new leaves in order.
"""

from __future__ import annotations

import math

import numba as nb

from ..params import NDMZ_RULE, Rules
from ..tree import CHANCE, IDENTITY, TERMINAL
from .leaves import COLLISION, NEW_LEAF, Leaves
from .packed import NO_REFCOUNTS, tree_arrays
from .scores import edge_q


@nb.njit(cache=True, nogil=True)
def expand_and_backup(t, rules, leaves, expansion, k, compact):
    """Add each tree's new nodes and back their values up to the root.

    A new node's prior is the softmax of its logits over its legal actions.
    Backup follows MuZero Eq. 3-4: going up, G <- r + discount * G, and each
    node's mean value absorbs G. A terminal node is worth 0 after its reward,
    so revisiting one backs up its final reward again. The tree's min-max
    statistics see every Q on the path (MuZero Eq. 5). With k > 1 the virtual
    loss of every descent is taken back.

    In an NDMZ tree (rule NDMZ_RULE; NDMZ paper, Appendix A) counts are backups:
    nodes start at 0 visits, a new identity or chance node is not backed up, and
    a terminal node carries the value of its closest choice ancestor (the model
    gives it), which every visit backs up again.
    """
    _backup_range(0, t.children.shape[0], tree_arrays(t), Rules(*rules), Leaves(*leaves), expansion, k, compact)


@nb.njit(cache=True, nogil=True, parallel=True)
def expand_and_backup_parallel(num_chunks, t, rules, leaves, expansion, k, compact):
    """:func:`expand_and_backup` over `num_chunks` ranges of trees in parallel; k must be
    1 and `compact` false (a row per tree)."""
    r = Rules(*rules)
    lv = Leaves(*leaves)
    batch = t.children.shape[0]
    arrays = tree_arrays(t)
    for c in nb.prange(num_chunks):
        _backup_range(c * batch // num_chunks, (c + 1) * batch // num_chunks, arrays, r, lv, expansion, 1, False)


@nb.njit(cache=True, nogil=True, **NO_REFCOUNTS)
def _backup_range(lo, hi, arrays, r, lv, expansion, k, compact):
    """Expansion and backup for trees lo..hi-1 of the tree's arrays
    (:func:`.packed.tree_arrays`), compiled without reference counting
    (:data:`.packed.NO_REFCOUNTS`)."""
    children, parent, action, depth, visits, virtual, value, raw_value, reward, discount, prior, legal, kinds = arrays[
        :13
    ]
    num_nodes, q_min, q_max = arrays[13:]
    new_logits, new_legal, new_value, new_reward, new_discount, new_kind = expansion
    ndmz = r.rule == NDMZ_RULE
    expectation = r.chance_backup == 1
    row = 0
    for b in range(lo, hi):
        for j in range(lv.count[b]):
            kind = lv.kind[b, j]
            n = lv.node[b, j]
            if kind == NEW_LEAF:  # store the model's account of the new node (expansion row e)
                p, a, n, e = n, lv.action[b, j], lv.new_node[b, j], row if compact else b
                row += 1
                if children[b, p, a] != n:  # k = 1: not linked yet
                    num_nodes[b] = n + 1
                    children[b, p, a] = n
                    parent[b, n], action[b, n], depth[b, n] = p, a, depth[b, p] + 1
                node_kind = new_kind[e]
                kinds[b, n], reward[b, n], discount[b, n] = node_kind, new_reward[e], new_discount[e]
                v = 0.0 if node_kind == TERMINAL and not ndmz else new_value[e]
                raw_value[b, n] = v
                backs_up = not (ndmz and (node_kind == IDENTITY or node_kind == CHANCE))
                value[b, n] = v if backs_up else 0.0
                visits[b, n] = 1 if backs_up else 0
                if node_kind != TERMINAL:
                    _softmax_into(new_logits[e], new_legal[e], prior[b, n])
                    for x in range(legal.shape[2]):  # (a slice's copy needs reference counting)
                        legal[b, n, x] = new_legal[e, x]
            elif kind == COLLISION:
                backs_up = False
            else:  # TERMINAL_LEAF: seen again
                visits[b, n] += 1
                backs_up = True
            if k > 1:
                node = n
                while node >= 0:  # take back the descent's virtual loss
                    virtual[b, node] -= 1
                    node = parent[b, node]
            if not backs_up:
                continue
            # MuZero Eq. 3-4 from n up (written out here: as inlined helpers, which copy their
            # array arguments at every call, the store and this loop made the kernel ~40% slower).
            g = value[b, n]
            node = n
            lo, hi = q_min[b], q_max[b]  # the path's Q seen in registers, stored once
            while node != 0:
                p = parent[b, node]
                g = reward[b, node] + discount[b, node] * g
                cnt = visits[b, p]
                value[b, p] = (value[b, p] * cnt + g) / (cnt + 1.0)
                visits[b, p] = cnt + 1
                if expectation and kinds[b, p] == CHANCE:
                    # Expectimax: the chance node is worth the probability-weighted mean of its
                    # expanded outcomes, and that (not the sampled return) goes on up.
                    value[b, p] = _expected_outcome_value(children, reward, discount, value, prior, b, p)
                    g = value[b, p]
                q = edge_q(reward, discount, value, b, node)
                if q < lo:
                    lo = q
                if q > hi:
                    hi = q
                node = p
            q_min[b], q_max[b] = lo, hi


@nb.njit(cache=True, nogil=True)
def _expected_outcome_value(children, reward, discount, value, prior, b, node):
    """sum_o p(o) Q(node, o) / sum_o p(o) over the expanded outcomes o of a chance node."""
    total = 0.0
    weight = 0.0
    for a in range(children.shape[2]):
        c = children[b, node, a]
        if c >= 0:
            total += prior[b, node, a] * edge_q(reward, discount, value, b, c)
            weight += prior[b, node, a]
    return total / weight if weight > 0.0 else value[b, node]


@nb.njit(cache=True, nogil=True, inline="always")
def _softmax_into(logits, legal, out):
    top = -math.inf
    for k in range(logits.shape[0]):
        if legal[k] and logits[k] > top:
            top = logits[k]
    total = 0.0
    for k in range(logits.shape[0]):
        if legal[k]:
            e = math.exp(logits[k] - top)
            out[k] = e
            total += e
        else:
            out[k] = 0.0
    if total > 0.0:
        for k in range(logits.shape[0]):
            out[k] /= total
