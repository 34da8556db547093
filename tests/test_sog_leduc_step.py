"""A cheaper Leduc learning step (docs/journal/2026-11-30-sog-leduc-step.md): the
inputs of a CVPN batch as one array are `BeliefEncoding.input`'s bit for bit; all
queries' policy rows in batched products per player are the per-query products
to within float32 rounding; search trees sharing their public states' expansions
solve bit for bit as alone, also when the expansions and the CFR's arrays of them are
kept from an earlier step's trees and games (docs/journal/2026-11-30-sog-leduc-step-2.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from polyzero.games import load_game
from polyzero.games.public_states import DECISION, PublicTree, public_observation_function
from polyzero.sog import cvpn
from polyzero.sog.cvpn import BeliefEncoding, NetworkValueFunction, build_cvpn
from polyzero.sog.gtcfr import SoGSettings
from polyzero.sog.query_store import StoredQuery
from polyzero.sog.search_tree import Expansions
from polyzero.sog.selfplay import SoundSelfPlay, _solver, kept_expansions, play_game, solve_query
from polyzero.sog.values import BATCH_FROM, Query


def _queries(game_name: str, count: int, seed: int = 1, max_depth: int | None = None) -> tuple:
    game = load_game(game_name)
    encoding = BeliefEncoding(game)
    nodes = list(PublicTree(game, max_depth=max_depth).nodes)
    source = np.random.default_rng(seed)
    picks = [nodes[int(i)] for i in source.integers(0, len(nodes), count)]
    ranges = []
    for n in picks:  # some rows with a zero range (their slots stay zero, not divided)
        r = [source.random(len(s)) * (source.random() > 0.1) for s in n.info_states]
        ranges.append(r)
    return encoding, [Query(n, r) for n, r in zip(picks, ranges)]


def _solve_setup(game_name: str, seed: int, key: int) -> tuple:
    """Four decision queries, a small CVPN, GT-CFR(10, 1) and each query solved alone
    (its generator seeded [key, k])."""
    torch.set_num_threads(1)
    encoding, queries = _queries(game_name, 8, seed=seed)
    queries = [q for q in queries if q.public_state.kind == DECISION][:4]
    torch.manual_seed(0)
    value_fn = NetworkValueFunction(encoding, build_cvpn(encoding, width=16, layers=1))
    settings = SoGSettings(simulations=10, expansions_per_update=1.0)
    game = encoding.game
    alone = [solve_query(game, q, value_fn, settings, np.random.default_rng([key, k])) for k, q in enumerate(queries)]
    return game, queries, value_fn, settings, alone


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_inputs_as_one_array_equal_input_bit_for_bit(game_name):
    encoding, queries = _queries(game_name, 60, max_depth=4 if game_name == "liars_dice" else None)
    rows = np.stack([encoding.input(q.public_state, q.ranges) for q in queries])
    for size in (len(queries), BATCH_FROM, BATCH_FROM - 1, 1):  # batched, and row by row below BATCH_FROM
        one = encoding.inputs([q.public_state for q in queries[:size]], [q.ranges for q in queries[:size]])
        assert one.dtype == rows.dtype == np.float32
        assert np.array_equal(one, rows[:size])
    assert any(not r[0].any() for r in (q.ranges for q in queries))  # the zero-range branch ran
    assert encoding.inputs([], []).shape == (0, encoding.input_size)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("net_seed", [0, 1, 2])
@pytest.mark.parametrize("rows_per_product", [cvpn.ROWS_PER_PRODUCT, 7])  # 7: each player's rows in pieces
def test_batched_policy_rows_match_per_query_rows(game_name, net_seed, rows_per_product, monkeypatch):
    monkeypatch.setattr(cvpn, "ROWS_PER_PRODUCT", rows_per_product)
    torch.set_num_threads(1)
    encoding, queries = _queries(game_name, 150, seed=net_seed + 5)
    torch.manual_seed(net_seed)
    value_fn = NetworkValueFunction(encoding, build_cvpn(encoding, width=64, layers=2))
    assert {q.public_state.player for q in queries if q.public_state.kind == DECISION} == {0, 1}
    batched = value_fn.evaluate(queries)
    value_fn.batched_rows = False
    reference = value_fn.evaluate(queries)
    for a, b in zip(batched, reference):
        for x, y in zip(a.values, b.values):
            assert np.array_equal(x, y)  # the values' path is untouched
        assert (a.policy is None) == (b.policy is None)
        if a.policy is not None:  # softmax of logits summed in another order: float32 rounding
            assert np.abs(a.policy - b.policy).max() <= 1e-6
    _, decisions, logits, _ = value_fn._forward(queries)
    value_fn.batched_rows = True
    _, decisions_b, logits_b, _ = value_fn._forward(queries)
    assert decisions == decisions_b and logits.shape == logits_b.shape and len(logits) > len(decisions)
    assert len(decisions) >= BATCH_FROM  # the batched product ran
    assert np.abs(logits - logits_b).max() <= 1e-5 * max(1.0, float(np.abs(logits).max()))


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_shared_expansions_solve_bit_for_bit_as_alone(game_name):
    """Query solves whose trees share their public states' expansions (a step's solves,
    `Expansions`) give the solves' numbers bit for bit, roots rebuilt from stored
    histories joining the shared ones."""
    game, queries, value_fn, settings, _ = _solve_setup(game_name, seed=3, key=4)
    queries += [StoredQuery.of(q).query(game) for q in queries]  # the same roots, rebuilt
    alone = [solve_query(game, q, value_fn, settings, np.random.default_rng([4, k])) for k, q in enumerate(queries)]
    shared = Expansions(public_observation_function(game))
    joined = [
        solve_query(game, q, value_fn, settings, np.random.default_rng([4, k]), shared=shared)
        for k, q in enumerate(queries)
    ]
    assert shared.reused > 0
    for a, b in zip(alone, joined):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_counterfactual_values_of_a_batch_equal_per_query_bit_for_bit(game_name):
    encoding, queries = _queries(game_name, 60, max_depth=4 if game_name == "liars_dice" else None)
    value_fn = NetworkValueFunction(encoding, build_cvpn(encoding, width=16, layers=1))
    values = np.random.default_rng(0).normal(size=(len(queries), 2, encoding.max_slots))
    batch = value_fn._counterfactual_values(queries, values)
    batch[:3] = value_fn._counterfactual_values(queries[:3], values[:3])  # row by row: below BATCH_FROM
    for q, v, got in zip(queries, values, batch):
        for p in range(2):
            slots = encoding.slot_index(q.public_state, p)
            want = v[p, slots] * encoding.reach_mass(q.public_state, q.ranges, p)
            assert got[p].shape == want.shape and np.array_equal(got[p], want)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_a_root_with_the_same_key_but_other_worlds_does_not_join(game_name):
    """A root whose public state has the key of a shared one but its worlds in another
    order (so its information states too) starts its own shared entry, and its solve is
    the one it gives alone: `Expansions.root` compares the worlds, not only the key."""
    from polyzero.games.public_states import PublicTree as Builder

    torch.set_num_threads(1)
    encoding, queries = _queries(game_name, 8, seed=3)
    query = next(q for q in queries if q.public_state.kind == DECISION and len(q.public_state.worlds) > 2)
    node = query.public_state
    builder = Builder.__new__(Builder)  # the node builder, as merged_copy uses it
    builder.num_players, builder._type, builder.nodes = 2, encoding.game.get_type(), []
    builder._add_node(node.key, [(w.state, w.chance_reach) for w in reversed(node.worlds)], None, node.depth)
    other = builder.nodes[0]
    assert other.key == node.key and other.info_states != node.info_states
    source = np.random.default_rng(7)
    reordered = Query(other, [source.random(len(s)) + 0.05 for s in other.info_states])
    torch.manual_seed(0)
    value_fn = NetworkValueFunction(encoding, build_cvpn(encoding, width=16, layers=1))
    settings = SoGSettings(simulations=10, expansions_per_update=1.0)
    game = encoding.game
    pair = [query, reordered]
    alone = [solve_query(game, q, value_fn, settings, np.random.default_rng([4, k])) for k, q in enumerate(pair)]
    shared = Expansions(public_observation_function(game))
    joined = [
        solve_query(game, q, value_fn, settings, np.random.default_rng([4, k]), shared=shared)
        for k, q in enumerate(pair)
    ]
    for a, b in zip(alone, joined):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)
    assert shared.root(node) is not shared.root(other)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_trees_of_kept_expansions_share_their_cfr_arrays_and_solve_as_alone(game_name):
    """A later step's solves of the same belief states, on the `Expansions` an earlier
    step's solves filled (the trainer keeps one for the run): nothing is expanded
    again, every decision's CFR arrays are the earlier tree's (read only), and the
    counterfactual values are those of solves alone, bit for bit."""
    game, queries, value_fn, settings, alone = _solve_setup(game_name, seed=5, key=6)
    shared = Expansions(public_observation_function(game))
    steps = []
    for step in range(2):  # the second step's roots are rebuilt from stored histories
        reused = shared.reused
        made = [q if step == 0 else StoredQuery.of(q).query(game) for q in queries]
        searches = [
            _solver(game, q, value_fn, settings, np.random.default_rng([6, k]), shared.observe, shared)
            for k, q in enumerate(made)
        ]
        for search in searches:
            search.run()
        steps.append((searches, shared.reused - reused))
    (first, _), (second, reused) = steps
    assert reused == sum(s.tree.revision for s in second)  # every expansion attached, none made
    for a, b, values in zip(first, second, alone):
        assert b.cfr.decisions
        for index, d in b.cfr.decisions.items():
            kept = a.cfr.decisions[a.tree.index_of[b.tree.nodes[index].key]]
            assert d.membership is kept.membership and d.legal is kept.legal and not d.legal.flags.writeable
            assert d.cumulative_regret is not kept.cumulative_regret
        for search in (a, b):
            search.cfr.evaluate_average()
            for p, v in enumerate(values):
                assert np.array_equal(search.cfr.counterfactual_values(0, p), v)


def _leduc_actors(shared: Expansions) -> tuple[SoundSelfPlay, SoundSelfPlay]:
    """Two Leduc self-play actors with a small CVPN and SoG(6, 1): one whose searches
    share `shared`, one whose games keep their own expansions."""
    torch.set_num_threads(1)
    encoding, _ = _queries("leduc_poker", 1)
    torch.manual_seed(0)
    value_fn = NetworkValueFunction(encoding, build_cvpn(encoding, width=16, layers=1))
    settings = SoGSettings(simulations=6, expansions_per_update=1.0)
    game = encoding.game
    kept = SoundSelfPlay(game, encoding, value_fn, settings, p_td=0.5, expansions=shared)
    return kept, SoundSelfPlay(game, encoding, value_fn, settings, p_td=0.5)


def test_games_on_kept_expansions_play_as_alone():
    """Sound self-play games whose re-solving searches share one `Expansions` (the
    trainer's, kept between games) make the same examples as games on their own."""
    shared = Expansions(public_observation_function(load_game("leduc_poker")))
    kept, own = _leduc_actors(shared)
    for index in range(3):
        a, b = play_game(kept, 7, index, 0.5), play_game(own, 7, index, 0.5)
        assert a.returns == b.returns and a.decisions == b.decisions and len(a.collected) == len(b.collected)
        for x, y in zip(a.examples, b.examples):
            for name in ("x", "value", "value_mask", "policy", "policy_mask"):
                assert np.array_equal(getattr(x, name), getattr(y, name))
        for x, y in zip(a.collected + a.to_solve, b.collected + b.to_solve):
            assert x.key == y.key and np.array_equal(x.chance_reach, y.chance_reach)
            assert all(np.array_equal(h, g) for h, g in zip(x.histories, y.histories))
            assert all(np.array_equal(r, t) for r, t in zip(x.ranges, y.ranges))
    assert shared.reused > 0


def test_a_trainer_keeps_expansions_only_where_searches_share_them():
    """Imperfect-information games keep one index for the run; perfect-information
    games, whose searches add only the top-k children (never shared), keep none."""
    assert isinstance(kept_expansions(load_game("leduc_poker")), Expansions)
    assert kept_expansions(load_game("tic_tac_toe")) is None


def test_an_index_emptied_at_its_bound_plays_as_alone():
    """The kept index never holds more than `max_worlds` worlds (it is emptied above
    them, here many times a game), and games on it make the examples of games on their
    own: the bound that keeps a London run's index near 0.33 GB changes no number
    (benchmarks/results/sog_london_memory.md)."""
    shared = Expansions(public_observation_function(load_game("leduc_poker")), max_worlds=40)
    held = []
    add = shared.add

    def counted(key, entry):
        add(key, entry)
        held.append(shared.worlds)
        assert shared.worlds == sum(len(e.worlds) for e in shared.by_key.values())

    shared.add = counted  # type: ignore[method-assign]
    bounded, own = _leduc_actors(shared)
    for index in range(3):
        a, b = play_game(bounded, 7, index, 0.5), play_game(own, 7, index, 0.5)
        assert a.returns == b.returns and a.decisions == b.decisions
        for x, y in zip(a.examples, b.examples, strict=True):
            for name in ("x", "value", "value_mask", "policy", "policy_mask"):
                assert np.array_equal(getattr(x, name), getattr(y, name))
    assert max(held) <= 40
    assert sum(later < earlier for earlier, later in zip(held, held[1:])) >= 3  # emptied, more than once
