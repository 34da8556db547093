"""Nondeterministic MuZero's tree search (NDMZ paper, Section 3.3 and Appendix A).

Four kinds of node:
* choice nodes: a choice player (0 or 1) is to move. The root is one (its
  children are the legal actions of the real state, priors the masked choice
  policy); a non-root choice node is a child of an identity node along a player
  edge, inherits its hidden state and value, and its children are all of A with
  priors from the identity node's choice policy. A child is picked by pUCT,
  Q(w') + c_puct P(w') sqrt(sum_b N(b)) / (1 + N(w')), over its result nodes.
* identity nodes: children of choice and chance nodes. Expanding one is the
  only network call: r, s^k, i^k = g(s^(k-1), a); p^k, c^k, v^k = f(s^k). Its
  children are the players N = {0, 1, chance, terminal}, picked by roulette
  wheel in proportion to i^k.
* chance nodes: children of identity nodes along the chance edge; they inherit
  the hidden state and take the identity node's chance policy as priors over
  all of A; a child is picked by roulette wheel.
* terminal nodes: children of identity nodes along the terminal edge; no
  children.

One simulation is one iteration of Appendix A's loop: select from the root
until an unexpanded node is reached, expand it, and back up only if it is a
choice or a terminal node (so ``num_simulations`` counts iterations, many of
which expand an identity or chance node and back up nothing). Backup: from a
choice leaf, value v = V(leaf) for player e = E(leaf) (the identity edge into
it); from a terminal leaf, v and e are those of its closest choice ancestor.
Along the path every result node (an identity node whose parent is a choice
node j) gets W += v if E(j) = e, else W -= v, and N += 1; Q = W / N. The root's
E is the real player to move.

Trees are stored as arrays over B roots and searched together: each iteration
selects down all trees at once, one tree level per NumPy pass, backs up all
of them at once, and makes one batched network call for all the identity
nodes expanded in it. Ties in pUCT (all scores 0 before the first visit) go to
the larger prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..nets.ndmz import CHANCE, NUM_IDENTITIES, TERMINAL, ActionLayout
from .policy import masked_softmax, mix_dirichlet

KIND_CHOICE, KIND_IDENTITY, KIND_CHANCE, KIND_TERMINAL = 0, 1, 2, 3


def softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x = np.exp(x - x.max(axis=-1, keepdims=True))
    return x / x.sum(axis=-1, keepdims=True)


@dataclass
class NDMZTrees:
    """B trees of at most M nodes, W = max(|A|, |N|) child slots per node."""

    kind: np.ndarray  # int8 [B, M]
    parent: np.ndarray  # int32 [B, M]
    edge: np.ndarray  # int32 [B, M]: E(w), the edge into w (root: its player)
    children: np.ndarray  # int32 [B, M, W], -1: not created
    prior: np.ndarray  # float64 [B, M, W]: P of the children (identity nodes: i^k)
    value: np.ndarray  # float64 [B, M]: V(w) (identity and choice nodes)
    visits: np.ndarray  # int32 [B, M]: N(w)
    total: np.ndarray  # float64 [B, M]: W(w), meaningful for result nodes
    hidden: np.ndarray  # float32 [B, M, H]
    choice_prior: np.ndarray  # float64 [B, M, |A|]: softmax(p^k) at identity nodes
    chance_prior: np.ndarray  # float64 [B, M, |A|]: softmax(c^k) at identity nodes
    size: np.ndarray  # int32 [B]: nodes in use

    @classmethod
    def empty(cls, batch: int, nodes: int, actions: int, hidden: int) -> "NDMZTrees":
        width = max(actions, NUM_IDENTITIES)
        return cls(kind=np.zeros((batch, nodes), np.int8), parent=np.full((batch, nodes), -1, np.int32),
                   edge=np.full((batch, nodes), -1, np.int32),
                   children=np.full((batch, nodes, width), -1, np.int32),
                   prior=np.zeros((batch, nodes, width)), value=np.zeros((batch, nodes)),
                   visits=np.zeros((batch, nodes), np.int32), total=np.zeros((batch, nodes)),
                   hidden=np.zeros((batch, nodes, hidden), np.float32),
                   choice_prior=np.zeros((batch, nodes, actions)),
                   chance_prior=np.zeros((batch, nodes, actions)), size=np.ones(batch, np.int32))

    def add(self, b: int, parent: int, edge: int, kind: int) -> int:
        w = int(self.size[b])
        self.size[b] += 1
        self.kind[b, w] = kind
        self.parent[b, w] = parent
        self.edge[b, w] = edge
        self.children[b, parent, edge] = w
        return w

    def q(self, b: int, node: int) -> np.ndarray:
        """Q of the children of `node` (0 where unvisited or not created)."""
        kids = self.children[b, node]
        made = kids >= 0
        n = np.where(made, self.visits[b, np.where(made, kids, 0)], 0)
        w = np.where(made, self.total[b, np.where(made, kids, 0)], 0.0)
        return np.where(n > 0, w / np.maximum(n, 1), 0.0), n


@dataclass
class NDMZSearchResult:
    tree: NDMZTrees
    root_prior: np.ndarray  # [B, C] after noise
    root_visits: np.ndarray  # int32 [B, C]
    root_q: np.ndarray  # [B, C], NaN where unvisited
    root_value: np.ndarray  # [B]
    root_raw_value: np.ndarray  # [B]
    model_calls: int  # batched network calls (initial inference included)
    network_evaluations: np.ndarray  # int [B]: g + f evaluations per tree (initial h + f included)
    backups: np.ndarray  # int [B]: iterations that backed up a value
    policy_target: np.ndarray | None = None
    action: np.ndarray | None = None


def select_child_puct(trees: NDMZTrees, bs: np.ndarray, nodes: np.ndarray, c_puct: float) -> np.ndarray:
    """pUCT among the children of choice nodes `nodes` of trees `bs` (one each):
    Q + c_puct P sqrt(sum N) / (1 + N), Q = 0 where unvisited, ties to the larger prior."""
    kids = trees.children[bs, nodes]  # [M, W]
    made = kids >= 0
    safe = np.where(made, kids, 0)
    n = np.where(made, trees.visits[bs[:, None], safe], 0)
    q = np.where(n > 0, np.where(made, trees.total[bs[:, None], safe], 0.0) / np.maximum(n, 1), 0.0)
    prior = trees.prior[bs, nodes]
    score = q + c_puct * prior * np.sqrt(n.sum(1, keepdims=True)) / (1.0 + n) + 1e-9 * prior
    return np.argmax(np.where(prior > 0, score, -np.inf), axis=1)


def roulette(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A child of each row of priors [M, W], drawn in proportion to them."""
    c = np.cumsum(p, axis=1)
    u = rng.random(len(p)) * c[:, -1]
    return np.minimum((c <= u[:, None]).sum(1), p.shape[1] - 1)


def backup(trees: NDMZTrees, b, leaf) -> None:
    """Appendix A's BACKUP from choice or terminal leaves (one per tree in `b`)."""
    bs = np.atleast_1d(np.asarray(b, np.int64))
    n = np.atleast_1d(np.asarray(leaf, np.int64)).copy()
    # A terminal leaf takes v and e of its closest choice ancestor.
    up = trees.kind[bs, n] != KIND_CHOICE
    while up.any():
        n[up] = trees.parent[bs[up], n[up]]
        up = trees.kind[bs, n] != KIND_CHOICE
    e, v = trees.edge[bs, n], trees.value[bs, n]
    w = np.atleast_1d(np.asarray(leaf, np.int64)).copy()
    on = w >= 0
    while on.any():
        b_, w_ = bs[on], w[on]
        j = trees.parent[b_, w_]
        result = (j >= 0) & (trees.kind[b_, w_] == KIND_IDENTITY) & (trees.kind[b_, np.maximum(j, 0)] == KIND_CHOICE)
        mine = trees.edge[b_, np.maximum(j, 0)] == e[on]
        trees.total[b_, w_] += np.where(result, np.where(mine, v[on], -v[on]), 0.0)
        trees.visits[b_, w_] += 1
        w[on] = j
        on = w >= 0


def expand_by_inheritance(trees: NDMZTrees, bs: np.ndarray, ws: np.ndarray) -> None:
    """Children of identity nodes: choice, chance or terminal by their edge (Appendix A, EXPAND)."""
    j = trees.parent[bs, ws]
    e = trees.edge[bs, ws]
    trees.hidden[bs, ws] = trees.hidden[bs, j]
    chance, terminal = e == CHANCE, e == TERMINAL
    choice = ~chance & ~terminal
    trees.kind[bs, ws] = np.where(chance, KIND_CHANCE, np.where(terminal, KIND_TERMINAL, KIND_CHOICE))
    a = trees.chance_prior.shape[2]
    trees.prior[bs[chance], ws[chance], :a] = trees.chance_prior[bs[chance], j[chance]]
    trees.prior[bs[choice], ws[choice], :a] = trees.choice_prior[bs[choice], j[choice]]
    trees.value[bs[choice], ws[choice]] = trees.value[bs[choice], j[choice]]


def ndmz_search(inference, obs: np.ndarray, legal: np.ndarray, players: np.ndarray,
                layout: ActionLayout, num_simulations: int, c_puct: float, rng: np.random.Generator,
                dirichlet_alpha: float = 0.0, dirichlet_fraction: float = 0.0) -> NDMZSearchResult:
    """Search B roots given as observations [B, ...], legal choice masks [B, C] and the
    players to move [B]. `inference` has ``initial(obs)`` and ``recurrent(hidden, actions)``
    as :class:`polyzero.nets.ndmz.NDMZInference`."""
    batch = obs.shape[0]
    a_size, c_size = layout.size, layout.choice
    hidden0, p0, _, v0 = inference.initial(obs)
    trees = NDMZTrees.empty(batch, num_simulations + 1, a_size, hidden0.shape[1])
    trees.hidden[:, 0] = hidden0
    trees.value[:, 0] = v0
    trees.kind[:, 0] = KIND_CHOICE
    trees.edge[:, 0] = players
    root_prior = masked_softmax(p0[:, :c_size], legal)
    if dirichlet_fraction > 0:
        root_prior = mix_dirichlet(root_prior, legal, dirichlet_alpha, dirichlet_fraction, rng)
    trees.prior[:, 0, :c_size] = root_prior
    model_calls = 1
    evaluations = np.ones(batch, np.int64)
    backups = np.zeros(batch, np.int64)
    every = np.arange(batch)
    for _ in range(num_simulations):
        # Select down every tree at once, one level per pass, until each creates a node
        # or stands on an expanded terminal node (a leaf again).
        node = np.zeros(batch, np.int64)
        leaf = np.full(batch, -1, np.int64)
        new = np.zeros(batch, np.bool_)
        live = every
        while len(live):
            at = node[live]
            kind = trees.kind[live, at]
            done = kind == KIND_TERMINAL
            leaf[live[done]] = at[done]
            live, at, kind = live[~done], at[~done], kind[~done]
            if not len(live):
                break
            a = np.empty(len(live), np.int64)
            choice = kind == KIND_CHOICE
            if choice.any():
                a[choice] = select_child_puct(trees, live[choice], at[choice], c_puct)
            if (~choice).any():  # identity or chance: roulette wheel on the priors
                a[~choice] = roulette(trees.prior[live[~choice], at[~choice]], rng)
            child = trees.children[live, at, a].astype(np.int64)
            make = child < 0
            bs = live[make]
            ws = trees.size[bs].astype(np.int64)
            trees.size[bs] += 1
            trees.kind[bs, ws] = KIND_IDENTITY
            trees.parent[bs, ws] = at[make]
            trees.edge[bs, ws] = a[make]
            trees.children[bs, at[make], a[make]] = ws
            inherit = kind[make] == KIND_IDENTITY
            expand_by_inheritance(trees, bs[inherit], ws[inherit])
            leaf[bs], new[bs] = ws, True
            node[live[~make]] = child[~make]
            live = live[~make]
        # Back up from choice and terminal leaves; new identity nodes wait for g and f.
        kinds = trees.kind[every, leaf]
        backs = (kinds == KIND_CHOICE) | (kinds == KIND_TERMINAL)
        backup(trees, every[backs], leaf[backs])
        backups += backs
        pending = new & (kinds == KIND_IDENTITY)
        if pending.any():
            bs, ws = every[pending], leaf[pending]
            parents = trees.parent[bs, ws]
            hidden, ident, p, c, v, _ = inference.recurrent(trees.hidden[bs, parents], trees.edge[bs, ws])
            model_calls += 1
            evaluations[bs] += 1
            trees.hidden[bs, ws] = hidden
            trees.value[bs, ws] = v
            trees.prior[bs, ws, :NUM_IDENTITIES] = softmax(ident)
            trees.choice_prior[bs, ws] = softmax(p)
            trees.chance_prior[bs, ws] = softmax(c)
    root_visits = np.zeros((batch, c_size), np.int32)
    root_q = np.full((batch, c_size), np.nan)
    for b in range(batch):
        q, n = trees.q(b, 0)
        root_visits[b] = n[:c_size]
        root_q[b] = np.where(n[:c_size] > 0, q[:c_size], np.nan)
    n_total = root_visits.sum(1)
    weighted = np.nansum(np.nan_to_num(root_q) * root_visits, axis=1)
    root_value = np.where(n_total > 0, weighted / np.maximum(n_total, 1), v0)
    return NDMZSearchResult(trees, root_prior, root_visits, root_q, root_value, v0.astype(np.float64),
                            model_calls, evaluations, backups)
