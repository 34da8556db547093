"""Board symmetries (polyzero.games.symmetry): each maps a position to the position of
the mapped moves, and the policy with it."""

import numpy as np
import pytest

from polyzero.games import ObservationEncoder, load_game
from polyzero.games.symmetry import augment, board_symmetries


@pytest.mark.parametrize("name,count", [("connect_four", 1), ("tic_tac_toe", 7), ("go(board_size=5)", 7),
                                        ("hex(board_size=5)", 0), ("othello", 0)])
def test_a_symmetry_maps_a_position_to_the_position_of_the_mapped_moves(name, count):
    game = load_game(name)
    enc = ObservationEncoder(game)
    symmetries = board_symmetries(game, enc.shape)
    assert len(symmetries) == count
    rng = np.random.default_rng(0)
    for sym in symmetries:
        inverse = np.argsort(sym.action_index)  # the move a is seen as inverse[a]
        assert sorted(sym.action_index) == list(range(game.num_distinct_actions()))
        state, image = game.new_initial_state(), game.new_initial_state()
        for _ in range(5):
            a = int(rng.choice(state.legal_actions()))
            state.apply_action(a)
            image.apply_action(int(inverse[a]))
        obs = enc.encode_one(state).reshape(-1)
        assert np.array_equal(obs[sym.obs_index], enc.encode_one(image).reshape(-1))
        legal = np.asarray(state.legal_actions_mask(), bool)
        assert np.array_equal(legal[sym.action_index], np.asarray(image.legal_actions_mask(), bool))


def test_augment_draws_the_identity_and_every_symmetry():
    game = load_game("tic_tac_toe")
    enc = ObservationEncoder(game)
    symmetries = board_symmetries(game, enc.shape)
    state = game.new_initial_state()
    state.apply_action(1)
    obs = enc.encode_one(state)
    policy = np.arange(9, dtype=np.float32) / 36
    batch = {"obs": np.repeat(obs[None], 400, 0), "policy": np.repeat(policy[None], 400, 0),
             "value": np.full(400, 0.5, np.float32)}
    out = augment(batch, np.random.default_rng(0), symmetries)
    images = {(obs.reshape(-1)[s.obs_index].tobytes(), policy[s.action_index].tobytes()) for s in symmetries}
    images.add((obs.tobytes(), policy.tobytes()))
    seen = {(o.tobytes(), p.tobytes()) for o, p in zip(out["obs"], out["policy"])}
    assert seen <= images and len(seen) == 8  # the 8 images of this position are distinct
    assert (out["value"] == 0.5).all()
