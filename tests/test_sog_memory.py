"""What Student of Games holds while it plays (issue 59, Scotland Yard's London board):
queries kept as histories, a capped collector, a searcher cache with bounds that change
costs but never results."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pyspiel
import pytest
import torch

from polyzero.games import load_game
from polyzero.games.public_states import PublicState, World, public_state_at
from polyzero.sog.cvpn import BeliefEncoding, NetworkValueFunction, build_cvpn
from polyzero.sog.gtcfr import SoGSettings
from polyzero.sog.query_store import Collector, QueryBuffer, StoredQuery
from polyzero.sog.resolve import ResolvingSearcher
from polyzero.sog.selfplay import SoundSelfPlay, play_game
from polyzero.sog.values import Query

LONDON = "scotland_yard(map=london)"


def _random_play(game, steps, seed=0):
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    while len(state.history()) < steps and not state.is_terminal():
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(actions, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


def test_stored_query_rebuilds_the_same_belief_state_in_a_fraction_of_the_memory():
    game = load_game(LONDON)
    node = public_state_at(game, _random_play(game, 40, seed=3))
    rng = np.random.default_rng(0)
    query = Query(node, [rng.random(len(s)) for s in node.info_states])
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = StoredQuery.of(query)
    stored_bytes = tracemalloc.get_traced_memory()[0] - before
    rebuilt = kept.query(game)
    tracemalloc.stop()
    assert len(node.worlds) > 5
    assert rebuilt.public_state.key == node.key and rebuilt.public_state.info_states == node.info_states
    for a, b in zip(node.worlds, rebuilt.public_state.worlds):
        assert a.state.history() == b.state.history() and a.chance_reach == b.chance_reach
        assert a.info_states == b.info_states
    enc = BeliefEncoding(game)
    assert np.array_equal(enc.input(node, query.ranges), enc.input(rebuilt.public_state, rebuilt.ranges))
    # 2 bytes an action and a few array headers a world, where a world's state and its
    # information-state strings take kilobytes
    assert stored_bytes < 400 * len(node.worlds) + 2000


def test_collector_keeps_the_newest_up_to_the_buffer_capacity():
    game = load_game("leduc_poker")
    node = public_state_at(game, game.new_initial_state().child(0).child(3))
    query = Query(node, [np.ones(len(s)) for s in node.info_states])
    capped = Collector(0.5, np.random.default_rng(1), capacity=5)
    full = Collector(0.5, np.random.default_rng(1))
    for _ in range(40):
        capped([query])
        full([query])
    assert capped.count == full.count == len(full.kept) > 5
    assert len(capped.kept) == 5 and capped.seen == 40
    buffer = QueryBuffer(game, capacity=3)
    for q in full.kept:
        buffer.add(q)
    assert len(buffer) == 3 and buffer.added == full.count


def _cvpn(game, seed=0):
    torch.manual_seed(seed)
    enc = BeliefEncoding(game)
    return enc, NetworkValueFunction(enc, build_cvpn(enc, 16, 1))


def test_a_bounded_search_cache_changes_no_decision():
    """A searcher keeping two searches (each player's latest) and one keeping all
    play the same game: a dropped search is searched again, never differently."""
    game = load_game("scotland_yard")
    _, values = _cvpn(game)
    settings = SoGSettings(simulations=4, expansions_per_update=1.0)
    bounded = ResolvingSearcher(game, values, settings, seed=3, cache_size=2)
    full = ResolvingSearcher(game, values, settings, seed=3)
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    decisions = 0
    while not state.is_terminal():
        a, b = bounded.search_at(state), full.search_at(state)
        assert a.policy == b.policy and a.key == b.key
        assert len(bounded.cache) <= 2
        probs = a.policy[state.information_state_string(state.current_player())]
        state.apply_action(int(rng.choice(list(probs), p=np.array(list(probs.values())) / sum(probs.values()))))
        decisions += 1
    assert decisions >= 8 and len(full.cache) == decisions and bounded.searches == full.searches
    # a bound on worlds drops old searches too, never a player's latest
    tight = ResolvingSearcher(game, values, settings, seed=3, max_worlds=1)
    tight.search_at(game.new_initial_state())
    assert len(tight.cache) == 1 and tight.cached_worlds > 1


def _reachable(root) -> list:
    """Every object reachable from `root` (numpy arrays' buffers aside)."""
    seen, stack, out = set(), [root], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, np.ndarray)):
            continue
        seen.add(id(obj))
        out.append(obj)
        stack.extend(gc.get_referents(obj))
    return out


def test_self_play_retains_only_examples_and_stored_queries():
    """A whole self-play game: what it returns holds the examples and the queries as
    histories (the collector capped at the buffer's size), no public state or game state."""
    game = load_game("scotland_yard(map=glasses,mrx_recall=station)")
    enc, values = _cvpn(game)
    actor = SoundSelfPlay(game, enc, values, SoGSettings(simulations=4, expansions_per_update=1.0), p_td=0.0)
    episode = play_game(actor, seed=0, index=0, q_search=0.5, capacity=20)
    assert episode.queries_kept > 20 and len(episode.collected) == 20
    assert episode.to_solve and all(isinstance(q, StoredQuery) for q in episode.collected + episode.to_solve)
    held = _reachable(episode)
    assert not [o for o in held if isinstance(o, (PublicState, World, pyspiel.State))]
    assert sum(q.num_worlds for q in episode.collected) > 20


def test_merged_resolve_root_searches_as_the_unmerged_one(monkeypatch):
    """A re-solve rooted in the previous search's tree merges the worlds that leave Mr X
    on one station (their chance reach summed): with no expansion to sample, the search
    gives the policy of the unmerged root, with fewer worlds."""
    from polyzero.sog import resolve

    game = load_game("scotland_yard(map=glasses,mrx_recall=station,rounds=5,reveal_rounds=5)")
    _, values = _cvpn(game)
    settings = SoGSettings(simulations=0, expansions_per_update=1.0, min_iterations=30)
    rng = np.random.default_rng(2)
    state = game.new_initial_state()
    merged_roots = 0
    while not state.is_terminal() and len(state.history()) < 12:
        merged = ResolvingSearcher(game, values, settings, seed=1).search_at(state)
        with monkeypatch.context() as m:
            m.setattr(resolve, "merged_copy", lambda game, node: node)
            plain = ResolvingSearcher(game, values, settings, seed=1).search_at(state)
        for name, probs in plain.policy.items():
            assert merged.policy[name] == pytest.approx(probs, abs=1e-9)
        root = merged.summary.tree.nodes[0]
        merged_roots += len(root.worlds) < len(plain.summary.tree.nodes[0].worlds)
        state.apply_action(int(rng.choice(state.legal_actions())))
    assert merged_roots >= 2
