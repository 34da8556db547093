"""MuZero-mode search over a learned model (polyzero.search.learned)."""

import numpy as np
import pytest

from polyzero.search.learned import LearnedModel
from polyzero.search.mcts import run_search
from polyzero.search.params import SearchParams

B, A, H = 5, 4, 3


def _toy_recurrent(hidden, action):
    """h' = 0.5 h + (a + 1) (a deterministic, action-dependent map); prior logits
    and value read off h' so the tree differs per action."""
    h2 = 0.5 * hidden + (action[:, None] + 1.0)
    reward = 0.01 * action.astype(np.float64)
    logits = np.tile(np.arange(A, dtype=np.float32), (len(action), 1)) * 0.1 + h2[:, :1]
    value = np.tanh(h2[:, 1] - 2.0)
    return reward, logits.astype(np.float32), value, h2


def _roots(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, A)).astype(np.float32), rng.uniform(-1, 1, B),
            rng.standard_normal((B, H)))


def _params(n, **kw):
    return SearchParams(num_simulations=n, selection="muzero", q_normalisation="minmax",
                        unvisited_q="min", **kw)


@pytest.mark.parametrize("num_nodes", [None, 17])
def test_root_visits_sum_to_simulations(num_nodes):
    logits, value, hidden = _roots()
    model = LearnedModel(logits, value, hidden, _toy_recurrent, discount=-1.0,
                         num_nodes=num_nodes)
    res = run_search(model, _params(16), np.random.default_rng(0))
    assert (res.root_visits.sum(axis=1) == 16).all()
    assert (res.tree.num_nodes == 17).all()
    assert model.recurrent_calls == 16
    assert res.model_calls == 17


def test_root_masking_only_at_root():
    logits, value, hidden = _roots(1)
    legal = np.ones((B, A), bool)
    legal[:, 0] = False
    legal[0, 1:3] = False  # tree 0 may only play action 3 at the root
    model = LearnedModel(logits, value, hidden, _toy_recurrent, discount=-1.0, root_legal=legal)
    res = run_search(model, _params(40), np.random.default_rng(0))
    assert (res.root_visits[:, 0] == 0).all()
    assert res.root_visits[0, 3] == 40
    assert (res.root_prior[~legal] == 0).all()
    t = res.tree
    # inside the tree every action is legal, including action 0
    for b in range(B):
        used = np.arange(1, t.num_nodes[b])
        assert t.legal[b, used].all()
        assert not t.terminal[b, : t.num_nodes[b]].any()
    inner_zero = [(t.action[b, 1:t.num_nodes[b]][t.depth[b, 1:t.num_nodes[b]] >= 2] == 0).any()
                  for b in range(B)]
    assert any(inner_zero), "action 0 (illegal at the root) is never taken below it"


@pytest.mark.parametrize("discount", [-1.0, 0.97])
def test_hidden_state_is_recurrent_fn_of_parent(discount):
    logits, value, hidden = _roots(2)
    model = LearnedModel(logits, value, hidden, _toy_recurrent, discount=discount)
    res = run_search(model, _params(30), np.random.default_rng(0))
    t = res.tree
    for b in range(B):
        np.testing.assert_array_equal(model.node_hidden(b, 0), hidden[b])
        for n in range(1, t.num_nodes[b]):
            p, a = t.parent[b, n], t.action[b, n]
            r, lg, v, h2 = _toy_recurrent(model.node_hidden(b, p)[None], np.array([a]))
            np.testing.assert_allclose(model.node_hidden(b, n), h2[0])
            assert t.reward[b, n] == pytest.approx(r[0])
            assert t.discount[b, n] == discount
            assert t.raw_value[b, n] == pytest.approx(v[0])


def test_store_grows_when_unsized():
    logits, value, hidden = _roots(3)
    model = LearnedModel(logits, value, hidden, _toy_recurrent, num_nodes=2)
    res = run_search(model, _params(20), np.random.default_rng(0))
    assert model.hidden.shape[1] >= 21
    np.testing.assert_array_equal(model.hidden[:, 0], hidden)
    assert (res.root_visits.sum(axis=1) == 20).all()


def test_root_action_hook_with_inactive_rows_is_handled():
    """A custom root hook could leave some trees without a new leaf only if a
    terminal were reached; the model still copes with a partial `active`."""
    logits, value, hidden = _roots(4)
    model = LearnedModel(logits, value, hidden, _toy_recurrent, num_nodes=4)
    model.initial()
    active = np.array([True, False, True, False, True])
    parent = np.zeros(B, np.int32)
    action = np.array([1, 0, 2, 0, 3], np.int32)
    new = np.ones(B, np.int32)
    exp = model.step(parent, action, new, active)
    r, lg, v, h2 = _toy_recurrent(hidden[active], action[active])
    np.testing.assert_allclose(model.hidden[active, 1], h2)
    np.testing.assert_allclose(exp.value[active], v)
    assert exp.legal.all() and not exp.terminal.any()
