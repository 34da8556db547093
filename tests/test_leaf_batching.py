"""One-game search at engine speed: the sequential search pinned to the engine before
leaf batching came, leaf batching in one tree with virtual loss, the clock, and the
API engines call (SearchPlayer.search)."""

import time

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.algos.player import SearchPlayer, principal_variation
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.search.learned import LearnedModel
from polyzero.search.mcts import Expansion, SearchHooks, run_search, search
from polyzero.search.params import SearchParams
from polyzero.search.policy import select_moves
from polyzero.search.tree import PENDING
from test_learned_search import _roots, _toy_recurrent
from test_search import RandomTreeModel

# Root visits of sequential searches recorded from the engine before leaf batching and
# the packed kernels (RandomTreeModel(4, 5, 7), rng 3; LearnedModel on _roots(2), rng 4;
# 30 simulations, noise on): leaf_batch = 1 must still build exactly these trees.
_BEFORE = {
    ("puct", "alphazero", "bounds", "zero"): (
        [[0, 0, 23, 3, 4], [0, 18, 0, 0, 12], [1, 7, 12, 5, 5], [30, 0, 0, 0, 0]],
        [[19, 1, 9, 1], [12, 9, 1, 8], [8, 6, 15, 1], [7, 7, 15, 1], [12, 7, 8, 3]],
        [-0.080790153025, -0.019525089675, 0.075652503444, 0.061270962608, 0.029327908546],
    ),
    ("puct", "muzero", "parent_siblings", "min"): (
        [[0, 0, 22, 7, 1], [0, 28, 0, 0, 2], [0, 0, 29, 1, 0], [30, 0, 0, 0, 0]],
        [[28, 1, 1, 0], [16, 13, 0, 1], [14, 1, 15, 0], [0, 0, 29, 1], [15, 0, 14, 1]],
        [-0.066528909967, -0.099797784275, -0.017655476338, 0.033188910643, -0.116902126403],
    ),
    ("full_gumbel", "alphazero", "bounds", "zero"): (
        [[0, 0, 5, 13, 12], [0, 15, 0, 0, 15], [2, 12, 12, 2, 2], [30, 0, 0, 0, 0]],
        [[12, 12, 3, 3]] * 5,
        [0.21845882372, 0.227223831579, 0.259850772913, 0.267280847344, 0.205688800521],
    ),
}


@pytest.mark.parametrize("key", list(_BEFORE))
def test_leaf_batch_one_is_the_search_before_leaf_batching(key):
    kind, selection, norm, unvisited = key
    params = SearchParams(
        num_simulations=30,
        kind=kind,
        selection=selection,
        q_normalisation=norm,
        unvisited_q=unvisited,
        gumbel_q_normalisation="completed_minmax" if norm == "parent_siblings" else "bounds",
    )
    random_visits, learned_visits, learned_value = _BEFORE[key]
    r = search(RandomTreeModel(4, 5, 7), params, np.random.default_rng(3), add_noise=True)
    assert r.root_visits.tolist() == random_visits
    model = LearnedModel(*_roots(2), _toy_recurrent, discount=-1.0)
    r = search(model, params, np.random.default_rng(4), add_noise=True)
    assert r.root_visits.tolist() == learned_visits
    np.testing.assert_allclose(r.root_value, learned_value, rtol=0, atol=1e-11)


class HashedGame:
    """A synthetic game whose every node (prior, legal mask, value, terminal) is a fixed
    function of its tree and action path, so that searches visiting nodes in different
    orders (sequential or leaf-batched) search the same game. Has `step_leaves`."""

    def __init__(self, batch, num_actions, seed, terminal_prob=0.15):
        self.num_actions, self.batch, self.seed, self.terminal_prob = num_actions, batch, seed, terminal_prob
        self.paths = [[()] for _ in range(batch)]
        self.selected = []  # (b, parent, action)
        self.legal_of = {}
        self.leaves_per_call = []

    def _node(self, b, path):
        rng = np.random.default_rng([self.seed, b, len(path), *path])
        legal = rng.random(self.num_actions) < 0.6
        legal[rng.integers(self.num_actions)] = True
        return (
            rng.normal(size=self.num_actions).astype(np.float32),
            rng.uniform(-1, 1),
            legal,
            bool(path) and rng.random() < self.terminal_prob,
        )

    def _rows(self, nodes):
        m, a = len(nodes), self.num_actions
        out = Expansion(
            np.zeros((m, a), np.float32),
            np.zeros(m),
            np.zeros((m, a), bool),
            np.zeros(m),
            np.full(m, -1.0),
            np.zeros(m, bool),
        )
        for r, (b, node) in enumerate(nodes):
            out.prior_logits[r], out.value[r], out.legal[r], out.terminal[r] = self._node(b, self.paths[b][node])
            self.legal_of[(b, node)] = out.legal[r]
        return out

    def initial(self):
        return self._rows([(b, 0) for b in range(self.batch)])

    def _grow(self, b, parent, action, new_node):
        assert len(self.paths[b]) == new_node
        self.selected.append((b, int(parent), int(action)))
        self.paths[b].append(self.paths[b][parent] + (int(action),))
        return b, int(new_node)

    def step(self, parent_node, action, new_node, active):
        nodes = [(b, 0) for b in range(self.batch)]
        for b in np.flatnonzero(active):
            nodes[b] = self._grow(b, parent_node[b], action[b], new_node[b])
        return self._rows(nodes)

    def step_leaves(self, tree, parent_node, action, new_node):
        self.leaves_per_call.append(len(tree))
        return self._rows([self._grow(b, p, a, n) for b, p, a, n in zip(tree, parent_node, action, new_node)])


@pytest.mark.parametrize("leaf_batch", [2, 8, 32])
def test_leaf_batched_trees_are_whole(leaf_batch):
    """With leaf batching: root visits sum to n, illegal actions are never taken, each
    node's visits are 1 + its children's, no virtual loss or pending node is left, and
    no call evaluates more than k leaves of a tree."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        batch, a, n = int(rng.integers(1, 4)), int(rng.integers(2, 7)), int(rng.integers(1, 80))
        model = HashedGame(batch, a, seed)
        params = SearchParams(
            num_simulations=n,
            leaf_batch=leaf_batch,
            selection="muzero",
            q_normalisation=("bounds", "minmax", "parent_siblings")[seed % 3],
            unvisited_q="min",
        )
        res = run_search(model, params, rng, add_noise=bool(seed % 2))
        t = res.tree
        np.testing.assert_array_equal(res.root_visits.sum(axis=1), n)
        assert (t.virtual == 0).all() and not (t.kind == PENDING).any()
        for b, parent, act in model.selected:
            assert model.legal_of[(b, parent)][act]
        for b in range(batch):
            for node in range(t.num_nodes[b]):
                kids = t.children[b, node][t.children[b, node] >= 0]
                if not t.terminal[b, node]:
                    assert t.visits[b, node] == 1 + t.visits[b, kids].sum()
        assert max(model.leaves_per_call, default=0) <= batch * leaf_batch
        assert res.model_calls == 1 + len(model.leaves_per_call)


def test_leaf_batches_fill_the_network_calls_and_follow_the_sequential_search():
    """800 simulations of one tree at k = 16 take at most 60 network calls (50 if every
    call were full; the first descents of a fresh tree collide), and the visits stay near
    the sequential search's: a total variation of at most 0.08 on average (0.033 when
    written; bounds normalisation) and the same most visited action in 12 of 16 positions
    or more (14: the other two are near ties)."""
    same_top, distances = 0, []
    for seed in range(16):
        runs = []
        for k in (1, 16):
            model = HashedGame(1, 6, seed, terminal_prob=0.05)
            params = SearchParams(num_simulations=800, leaf_batch=k, dirichlet_fraction=0.0)
            runs.append((run_search(model, params, np.random.default_rng(0)), model))
        (seq, _), (batched, model) = runs
        assert batched.model_calls <= 60
        same_top += int(np.argmax(seq.root_visits[0]) == np.argmax(batched.root_visits[0]))
        distances.append(0.5 * np.abs(seq.root_visits[0] - batched.root_visits[0]).sum() / 800)
    assert same_top >= 12 and np.mean(distances) <= 0.08, (same_top, distances)


def test_the_clock_stops_the_search_between_network_calls():
    calls = []

    def stop():
        calls.append(1)
        return len(calls) >= 3

    params = SearchParams(num_simulations=500, leaf_batch=4, dirichlet_fraction=0.0)
    res = run_search(HashedGame(2, 4, 0), params, np.random.default_rng(0), hooks=SearchHooks(stop=stop))
    assert res.model_calls == 1 + 3 and (res.root_visits.sum(1) <= 12).all()
    # A deadline already past: one round, one simulation a tree in the sequential search.
    late = SearchHooks(deadline=time.monotonic() - 1.0)
    res = run_search(HashedGame(2, 4, 0), params.params(), np.random.default_rng(0))
    assert (res.root_visits.sum(1) == 500).all()
    res = run_search(HashedGame(2, 4, 0), SearchParams(num_simulations=500), np.random.default_rng(0), hooks=late)
    assert res.model_calls == 2 and (res.root_visits.sum(1) == 1).all()
    soon = SearchHooks.within(0.2)
    t0 = time.monotonic()
    res = run_search(
        HashedGame(1, 4, 0), SearchParams(num_simulations=100_000, leaf_batch=8), np.random.default_rng(0), hooks=soon
    )
    assert time.monotonic() - t0 < 5.0 and 0 < res.root_visits.sum() < 100_000


def test_what_leaf_batching_cannot_do_is_refused():
    with pytest.raises(UsageError, match='leaf_batch = 4 needs search.kind "puct"'):
        SearchParams(kind="gumbel", leaf_batch=4)
    with pytest.raises(UsageError, match="search.leaf_batch must be positive"):
        SearchParams(leaf_batch=0)
    params = SearchParams(num_simulations=8, leaf_batch=4)
    with pytest.raises(UsageError, match="evaluates many leaves of one tree"):
        run_search(RandomTreeModel(2, 3, 0), params, np.random.default_rng(0))
    with pytest.raises(UsageError, match="forced root actions"):
        run_search(
            HashedGame(2, 3, 0),
            params,
            np.random.default_rng(0),
            hooks=SearchHooks(root_action_fn=lambda sim, tree: np.full(2, -1)),
        )
    with pytest.raises(UsageError, match="not available with algo ndmz"):
        make_algorithm(build_config("nannon", "ndmz", overrides=["search.leaf_batch=4"]), load_game("nannon"))
    assert build_config("connect_four", "alphazero", overrides=["search.leaf_batch=16"]).search.leaf_batch == 16


@pytest.mark.parametrize("algo", ["alphazero", "muzero"])
def test_an_engine_searches_one_game_on_its_clock(algo):
    """SearchPlayer.search: leaf-batched searches of the real game (AlphaZero) and of a
    learned model (MuZero), to a simulation budget or a clock, and the move and line
    an engine reports."""
    torch.manual_seed(0)
    game = load_game("connect_four")
    cfg = build_config(
        "connect_four",
        algo,
        overrides=["net.kind=mlp", "net.width=16", "net.layers=1", "search.leaf_batch=8", "threads=1"],
    )
    agent = make_algorithm(cfg, game)
    player = SearchPlayer(agent, agent.make_evaluator(agent.build_network(), "cpu"), cfg.search.params(200), "x")
    state = game.new_initial_state()
    for a in (3, 3, 2):
        state.apply_action(a)
    res = player.search(state)
    assert res.root_visits.sum() == 200 and res.model_calls <= 1 + 2 * 200 // 8
    line = principal_variation(res.tree, 0, 16)
    assert line[0] == int(np.argmax(res.root_visits[0])) and len(line) >= 2
    assert int(select_moves(res, np.zeros(1, bool), 1.0, player.rng)[0]) in state.legal_actions()
    res = player.search(state, simulations=50_000, stop=lambda: True)
    assert 0 < res.root_visits.sum() <= 8
    # the clock ends it long before the budget (50,000 simulations of this tiny network
    # took 0.29 s on an AVX-512 Xeon, so a 0.3 s clock did not)
    t0 = time.monotonic()
    res = player.search(state, seconds=0.05, simulations=200_000)
    assert time.monotonic() - t0 < 5.0 and res.root_visits.sum() < 200_000
