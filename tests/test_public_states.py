"""Public states and beliefs (Student of Games, "Background and terminology"),
checked against brute-force enumeration of every history."""

import math

import numpy as np
import pyspiel
import pytest
from open_spiel.python.observation import make_observation

from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.games.public_states import CHANCE, DECISION, TERMINAL, PublicTree, public_state_at

PUBLIC_RECALL = pyspiel.IIGObservationType(
    public_info=True, perfect_recall=True, private_info=pyspiel.PrivateInfoType.NONE
)


@pytest.fixture(scope="module")
def trees():
    specs = [
        "kuhn_poker",
        "leduc_poker",
        "liars_dice(numdice=1,dice_sides=3)",
        "scotland_yard(rounds=3,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)",
    ]
    return {spec: PublicTree(load_game(spec)) for spec in specs}


def all_histories(game):
    """Every history after the leading private deals, with its product of chance probabilities."""
    out = []

    def walk(state, reach):
        out.append((tuple(state.history()), state, reach))
        if state.is_terminal():
            return
        outcomes = state.chance_outcomes() if state.is_chance_node() else [(a, 1.0) for a in state.legal_actions()]
        for action, prob in outcomes:
            walk(state.child(action), reach * prob)

    walk(game.new_initial_state(), 1.0)
    return out


def brute_force_groups(game, key_fn, skip_leading_chance: int):
    """Histories grouped by an independent public key, with chance reach."""
    groups, reach = {}, {}
    for history, state, r in all_histories(game):
        if len(history) < skip_leading_chance:
            continue
        groups.setdefault(key_fn(history, state), set()).add(history)
        reach[history] = r
    return groups, reach


def tree_groups(tree):
    groups = {frozenset(tuple(w.state.history()) for w in n.worlds) for n in tree.nodes}
    reach = {tuple(w.state.history()): w.chance_reach for n in tree.nodes for w in n.worlds}
    return groups, reach


def test_kuhn_counts(trees):
    tree = trees["kuhn_poker"]
    assert len(tree.of_kind(DECISION)) == 4 and len(tree.nodes) == 9 and tree.num_info_states() == 12
    assert len(tree.of_kind(TERMINAL)) == 5 and not tree.of_kind(CHANCE)
    root = tree.nodes[0]
    assert root.kind == DECISION and root.player == 0 and len(root.worlds) == 6
    for node in tree.of_kind(DECISION):
        assert [len(s) for s in node.info_states] == [3, 3]
        assert all(len(node.worlds_of(p, i)) == 2 for p in (0, 1) for i in range(3))
        assert all(w.chance_reach == pytest.approx(1 / 6) for w in node.worlds)
        assert node.info_state_chance_reach(0) == pytest.approx([1 / 3] * 3)


def test_leduc_counts_and_chance_reach(trees):
    tree = trees["leduc_poker"]
    decisions = tree.of_kind(DECISION)
    assert len(decisions) == 186 and tree.num_info_states() == 936
    assert len(tree.of_kind(CHANCE)) == 5  # the board card after each way round 1 can end
    first_round = {id(n) for n in decisions if not any(tree.nodes[a].kind == CHANCE for a in _ancestors(tree, n))}
    assert len(first_round) == 6
    for node in decisions:
        # Round 1: the deals sum to 1; round 2: the board card's probability, 1/6.
        expected = 1.0 if id(node) in first_round else 1 / 6
        assert node.chance_reach_sum() == pytest.approx(expected)
        assert len(node.info_states[node.player]) == (6 if id(node) in first_round else 5)


def _ancestors(tree, node):
    out, parent = [], node.parent
    while parent is not None:
        out.append(parent)
        parent = tree.nodes[parent].parent
    return out


@pytest.mark.parametrize("spec", ["kuhn_poker", "leduc_poker", "liars_dice(numdice=1,dice_sides=3)"])
def test_chance_reach_is_conserved(trees, spec):
    """The root's worlds sum to 1; a chance node's mass splits over its children;
    at a decision each action carries the whole mass on (all worlds share actions here)."""
    tree = trees[spec]
    assert tree.nodes[0].chance_reach_sum() == pytest.approx(1.0)
    for node in tree.nodes:
        if node.kind == CHANCE:
            assert sum(tree.nodes[c].chance_reach_sum() for c in node.children.values()) == pytest.approx(
                node.chance_reach_sum()
            )
        elif node.kind == DECISION:
            per_action = {}
            for t in node.transitions:
                reach = tree.nodes[t.child].worlds[t.child_world].chance_reach
                per_action[t.action] = per_action.get(t.action, 0.0) + reach
            assert all(math.isclose(v, node.chance_reach_sum()) for v in per_action.values())


@pytest.mark.parametrize("spec, deals", [("kuhn_poker", 2), ("leduc_poker", 2)])
def test_poker_agrees_with_brute_force(trees, spec, deals):
    """Group every history by OpenSpiel's public observer string at that history
    (perfect recall) and its length: the same partition and chance reach."""
    game = load_game(spec)
    observation = make_observation(game, PUBLIC_RECALL)
    groups, reach = brute_force_groups(
        game, lambda h, s: (len(h), observation.string_from(s, 0)), skip_leading_chance=deals
    )
    ours, our_reach = tree_groups(trees[spec])
    assert ours == {frozenset(g) for g in groups.values()}
    assert our_reach.keys() == reach.keys()
    assert all(math.isclose(our_reach[h], reach[h]) for h in reach)
    # Information states: each lies inside one public state, and there are as many
    # as OpenSpiel's acting-player information states.
    acting = {
        s.information_state_string()
        for _, s, _ in all_histories(game)
        if not s.is_terminal() and not s.is_chance_node()
    }
    assert len(acting) == trees[spec].num_info_states()


def test_liars_dice_bids_are_the_public_state(trees):
    game = load_game("liars_dice(numdice=1,dice_sides=3)")
    groups, reach = brute_force_groups(game, lambda h, s: h[2:], skip_leading_chance=2)
    ours, our_reach = tree_groups(trees["liars_dice(numdice=1,dice_sides=3)"])
    assert ours == {frozenset(g) for g in groups.values()}
    assert all(math.isclose(our_reach[h], reach[h]) for h in reach)
    tree = trees["liars_dice(numdice=1,dice_sides=3)"]
    assert len(tree.of_kind(DECISION)) == 2**6  # any increasing subset of the 6 bids
    assert all(len(n.worlds) == 9 and [len(s) for s in n.info_states] == [3, 3] for n in tree.of_kind(DECISION))


def test_scotland_yard_public_states(trees):
    """The detectives' information state is the public state (they hold no private
    information); Mr X knows the whole history, so each world is his own information state."""
    game = load_game("scotland_yard(rounds=3,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)")
    groups, _ = brute_force_groups(game, lambda h, s: s.information_state_string(1), skip_leading_chance=0)
    tree = trees["scotland_yard(rounds=3,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)"]
    ours, reach = tree_groups(tree)
    assert ours == {frozenset(g) for g in groups.values()}
    assert set(reach.values()) == {1.0}  # no chance: beliefs come from Mr X's hidden moves alone
    hidden = 0
    for node in tree.of_kind(DECISION):
        assert len(node.info_states[1]) == 1
        assert len(node.info_states[0]) == len(node.worlds)
        hidden = max(hidden, len(node.worlds))
    assert hidden > 1  # some public states hide where Mr X is
    # Reveal in round 3: after Mr X's third move every world agrees on his station.
    for node in tree.nodes:
        if node.key and "@" in node.key[-1]:
            assert len({w.state.mrx for w in node.worlds}) == 1


def test_public_state_at_matches_the_tree(trees):
    rng = np.random.default_rng(0)
    for spec in ["leduc_poker", "scotland_yard(rounds=3,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)"]:
        game, tree = load_game(spec), trees[spec]
        by_key = {n.key: n for n in tree.nodes}
        for _ in range(10):
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    actions, probs = zip(*state.chance_outcomes())
                    state.apply_action(int(rng.choice(actions, p=probs)))
                else:
                    state.apply_action(int(rng.choice(state.legal_actions())))
                if state.is_chance_node() and len(state.history()) < 2:
                    continue  # before the root public state (the private deals)
                node = public_state_at(game, state)
                expected = by_key[node.key]
                assert {tuple(w.state.history()) for w in node.worlds} == {
                    tuple(w.state.history()) for w in expected.worlds
                }
                assert node.chance_reach_sum() == pytest.approx(expected.chance_reach_sum())
                assert tuple(state.history()) in {tuple(w.state.history()) for w in node.worlds}


def test_perfect_information_beliefs_are_singletons():
    game = load_game("tic_tac_toe")
    tree = PublicTree(game, max_depth=3)
    assert len(tree.nodes) == 1 + 9 + 72 + 504
    assert all(len(n.worlds) == 1 and n.worlds[0].chance_reach == 1.0 for n in tree.nodes)
    state = game.new_initial_state()
    for a in (4, 0, 8):
        state.apply_action(a)
    node = public_state_at(game, state)
    assert len(node.worlds) == 1 and node.worlds[0].state.history() == [4, 0, 8]


def test_matrix_game_through_convert_to_turn_based():
    """The second mover does not see the first's action."""
    game = pyspiel.convert_to_turn_based(pyspiel.load_game("matrix_rps"))
    tree = PublicTree(game)
    second = tree.nodes[tree.nodes[0].children[next(iter(tree.nodes[0].children))]]
    assert len(tree.nodes[0].children) == 1
    assert second.kind == DECISION and second.player == 1 and len(second.worlds) == 3
    assert [len(s) for s in second.info_states] == [3, 1]
    assert len(tree.of_kind(TERMINAL)) == 9 and all(len(n.worlds) == 1 for n in tree.of_kind(TERMINAL))


def test_games_without_public_observations_are_refused():
    with pytest.raises(UsageError, match="no public observations"):
        PublicTree(pyspiel.load_game("phantom_ttt"))
