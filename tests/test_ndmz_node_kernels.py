"""NDMZ's compiled node bookkeeping (polyzero/search/kernels/ndmz_nodes.py) against the
NumPy code it replaced: the same trees, hidden states, stored policies and values, and
the same network calls, bit for bit, on a scripted model and on Nannon with a network."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.games import legal_action_mask, load_game
from polyzero.games.chance import sample_chance
from polyzero.nets.ndmz import ActionLayout
from polyzero.search.loop import simulate, start_tree
from polyzero.search.ndmz import CHANCE_EDGE, NUM_IDENTITIES, TERMINAL_EDGE, NDMZModel
from polyzero.search.params import SearchParams
from polyzero.search.tree import CHANCE, DECISION, IDENTITY, TERMINAL
from test_ndmz_search import _ScriptedModel


class _NumpyStepModel(NDMZModel):
    """NDMZModel.step as it was in NumPy before the compiled bookkeeping."""

    def step(self, parent_node, action, new_node, active):
        out = self._out
        out.legal[:] = False
        bs = np.flatnonzero(active)
        p, a, n = parent_node[bs], action[bs], new_node[bs]
        self.hidden[n, bs] = self.hidden[p, bs]
        under = self.kind[bs, p] == IDENTITY
        self._inherit(bs[under], p[under], a[under], n[under])
        self._expand(bs[~under], p[~under], a[~under], n[~under])
        out.terminal[:] = out.kind == TERMINAL
        return out

    def _expand(self, bs, p, a, n):
        if not len(bs):
            return
        out = self._out
        hidden, ident, choice, chance, value, _ = self.inference.recurrent(self.hidden[p, bs], a)
        self.network_calls += 1
        self.evaluations[bs] += 1
        self.hidden[n, bs] = hidden
        self.choice_logits[bs, n] = choice
        self.chance_logits[bs, n] = chance
        self.node_value[bs, n] = value
        self._put(bs, p, n, IDENTITY, self.player[bs, p], self.anchor[bs, p])
        out.value[bs] = value
        out.prior_logits[bs, :NUM_IDENTITIES] = ident
        out.legal[bs, :NUM_IDENTITIES] = True

    def _inherit(self, bs, p, edge, n):
        out, a_size = self._out, self.layout.size
        chance, terminal = edge == CHANCE_EDGE, edge == TERMINAL_EDGE
        choice = ~chance & ~terminal
        for mask, kind in ((chance, CHANCE), (terminal, TERMINAL)):
            b, j, w = bs[mask], p[mask], n[mask]
            self._put(b, j, w, kind, self.player[b, j], self.anchor[b, j])
            out.value[b] = self.anchor[b, j]
        out.prior_logits[bs[chance], :a_size] = self.chance_logits[bs[chance], p[chance]]
        out.legal[bs[chance], :a_size] = True
        b, j, w, e = bs[choice], p[choice], n[choice], edge[choice]
        v = self.node_value[b, j]
        self._put(b, j, w, DECISION, e, v)
        out.value[b] = v
        out.prior_logits[b, :a_size] = self.choice_logits[b, j]
        out.legal[b, :a_size] = True

    def _put(self, bs, parent, n, kind, player, anchor):
        self.kind[bs, n] = kind
        self.player[bs, n] = player
        self.anchor[bs, n] = anchor
        out = self._out
        out.kind[bs] = kind
        out.discount[bs] = np.where(self.player[bs, parent] == player, 1.0, -1.0)
        out.reward[bs] = 0.0


class _Recorder:
    """The inference, recording the batch of every recurrent call."""

    def __init__(self, inference):
        self.inference, self.batches = inference, []

    def initial(self, obs):
        return self.inference.initial(obs)

    def recurrent(self, hidden, action):
        self.batches.append((np.array(hidden, copy=True), np.array(action, np.int64, copy=True)))
        return self.inference.recurrent(hidden, action)


def _search(model_cls, inference, obs, legal, players, layout, sims, seed, noise):
    recorder = _Recorder(inference)
    params = SearchParams(
        num_simulations=sims, c_puct=1.25, dirichlet_alpha=0.5, dirichlet_fraction=0.25 if noise else 0.0
    )
    model = model_cls(recorder, obs, legal, players, layout, sims + 1)
    tree, _, _ = start_tree(model, params, np.random.default_rng(seed), add_noise=noise)
    simulate(model, params, tree)
    return tree, model, recorder.batches


def _assert_same(a, b):
    (tree_a, model_a, calls_a), (tree_b, model_b, calls_b) = a, b
    for name in tree_a.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(tree_a, name), getattr(tree_b, name), err_msg=name)
    for name in ("hidden", "player", "anchor", "kind", "choice_logits", "chance_logits", "node_value", "evaluations"):
        np.testing.assert_array_equal(getattr(model_a, name), getattr(model_b, name), err_msg=name)
    assert model_a.network_calls == model_b.network_calls == len(calls_a) + 1
    assert len(calls_a) == len(calls_b)
    for (h_a, act_a), (h_b, act_b) in zip(calls_a, calls_b):
        np.testing.assert_array_equal(h_a, h_b)
        np.testing.assert_array_equal(act_a, act_b)


@pytest.mark.parametrize("noise", [False, True])
def test_compiled_bookkeeping_builds_the_numpy_trees_on_a_scripted_model(noise):
    g = np.random.default_rng(11)
    obs = g.normal(size=(5, 10)).astype(np.float32)
    legal = g.random((5, 8)) < 0.6
    legal[:, 0] = True
    args = (_ScriptedModel(), obs, legal, np.array([0, 1, 0, 1, 1]), ActionLayout(8, 16), 60, 5, noise)
    new, old = _search(NDMZModel, *args), _search(_NumpyStepModel, *args)
    _assert_same(new, old)
    kinds = new[0].kind[new[0].kind >= 0]
    # the trees hold every node kind, so every branch of the kernels ran
    assert {DECISION, CHANCE, TERMINAL, IDENTITY} <= set(kinds.tolist())


def _decision_states(game, rng, count):
    """`count` Nannon states with a player to move, a few random moves into games."""
    states = []
    while len(states) < count:
        s = game.new_initial_state()
        for _ in range(int(rng.integers(0, 12))):
            while s.is_chance_node():
                sample_chance(s, rng)
            if s.is_terminal():
                break
            s.apply_action(int(rng.choice(s.legal_actions())))
        while s.is_chance_node():
            sample_chance(s, rng)
        if not s.is_terminal():
            states.append(s)
    return states


def test_compiled_bookkeeping_builds_the_numpy_trees_on_nannon():
    torch.set_num_threads(1)
    game = load_game("nannon")
    algo = make_algorithm(build_config("nannon", "ndmz", overrides=["net.width=32", "ndmz.hidden_size=16"]), game)
    torch.manual_seed(0)
    inference = algo.make_evaluator(algo.build_network(), "cpu")
    states = _decision_states(game, np.random.default_rng(3), 24)
    obs, legal = algo.encode(states), legal_action_mask(states, algo.num_actions)
    args = (inference, obs, legal, np.zeros(len(states), np.int32), algo.layout, 100, 9, True)
    new, old = _search(NDMZModel, *args), _search(_NumpyStepModel, *args)
    _assert_same(new, old)
    assert len(new[2]) > 50  # identity expansions: network calls of g then f
