"""Selection scores at a decision node: pUCT (MuZero Eq. 2, AlphaZero) and NDMZ's rule.

Every function takes the tree as a :class:`~polyzero.search.tree.TreeArrays` and the
search's constants as a :class:`~polyzero.search.params.Rules`. Scoring functions are
inlined into the selection kernel: compiled as calls (each passing a dozen arrays),
pUCT selection ran ~2x and Gumbel's ~1.5x slower per node (profiled at B = 16).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..params import Rules
from ..tree import TreeArrays

EPS = 1e-8


@nb.njit(cache=True, inline="always")
def edge_q(t, b, child):
    """Q of the edge into `child` for the mover at its parent."""
    return t.reward[b, child] + t.discount[b, child] * t.value[b, child]


@nb.njit(cache=True, inline="always")
def _q_range(t, r, b, node):
    """The [lo, hi] that maps Q to [0, 1] at `node` (Q normalisation r.norm)."""
    if r.norm == 0:
        return r.vmin, r.vmax
    if r.norm == 1:
        return t.q_min[b], t.q_max[b]
    lo = t.value[b, node]
    hi = lo
    for a in range(t.children.shape[2]):
        c = t.children[b, node, a]
        if c >= 0 and t.legal[b, node, a] and t.visits[b, c] > 0:
            q = edge_q(t, b, c)
            lo = min(lo, q)
            hi = max(hi, q)
    return lo, hi


@nb.njit(cache=True, inline="always")
def scores_into(t, r, b, node, out):
    """Every action's selection score at `node` of tree `b` into out (-inf where illegal).

    rule 0: MuZero Eq. 2, Q + P * sqrt(N) / (1 + N(a)) * (c1 + log((N + c2 + 1) / c2));
    rule 1: AlphaZero (Go-Exploit Section 2), Q + c_puct * P * sqrt(N) / (1 + N(a)).
    Q is normalised to [0, 1] by known bounds (norm 0), by the tree's min-max
    (norm 1, MuZero Eq. 5) or by the min-max of the parent's value and its
    visited children's Q (norm 2, as mctx); an unvisited child's Q is the
    lowest (unvisited 0: normalised 0), a raw 0 (1) or the parent's value (2).
    N is the node's visit count, which counts its own expansion
    (= 1 + sum_b N(s, b)), as mctx does, so the prior term is active from the
    first simulation. Descents in flight (leaf batching) count as visits whose
    normalised Q is 0, the worst (virtual loss, as lc0 and KataGo).
    """
    lo, hi = _q_range(t, r, b, node)
    span = max(hi - lo, EPS)
    parent_value = t.value[b, node]
    n_parent = t.visits[b, node] + t.virtual[b, node]
    if r.rule == 0:
        coef = math.sqrt(n_parent) * (r.c1 + math.log((n_parent + r.c2 + 1.0) / r.c2))
    else:
        coef = math.sqrt(n_parent) * r.c_puct
    for a in range(t.children.shape[2]):
        if not t.legal[b, node, a]:
            out[a] = -np.inf
            continue
        c = t.children[b, node, a]
        in_flight = 0
        if c >= 0:
            n_a = t.visits[b, c]
            in_flight = t.virtual[b, c]
            qn = (edge_q(t, b, c) - lo) / span if n_a > 0 else 0.0
        else:
            n_a = 0
            if r.unvisited == 0:
                qn = 0.0
            elif r.unvisited == 1:
                qn = (0.0 - lo) / span
            else:
                qn = (parent_value - lo) / span
        qn = min(max(qn, 0.0), 1.0)
        if in_flight > 0:
            qn = qn * n_a / (n_a + in_flight)
            n_a += in_flight
        out[a] = qn + coef * t.prior[b, node, a] / (1.0 + n_a)


@nb.njit(cache=True, inline="always")
def best_action(t, r, b, node, buf):
    """The legal action at `node` of tree `b` with the highest score (:func:`scores_into`,
    written into `buf`, float [A]); ties go to the lowest index."""
    scores_into(t, r, b, node, buf)
    best = -1
    best_score = -np.inf
    for a in range(t.children.shape[2]):
        if buf[a] > best_score:
            best_score = buf[a]
            best = a
    return best


@nb.njit(cache=True, inline="always")
def ndmz_action(t, b, node, c_puct):
    """NDMZ's choice-node selection (NDMZ paper, Appendix A, TREESELECT line 50):

        argmax_w'  Q(w') + c_puct P(w') sqrt(sum_b N(b)) / (1 + N(w')),

    over the children with P > 0, Q = W / N of the result node (raw, 0 while
    unvisited) and N its backups; ties go to the larger prior (+1e-9 P), then
    the lowest index.
    """
    total = 0
    for a in range(t.children.shape[2]):
        c = t.children[b, node, a]
        if c >= 0:
            total += t.visits[b, c]
    root_n = math.sqrt(total)
    best = -1
    best_score = -np.inf
    for a in range(t.children.shape[2]):
        p = float(t.prior[b, node, a])
        if not t.legal[b, node, a] or p <= 0.0:
            continue
        c = t.children[b, node, a]
        n = t.visits[b, c] if c >= 0 else 0
        q = edge_q(t, b, c) if n > 0 else 0.0
        score = q + c_puct * p * root_n / (1.0 + n) + 1e-9 * p
        if score > best_score:
            best_score = score
            best = a
    return best


@nb.njit(cache=True)
def action_scores(tree, rules, b, node):
    """Every action's selection score at one node (-inf where illegal), from the packed
    tree and rules; :func:`polyzero.search.loop.selection_scores` is the friendly form."""
    t = TreeArrays(*tree)
    r = Rules(*rules)
    out = np.empty(t.children.shape[2])
    scores_into(t, r, b, node, out)
    return out
