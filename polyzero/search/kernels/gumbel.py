"""Gumbel search's kernels (Danihelka et al., ICLR 2022): completed Q and sigma, the
Sequential Halving root, the deterministic interior selection of Eq. 14 and the root's
outputs. The per-node functions take the tree's arrays one by one (see
:mod:`polyzero.search.kernels.scores`)."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..params import Rules
from .scores import EPS, edge_q

_TINY = float(np.finfo(np.float32).tiny)  # keeps v_mix finite if a visited prior is 0 (as mctx)


@nb.njit(cache=True, nogil=True, inline="always")
def _visited_stats(raw_value, q, visits, prior, legal):
    """One pass over a node's actions: (v_mix, max visits, min and max of the visited
    Q, whether some action is unvisited or illegal).

    v_mix (Gumbel paper, Appendix D):

        v_mix = (v_hat + sum_b N(b) * sum_{a: N(a)>0} pi(a) q(a) / sum_{b: N(b)>0} pi(b))
                / (1 + sum_b N(b)),

    the value network's v_hat interpolated with the prior-weighted mean of the
    visited actions' Q; v_hat alone when nothing is visited.
    """
    total_visits = 0.0
    max_visits = 0.0
    sum_p = 0.0
    sum_pq = 0.0
    q_lo = np.inf
    q_hi = -np.inf
    unvisited = False
    for a in range(q.shape[0]):
        if legal[a] and visits[a] > 0:
            p = max(prior[a], _TINY)
            total_visits += visits[a]
            max_visits = max(max_visits, float(visits[a]))
            sum_p += p
            sum_pq += p * q[a]
            q_lo = min(q_lo, q[a])
            q_hi = max(q_hi, q[a])
        else:
            unvisited = True
    if total_visits == 0.0:
        v_mix = raw_value
    else:
        v_mix = (raw_value + total_visits * sum_pq / sum_p) / (1.0 + total_visits)
    return v_mix, max_visits, q_lo, q_hi, unvisited


@nb.njit(cache=True, nogil=True)
def mixed_value(raw_value, q, visits, prior, legal):
    """v_mix (Gumbel paper, Appendix D); see :func:`_visited_stats`."""
    return _visited_stats(raw_value, q, visits, prior, legal)[0]


@nb.njit(cache=True, nogil=True, inline="always")
def sigma_bounds(norm, q_min, q_max, b, vmin, vmax):
    """The [vmin, vmax] that :func:`completed_sigma` takes for tree `b`: the tree's
    min-max statistics under norm 3, the value bounds otherwise."""
    if norm == 3:
        return q_min[b], q_max[b]
    return vmin, vmax


@nb.njit(cache=True, nogil=True, inline="always")
def completed_sigma(q, visits, prior, legal, raw_value, norm, vmin, vmax, c_visit, c_scale, out):
    """sigma(completedQ) for every legal action of one node, written into `out`
    (0 where illegal); returns the largest of them (the shift a softmax over
    them needs).

    completedQ(a) = q(a) if N(a) > 0 else v_mix (Eq. 10, Appendix D), mapped to
    [0, 1] (norm 0: by the bounds [vmin, vmax]; 1: min-max over the visited Q and
    v_mix; 2: min-max over the completed Q of every action, illegal ones holding
    v_mix, as mctx; 3: min-max over the whole tree, MuZero's Eq. 5 statistics
    passed as [vmin, vmax], widened by this node's Q and v_mix), then
    sigma(q) = (c_visit + max_b N(b)) * c_scale * q (Eq. 8).
    """
    v_mix, max_visits, lo, hi, unvisited = _visited_stats(raw_value, q, visits, prior, legal)
    if norm == 0:
        lo = vmin
        hi = vmax
    elif norm == 3:
        lo = min(lo, v_mix, vmin)
        hi = max(hi, v_mix, vmax)
    elif norm == 1 or unvisited:
        lo = min(lo, v_mix)
        hi = max(hi, v_mix)
    span = max(hi - lo, EPS)
    scale = (c_visit + max_visits) * c_scale
    top = -np.inf
    for a in range(q.shape[0]):
        if legal[a]:
            completed = q[a] if visits[a] > 0 else v_mix
            out[a] = scale * min(max((completed - lo) / span, 0.0), 1.0)
            top = max(top, out[a])
        else:
            out[a] = 0.0
    return top


@nb.njit(cache=True, nogil=True, inline="always")
def _gather_children(children, visits, value, reward, discount, b, node, q_out, n_out):
    """Q(node, a) for the node's mover and N(node, a), 0 where unexpanded."""
    for a in range(children.shape[2]):
        c = children[b, node, a]
        if c >= 0:
            q_out[a] = edge_q(reward, discount, value, b, c)
            n_out[a] = visits[b, c]
        else:
            q_out[a] = 0.0
            n_out[a] = 0.0


@nb.njit(cache=True, nogil=True, inline="always")
def gumbel_interior_action(
    children,
    visits,
    value,
    raw_value,
    reward,
    discount,
    prior,
    legal,
    b,
    node,
    norm,
    vmin,
    vmax,
    c_visit,
    c_scale,
    q_buf,
    n_buf,
    s_buf,
):
    """Deterministic non-root selection (Gumbel paper, Eq. 14, Appendix E):

        argmax_a  pi'(a) - N(a) / (1 + sum_b N(b)),
        pi' = softmax(logits + sigma(completedQ))  (Eq. 11),

    with logits = log prior (the stored prior is softmax(logits) over the legal
    actions, so they differ by a constant that softmax ignores): pi'(a) is
    prior(a) exp(sigma(a)) normalised, with no log. The buffers are scratch
    space of length A. Ties go to the lowest index.
    """
    node_legal = legal[b, node]
    node_prior = prior[b, node]
    _gather_children(children, visits, value, reward, discount, b, node, q_buf, n_buf)
    top = completed_sigma(
        q_buf, n_buf, node_prior, node_legal, raw_value[b, node], norm, vmin, vmax, c_visit, c_scale, s_buf
    )
    total = 0.0
    total_visits = 0.0
    for a in range(children.shape[2]):
        if node_legal[a]:
            s_buf[a] = node_prior[a] * math.exp(s_buf[a] - top)
            total += s_buf[a]
            total_visits += n_buf[a]
    best = -1
    best_score = -np.inf
    for a in range(children.shape[2]):
        if node_legal[a]:
            score = s_buf[a] / total - n_buf[a] / (1.0 + total_visits)
            if score > best_score:
                best_score = score
                best = a
    return best


@nb.njit(cache=True, nogil=True, inline="always")
def gumbel_root_action(
    children,
    visits,
    value,
    raw_value,
    reward,
    discount,
    prior,
    legal,
    b,
    gumbel_logits,
    considered_visit,
    norm,
    vmin,
    vmax,
    c_visit,
    c_scale,
    q_buf,
    n_buf,
    s_buf,
):
    """The root action of tree `b` for one simulation under Sequential Halving with
    Gumbel (Gumbel paper, Algorithm 2, in mctx's form): among the legal root
    actions visited exactly `considered_visit` times so far, the one with the
    highest g + logits + sigma(q_hat) (`gumbel_logits` [A] = g + logits). With the
    visit schedule of :func:`polyzero.search.gumbel.considered_visit_table` this
    first visits the top m of g + logits (Gumbel-Top-k, Eq. 3-5) and then keeps
    the better half by g + logits + sigma(q_hat) in every phase. The buffers are
    scratch space of length A.
    """
    _gather_children(children, visits, value, reward, discount, b, 0, q_buf, n_buf)
    completed_sigma(q_buf, n_buf, prior[b, 0], legal[b, 0], raw_value[b, 0], norm, vmin, vmax, c_visit, c_scale, s_buf)
    best = -1
    best_score = -np.inf
    fallback = -1
    fallback_score = -np.inf
    for a in range(children.shape[2]):
        if legal[b, 0, a]:
            score = gumbel_logits[a] + s_buf[a]
            if n_buf[a] == considered_visit and score > best_score:
                best_score = score
                best = a
            if score > fallback_score:
                fallback_score = score
                fallback = a
    return best if best >= 0 else fallback


@nb.njit(cache=True, nogil=True)
def gumbel_root_outputs(t, rules, logits, gumbel, out_policy, out_action):
    """What a Gumbel root returns after its n simulations, for every tree:

    * out_policy: pi' = softmax(logits + sigma(completedQ)) over the legal
      actions (Eq. 11), the policy target of Eq. 12;
    * out_action: A_{n+1}, the most visited legal action with the highest
      g + logits + sigma(q_hat) (Algorithm 2; Appendix F on the most visited).
    """
    r = Rules(*rules)
    num_actions = t.children.shape[2]
    q_buf = np.empty(num_actions)
    n_buf = np.empty(num_actions)
    s_buf = np.empty(num_actions)
    for b in range(t.children.shape[0]):
        _gather_children(t.children, t.visits, t.value, t.reward, t.discount, b, 0, q_buf, n_buf)
        glo, ghi = sigma_bounds(r.gumbel_norm, t.q_min, t.q_max, b, r.vmin, r.vmax)
        completed_sigma(
            q_buf,
            n_buf,
            t.prior[b, 0],
            t.legal[b, 0],
            t.raw_value[b, 0],
            r.gumbel_norm,
            glo,
            ghi,
            r.c_visit,
            r.c_scale,
            s_buf,
        )
        max_visits = -1.0
        top = -np.inf
        for a in range(num_actions):
            if t.legal[b, 0, a]:
                max_visits = max(max_visits, n_buf[a])
                top = max(top, logits[b, a] + s_buf[a])
        total = 0.0
        best = -1
        best_score = -np.inf
        for a in range(num_actions):
            if t.legal[b, 0, a]:
                e = math.exp(logits[b, a] + s_buf[a] - top)
                out_policy[b, a] = e
                total += e
                score = gumbel[b, a] + logits[b, a] + s_buf[a]
                if n_buf[a] == max_visits and score > best_score:
                    best_score = score
                    best = a
            else:
                out_policy[b, a] = 0.0
        for a in range(num_actions):
            out_policy[b, a] /= total
        out_action[b] = best
