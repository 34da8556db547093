"""Board symmetries (polyzero.games.symmetry): each maps a position to the position of
the mapped moves, and the policy with it."""

import numpy as np
import pytest

from polyzero.games import ObservationEncoder, load_game
from polyzero.games.symmetry import apply_symmetries, augment, board_symmetries
from polyzero.replay import SequenceReplay


@pytest.mark.parametrize(
    "name,count",
    [("connect_four", 1), ("tic_tac_toe", 7), ("go(board_size=5)", 7), ("hex(board_size=5)", 0), ("othello", 0)],
)
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
    batch = {
        "obs": np.repeat(obs[None], 400, 0),
        "policy": np.repeat(policy[None], 400, 0),
        "value": np.full(400, 0.5, np.float32),
    }
    out = augment(batch, np.random.default_rng(0), symmetries)
    images = {(obs.reshape(-1)[s.obs_index].tobytes(), policy[s.action_index].tobytes()) for s in symmetries}
    images.add((obs.tobytes(), policy.tobytes()))
    seen = {(o.tobytes(), p.tobytes()) for o, p in zip(out["obs"], out["policy"])}
    assert seen <= images and len(seen) == 8  # the 8 images of this position are distinct
    assert (out["value"] == 0.5).all()


def _connect_four_segment(game, enc, actions, policies):
    """A finished game's replay segment with the given moves and stored policies."""
    state, obs, legal = game.new_initial_state(), [], []
    for a in actions:
        obs.append(enc.encode_one(state))
        legal.append(np.asarray(state.legal_actions_mask(), bool))
        state.apply_action(a)
    n = len(actions)
    return {
        "obs": np.stack(obs),
        "action": np.asarray(actions),
        "reward": np.zeros(n, np.float32),
        "root_value": np.zeros(n, np.float32),
        "policy": policies,
        "legal": np.stack(legal),
        "outcome": np.where(np.arange(n) % 2 == 0, 1.0, -1.0).astype(np.float32),
        "sampleable": np.ones(n, bool),
        "done": True,
    }


def test_a_muzero_unroll_under_the_mirror_is_the_unroll_of_the_mirrored_game():
    game = load_game("connect_four")
    enc = ObservationEncoder(game)
    mirror = board_symmetries(game, enc.shape)
    actions = [3, 4, 0, 4, 1, 4, 2]  # the first player wins along the bottom row
    policies = np.random.default_rng(1).dirichlet(np.ones(7), size=len(actions)).astype(np.float32)
    mirrored_actions = [6 - a for a in actions]
    replays = []
    for acts, pol in ((actions, policies), (mirrored_actions, policies[:, ::-1])):
        replay = SequenceReplay(
            32,
            enc.shape,
            7,
            unroll_steps=5,
            td_steps=10,
            discount=1.0,
            board_game=True,
            prioritized=False,
            next_observations=True,
        )
        replay.add(_connect_four_segment(game, enc, acts, pol))
        replays.append(replay)
    slots = np.arange(len(actions))
    rng = np.random.default_rng(0)
    seen = apply_symmetries(
        replays[0].unroll_targets(slots, rng),
        np.ones(len(slots), int),
        mirror,
        obs_keys=("obs", "next_obs"),
        policy_keys=("target_policy",),
        action_keys=("actions",),
    )
    image = replays[1].unroll_targets(slots, rng)
    inside = image["policy_mask"][:, :-1] > 0  # actions past the game's end are random
    assert np.array_equal(seen["obs"], image["obs"])
    assert np.array_equal(seen["next_obs"], image["next_obs"])  # the consistency loss's targets
    assert np.array_equal(seen["actions"][inside], image["actions"][inside])
    assert np.allclose(seen["target_policy"], image["target_policy"])
    assert np.array_equal(seen["target_value"], image["target_value"])


def test_muzero_replay_draws_unrolls_under_symmetries_when_asked():
    from polyzero.algos.muzero import MuZero
    from polyzero.config import build_config

    game = load_game("connect_four")
    seen = {}
    for on in (False, True):
        cfg = build_config("connect_four", "muzero", overrides=[f"train.symmetries={str(on).lower()}"])
        replay = MuZero(cfg, game).make_replay()
        enc = ObservationEncoder(game, cfg.net.perspective)
        policies = np.tile(np.eye(7, dtype=np.float32)[0], (7, 1))  # all mass on column 0
        replay.add(_connect_four_segment(game, enc, [3, 4, 0, 4, 1, 4, 2], policies))
        batch = replay.sample(400, np.random.default_rng(0))
        seen[on] = batch["target_policy"][:, 0].argmax(-1)
    assert set(seen[False]) == {0}
    assert set(seen[True]) == {0, 6}  # the mirror moves the mass to column 6
