"""Search math against hand-computed cases, and invariants of the batched search."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from polyzero.search import kernels
from polyzero.search.mcts import Expansion, run_search
from polyzero.search.params import SearchParams
from polyzero.search.policy import choose_actions, masked_softmax, mix_dirichlet, visit_policy
from polyzero.search.tree import DECISION, TERMINAL, Tree


def _root_with_children():
    """Root (value 0.1) with prior (0.5, 0.3, 0.2): child 0 visited twice with value
    0.2, child 1 once with value -0.6, child 2 unvisited; the opponent moves at the
    children (discount -1), so Q = (-0.2, 0.6, -). Root visits = 1 + 3."""
    t = Tree.allocate(1, 4, 3)
    t.prior[0, 0] = [0.5, 0.3, 0.2]
    t.legal[0, 0] = True
    t.value[0, 0] = 0.1
    t.visits[0, 0] = 4
    for node, (a, v, n) in enumerate([(0, 0.2, 2), (1, -0.6, 1)], start=1):
        t.children[0, 0, a] = node
        t.parent[0, node] = 0
        t.value[0, node] = v
        t.visits[0, node] = n
        t.discount[0, node] = -1.0
    t.num_nodes[0] = 3
    t.q_min[0], t.q_max[0] = -0.2, 0.6
    return t


def _scores(t, selection, norm, unvisited, c_puct=1.0, c1=1.25, c2=19652.0):
    p = SearchParams(selection=selection, q_normalisation=norm, unvisited_q=unvisited, c_puct=c_puct, c1=c1, c2=c2)
    return kernels.action_scores(kernels.pack(t), tuple(p.rules()), 0, 0)


def test_alphazero_rule_with_bounds():
    # Q + c_puct P sqrt(N) / (1 + N(a)); Q in [-1, 1] mapped to [0, 1]; unvisited Q = 0 -> 0.5.
    s = _scores(_root_with_children(), "alphazero", "bounds", "zero", c_puct=1.0)
    expected = [0.4 + 0.5 * 2 / 3, 0.8 + 0.3 * 2 / 2, 0.5 + 0.2 * 2 / 1]
    np.testing.assert_allclose(s, expected, rtol=1e-7)


def test_muzero_rule_with_parent_and_siblings():
    # Eq. 2 factor: sqrt(4) * (1.25 + log((4 + 19652 + 1) / 19652)); range [-0.2, 0.6].
    coef = 2 * (1.25 + math.log(19657 / 19652))
    s = _scores(_root_with_children(), "muzero", "parent_siblings", "min")
    expected = [0.0 + coef * 0.5 / 3, 1.0 + coef * 0.3 / 2, 0.0 + coef * 0.2 / 1]
    np.testing.assert_allclose(s, expected, rtol=1e-7)


def test_minmax_normalisation_uses_tree_statistics():
    t = _root_with_children()
    t.q_min[0], t.q_max[0] = -1.0, 0.6  # a deeper edge once backed up -1
    s = _scores(t, "alphazero", "minmax", "parent")
    span = 1.6
    expected = [(-0.2 + 1) / span + 0.5 * 2 / 3, (0.6 + 1) / span + 0.3 * 2 / 2, (0.1 + 1) / span + 0.2 * 2 / 1]
    np.testing.assert_allclose(s, expected, rtol=1e-7)


def test_illegal_actions_score_minus_infinity():
    t = _root_with_children()
    t.legal[0, 0, 1] = False
    s = _scores(t, "alphazero", "bounds", "zero")
    assert s[1] == -np.inf and np.isfinite(s[[0, 2]]).all()


def _chain_tree(rewards, discounts):
    """A path root -> 1 -> 2 -> ... with the given edge rewards and discounts."""
    n = len(rewards) + 1
    t = Tree.allocate(1, n + 1, 2)
    t.visits[0, 0] = 1
    t.legal[0, :, :] = True
    for node in range(1, n):
        t.children[0, node - 1, 0] = node
        t.parent[0, node] = node - 1
        t.action[0, node] = 0
        t.depth[0, node] = node
        t.visits[0, node] = 1
        t.reward[0, node] = rewards[node - 1]
        t.discount[0, node] = discounts[node - 1]
    t.num_nodes[0] = n
    return t


def _leaf(t, node, action, kind):
    """One tree's one leaf, as the selection kernel would hand it on."""
    leaves = kernels.make_leaves(1)
    leaves.node[0, 0], leaves.action[0, 0], leaves.kind[0, 0] = node, action, kind
    leaves.new_node[0, 0], leaves.count[0] = t.num_nodes[0], 1
    return tuple(leaves)


def _backup(t, leaves, logits, legal, value, reward, discount, terminal):
    kind = np.where(terminal, TERMINAL, DECISION).astype(np.int8)
    kernels.expand_and_backup(
        kernels.pack(t), tuple(SearchParams().rules()), leaves, (logits, legal, value, reward, discount, kind), 1, False
    )


def test_backup_with_rewards_and_discount():
    """MuZero Eq. 3-4: G_k = sum_tau gamma^tau r_{k+1+tau} + gamma^(l-k) v_l."""
    gamma = 0.9
    t = _chain_tree([1.0, 2.0], [gamma, gamma])  # root -> 1 -> 2; expand a child of node 2
    leaf = _leaf(t, 2, 1, kernels.NEW_LEAF)
    prior = np.full((1, 2), 0.5, np.float32)
    _backup(
        t, leaf, prior, np.ones((1, 2), bool), np.array([10.0]), np.array([3.0]), np.array([gamma]), np.array([False])
    )
    g3 = 10.0
    g2 = 3.0 + gamma * g3
    g1 = 2.0 + gamma * g2
    g0 = 1.0 + gamma * g1
    assert t.num_nodes[0] == 4 and t.children[0, 2, 1] == 3 and t.depth[0, 3] == 3
    # Each node held one visit with value 0, so its mean becomes G / 2.
    np.testing.assert_allclose(t.value[0, :4], [g0 / 2, g1 / 2, g2 / 2, g3], rtol=1e-12)
    np.testing.assert_array_equal(t.visits[0, :4], [2, 2, 2, 1])
    assert t.q_min[0] == pytest.approx(min(2.0 + gamma * g2 / 2, 3.0 + gamma * g3, 1.0 + gamma * g1 / 2))


def test_two_player_backup_flips_sign_and_terminal_reward():
    # Root player wins by moving into a terminal node: reward +1, terminal value 0.
    t = _chain_tree([], [])
    leaf = _leaf(t, 0, 1, kernels.NEW_LEAF)
    _backup(
        t,
        leaf,
        np.zeros((1, 2), np.float32),
        np.zeros((1, 2), bool),
        np.array([0.7]),
        np.array([1.0]),
        np.array([-1.0]),
        np.array([True]),
    )
    assert t.value[0, 1] == 0.0 and t.terminal[0, 1]
    assert t.value[0, 0] == pytest.approx(0.5)  # (0 + 1) / 2
    # Revisiting the terminal node backs up its reward again.
    _backup(
        t,
        _leaf(t, 1, -1, kernels.TERMINAL_LEAF),
        np.zeros((1, 2), np.float32),
        np.zeros((1, 2), bool),
        np.zeros(1),
        np.zeros(1),
        np.zeros(1),
        np.zeros(1, bool),
    )
    assert t.visits[0, 1] == 2 and t.value[0, 0] == pytest.approx(2 / 3)


def test_dirichlet_mixing_matches_formula():
    prior = np.array([[0.5, 0.0, 0.5, 0.0]], np.float32)
    legal = np.array([[True, False, True, True]])
    mixed = mix_dirichlet(prior, legal, alpha=0.3, fraction=0.25, rng=np.random.default_rng(7))
    d = np.random.default_rng(7).dirichlet(np.full(3, 0.3))
    np.testing.assert_allclose(mixed[0, [0, 2, 3]], 0.75 * prior[0, [0, 2, 3]] + 0.25 * d, rtol=1e-6)
    assert mixed[0, 1] == 0 and mixed.sum() == pytest.approx(1.0)


def test_visit_policy_temperature():
    v = np.array([[1, 2, 3, 0]])
    np.testing.assert_allclose(visit_policy(v, 1.0), [[1 / 6, 2 / 6, 3 / 6, 0]], rtol=1e-6)
    np.testing.assert_allclose(visit_policy(v, 0.5), [[1 / 14, 4 / 14, 9 / 14, 0]], rtol=1e-6)
    np.testing.assert_allclose(visit_policy(np.array([[3, 1, 3]]), 0.0), [[0.5, 0, 0.5]])
    np.testing.assert_allclose(visit_policy(np.array([[1000, 999]]), 0.01).sum(), 1.0)


def test_choose_actions_samples_only_when_asked():
    rng = np.random.default_rng(0)
    visits = np.array([[1, 5, 4]] * 2000)
    sample = np.arange(2000) < 1000
    acts = choose_actions(visits, sample, 1.0, rng)
    assert (acts[1000:] == 1).all()
    freq = np.bincount(acts[:1000], minlength=3) / 1000
    np.testing.assert_allclose(freq, [0.1, 0.5, 0.4], atol=0.05)


def test_masked_softmax():
    p = masked_softmax(
        np.array([[0.0, 1.0, 2.0], [5, 5, 5]], np.float32), np.array([[True, False, True], [False, False, False]])
    )
    np.testing.assert_allclose(p[0], [1 / (1 + math.e**2), 0, math.e**2 / (1 + math.e**2)], rtol=1e-6)
    assert (p[1] == 0).all()


class RandomTreeModel:
    """A synthetic game: random priors, values, legal masks and terminals per node,
    fixed by a seed; every batch element has its own legal masks."""

    def __init__(self, batch, num_actions, seed, terminal_prob=0.15, discount=-1.0):
        self.num_actions = num_actions
        self.batch = batch
        self.rng = np.random.default_rng(seed)
        self.terminal_prob = terminal_prob
        self.disc = discount
        self.selected = []  # (b, parent, action, legal mask of the parent) for checks
        self.legal_of = {}

    def _expansion(self, active):
        b, a = self.batch, self.num_actions
        legal = self.rng.random((b, a)) < 0.6
        legal[np.arange(b), self.rng.integers(0, a, b)] = True
        return Expansion(
            self.rng.normal(size=(b, a)).astype(np.float32),
            self.rng.uniform(-1, 1, b),
            legal,
            np.zeros(b),
            np.full(b, self.disc),
            (self.rng.random(b) < self.terminal_prob) & active,
        )

    def initial(self):
        e = self._expansion(np.zeros(self.batch, bool))
        for b in range(self.batch):
            self.legal_of[(b, 0)] = e.legal[b].copy()
        return e

    def step(self, parent_node, action, new_node, active):
        e = self._expansion(active)
        for b in np.flatnonzero(active):
            self.selected.append((b, int(parent_node[b]), int(action[b])))
            self.legal_of[(b, int(new_node[b]))] = e.legal[b].copy()
        return e


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 6),
    actions=st.integers(1, 9),
    sims=st.integers(1, 40),
    seed=st.integers(0, 10_000),
    selection=st.sampled_from(["alphazero", "muzero"]),
    norm=st.sampled_from(["bounds", "minmax", "parent_siblings"]),
    unvisited=st.sampled_from(["min", "zero", "parent"]),
    noise=st.booleans(),
)
def test_search_invariants(batch, actions, sims, seed, selection, norm, unvisited, noise):
    model = RandomTreeModel(batch, actions, seed)
    params = SearchParams(num_simulations=sims, selection=selection, q_normalisation=norm, unvisited_q=unvisited)
    res = run_search(model, params, np.random.default_rng(seed), add_noise=noise)
    # Root children's visits sum to exactly the number of simulations.
    np.testing.assert_array_equal(res.root_visits.sum(axis=1), sims)
    # Illegal actions are never selected, at the root or below (mixed masks in one batch).
    for b, parent, a in model.selected:
        assert model.legal_of[(b, parent)][a]
    for b in range(batch):
        assert (res.root_visits[b][~model.legal_of[(b, 0)]] == 0).all()
    # Each node's visits = 1 + its children's visits (terminal nodes: its revisits).
    t = res.tree
    for b in range(batch):
        for n in range(t.num_nodes[b]):
            kids = t.children[b, n][t.children[b, n] >= 0]
            if not t.terminal[b, n]:
                assert t.visits[b, n] == 1 + t.visits[b, kids].sum()
    assert np.all(np.abs(res.root_value) <= 1.0 + 1e-9)
