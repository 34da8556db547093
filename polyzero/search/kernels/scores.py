"""Selection scores at a decision node: pUCT (MuZero Eq. 2, AlphaZero) and NDMZ's rule.

The search's constants come as a :class:`~polyzero.search.params.Rules`; the tree's
arrays come one by one, as the selection kernel read them out of the tree's structure
once per call (read at every node, they cost ~40% of the selection: the structure is a
pointer). Scoring functions are inlined into the selection kernel: compiled as calls,
pUCT selection ran ~2x and Gumbel's ~1.5x slower per node (profiled at B = 16).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..params import Rules

EPS = 1e-8


@nb.njit(cache=True, nogil=True, inline="always")
def edge_q(reward, discount, value, b, child):
    """Q of the edge into `child` for the mover at its parent."""
    return reward[b, child] + discount[b, child] * value[b, child]


@nb.njit(cache=True, nogil=True, inline="always")
def prior_coefficient(r, n_parent):
    """The prior term's factor at a node of `n_parent` visits: MuZero Eq. 2's
    sqrt(N) (c1 + log((N + c2 + 1) / c2)) (rule 0), AlphaZero's sqrt(N) c_puct (rule 1)."""
    if r.rule == 0:
        return math.sqrt(n_parent) * (r.c1 + math.log((n_parent + r.c2 + 1.0) / r.c2))
    return math.sqrt(n_parent) * r.c_puct


@nb.njit(cache=True, nogil=True)
def prior_coefficients(r, size):
    """:func:`prior_coefficient` for 0..size-1 visits: a selection call's table, so that a
    node's score costs no square root or logarithm (the same expression, the same bits)."""
    out = np.empty(size)
    for n in range(size):
        out[n] = prior_coefficient(r, n)
    return out


@nb.njit(cache=True, nogil=True, inline="always")
def _child_q_bounds(children, visits, value, reward, discount, legal, tree_lo, tree_hi, r, b, node, out, in_flight):
    """:func:`scores_into`'s first pass: each legal child's Q into out, and the
    normalisation's (lo, span)."""
    lo = hi = value[b, node]
    for a in range(children.shape[2]):
        c = children[b, node, a]
        if c >= 0 and legal[b, node, a]:
            q = edge_q(reward, discount, value, b, c)
            out[a] = q
            if r.norm == 2 and (not in_flight or visits[b, c] > 0):
                lo = min(lo, q)
                hi = max(hi, q)
    if r.norm == 0:
        lo, hi = r.vmin, r.vmax
    elif r.norm == 1:
        lo, hi = tree_lo, tree_hi
    return lo, max(hi - lo, EPS)


@nb.njit(cache=True, nogil=True, inline="always")
def scores_into(
    children,
    visits,
    virtual,
    value,
    reward,
    discount,
    prior,
    legal,
    tree_lo,
    tree_hi,
    r,
    b,
    node,
    out,
    coefs,
    in_flight=False,
):
    """Every action's selection score at `node` of tree `b` into out (-inf where illegal);
    returns the legal action with the highest one (ties to the lowest index).

    rule 0: MuZero Eq. 2, Q + P * sqrt(N) / (1 + N(a)) * (c1 + log((N + c2 + 1) / c2));
    rule 1: AlphaZero (Go-Exploit Section 2), Q + c_puct * P * sqrt(N) / (1 + N(a)).
    Q is normalised to [0, 1] by known bounds (norm 0), by the tree's min-max
    (norm 1, MuZero Eq. 5) or by the min-max of the parent's value and its
    visited children's Q (norm 2, as mctx); an unvisited child's Q is the
    lowest (unvisited 0: normalised 0), a raw 0 (1) or the parent's value (2).
    N is the node's visit count, which counts its own expansion
    (= 1 + sum_b N(s, b)), as mctx does, so the prior term is active from the
    first simulation. With `in_flight` (leaf batching), descents in flight count as
    visits whose normalised Q is 0, the worst (virtual loss, as lc0 and KataGo), and a
    pending child has no Q of its own. [tree_lo, tree_hi]: the tree's Eq. 5 statistics.
    coefs: :func:`prior_coefficients`, read where N is within it.

    Two passes over the children: the first reads each child's Q once (into out) and
    takes norm 2's bounds, the second scores and keeps the best (the arithmetic of each
    score as written above, so the same bits as three passes: the fused search's selection
    at B = 256 0.84-0.93 of the time, benchmarks/results/profile_fused_tree_ab.json).
    """
    parent_value = value[b, node]
    lo, span = _child_q_bounds(
        children, visits, value, reward, discount, legal, tree_lo, tree_hi, r, b, node, out, in_flight
    )
    n_parent = visits[b, node] + (virtual[b, node] if in_flight else 0)
    coef = coefs[n_parent] if n_parent < coefs.shape[0] else prior_coefficient(r, n_parent)
    # An unvisited child's normalised Q is the same for every such child, and its prior
    # term divides by 1 + 0: exactly 1, so left out (the same bits, 0.94 of the selection's
    # time at B = 256).
    unvisited = r.unvisited
    if unvisited == 0:
        q_new = 0.0
    elif unvisited == 1:
        q_new = (0.0 - lo) / span
    else:
        q_new = (parent_value - lo) / span
    q_new = min(max(q_new, 0.0), 1.0)
    best = -1
    best_score = -np.inf
    for a in range(children.shape[2]):
        if not legal[b, node, a]:
            out[a] = -np.inf
            continue
        c = children[b, node, a]
        if c >= 0:
            n_a = visits[b, c]
            pending = virtual[b, c] if in_flight else 0
            qn = (out[a] - lo) / span if n_a > 0 or not in_flight else 0.0
            qn = min(max(qn, 0.0), 1.0)
            if pending > 0:
                qn = qn * n_a / (n_a + pending)
                n_a += pending
            score = qn + coef * prior[b, node, a] / (1.0 + n_a)
        else:
            score = q_new + coef * prior[b, node, a]
        out[a] = score
        if score > best_score:
            best_score = score
            best = a
    return best


@nb.njit(cache=True, nogil=True, inline="always")
def ndmz_action(children, visits, value, reward, discount, prior, legal, b, node, c_puct):
    """NDMZ's choice-node selection (NDMZ paper, Appendix A, TREESELECT line 50):

        argmax_w'  Q(w') + c_puct P(w') sqrt(sum_b N(b)) / (1 + N(w')),

    over the children with P > 0, Q = W / N of the result node (raw, 0 while
    unvisited) and N its backups; ties go to the larger prior (+1e-9 P), then
    the lowest index.
    """
    total = 0
    for a in range(children.shape[2]):
        c = children[b, node, a]
        if c >= 0:
            total += visits[b, c]
    root_n = math.sqrt(total)
    best = -1
    best_score = -np.inf
    for a in range(children.shape[2]):
        p = float(prior[b, node, a])
        if not legal[b, node, a] or p <= 0.0:
            continue
        c = children[b, node, a]
        n = visits[b, c] if c >= 0 else 0
        q = edge_q(reward, discount, value, b, c) if n > 0 else 0.0
        score = q + c_puct * p * root_n / (1.0 + n) + 1e-9 * p
        if score > best_score:
            best_score = score
            best = a
    return best


@nb.njit(cache=True, nogil=True)
def action_scores(t, rules, b, node):
    """Every action's selection score at one node (-inf where illegal), from the packed
    tree and rules; :func:`polyzero.search.loop.selection_scores` is the friendly form."""
    out = np.empty(t.children.shape[2])
    r = Rules(*rules)
    scores_into(
        t.children,
        t.visits,
        t.virtual,
        t.value,
        t.reward,
        t.discount,
        t.prior,
        t.legal,
        t.q_min[b],
        t.q_max[b],
        r,
        b,
        node,
        out,
        prior_coefficients(r, 0),
    )
    return out


@nb.njit(cache=True, nogil=True)
def root_child_stats(children, visits, reward, discount, value):
    """(N(root, a) int32 [B, A], Q(root, a) float64 [B, A], NaN where unvisited) in one
    compiled pass (Tree.root_child_stats: the result of every search; in NumPy it took
    ~10 array operations each)."""
    batch, _, num_actions = children.shape
    n = np.zeros((batch, num_actions), np.int32)
    q = np.full((batch, num_actions), np.nan)
    for b in range(batch):
        for a in range(num_actions):
            c = children[b, 0, a]
            if c >= 0:
                n[b, a] = visits[b, c]
                if visits[b, c] > 0:
                    q[b, a] = edge_q(reward, discount, value, b, c)
    return n, q
