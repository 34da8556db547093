"""MuZero-mode search over a learned model (polyzero.search.learned)."""

import numpy as np
import pytest

from polyzero.errors import UsageError
from polyzero.search import kernels
from polyzero.search.learned import LearnedModel
from polyzero.search.mcts import run_search, search
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
    return (rng.standard_normal((B, A)).astype(np.float32), rng.uniform(-1, 1, B), rng.standard_normal((B, H)))


def _params(n, **kw):
    return SearchParams(num_simulations=n, selection="muzero", q_normalisation="minmax", unvisited_q="min", **kw)


@pytest.mark.parametrize("num_nodes", [None, 17])
def test_root_visits_sum_to_simulations(num_nodes):
    logits, value, hidden = _roots()
    model = LearnedModel(logits, value, hidden, _toy_recurrent, discount=-1.0, num_nodes=num_nodes)
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
    inner_zero = [(t.action[b, 1 : t.num_nodes[b]][t.depth[b, 1 : t.num_nodes[b]] >= 2] == 0).any() for b in range(B)]
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
    assert model.hidden.shape[0] >= 21  # node-major [N, B, H]
    np.testing.assert_array_equal(model.hidden[0], hidden)
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
    np.testing.assert_allclose(model.hidden[1, active], h2)
    np.testing.assert_allclose(exp.value[active], v)
    assert exp.legal.all() and not exp.terminal.any()


@pytest.mark.parametrize("kind", ["puct", "gumbel", "full_gumbel"])
def test_parallel_tree_kernels_match_serial(kind, monkeypatch):
    """The kernels' parallel twins (trees split into ranges, one per numba
    thread) build exactly the trees the serial kernels build; 3 ranges of uneven
    size whatever the machine's thread count."""
    rng = np.random.default_rng(3)
    batch, a, h = 70, 4, 3
    roots = (
        rng.standard_normal((batch, a)).astype(np.float32),
        rng.uniform(-1, 1, batch),
        rng.standard_normal((batch, h)),
    )
    params = SearchParams(
        num_simulations=24, kind=kind, selection="muzero", q_normalisation="minmax", unvisited_q="min"
    )
    results = []
    for chunks in (1, 3):
        monkeypatch.setattr(kernels, "tree_chunks", lambda _batch, c=chunks: c)
        model = LearnedModel(*roots, _toy_recurrent, discount=-1.0)
        results.append(search(model, params, np.random.default_rng(0), add_noise=True))
    serial, parallel = results
    for field in ("children", "visits", "value", "prior", "parent", "num_nodes", "q_min", "q_max"):
        np.testing.assert_array_equal(getattr(serial.tree, field), getattr(parallel.tree, field), err_msg=field)
    assert serial.tree.depth.max() >= 3  # deep enough that the walks differ per tree
    if kind != "puct":
        np.testing.assert_array_equal(serial.action, parallel.action)
        np.testing.assert_array_equal(serial.policy_target, parallel.policy_target)


def test_step_stores_new_states_when_trees_differ_in_size():
    """After a step with inactive rows the trees hold different node counts, so
    the next step's new nodes differ per tree and take the scattered write."""
    logits, value, hidden = _roots(5)
    model = LearnedModel(logits, value, hidden, _toy_recurrent, num_nodes=3)
    active = np.array([True, False, True, False, True])
    model.step(np.zeros(B, np.int32), np.ones(B, np.int32), np.ones(B, np.int32), active)
    new = np.where(active, 2, 1).astype(np.int32)
    action = np.arange(B, dtype=np.int32) % A
    model.step(np.zeros(B, np.int32), action, new, np.ones(B, bool))
    h2 = _toy_recurrent(hidden, action)[3]
    for b in range(B):
        np.testing.assert_allclose(model.node_hidden(b, new[b]), h2[b])


def test_search_reuses_a_given_store_and_matches_a_fresh_one():
    logits, value, hidden = _roots(6)
    first = LearnedModel(logits, value, hidden, _toy_recurrent, num_nodes=17)
    fresh = run_search(first, _params(16), np.random.default_rng(0))
    again = LearnedModel(logits, value, hidden, _toy_recurrent, num_nodes=17, store=first.hidden)
    reused = run_search(again, _params(16), np.random.default_rng(0))
    assert np.shares_memory(again.hidden, first.hidden)
    np.testing.assert_array_equal(fresh.root_visits, reused.root_visits)
    np.testing.assert_array_equal(fresh.tree.value, reused.tree.value)
    small = LearnedModel(logits, value, hidden, _toy_recurrent, num_nodes=33, store=first.hidden)
    assert small.hidden.shape[0] == 33 and not np.shares_memory(small.hidden, first.hidden)


def test_parallel_tree_kernels_only_on_free_cores(monkeypatch):
    """The kernels' thread choice (kernels.tree_chunks): parallel ranges of >= 32 trees,
    no more of them than the cores other processes leave free, unless the setting
    says always or never."""
    monkeypatch.delenv(kernels.PARALLEL_TREES_ENV, raising=False)
    assert kernels.tree_chunks(256, threads=2, load=0.2, cores=2) == 2
    assert kernels.tree_chunks(256, threads=2, load=1.0, cores=2) == 2  # the search's own thread
    assert kernels.tree_chunks(256, threads=2, load=2.5, cores=2) == 1  # another job on a core
    assert kernels.tree_chunks(256, threads=2, load=6.0, cores=2) == 1  # oversubscribed
    assert kernels.tree_chunks(256, threads=4, load=2.0, cores=4) == 3
    assert kernels.tree_chunks(40, threads=2, load=0.0, cores=2) == 1  # too few trees per range
    assert kernels.tree_chunks(96, threads=8, load=0.0, cores=8) == 3
    monkeypatch.setenv(kernels.PARALLEL_TREES_ENV, "always")
    assert kernels.tree_chunks(256, threads=2, load=6.0, cores=2) == 2
    monkeypatch.setenv(kernels.PARALLEL_TREES_ENV, "never")
    assert kernels.tree_chunks(256, threads=2, load=0.0, cores=2) == 1
    monkeypatch.setenv(kernels.PARALLEL_TREES_ENV, "sometimes")
    with pytest.raises(UsageError, match="POLYZERO_PARALLEL_TREES must be auto, always or never"):
        kernels.tree_chunks(256, threads=2, load=0.0, cores=2)
