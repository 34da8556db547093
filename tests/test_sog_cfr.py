"""Public-tree CFR (RM+, linear averaging, simultaneous updates) against hand-computed
iterations and against OpenSpiel's simultaneous-update solver."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr as openspiel_cfr, exploitability

from polyzero.games import load_game
from polyzero.games.public_states import PublicTree
from polyzero.sog.cfr import (
    PublicTreeCFR,
    average_of,
    linear_average_update,
    regret_matching,
    regret_matching_plus_update,
)
from polyzero.sog.exploitability import tabular_from


def test_regret_matching():
    legal = np.array([[True, True, True], [True, False, True], [True, True, False]])
    regret = np.array([[1.0, 3.0, -2.0], [-1.0, 5.0, 0.0], [0.0, -1.0, 7.0]])
    policy = regret_matching(regret, legal)
    # positive regrets normalised; illegal actions get nothing even with positive regret;
    # no positive legal regret -> uniform over the legal actions
    np.testing.assert_allclose(policy, [[0.25, 0.75, 0.0], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])


def test_regret_matching_plus_and_linear_averaging():
    np.testing.assert_allclose(
        regret_matching_plus_update(np.array([1.0, 0.0, 2.0]), np.array([-3.0, 0.5, -1.0])), [0.0, 0.5, 1.0]
    )
    cumulative = np.zeros((1, 2))
    cumulative = linear_average_update(cumulative, 1, np.array([0.5]), np.array([[0.5, 0.5]]))
    cumulative = linear_average_update(cumulative, 2, np.array([1.0]), np.array([[1.0, 0.0]]))
    np.testing.assert_allclose(cumulative, [[2.25, 0.25]])  # 1*0.5*[.5,.5] + 2*1*[1,0]
    np.testing.assert_allclose(average_of(cumulative, np.array([[True, True]])), [[0.9, 0.1]])
    np.testing.assert_allclose(average_of(np.zeros((1, 3)), np.array([[True, False, True]])), [[0.5, 0, 0.5]])


def test_two_hand_computed_iterations_on_a_matrix_game():
    """Row payoffs [[2, -1], [-1, 1]], zero-sum, via convert_to_turn_based.

    t=1, both uniform: row regrets [+.25, -.25] -> RM+ [.25, 0] -> row plays [1, 0];
    column regrets [-.25, +.25] -> column plays [0, 1].
    t=2: row regrets [0, 2] -> cumulative [.25, 2] -> [1/9, 8/9]; linear averages
    row 1*[.5, .5] + 2*[1, 0] -> [5/6, 1/6], column 1*[.5, .5] + 2*[0, 1] -> [1/6, 5/6].
    """
    matrix = pyspiel.create_matrix_game([[2.0, -1.0], [-1.0, 1.0]], [[-2.0, 1.0], [1.0, -1.0]])
    tree = PublicTree(pyspiel.convert_to_turn_based(matrix))
    row_info = tree.nodes[0].info_states[0][0]
    column_info = tree.nodes[1].info_states[1][0]
    solver = PublicTreeCFR(tree)
    solver.iterate()
    current, average = solver.current_policy(), solver.average_policy()
    assert current[row_info] == pytest.approx({0: 1.0, 1: 0.0})
    assert current[column_info] == pytest.approx({0: 0.0, 1: 1.0})
    assert average[row_info] == pytest.approx({0: 0.5, 1: 0.5})
    solver.iterate()
    current, average = solver.current_policy(), solver.average_policy()
    assert current[row_info] == pytest.approx({0: 1 / 9, 1: 8 / 9})
    assert current[column_info] == pytest.approx({0: 0.0, 1: 1.0})
    assert average[row_info] == pytest.approx({0: 5 / 6, 1: 1 / 6})
    assert average[column_info] == pytest.approx({0: 1 / 6, 1: 5 / 6})


def assert_matches_openspiel(spec: str, iterations: int):
    game = load_game(spec)
    ours = PublicTreeCFR(PublicTree(game))
    reference = openspiel_cfr._CFRSolver(
        game, alternating_updates=False, linear_averaging=True, regret_matching_plus=True
    )
    for iteration in range(1, iterations + 1):
        ours.iterate()
        reference.evaluate_and_update_policy()
        expected = reference.average_policy()
        mine = ours.average_policy()
        assert mine.keys() == expected.state_lookup.keys()
        worst = max(abs(expected.policy_for_key(info)[a] - p) for info, probs in mine.items() for a, p in probs.items())
        assert worst < 1e-9, f"{spec}: iteration {iteration} differs by {worst}"


def test_kuhn_equals_openspiel_simultaneous_cfr_plus_for_100_iterations():
    assert_matches_openspiel("kuhn_poker", 100)


@pytest.mark.parametrize(
    "spec",
    [
        "leduc_poker",
        "scotland_yard(rounds=3,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)",
        "liars_dice(numdice=1,dice_sides=3)",
    ],
)
def test_other_games_equal_openspiel_for_a_few_iterations(spec):
    assert_matches_openspiel(spec, 5)


def test_kuhn_converges_to_the_game_value():
    game = load_game("kuhn_poker")
    solver = PublicTreeCFR(PublicTree(game))
    for _ in range(1000):
        solver.iterate()
    policy = solver.tabular_average_policy()
    assert exploitability.exploitability(game, policy) < 3.5e-3  # 2.8e-3 measured; 1.6e-2 at 100
    from open_spiel.python.algorithms.expected_game_score import policy_value

    assert policy_value(game.new_initial_state(), [policy, policy])[0] == pytest.approx(-1 / 18, abs=5e-3)


@pytest.mark.parametrize(
    "spec", ["kuhn_poker", "leduc_poker", "scotland_yard(rounds=3,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)"]
)
def test_flat_cfr_equals_public_tree_cfr_on_a_subgame_with_ranges(spec):
    """The vectorised solver of leafless trees is the same algorithm: average policy,
    ranges and counterfactual values agree at every iteration, from random root ranges."""
    from polyzero.sog.flat_cfr import FlatCFR
    from polyzero.sog.values import Subtree, world_reach

    game = load_game(spec)
    node = next(n for n in PublicTree(game, max_depth=2).nodes[1:] if n.kind == "decision")
    rng = np.random.default_rng(0)
    reach = world_reach(node, [rng.random(len(node.info_states[p])) for p in range(2)])
    reference, flat = PublicTreeCFR(Subtree(game, node), reach), FlatCFR(Subtree(game, node), reach)
    for _ in range(20):
        reference.iterate()
        flat.iterate()
        expected, mine = reference.average_policy(), flat.average_policy()
        assert mine.keys() == expected.keys()
        assert max(abs(expected[k][a] - p) for k, probs in mine.items() for a, p in probs.items()) < 1e-12
    reference.evaluate_average()
    flat.evaluate_average()
    last = len(reference.tree.nodes) - 1
    for index in (0, last // 2, last):
        for p in range(2):
            np.testing.assert_allclose(
                flat.counterfactual_values(index, p), reference.counterfactual_values(index, p), atol=1e-12
            )
            np.testing.assert_allclose(flat.ranges(index, p), reference.ranges(index, p), atol=1e-12)


@pytest.mark.parametrize("spec", ["kuhn_poker", "leduc_poker"])
def test_flat_cfr_exploitability_equals_openspiels_best_response(spec):
    from polyzero.sog.flat_cfr import FlatCFR

    game = load_game(spec)
    solver = FlatCFR(PublicTree(game))
    for _ in range(15):
        solver.iterate()
    expected = exploitability.exploitability(game, tabular_from(game, solver.average_policy()))
    assert solver.exploitability() == pytest.approx(expected, abs=1e-12)
    assert expected > 1e-3  # far from solved: the best responses do gain
