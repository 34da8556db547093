"""NDMZ's node bookkeeping for one simulation of all B trees, compiled
(:class:`polyzero.search.ndmz.NDMZModel.step`; Appendix A's EXPAND).

A round of NDMZ's search reaches one new node per active tree. Below an identity
node the new node inherits (a chance, terminal or choice node by its edge); below a
choice or chance node it is an identity node, whose hidden state, policies and value
come from one batched network call g then f. :func:`ndmz_inherit` places the
inheriting nodes and gathers the identity nodes' parent states for that call;
:func:`ndmz_expand` stores the call's outputs. Between them the search calls the
network. The NumPy code these replaced did the same stores through a dozen fancy-index
operations per simulation (about a tenth of the self-play search's time on Nannon
6-3-6's NDMZ preset); every value written is a copy or a sign, so the trees are the
same bit for bit (tests/test_ndmz_search.py compares them with the NumPy path).
"""

from __future__ import annotations

import numba as nb

from ..tree import CHANCE, DECISION, IDENTITY, TERMINAL

# The identity edges (polyzero.search.ndmz's CHANCE_EDGE and TERMINAL_EDGE).
CHANCE_EDGE, TERMINAL_EDGE = 2, 3


@nb.njit(cache=True, nogil=True, inline="always")
def _place(nodes, out, b, parent, n, kind, player, anchor) -> None:
    """Node n of tree b: its kind, side and anchor value; the edge's sign into it."""
    node_kind, node_player, node_anchor = nodes
    out_kind, out_discount, out_reward = out
    node_kind[b, n] = kind
    node_player[b, n] = player
    node_anchor[b, n] = anchor
    out_kind[b] = kind
    out_discount[b] = 1.0 if node_player[b, parent] == player else -1.0
    out_reward[b] = 0.0


@nb.njit(cache=True, nogil=True)
def ndmz_inherit(active, parent_node, action, new_node, hidden, nodes, stored, out, grow, hidden_in) -> int:
    """Place the new nodes of the active trees that inherit, and list those that are
    identity nodes in `grow` (tree, parent, action, node: ascending tree order, their
    parents' hidden states in `hidden_in`'s first rows); returns how many.

    nodes: (kind, player, anchor) [B, N]; stored: (node_value [B, N], choice_logits,
    chance_logits [B, N, A]); out: the expansion's (prior_logits, legal, value, kind,
    discount, reward); grow: four int64 [B]."""
    prior, legal, value, out_kind, out_discount, out_reward = out
    node_kind, node_player, node_anchor = nodes
    node_value, choice_logits, chance_logits = stored
    grow_b, grow_p, grow_a, grow_n = grow
    placed = (out_kind, out_discount, out_reward)
    a_size = choice_logits.shape[2]
    legal[:] = False
    m = 0
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        p, a, n = parent_node[b], action[b], new_node[b]
        if node_kind[b, p] != IDENTITY:  # a child of a choice or chance node: an identity node
            grow_b[m], grow_p[m], grow_a[m], grow_n[m] = b, p, a, n
            hidden_in[m, :] = hidden[p, b, :]  # its own hidden state comes from g (ndmz_expand)
            m += 1
            continue
        hidden[n, b, :] = hidden[p, b, :]  # inherited
        if a == CHANCE_EDGE:
            _place(nodes, placed, b, p, n, CHANCE, node_player[b, p], node_anchor[b, p])
            value[b] = node_anchor[b, p]
            prior[b, :a_size] = chance_logits[b, p]
            legal[b, :a_size] = True
        elif a == TERMINAL_EDGE:
            _place(nodes, placed, b, p, n, TERMINAL, node_player[b, p], node_anchor[b, p])
            value[b] = node_anchor[b, p]  # a terminal leaf backs up this V
        else:  # a choice node of player a, with the identity node's V (for player a)
            v = node_value[b, p]
            _place(nodes, placed, b, p, n, DECISION, a, v)
            value[b] = v
            prior[b, :a_size] = choice_logits[b, p]
            legal[b, :a_size] = True
    return m


@nb.njit(cache=True, nogil=True)
def ndmz_expand(m, grow, outputs, hidden, nodes, stored, out, evaluations, terminal) -> None:
    """Store the network's outputs for the first `m` identity nodes of `grow`, then
    mark the terminal rows of the expansion (`terminal` [B]).

    outputs: (hidden [M, H], identity logits [M, 4], choice logits, chance logits
    [M, A], value [M]) of g then f."""
    prior, legal, value, out_kind, out_discount, out_reward = out
    node_kind, node_player, node_anchor = nodes
    node_value, choice_logits, chance_logits = stored
    grow_b, grow_p, _, grow_n = grow
    new_hidden, ident, choice, chance, new_value = outputs
    placed = (out_kind, out_discount, out_reward)
    for i in range(m):
        b, p, n = grow_b[i], grow_p[i], grow_n[i]
        evaluations[b] += 1
        hidden[n, b, :] = new_hidden[i]
        choice_logits[b, n, :] = choice[i]
        chance_logits[b, n, :] = chance[i]
        node_value[b, n] = new_value[i]
        _place(nodes, placed, b, p, n, IDENTITY, node_player[b, p], node_anchor[b, p])
        value[b] = new_value[i]
        prior[b, : ident.shape[1]] = ident[i]
        legal[b, : ident.shape[1]] = True
    for b in range(terminal.shape[0]):
        terminal[b] = out_kind[b] == TERMINAL
