"""AlphaZero's search through real OpenSpiel games, and its training targets."""

import numpy as np
import pytest

from polyzero.algos import make_algorithm
from polyzero.algos.base import Trajectory
from polyzero.algos.player import SearchPlayer
from polyzero.config import build_config
from polyzero.games import check_game, load_game
from polyzero.nets.inference import Evaluator

GAMES = [
    "tic_tac_toe",
    "connect_four",
    "hex(board_size=5)",
    "breakthrough(rows=6,columns=6)",
    "othello",
    "go(board_size=5)",
    "clobber",
    "dots_and_boxes",
    "amazons",
    "checkers",
    "nim",
    "pentago",
    "mancala",
    "cliff_walking",
]


@pytest.mark.parametrize("spec", GAMES)
def test_conformance_through_search(spec):
    """Whole games through the encoder, the legal masks and the batched search (a
    small untrained network, 4 simulations, moves sampled from the visits)."""
    game = load_game(spec)
    cfg = build_config(
        spec,
        "alphazero",
        overrides=["net.channels=8", "net.blocks=1", "net.width=16", "net.value_hidden=8", "threads=1"],
    )
    algo = make_algorithm(cfg, game)
    player = SearchPlayer(
        algo, Evaluator(algo.build_network()), cfg.search.params(4), "search", seed=1, sample_moves=10**9
    )
    report = check_game(game, num_games=2, seed=1, search_fn=player.act)
    assert report.games_played == 2


def test_value_targets_are_for_the_player_to_move():
    game = load_game("tic_tac_toe")
    algo = make_algorithm(build_config("tic_tac_toe", "alphazero"), game)
    traj = Trajectory(
        observations=[np.zeros((3, 3, 3))] * 3,
        policies=[np.zeros(9)] * 3,
        players=[0, 1, 0],
        actions=[0, 1, 2],
        root_values=[0, 0, 0],
        returns_before=[0.0, 0.0, 0.0],
        returns=np.array([1.0, -1.0]),
    )
    ex = algo.trajectory_examples(traj)
    np.testing.assert_array_equal(ex["outcome"], [1, -1, 1])


def test_intermediate_rewards_give_returns_to_go():
    game = load_game("cliff_walking")
    algo = make_algorithm(build_config("cliff_walking", "alphazero"), game)
    traj = Trajectory(
        observations=[np.zeros(algo.encoder.shape)] * 3,
        policies=[np.zeros(4)] * 3,
        players=[0, 0, 0],
        actions=[0, 0, 0],
        root_values=[0, 0, 0],
        returns_before=[0.0, -1.0, -2.0],
        returns=np.array([-3.0]),
    )
    np.testing.assert_array_equal(algo.trajectory_examples(traj)["outcome"], [-3, -2, -1])


def test_search_finds_the_winning_move_and_the_block():
    game = load_game("tic_tac_toe")
    cfg = build_config("tic_tac_toe", "alphazero")
    algo = make_algorithm(cfg, game)
    evaluate = Evaluator(algo.build_network())
    win = game.new_initial_state()
    for a in [0, 3, 1, 4]:  # x: 0, 1; o: 3, 4; x to move wins at 2
        win.apply_action(a)
    block = game.new_initial_state()
    for a in [0, 4, 1]:  # o to move must block at 2
        block.apply_action(a)
    res = algo.search(evaluate, [win, block], cfg.search.params(200), np.random.default_rng(0), False)
    assert res.root_visits[0].argmax() == 2 and res.root_q[0, 2] == pytest.approx(1.0)
    assert res.root_visits[1].argmax() == 2
    assert (res.root_visits.sum(axis=1) == 200).all()
