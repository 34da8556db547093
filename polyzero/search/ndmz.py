"""Nondeterministic MuZero's tree search (NDMZ paper, Section 3.3 and Appendix A) on
the shared compiled core.

Four kinds of node, each a node kind of :mod:`polyzero.search.tree`:

* choice nodes (``DECISION``): a choice player (0 or 1) is to move. The root is
  one (its children are the legal actions of the real state, priors the masked
  choice policy); a non-root choice node is a child of an identity node along a
  player edge, inherits its hidden state and value, and its children are all of
  A with priors from the identity node's choice policy. A child is picked by
  pUCT, Q(w') + c_puct P(w') sqrt(sum_b N(b)) / (1 + N(w')), over its result
  nodes (:func:`polyzero.search.kernels.scores.ndmz_action`).
* identity nodes (``IDENTITY``): children of choice and chance nodes. Expanding
  one is the only network call: r, s^k, i^k = g(s^(k-1), a); p^k, c^k, v^k =
  f(s^k). Its children are the players N = {0, 1, chance, terminal}, picked by
  roulette wheel in proportion to i^k.
* chance nodes (``CHANCE``): children of identity nodes along the chance edge;
  they inherit the hidden state and take the identity node's chance policy as
  priors over all of A; a child is picked by roulette wheel.
* terminal nodes (``TERMINAL``): children of identity nodes along the terminal
  edge; no children.

One simulation is one iteration of Appendix A's loop: select from the root
until an unexpanded node is reached, expand it, and back up only if it is a
choice or a terminal node (so ``num_simulations`` counts iterations, many of
which expand an identity or chance node and back up nothing). Backup: from a
choice leaf, value v = V(leaf) for player e = E(leaf) (the identity edge into
it); from a terminal leaf, v and e are those of its closest choice ancestor.
Along the path every result node (an identity node whose parent is a choice
node j) gets W += v if E(j) = e, else W -= v, and N += 1; Q = W / N. The root's
E is the real player to move.

How the core holds this: every node is read from the side of its closest choice
ancestor-or-self (its *player*), and an edge's discount is +1 where that side
stays and -1 where a choice node of the other player begins, so the core's
backup G <- discount * G hands each result node exactly Appendix A's +v or -v
(two players: the product of the signs on a path is +1 iff its ends share a
side). Node values are then W / N, visits count backups (the tree's
``NDMZ_RULE``), and a terminal node's value is its closest choice ancestor's V.
:class:`NDMZModel` is the model; the tree, selection and backup are the core's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels.ndmz_nodes import CHANCE_EDGE, TERMINAL_EDGE, ndmz_expand, ndmz_inherit  # noqa: F401
from .loop import Expansion, SearchHooks, simulate, start_tree
from .params import SearchParams
from .tree import CHANCE, DECISION, IDENTITY, TERMINAL, Tree

# Appendix A's names for the core's node kinds.
KIND_CHOICE, KIND_IDENTITY, KIND_CHANCE, KIND_TERMINAL = DECISION, IDENTITY, CHANCE, TERMINAL
# The identity edges N = {0, 1, chance, terminal} (the paper's {1, 2, c, d}); the model's
# identity head (polyzero.nets.ndmz) and the replay's targets use the same codes;
# CHANCE_EDGE and TERMINAL_EDGE are defined beside the compiled bookkeeping that reads them.
PLAYER_0, PLAYER_1 = 0, 1
NUM_IDENTITIES = 4


class NDMZModel:
    """A :class:`~polyzero.search.loop.SearchModel` for NDMZ's tree: g and f at identity
    nodes, inheritance below them (Appendix A, EXPAND).

    `inference` has ``initial(obs)`` and ``recurrent(hidden, actions)`` as
    :class:`polyzero.nets.ndmz.NDMZInference`; `legal` [B, C] masks the roots'
    choice actions, `players` [B] says who moves at each root; `layout` is the
    :class:`polyzero.nets.ndmz.ActionLayout` (C choice actions, |A| in all).
    """

    has_chance = True  # roulette at chance and identity nodes
    ndmz_tree = True

    def __init__(self, inference, obs: np.ndarray, legal: np.ndarray, players: np.ndarray, layout, num_nodes: int):
        self.inference = inference
        self.layout = layout
        hidden0, p0, _, v0 = inference.initial(obs)
        batch = len(obs)
        a_size = layout.size
        self.num_actions = width = max(a_size, NUM_IDENTITIES)
        self.root_value = np.asarray(v0, np.float64)
        self.hidden = np.zeros((num_nodes, batch, hidden0.shape[1]), np.float32)  # node-major
        self.hidden[0] = hidden0
        self.player = np.zeros((batch, num_nodes), np.int8)  # the side a node's value is for
        self.player[:, 0] = players
        self.anchor = np.zeros((batch, num_nodes))  # V of the closest choice node at or above
        self.anchor[:, 0] = self.root_value
        self.kind = np.zeros((batch, num_nodes), np.int8)
        self.choice_logits = np.zeros((batch, num_nodes, a_size), np.float32)  # p^k of identity nodes
        self.chance_logits = np.zeros((batch, num_nodes, a_size), np.float32)  # c^k of identity nodes
        self.node_value = np.zeros((batch, num_nodes))  # v^k of identity nodes
        self.network_calls = 1
        self.evaluations = np.ones(batch, np.int64)  # g + f per tree, h + f of the root included
        root_logits = np.full((batch, width), -np.inf, np.float32)
        root_logits[:, : layout.choice] = p0[:, : layout.choice]
        root_legal = np.zeros((batch, width), np.bool_)
        root_legal[:, : layout.choice] = legal
        self._root = Expansion(
            root_logits,
            self.root_value,
            root_legal,
            np.zeros(batch),
            np.ones(batch),
            np.zeros(batch, np.bool_),
            kind=np.zeros(batch, np.int8),
        )
        self._out = Expansion(
            np.zeros((batch, width), np.float32),
            np.zeros(batch),
            np.zeros((batch, width), np.bool_),
            np.zeros(batch),
            np.ones(batch),
            np.zeros(batch, np.bool_),
            kind=np.zeros(batch, np.int8),
        )
        out = self._out
        self._nodes = (self.kind, self.player, self.anchor)
        self._stored = (self.node_value, self.choice_logits, self.chance_logits)
        self._outs = (out.prior_logits, out.legal, out.value, out.kind, out.discount, out.reward)
        self._grow = tuple(np.zeros(batch, np.int64) for _ in range(4))  # tree, parent, action, node
        self._gather = np.zeros((batch, hidden0.shape[1]), np.float32)  # the identity nodes' parent states
        self._no_outputs = (  # what ndmz_expand reads when no identity node was reached
            np.zeros((0, hidden0.shape[1]), np.float32),
            np.zeros((0, NUM_IDENTITIES), np.float32),
            np.zeros((0, a_size), np.float32),
            np.zeros((0, a_size), np.float32),
            np.zeros(0, np.float32),
        )

    def initial(self) -> Expansion:
        return self._root

    def step(self, parent_node, action, new_node, active) -> Expansion:
        """Appendix A's EXPAND for the active trees: the nodes below identity nodes
        inherit, the others are identity nodes, expanded by one batched call of g then f
        (compiled bookkeeping around the call: :mod:`polyzero.search.kernels.ndmz_nodes`)."""
        out, grow = self._out, self._grow
        m = ndmz_inherit(
            active,
            parent_node,
            action,
            new_node,
            self.hidden,
            self._nodes,
            self._stored,
            self._outs,
            grow,
            self._gather,
        )
        outputs = self._no_outputs
        if m:
            hidden, ident, choice, chance, value, _ = self.inference.recurrent(self._gather[:m], grow[2][:m])
            self.network_calls += 1
            outputs = (hidden, ident, choice, chance, value)
        ndmz_expand(
            m, grow, outputs, self.hidden, self._nodes, self._stored, self._outs, self.evaluations, out.terminal
        )
        return out

    def node_hidden(self, b: int, node: int) -> np.ndarray:
        return self.hidden[node, b]


@dataclass
class NDMZSearchResult:
    tree: Tree
    root_prior: np.ndarray  # [B, C] after noise
    root_visits: np.ndarray  # int32 [B, C]
    root_q: np.ndarray  # [B, C], NaN where unvisited
    root_value: np.ndarray  # [B]
    root_raw_value: np.ndarray  # [B]
    model_calls: int  # batched network calls (initial inference included)
    network_evaluations: np.ndarray  # int [B]: g + f evaluations per tree (initial h + f included)
    backups: np.ndarray  # int [B]: iterations that backed up a value
    model: NDMZModel  # the hidden states, sides and kinds of the tree's nodes
    policy_target: np.ndarray | None = None
    action: np.ndarray | None = None


def ndmz_search(
    inference,
    obs: np.ndarray,
    legal: np.ndarray,
    players: np.ndarray,
    layout,
    num_simulations: int,
    c_puct: float,
    rng: np.random.Generator,
    dirichlet_alpha: float = 1.0,
    dirichlet_fraction: float = 0.0,
    hooks: SearchHooks | None = None,
) -> NDMZSearchResult:
    """Search B roots given as observations [B, ...], legal choice masks [B, C] and the
    players to move [B]. `inference` has ``initial(obs)`` and ``recurrent(hidden, actions)``
    as :class:`polyzero.nets.ndmz.NDMZInference`."""
    params = SearchParams(
        num_simulations=num_simulations,
        c_puct=c_puct,
        dirichlet_alpha=dirichlet_alpha,
        dirichlet_fraction=dirichlet_fraction,
    )
    model = NDMZModel(inference, obs, legal, players, layout, num_simulations + 1)
    tree, _, prior = start_tree(model, params, rng, add_noise=dirichlet_fraction > 0)
    simulate(model, params, tree, hooks)
    c_size = layout.choice
    backups = tree.visits[:, 0].astype(np.int64)
    root_value = np.where(backups > 0, tree.value[:, 0], model.root_value)
    return NDMZSearchResult(
        tree,
        prior[:, :c_size],
        tree.root_child_visits()[:, :c_size],
        tree.root_child_q()[:, :c_size],
        root_value,
        model.root_value.copy(),
        model.network_calls,
        model.evaluations,
        backups,
        model,
    )
