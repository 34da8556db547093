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
from ..tree import CHANCE, IDENTITY, TERMINAL, TreeArrays
from .leaves import COLLISION, NEW_LEAF, Leaves
from .scores import edge_q


@nb.njit(cache=True)
def expand_and_backup(tree, rules, leaves, expansion, k, compact):
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
    t = TreeArrays(*tree)
    _backup_range(0, t.children.shape[0], t, Rules(*rules), Leaves(*leaves), expansion, k, compact)


@nb.njit(cache=True, parallel=True)
def expand_and_backup_parallel(num_chunks, tree, rules, leaves, expansion, k, compact):
    """:func:`expand_and_backup` over `num_chunks` ranges of trees in parallel; k must be
    1 and `compact` false (a row per tree)."""
    t = TreeArrays(*tree)
    r = Rules(*rules)
    lv = Leaves(*leaves)
    batch = t.children.shape[0]
    for c in nb.prange(num_chunks):
        _backup_range(c * batch // num_chunks, (c + 1) * batch // num_chunks, t, r, lv, expansion,
                      1, False)


@nb.njit(cache=True)
def _backup_range(lo, hi, t, r, lv, expansion, k, compact):
    row = 0
    for b in range(lo, hi):
        for j in range(lv.count[b]):
            kind = lv.kind[b, j]
            n = lv.node[b, j]
            if kind == NEW_LEAF:
                n = lv.new_node[b, j]
                if t.children[b, lv.node[b, j], lv.action[b, j]] != n:  # k = 1: not linked yet
                    _link(t, b, lv.node[b, j], lv.action[b, j], n)
                backs_up = _store(t, r, b, n, expansion, row if compact else b)
                row += 1
            elif kind == COLLISION:
                backs_up = False
            else:  # TERMINAL_LEAF: seen again
                t.visits[b, n] += 1
                backs_up = True
            if k > 1:
                _remove_virtual(t, b, n)
            if backs_up:
                backup_path(t, r, b, n, t.value[b, n])


@nb.njit(cache=True, inline="always")
def _link(t, b, parent, a, n):
    t.num_nodes[b] = n + 1
    t.children[b, parent, a] = n
    t.parent[b, n] = parent
    t.action[b, n] = a
    t.depth[b, n] = t.depth[b, parent] + 1


@nb.njit(cache=True, inline="always")
def _store(t, r, b, n, expansion, row):
    """Write the model's account of node n (expansion row `row`); whether it backs up."""
    logits, legal, value, reward, discount, kind = expansion
    node_kind = kind[row]
    ndmz = r.rule == NDMZ_RULE
    t.kind[b, n] = node_kind
    t.reward[b, n] = reward[row]
    t.discount[b, n] = discount[row]
    v = 0.0 if node_kind == TERMINAL and not ndmz else value[row]
    t.raw_value[b, n] = v
    backs_up = not (ndmz and (node_kind == IDENTITY or node_kind == CHANCE))
    t.value[b, n] = v if backs_up else 0.0
    t.visits[b, n] = 1 if backs_up else 0
    if node_kind != TERMINAL:
        _softmax_into(logits[row], legal[row], t.prior[b, n])
        for a in range(t.children.shape[2]):
            t.legal[b, n, a] = legal[row, a]
    return backs_up


@nb.njit(cache=True)
def backup_path(t, r, b, node, g):
    """Back `g`, the return for the mover at `node`, up from `node` to the root
    (MuZero Eq. 3-4; `node`'s own statistics are the caller's)."""
    while node != 0:
        p = t.parent[b, node]
        g = t.reward[b, node] + t.discount[b, node] * g
        cnt = t.visits[b, p]
        t.value[b, p] = (t.value[b, p] * cnt + g) / (cnt + 1.0)
        t.visits[b, p] = cnt + 1
        if r.chance_backup == 1 and t.kind[b, p] == CHANCE:
            # Expectimax: the chance node is worth the probability-weighted mean of its
            # expanded outcomes, and that (not the sampled return) goes on up.
            t.value[b, p] = _expected_outcome_value(t, b, p)
            g = t.value[b, p]
        q = edge_q(t, b, node)
        if q < t.q_min[b]:
            t.q_min[b] = q
        if q > t.q_max[b]:
            t.q_max[b] = q
        node = p


@nb.njit(cache=True, inline="always")
def _remove_virtual(t, b, node):
    while node >= 0:
        t.virtual[b, node] -= 1
        node = t.parent[b, node]


@nb.njit(cache=True)
def _expected_outcome_value(t, b, node):
    """sum_o p(o) Q(node, o) / sum_o p(o) over the expanded outcomes o of a chance node."""
    total = 0.0
    weight = 0.0
    for a in range(t.children.shape[2]):
        c = t.children[b, node, a]
        if c >= 0:
            total += t.prior[b, node, a] * edge_q(t, b, c)
            weight += t.prior[b, node, a]
    return total / weight if weight > 0.0 else t.value[b, node]


@nb.njit(cache=True, inline="always")
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
