"""The level-vectorised CFR for perfect-information trees (`PerfectInfoCFR`) runs
the same iterations as `PublicTreeCFR`: GT-CFR searches and continual re-solving
with either give the same trees, policies, values and summaries."""

import zlib

import numpy as np
import pytest

import polyzero.sog.gtcfr as gtcfr
from polyzero.games import load_game
from polyzero.games.public_states import public_observation_function, public_state_at
from polyzero.sog.cfr import PublicTreeCFR
from polyzero.sog.gtcfr import GTCFR, SoGSettings
from polyzero.sog.perfect_cfr import PerfectInfoCFR
from polyzero.sog.resolve import SoGPlayer
from polyzero.sog.search_tree import SearchTree
from polyzero.sog.values import Evaluation, ValueFunction


class HashedValues(ValueFunction):
    """A fixed, arbitrary value function: values, priors and starting regrets drawn
    from a generator seeded by the public state's key (range-independent, as the
    perfect-information shortcut assumes)."""

    def __init__(self, game):
        self.num_actions = game.num_distinct_actions()

    @staticmethod
    def _rng(node, salt: str = ""):
        return np.random.default_rng(zlib.crc32(("|".join(node.key) + salt).encode()))

    def evaluate(self, queries):
        out = []
        for q in queries:
            rng = self._rng(q.public_state)
            v = rng.uniform(-1, 1)
            prior = rng.dirichlet(np.ones(self.num_actions))[None, :]
            out.append(Evaluation([np.array([v]), np.array([-v])], prior))
        return out

    def regrets_at(self, node, actions):
        return self._rng(node, "regrets").normal(size=(1, len(actions)))


def _search(cls, monkeypatch, state, c, inherit, simulations=40):
    game = state.get_game()
    monkeypatch.setattr(gtcfr, "PerfectInfoCFR", cls)
    tree = SearchTree(game, public_state_at(game, state), public_observation_function(game))
    tree.expand(0)
    search = GTCFR(tree, HashedValues(game), SoGSettings(inherit_regrets=inherit), np.random.default_rng(7))
    search.run(simulations=simulations, expansions_per_update=c)
    assert isinstance(search.cfr, cls)
    return search


def _same_policies(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for info in a:
        assert a[info].keys() == b[info].keys()
        assert np.allclose(list(a[info].values()), list(b[info].values()), atol=1e-12)


@pytest.mark.parametrize("c, inherit", [(1.0, False), (0.5, True), (3.0, False)])
def test_gtcfr_with_perfect_information_cfr_equals_public_tree_cfr(monkeypatch, c, inherit):
    game = load_game("connect_four")
    state = game.new_initial_state()
    for a in [3, 3, 2, 4]:
        state.apply_action(a)
    fast = _search(PerfectInfoCFR, monkeypatch, state, c, inherit)
    slow = _search(PublicTreeCFR, monkeypatch, state, c, inherit)
    assert [n.key for n in fast.tree.nodes] == [n.key for n in slow.tree.nodes]
    assert len(fast.tree.nodes) > 30 and fast.value_calls == slow.value_calls
    _same_policies(fast.average_policy(), slow.average_policy())
    _same_policies(fast.cfr.current_policy(), slow.cfr.current_policy())
    assert np.allclose(fast.cfr.root_value(), slow.cfr.root_value(), atol=1e-12)
    for index in range(len(fast.tree.nodes)):
        assert np.allclose(fast.cfr.reach[index], slow.cfr.reach[index], atol=1e-12)
        d, e = fast.cfr.decisions.get(index), slow.cfr.decisions.get(index)
        assert (d is None) == (e is None)
        if d is not None:
            assert d.actions == e.actions and d.player == e.player
            for name in ("cumulative_regret", "cumulative_policy", "policy", "action_cfv", "cf_reach"):
                assert np.allclose(getattr(d, name), getattr(e, name), atol=1e-12), name
    summary_fast, summary_slow = fast.summary(), slow.summary()
    for index in range(len(fast.tree.nodes)):
        for p in range(2):
            assert np.allclose(summary_fast.ranges[index][p], summary_slow.ranges[index][p], atol=1e-12)
            assert np.allclose(summary_fast.cfv[index][p], summary_slow.cfv[index][p], atol=1e-12)


@pytest.mark.parametrize("name, moves", [("connect_four", 8), ("pig(winscore=12)", 12)])
def test_continual_resolving_with_either_cfr_plays_the_same_policies(monkeypatch, name, moves):
    """Re-solving (gadget, summaries, best responses) along one game; pig adds
    public chance nodes (its die rolls)."""
    game = load_game(name)
    policies = []
    for cls in (PerfectInfoCFR, PublicTreeCFR):
        monkeypatch.setattr(gtcfr, "PerfectInfoCFR", cls)
        player = SoGPlayer(game, SoGSettings(simulations=30), HashedValues(game), seed=3)
        state, out, rng = game.new_initial_state(), [], np.random.default_rng(0)
        while len(out) < moves and not state.is_terminal():
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes())
                state.apply_action(int(rng.choice(actions, p=probs)))
                continue
            policy = player.policy(state)
            out.append(policy)
            state.apply_action(max(policy, key=policy.get))
        policies.append(out)
    assert len(policies[0]) == len(policies[1]) == moves
    for a, b in zip(*policies):
        _same_policies({"": a}, {"": b})
    assert any(len(p) > 1 and max(p.values()) < 0.99 for p in policies[0])  # mixed policies were compared


def test_perfect_information_cfr_refuses_public_states_of_several_worlds():
    from polyzero.games.public_states import PublicTree

    game = load_game("kuhn_poker")
    with pytest.raises(ValueError, match="one world"):
        PerfectInfoCFR(PublicTree(game, max_depth=2))
