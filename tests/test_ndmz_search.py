"""Nondeterministic MuZero's search on the compiled core against the NumPy engine it
replaced: the counts and values that engine returned, recorded from it before it was
replaced, on a scripted model (exactly) and on Nannon (in distribution)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.games import load_game
from polyzero.nets.ndmz import ActionLayout
from polyzero.search.ndmz import ndmz_search

# The NDMZ search moved from its own NumPy loop (search/ndmz.py's NDMZTrees, replaced in
# the one-engine change) into the compiled core. These tests pin what the NumPy engine
# returned, recorded from it before it was replaced.


class _ScriptedModel:
    """g and f as fixed functions of the hidden state and the action, with one-hot identity
    and chance policies: every roulette draw is forced, so a search is deterministic and two
    engines must agree on every count. The identity after action a is
    (a + [s_0 > 0] + 2 [s_1 > 0.6]) mod 4, so the trees hold both players, chance nodes
    (outcomes 8..13, one-hot by the state) and terminal nodes."""

    def __init__(self, size=26, hidden=6, seed=0):
        g = np.random.default_rng(seed)
        self.size, self.h = size, hidden
        self.emb = g.normal(size=(size, hidden))
        self.p_w = g.normal(size=(hidden, size)) * 0.7
        self.c_w = g.normal(size=(hidden, size))
        self.v_w = g.normal(size=hidden)

    def _f(self, s):
        c = np.full((len(s), self.size), -1e9)
        c[np.arange(len(s)), 8 + np.argmax(s @ self.c_w[:, 8:14], axis=1)] = 0.0
        return s @ self.p_w, c, np.tanh(s @ self.v_w)

    def initial(self, obs):
        s = np.tanh(obs[:, : self.h].astype(np.float64))
        p, c, v = self._f(s)
        return s.astype(np.float32), p, c, v

    def recurrent(self, hidden, action):
        s = np.tanh(0.8 * hidden.astype(np.float64) + self.emb[action])
        who = (action + (s[:, 0] > 0).astype(int) + 2 * (s[:, 1] > 0.6).astype(int)) % 4
        ident = np.full((len(s), 4), -1e9)
        ident[np.arange(len(s)), who] = 0.0
        p, c, v = self._f(s)
        return s.astype(np.float32), ident, p, c, v, np.zeros(len(s))


# Recorded from the NumPy engine (3 roots, players 0, 1, 0; 60 iterations; c_puct 1.25).
_NUMPY_ENGINE = {
    False: {
        "root_visits": [[5, 4, 2, 0, 1, 7, 0, 1], [1, 1, 0, 2, 42, 0, 0, 0], [1, 1, 5, 0, 1, 0, 0, 7]],
        "root_q": [
            [
                0.12400042422,
                -0.100048182756,
                -0.191673053345,
                9.0,
                -0.990913792228,
                -0.069365957431,
                9.0,
                -0.990913792228,
            ],
            [-0.8000052699442513, -0.9031712435841479, 9.0, 0.3487051251668195, 0.9614282271816889, 9.0, 9.0, 9.0],
            [-0.857278226266, -0.637429507034, -0.219571486595, 9.0, -0.920102505896, 9.0, 9.0, 0.228619586077],
        ],
        "root_value": [-0.13154630015437507, 0.8559612886616559, -0.12748870464206125],
        "backups": [20, 46, 15],
        "network_evaluations": [31, 12, 31],
        "model_calls": 31,
        "nodes": [61, 23, 61],
    },
    True: {
        "root_visits": [[7, 3, 2, 0, 1, 6, 0, 1], [1, 1, 0, 8, 30, 1, 0, 0], [1, 1, 5, 0, 1, 0, 3, 6]],
        "root_q": [
            [
                -0.008178944128,
                0.199643504265,
                -0.191673053345,
                9.0,
                -0.990913792228,
                0.02724950691,
                9.0,
                -0.990913792228,
            ],
            [-0.800005269944, -0.903171243584, 9.0, 0.359050557078, 0.959597458351, -0.003350398348, 9.0, 9.0],
            [
                -0.857278226266,
                -0.637429507034,
                -0.219571486595,
                9.0,
                -0.920102505896,
                9.0,
                0.813742979361,
                0.191271053033,
            ],
        ],
        "root_value": [-0.08299993728940279, 0.7305805193972496, 0.004481622594653658],
        "backups": [20, 41, 17],
        "network_evaluations": [31, 17, 31],
        "model_calls": 31,
        "nodes": [61, 33, 61],
    },
}


@pytest.mark.parametrize("noise", [False, True])
def test_search_reproduces_the_numpy_engine_on_a_scripted_model(noise):
    lay = ActionLayout(8, 16)
    g = np.random.default_rng(11)
    obs = g.normal(size=(3, 10)).astype(np.float32)
    legal = g.random((3, 8)) < 0.6
    legal[:, 0] = True
    kw = dict(dirichlet_alpha=0.5, dirichlet_fraction=0.25) if noise else {}
    r = ndmz_search(_ScriptedModel(), obs, legal, np.array([0, 1, 0]), lay, 60, 1.25, np.random.default_rng(5), **kw)
    old = _NUMPY_ENGINE[noise]
    assert r.root_visits.tolist() == old["root_visits"]
    assert r.backups.tolist() == old["backups"]
    assert r.network_evaluations.tolist() == old["network_evaluations"]
    assert r.model_calls == old["model_calls"]
    np.testing.assert_allclose(np.nan_to_num(r.root_q, nan=9.0), old["root_q"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(r.root_value, old["root_value"], rtol=0, atol=1e-9)


# The NumPy engine's mean root visit fractions and root values over 4,000 searches of
# each position (40 iterations, no noise, an untrained network: torch seed 0), and the
# standard deviations of one search's fractions across draws (at most 0.13).
_NUMPY_ENGINE_NANNON = {
    "histories": [
        [11, 2, 5],
        [7, 1, 4, 1, 0, 0, 4, 2, 1, 3, 0, 0, 1, 1, 0, 1, 2, 3, 4, 2, 3, 0, 5, 0, 4],
        [14, 0, 3, 0, 5],
        [13, 0, 3, 7, 1, 2, 0, 7, 2, 4, 2],
    ],
    "fraction": [
        [0.7735, 0.1229, 0.1036, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.2119, 0.0, 0.5173, 0.0, 0.2708, 0.0],
        [0.0, 0.3798, 0.137, 0.0, 0.4832, 0.0, 0.0, 0.0],
        [0.6303, 0.2648, 0.105, 0.0, 0.0, 0.0, 0.0, 0.0],
    ],
    "root_value": [0.0893, -0.5409, -0.2626, -0.2452],
}


def test_search_visit_distribution_on_nannon_matches_the_numpy_engine():
    """Roulette draws come from another generator in the compiled engine, so single searches
    differ; their distribution must not: 400 searches per position, the mean visit fractions
    within 0.025 (about 4 standard errors) and the mean root value within 0.02."""
    torch.set_num_threads(1)
    game = load_game("nannon")
    algo = make_algorithm(
        build_config("nannon", "ndmz", overrides=["net.width=32", "ndmz.hidden_size=16", "threads=1", "seed=3"]), game
    )
    torch.manual_seed(0)
    ev = algo.make_evaluator(algo.build_network(), "cpu")
    reps = 400
    states = []
    for history in _NUMPY_ENGINE_NANNON["histories"]:
        s = game.new_initial_state()
        for a in history:
            s.apply_action(a)
        states += [s.clone() for _ in range(reps)]
    r = algo.search(ev, states, algo.cfg.search.params(40), np.random.default_rng(7), add_noise=False)
    v = r.root_visits.reshape(4, reps, -1).astype(float)
    fraction = (v / v.sum(-1, keepdims=True)).mean(1)
    np.testing.assert_allclose(fraction, _NUMPY_ENGINE_NANNON["fraction"], atol=0.025)
    np.testing.assert_allclose(r.root_value.reshape(4, reps).mean(1), _NUMPY_ENGINE_NANNON["root_value"], atol=0.02)
