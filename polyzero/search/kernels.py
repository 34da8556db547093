"""Compiled tree bookkeeping: selection and backup for all B trees in one call.

One simulation of a batched search calls :func:`select_paths` once (a Gumbel
root's Sequential Halving included), the model once for all B leaves, and
:func:`expand_and_backup` once. Both kernels loop
over trees and tree depth in compiled code (Numba), so there is no Python
work per node. The trees are independent, so each kernel has a ``_parallel``
twin that splits them into ranges walked on numba's threads (polyzero's
``threads`` setting); :func:`tree_chunks` says when that pays.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_EPS = 1e-8

# Fewer trees than this per thread, and a parallel region costs more than it saves.
MIN_TREES_PER_CHUNK = 32


def tree_chunks(batch: int) -> int:
    """How many ranges of trees the kernels split a batch of `batch` trees into:
    numba's thread count, fewer where a range would hold under MIN_TREES_PER_CHUNK
    trees; 1 means the serial kernels."""
    return max(1, min(nb.get_num_threads(), batch // MIN_TREES_PER_CHUNK))


# Leaf kinds returned by select_paths.
NEW_LEAF = 0  # an edge whose child is not in the tree yet: expand it
TERMINAL_LEAF = 1  # an existing terminal node: back up its value again


@nb.njit(cache=True, inline="always")
def _edge_q(reward, discount, value, b, child):
    return reward[b, child] + discount[b, child] * value[b, child]


# Scoring functions are inlined into the selection kernel: compiled as calls (each
# passing a dozen arrays), pUCT selection ran ~2x and Gumbel's ~1.5x slower per
# node (profiled at B = 16).
@nb.njit(cache=True, inline="always")
def _scores_into(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                 b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax, out):
    """Every action's selection score at `node` of tree `b` into out (-inf where illegal).

    rule 0: MuZero Eq. 2, Q + P * sqrt(N) / (1 + N(a)) * (c1 + log((N + c2 + 1) / c2));
    rule 1: AlphaZero (Go-Exploit Section 2), Q + c_puct * P * sqrt(N) / (1 + N(a)).
    Q is normalised to [0, 1] by known bounds (norm 0), by the tree's min-max
    (norm 1, MuZero Eq. 5) or by the min-max of the parent's value and its
    visited children's Q (norm 2, as mctx); an unvisited child's Q is the
    lowest (unvisited 0: normalised 0), a raw 0 (1) or the parent's value (2).
    N is the node's visit count, which counts its own expansion
    (= 1 + sum_b N(s, b)), as mctx does, so the prior term is active from the
    first simulation.
    """
    num_actions = children.shape[2]
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
        for a in range(num_actions):
            c = children[b, node, a]
            if c >= 0 and legal[b, node, a]:
                q = _edge_q(reward, discount, value, b, c)
                lo = min(lo, q)
                hi = max(hi, q)
    span = max(hi - lo, _EPS)
    n_parent = visits[b, node]
    if rule == 0:
        coef = math.sqrt(n_parent) * (c1 + math.log((n_parent + c2 + 1.0) / c2))
    else:
        coef = math.sqrt(n_parent) * c_puct
    for a in range(num_actions):
        if not legal[b, node, a]:
            out[a] = -np.inf
            continue
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
                qn = (parent_value - lo) / span
        qn = min(max(qn, 0.0), 1.0)
        out[a] = qn + coef * prior[b, node, a] / (1.0 + n_a)


@nb.njit(cache=True, inline="always")
def best_action(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax, buf):
    """The legal action at `node` of tree `b` with the highest score (:func:`_scores_into`,
    written into `buf`, float [A]); ties go to the lowest index."""
    _scores_into(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                 b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax, buf)
    best = -1
    best_score = -np.inf
    for a in range(children.shape[2]):
        if buf[a] > best_score:
            best_score = buf[a]
            best = a
    return best


@nb.njit(cache=True)
def action_scores(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                  b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax):
    """Every action's selection score at one node (-inf where illegal); for tests and tools."""
    out = np.empty(children.shape[2])
    _scores_into(children, visits, value, reward, discount, prior, legal, q_min, q_max,
                 b, node, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax, out)
    return out


@nb.njit(cache=True)
def select_paths(children, visits, value, raw_value, reward, discount, prior, legal, terminal,
                 q_min, q_max, root_action, root_gumbel_logits, root_considered, rule, norm,
                 unvisited, c_puct, c1, c2, vmin, vmax, gumbel_norm, c_visit, c_scale,
                 out_node, out_action, out_kind, chance):
    """Walk every tree from its root to a leaf.

    For tree b: out_kind[b] = NEW_LEAF with (out_node[b], out_action[b]) the
    parent and the edge to expand, or TERMINAL_LEAF with out_node[b] the
    terminal node reached. At the root, root_action[b] >= 0 forces the action
    (the hook KataGo's forced playouts use); else root_considered[b] >= 0 makes
    it a Gumbel root that takes :func:`gumbel_root_action` (Sequential Halving,
    with `root_gumbel_logits` [B, A] = g + logits); else the rule chooses.
    Rules 0 and 1 are pUCT (:func:`best_action`); rule 2 is the Gumbel paper's
    Eq. 14 (:func:`gumbel_interior_action`, with `gumbel_norm`, `c_visit`,
    `c_scale`). At a chance node (chance[b, node]) the outcome is drawn in
    proportion to its probability, stored as the node's prior (roulette-wheel
    selection, as NMCTS and McGammon do; NDMZ paper Section 2.3).
    """
    _select_paths_range(0, children.shape[0], children, visits, value, raw_value, reward,
                        discount, prior, legal, terminal, q_min, q_max, root_action,
                        root_gumbel_logits, root_considered, rule, norm, unvisited, c_puct, c1,
                        c2, vmin, vmax, gumbel_norm, c_visit, c_scale, out_node, out_action,
                        out_kind, chance)


@nb.njit(cache=True, parallel=True)
def select_paths_parallel(num_chunks, children, visits, value, raw_value, reward, discount,
                          prior, legal, terminal, q_min, q_max, root_action, root_gumbel_logits,
                          root_considered, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax,
                          gumbel_norm, c_visit, c_scale, out_node, out_action, out_kind, chance):
    """:func:`select_paths` with the trees split into `num_chunks` ranges walked in
    parallel (no chance nodes: their draws use numba's per-thread generator)."""
    batch = children.shape[0]
    for t in nb.prange(num_chunks):
        _select_paths_range(t * batch // num_chunks, (t + 1) * batch // num_chunks, children,
                            visits, value, raw_value, reward, discount, prior, legal, terminal,
                            q_min, q_max, root_action, root_gumbel_logits, root_considered,
                            rule, norm, unvisited, c_puct, c1, c2, vmin, vmax, gumbel_norm,
                            c_visit, c_scale, out_node, out_action, out_kind, chance)


@nb.njit(cache=True)
def _select_paths_range(lo, hi, children, visits, value, raw_value, reward, discount, prior,
                        legal, terminal, q_min, q_max, root_action, root_gumbel_logits,
                        root_considered, rule, norm, unvisited, c_puct, c1, c2, vmin, vmax,
                        gumbel_norm, c_visit, c_scale, out_node, out_action, out_kind, chance):
    num_actions = children.shape[2]
    q_buf = np.empty(num_actions)
    n_buf = np.empty(num_actions)
    s_buf = np.empty(num_actions)
    for b in range(lo, hi):
        glo, ghi = _sigma_bounds(gumbel_norm, q_min, q_max, b, vmin, vmax)
        node = 0
        depth = 0
        while True:
            if terminal[b, node]:
                out_kind[b] = TERMINAL_LEAF
                out_node[b] = node
                out_action[b] = -1
                break
            if chance[b, node]:
                a = _sample_outcome(prior, legal, b, node)
            elif depth == 0 and root_action[b] >= 0:
                a = root_action[b]
            elif depth == 0 and root_considered[b] >= 0:
                a = gumbel_root_action(children, visits, value, raw_value, reward, discount,
                                       prior, legal, b, root_gumbel_logits[b], root_considered[b],
                                       gumbel_norm, glo, ghi, c_visit, c_scale, q_buf, n_buf,
                                       s_buf)
            elif rule == 2:
                a = gumbel_interior_action(children, visits, value, raw_value, reward, discount,
                                           prior, legal, b, node, gumbel_norm, glo, ghi,
                                           c_visit, c_scale, q_buf, n_buf, s_buf)
            else:
                a = best_action(children, visits, value, reward, discount, prior, legal,
                                q_min, q_max, b, node, rule, norm, unvisited, c_puct,
                                c1, c2, vmin, vmax, s_buf)
            child = children[b, node, a]
            if child < 0:
                out_kind[b] = NEW_LEAF
                out_node[b] = node
                out_action[b] = a
                break
            node = child
            depth += 1


@nb.njit(cache=True)
def _sample_outcome(prior, legal, b, node):
    """An outcome of chance node `node` drawn by its probability (the node's prior)."""
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
def _expected_outcome_value(children, reward, discount, value, prior, b, node):
    """sum_o p(o) Q(node, o) / sum_o p(o) over the expanded outcomes o of a chance node."""
    total = 0.0
    weight = 0.0
    for a in range(children.shape[2]):
        c = children[b, node, a]
        if c >= 0:
            total += prior[b, node, a] * _edge_q(reward, discount, value, b, c)
            weight += prior[b, node, a]
    return total / weight if weight > 0.0 else value[b, node]


@nb.njit(cache=True)
def seed_chance(seed):
    """Seed the generator chance nodes draw from (Numba keeps its own, per thread)."""
    np.random.seed(seed)


# ---------------------------------------------------------------- Gumbel (Danihelka et al. 2022)
_TINY = float(np.finfo(np.float32).tiny)  # keeps v_mix finite if a visited prior is 0 (as mctx)


@nb.njit(cache=True, inline="always")
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


@nb.njit(cache=True)
def mixed_value(raw_value, q, visits, prior, legal):
    """v_mix (Gumbel paper, Appendix D); see :func:`_visited_stats`."""
    return _visited_stats(raw_value, q, visits, prior, legal)[0]


@nb.njit(cache=True, inline="always")
def _sigma_bounds(norm, q_min, q_max, b, vmin, vmax):
    """The [vmin, vmax] that :func:`completed_sigma` takes for tree `b`: the tree's
    min-max statistics under norm 3, the value bounds otherwise."""
    if norm == 3:
        return q_min[b], q_max[b]
    return vmin, vmax


@nb.njit(cache=True, inline="always")
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
    span = max(hi - lo, _EPS)
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


@nb.njit(cache=True, inline="always")
def _gather_children(children, visits, value, reward, discount, b, node, q_out, n_out):
    """Q(node, a) for the node's mover and N(node, a), 0 where unexpanded."""
    for a in range(children.shape[2]):
        c = children[b, node, a]
        if c >= 0:
            q_out[a] = _edge_q(reward, discount, value, b, c)
            n_out[a] = visits[b, c]
        else:
            q_out[a] = 0.0
            n_out[a] = 0.0


@nb.njit(cache=True, inline="always")
def gumbel_interior_action(children, visits, value, raw_value, reward, discount, prior, legal,
                           b, node, norm, vmin, vmax, c_visit, c_scale, q_buf, n_buf, s_buf):
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
    top = completed_sigma(q_buf, n_buf, node_prior, node_legal, raw_value[b, node], norm, vmin,
                          vmax, c_visit, c_scale, s_buf)
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


@nb.njit(cache=True, inline="always")
def gumbel_root_action(children, visits, value, raw_value, reward, discount, prior, legal, b,
                       gumbel_logits, considered_visit, norm, vmin, vmax, c_visit, c_scale,
                       q_buf, n_buf, s_buf):
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
    completed_sigma(q_buf, n_buf, prior[b, 0], legal[b, 0], raw_value[b, 0], norm, vmin,
                    vmax, c_visit, c_scale, s_buf)
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


@nb.njit(cache=True)
def gumbel_root_outputs(children, visits, value, raw_value, reward, discount, prior, legal,
                        q_min, q_max, logits, gumbel, norm, vmin, vmax, c_visit, c_scale,
                        out_policy, out_action):
    """What a Gumbel root returns after its n simulations, for every tree:

    * out_policy: pi' = softmax(logits + sigma(completedQ)) over the legal
      actions (Eq. 11), the policy target of Eq. 12;
    * out_action: A_{n+1}, the most visited legal action with the highest
      g + logits + sigma(q_hat) (Algorithm 2; Appendix F on the most visited).
    """
    num_actions = children.shape[2]
    q_buf = np.empty(num_actions)
    n_buf = np.empty(num_actions)
    s_buf = np.empty(num_actions)
    for b in range(children.shape[0]):
        _gather_children(children, visits, value, reward, discount, b, 0, q_buf, n_buf)
        glo, ghi = _sigma_bounds(norm, q_min, q_max, b, vmin, vmax)
        completed_sigma(q_buf, n_buf, prior[b, 0], legal[b, 0], raw_value[b, 0], norm, glo,
                        ghi, c_visit, c_scale, s_buf)
        max_visits = -1.0
        top = -np.inf
        for a in range(num_actions):
            if legal[b, 0, a]:
                max_visits = max(max_visits, n_buf[a])
                top = max(top, logits[b, a] + s_buf[a])
        total = 0.0
        best = -1
        best_score = -np.inf
        for a in range(num_actions):
            if legal[b, 0, a]:
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
                      new_reward, new_discount, new_terminal, chance, new_chance, chance_backup=0):
    """Add each tree's new node (if any) and back its value up to the root.

    A new node's prior is the softmax of its logits over its legal actions.

    Backup follows MuZero Eq. 3-4: going up, G <- r + discount * G, and each
    node's mean value absorbs G. A terminal node is worth 0 after its
    reward, so revisiting one backs up its final reward again. The tree's
    min-max statistics see every Q on the path (MuZero Eq. 5).
    """
    _expand_and_backup_range(0, children.shape[0], children, parent, action, depth, visits,
                             value, raw_value, reward, discount, prior, legal, terminal,
                             num_nodes, q_min, q_max, leaf_node, leaf_action, leaf_kind,
                             new_logits, new_legal, new_value, new_reward, new_discount,
                             new_terminal, chance, new_chance, chance_backup)


@nb.njit(cache=True, parallel=True)
def expand_and_backup_parallel(num_chunks, children, parent, action, depth, visits, value,
                               raw_value, reward, discount, prior, legal, terminal, num_nodes,
                               q_min, q_max, leaf_node, leaf_action, leaf_kind, new_logits,
                               new_legal, new_value, new_reward, new_discount, new_terminal,
                               chance, new_chance, chance_backup=0):
    """:func:`expand_and_backup` over `num_chunks` ranges of trees in parallel."""
    batch = children.shape[0]
    for t in nb.prange(num_chunks):
        _expand_and_backup_range(t * batch // num_chunks, (t + 1) * batch // num_chunks,
                                 children, parent, action, depth, visits, value, raw_value,
                                 reward, discount, prior, legal, terminal, num_nodes, q_min,
                                 q_max, leaf_node, leaf_action, leaf_kind, new_logits,
                                 new_legal, new_value, new_reward, new_discount, new_terminal,
                                 chance, new_chance, chance_backup)


@nb.njit(cache=True)
def _expand_and_backup_range(lo, hi, children, parent, action, depth, visits, value, raw_value,
                             reward, discount, prior, legal, terminal, num_nodes, q_min, q_max,
                             leaf_node, leaf_action, leaf_kind, new_logits, new_legal,
                             new_value, new_reward, new_discount, new_terminal, chance,
                             new_chance, chance_backup):
    for b in range(lo, hi):
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
            chance[b, n] = new_chance[b]
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
            if chance_backup == 1 and chance[b, p]:
                # Expectimax: the chance node is worth the probability-weighted mean of its
                # expanded outcomes, and that (not the sampled return) goes on up.
                value[b, p] = _expected_outcome_value(children, reward, discount, value, prior, b, p)
                g = value[b, p]
            q = _edge_q(reward, discount, value, b, node)
            if q < q_min[b]:
                q_min[b] = q
            if q > q_max[b]:
                q_max[b] = q
            node = p
