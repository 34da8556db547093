"""Compiled tree bookkeeping: selection and backup for all B trees in one call.

One simulation of a batched search calls :func:`select_leaves` once, the model
once for all B leaves, and :func:`expand_and_backup` once. Both kernels loop
over trees and tree depth in compiled code (Numba), so there is no Python
work per node.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_EPS = 1e-8

# Leaf kinds returned by select_leaves.
NEW_LEAF = 0  # an edge whose child is not in the tree yet: expand it
TERMINAL_LEAF = 1  # an existing terminal node: back up its value again


@nb.njit(cache=True, inline="always")
def _edge_q(reward, discount, value, b, child):
    return reward[b, child] + discount[b, child] * value[b, child]


@nb.njit(cache=True)
def _score_terms(children, visits, value, reward, discount, legal, q_min, q_max, b, node,
                 rule, norm, c_puct, c1, c2, vmin, vmax):
    """(lo, span, coef): the Q normalisation range and the prior term's factor at a node."""
    parent_value = value[b, node]
    if norm == 0:
        lo = vmin
        hi = vmax
    elif norm == 1:
        lo = q_min[b]
        hi = q_max[b]
    else:
        lo = parent_value
        hi = parent_value
        for a in range(children.shape[2]):
            c = children[b, node, a]
            if c >= 0 and legal[b, node, a]:
                q = _edge_q(reward, discount, value, b, c)
                lo = min(lo, q)
                hi = max(hi, q)
    n_parent = visits[b, node]
    if rule == 0:
        coef = math.sqrt(n_parent) * (c1 + math.log((n_parent + c2 + 1.0) / c2))
    else:
        coef = math.sqrt(n_parent) * c_puct
    return lo, max(hi - lo, _EPS), coef


@nb.njit(cache=True, inline="always")
def _action_score(children, visits, value, reward, discount, prior, b, node, a, unvisited,
                  lo, span, coef):
    c = children[b, node, a]
    if c >= 0:
        n_a = visits[b, c]
        qn = (_edge_q(reward, discount, value, b, c) - lo) / span
    else:
        n_a = 0
        if unvisited == 0:
            qn = 0.0
        elif unvisited == 1:
            qn = (0.0 - lo) / span
        else:
            qn = (value[b, node] - lo) / span
    qn = min(max(qn, 0.0), 1.0)
    return qn + coef * prior[b, node, a] / (1.0 + n_a)


@nb.njit(cache=True)
def best_action(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax):
    """The legal action at `node` of tree `b` with the highest selection score.

    rule 0: MuZero Eq. 2, Q + P * sqrt(N) / (1 + N(a)) * (c1 + log((N + c2 + 1) / c2));
    rule 1: AlphaZero (Go-Exploit Section 2), Q + c_puct * P * sqrt(N) / (1 + N(a)).
    Q is normalised to [0, 1] by known bounds (norm 0), by the tree's min-max
    (norm 1, MuZero Eq. 5) or by the min-max of the parent's value and its
    visited children's Q (norm 2, as mctx). N is the node's visit count, which
    counts its own expansion (= 1 + sum_b N(s, b)), as mctx does, so the prior
    term is active from the first simulation. Ties go to the lowest index.
    """
    lo, span, coef = _score_terms(children, visits, value, reward, discount, legal, q_min,
                                  q_max, b, node, rule, norm, c_puct, c1, c2, vmin, vmax)
    best = -1
    best_score = -np.inf
    for a in range(children.shape[2]):
        if legal[b, node, a]:
            score = _action_score(children, visits, value, reward, discount, prior, b, node,
                                  a, unvisited, lo, span, coef)
            if score > best_score:
                best_score = score
                best = a
    return best


@nb.njit(cache=True)
def action_scores(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                  b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax):
    """Every action's selection score at one node (-inf where illegal); for tests and tools."""
    lo, span, coef = _score_terms(children, visits, value, reward, discount, legal, q_min,
                                  q_max, b, node, rule, norm, c_puct, c1, c2, vmin, vmax)
    out = np.full(children.shape[2], -np.inf)
    for a in range(children.shape[2]):
        if legal[b, node, a]:
            out[a] = _action_score(children, visits, value, reward, discount, prior, b, node,
                                   a, unvisited, lo, span, coef)
    return out


@nb.njit(cache=True)
def select_leaves(children, visits, value, reward, discount, prior, legal, terminal,
                  q_min, q_max, root_action, rule, norm, unvisited, c_puct, c1, c2,
                  vmin, vmax, out_node, out_action, out_kind):
    """Walk every tree from its root to a leaf.

    For tree b: out_kind[b] = NEW_LEAF with (out_node[b], out_action[b]) the
    parent and the edge to expand, or TERMINAL_LEAF with out_node[b] the
    terminal node reached. root_action[b] >= 0 forces the action at the root
    (the hook a Gumbel root uses); -1 lets the rule choose.
    """
    for b in range(children.shape[0]):
        node = 0
        depth = 0
        while True:
            if terminal[b, node]:
                out_kind[b] = TERMINAL_LEAF
                out_node[b] = node
                out_action[b] = -1
                break
            if depth == 0 and root_action[b] >= 0:
                a = root_action[b]
            else:
                a = best_action(children, visits, value, reward, discount, prior, legal,
                                q_min, q_max, b, node, rule, norm, unvisited, c_puct,
                                c1, c2, vmin, vmax)
            child = children[b, node, a]
            if child < 0:
                out_kind[b] = NEW_LEAF
                out_node[b] = node
                out_action[b] = a
                break
            node = child
            depth += 1


@nb.njit(cache=True, inline="always")
def _softmax_into(logits, legal, out):
    top = -np.inf
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


@nb.njit(cache=True)
def expand_and_backup(children, parent, action, depth, visits, value, raw_value, reward,
                      discount, prior, legal, terminal, num_nodes, q_min, q_max,
                      leaf_node, leaf_action, leaf_kind, new_logits, new_legal, new_value,
                      new_reward, new_discount, new_terminal):
    """Add each tree's new node (if any) and back its value up to the root.

    A new node's prior is the softmax of its logits over its legal actions.

    Backup follows MuZero Eq. 3-4: going up, G <- r + discount * G, and each
    node's mean value absorbs G. A terminal node is worth 0 after its
    reward, so revisiting one backs up its final reward again. The tree's
    min-max statistics see every Q on the path (MuZero Eq. 5).
    """
    for b in range(children.shape[0]):
        if leaf_kind[b] == NEW_LEAF:
            p = leaf_node[b]
            a = leaf_action[b]
            n = num_nodes[b]
            num_nodes[b] = n + 1
            children[b, p, a] = n
            parent[b, n] = p
            action[b, n] = a
            depth[b, n] = depth[b, p] + 1
            reward[b, n] = new_reward[b]
            discount[b, n] = new_discount[b]
            terminal[b, n] = new_terminal[b]
            v = 0.0 if new_terminal[b] else new_value[b]
            raw_value[b, n] = v
            value[b, n] = v
            visits[b, n] = 1
            if not new_terminal[b]:
                _softmax_into(new_logits[b], new_legal[b], prior[b, n])
                for k in range(children.shape[2]):
                    legal[b, n, k] = new_legal[b, k]
        else:
            n = leaf_node[b]
            visits[b, n] += 1
            v = value[b, n]
        g = v
        node = n
        while node != 0:
            p = parent[b, node]
            g = reward[b, node] + discount[b, node] * g
            cnt = visits[b, p]
            value[b, p] = (value[b, p] * cnt + g) / (cnt + 1.0)
            visits[b, p] = cnt + 1
            q = _edge_q(reward, discount, value, b, node)
            if q < q_min[b]:
                q_min[b] = q
            if q > q_max[b]:
                q_max[b] = q
            node = p
