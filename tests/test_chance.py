"""Chance-aware AlphaZero: the true-simulator search samples chance outcomes by their
known probabilities (roulette-wheel selection, NDMZ paper Section 2.3), values a
new chance node by one sampled outcome, and self-play plays games with dice."""

import numpy as np
import pytest
import torch

from conftest import SMALL_RUN, assert_same_final_weights
from polyzero.algos import make_algorithm
from polyzero.algos.simulator import SimulatorModel
from polyzero.config import build_config
from polyzero.games import ObservationEncoder, load_game
from polyzero.search.mcts import search
from polyzero.search.params import SearchParams
from polyzero.train.driver import Trainer

ROLL, STOP = 0, 1  # pig's actions


def _constant_net(num_actions, logits=None, value=0.0):
    """A stand-in network: fixed logits and value for every position."""
    fixed = np.zeros(num_actions, np.float32) if logits is None else np.asarray(logits, np.float32)

    def evaluate(obs):
        n = len(obs)
        return np.tile(fixed, (n, 1)), np.full(n, value, np.float32)

    return evaluate


def _pig_model(roots, evaluate, seed=0):
    game = load_game("pig")
    return SimulatorModel(
        roots,
        ObservationEncoder(game),
        evaluate,
        game.num_distinct_actions(),
        rng=np.random.default_rng(seed),
        width=game.max_chance_outcomes(),
    )


def test_visits_below_a_chance_node_track_the_outcome_probabilities():
    game = load_game("pig")
    root = game.new_initial_state()
    # A prior that always rolls: nearly every simulation passes the chance node below "roll".
    model = _pig_model([root], _constant_net(2, [20.0, -20.0]))
    params = SearchParams(num_simulations=1200, selection="muzero", dirichlet_fraction=0.0)
    result = search(model, params, np.random.default_rng(1))
    tree = result.tree
    node = tree.children[0, 0, ROLL]
    assert tree.chance[0, node] and not tree.chance[0, 0]
    np.testing.assert_allclose(tree.prior[0, node], np.full(6, 1 / 6), atol=1e-6)  # the probabilities
    kids = tree.children[0, node]
    visits = np.array([tree.visits[0, k] if k >= 0 else 0 for k in kids], float)
    freq = visits / visits.sum()
    assert visits.sum() > 1000
    assert np.abs(freq - 1 / 6).max() < 0.04, freq


def test_a_new_chance_node_is_valued_by_one_sampled_outcome_for_its_mover():
    """Rolling a 1 ends pig's turn: the opponent moves next (value -v); otherwise the
    roller goes on (value +v); a new chance node takes one of the two, 1/6 vs 5/6."""
    game = load_game("pig")
    roots = [game.new_initial_state() for _ in range(600)]
    model = _pig_model(roots, _constant_net(2, value=0.5), seed=3)
    model.initial()
    batch = len(roots)
    exp = model.step(
        np.zeros(batch, np.int32), np.full(batch, ROLL, np.int32), np.ones(batch, np.int32), np.ones(batch, bool)
    )
    assert exp.chance.all() and not exp.terminal.any()
    assert set(np.round(exp.value, 6)) == {0.5, -0.5}
    assert np.mean(exp.value < 0) == pytest.approx(1 / 6, abs=0.05)
    assert (exp.discount == 1.0).all()  # the chance node keeps the roller's perspective
    np.testing.assert_allclose(np.exp(exp.prior_logits[0]), np.full(6, 1 / 6), rtol=1e-6)


def test_backgammon_chance_nodes_hold_the_dice_probabilities():
    game = load_game("backgammon")
    cfg = build_config("backgammon", "alphazero", overrides=['net.kind="mlp"'])
    algo = make_algorithm(cfg, game)
    state = game.new_initial_state()
    rng = np.random.default_rng(0)
    while state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        state.apply_action(outcomes[rng.choice(len(outcomes), p=probs)])
    torch.manual_seed(0)
    result = algo.search(
        algo.make_evaluator(algo.build_network(), "cpu"), [state], cfg.search.params(40), rng, add_noise=False
    )
    assert result.root_visits.shape == (1, game.num_distinct_actions()) and result.root_visits.sum() == 40
    tree = result.tree
    chance_nodes = [n for n in np.flatnonzero(tree.chance[0, : tree.num_nodes[0]]) if tree.parent[0, n] == 0]
    assert chance_nodes
    for node in chance_nodes:  # the root's moves lead to the opponent's roll
        after = state.clone()
        after.apply_action(int(tree.action[0, node]))
        expected = np.zeros(tree.prior.shape[2])
        for outcome, p in after.chance_outcomes():
            expected[outcome] = p
        np.testing.assert_allclose(tree.prior[0, node], expected, atol=1e-6)


SMALL = SMALL_RUN + ['net.kind="mlp"']


@pytest.mark.parametrize("game", ["pig", "nannon", "backgammon"])
def test_self_play_through_dice(tmp_path, game):
    extra = ["selfplay.max_moves=40"] if game == "backgammon" else []
    cfg = build_config(game, "alphazero", overrides=SMALL + extra + ["train.steps=2"])
    trainer = Trainer.create(cfg, tmp_path / game, progress=False)
    trainer.run()
    assert trainer.step == 2 and trainer.selfplay_stats["games"] > 0
    assert np.isfinite(trainer.replay.data["outcome"][: len(trainer.replay)]).all()


def test_resumed_run_with_dice_reaches_the_same_weights(tmp_path):
    """Games in flight are rebuilt from their histories, chance outcomes included."""
    steps = SMALL + ["train.checkpoint_every=2"]
    Trainer.create(
        build_config("pig", "alphazero", overrides=steps + ["train.steps=5"]), tmp_path / "full", progress=False
    ).run()
    Trainer.create(
        build_config("pig", "alphazero", overrides=steps + ["train.steps=2"]), tmp_path / "split", progress=False
    ).run()
    Trainer.resume(tmp_path / "split", ["train.steps=5"], progress=False).run()
    assert_same_final_weights(tmp_path / "full", tmp_path / "split")


def test_expectation_backup_makes_chance_nodes_worth_the_mean_of_their_outcomes():
    """search.chance_backup = "expectation": every chance node's value is
    sum_o p(o) Q(o) / sum_o p(o) over its expanded outcomes (expectimax)."""
    game = load_game("pig")

    def varied(obs):  # values that differ between positions, so the mean is not trivial
        flat = obs.reshape(len(obs), -1)
        return np.zeros((len(obs), 2), np.float32), np.tanh(flat @ np.linspace(-1, 1, flat.shape[1]))

    params = SearchParams(num_simulations=300, selection="muzero", dirichlet_fraction=0.0, chance_backup="expectation")
    tree = search(_pig_model([game.new_initial_state()], varied, seed=2), params, np.random.default_rng(4)).tree
    checked = 0
    for node in np.flatnonzero(tree.chance[0, : tree.num_nodes[0]]):
        kids = [(a, c) for a, c in enumerate(tree.children[0, node]) if c >= 0]
        if len(kids) < 2:
            continue
        q = [tree.reward[0, c] + tree.discount[0, c] * tree.value[0, c] for _, c in kids]
        p = [tree.prior[0, node, a] for a, _ in kids]
        assert tree.value[0, node] == pytest.approx(np.dot(p, q) / np.sum(p), rel=1e-6)
        checked += 1
    assert checked >= 3
