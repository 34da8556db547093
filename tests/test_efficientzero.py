"""EfficientZero's switches (Ye et al. 2021): the value prefix (Section 4.2) and the
model-based off-policy correction (Section 4.3) -- their targets, the search's edge
rewards, and training steps with each switch on CartPole."""

import numpy as np
import pytest
import torch

from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.nets.support import support_to_scalar
from polyzero.nets.value_prefix import value_prefix_targets
from polyzero.replay import SequenceReplay
from test_muzero import _segment


# ------------------------------------------------------------------ value prefix (Section 4.2)
def test_value_prefix_targets_are_discounted_sums_restarting_every_horizon():
    # H = 2, gamma = 0.5: P1 = u1, P2 = u1 + .5 u2, P3 = u3 (restart), P4 = u3 + .5 u4, P5 = u5
    got = value_prefix_targets(np.array([[1.0, 2, 3, 4, 5]]), horizon=2, discount=0.5)
    assert np.allclose(got, [[1, 2, 3, 5, 5]])
    assert np.allclose(value_prefix_targets(np.array([[1.0, 2, 3]]), 5, 0.5), [[1, 2, 2.75]])


def test_replay_reward_targets_become_prefix_sums_that_stay_flat_past_the_end():
    replay = SequenceReplay(
        16,
        (1,),
        3,
        unroll_steps=5,
        td_steps=3,
        discount=0.5,
        board_game=False,
        prioritized=False,
        value_prefix_horizon=3,
    )
    replay.add(_segment(4, rewards=[1, 2, 4, 8]))
    t = replay.unroll_targets(np.array([0, 2]), np.random.default_rng(0))
    # from t = 0: u = 1, 2, 4 | 8, 0 -> P = 1, 1 + 1, 2 + 1 | 8, 8 (nothing past the end)
    assert np.allclose(t["target_reward"][0], [0, 1, 2, 3, 8, 8])
    # from t = 2: u = 4, 8, 0 | 0, 0 -> P = 4, 8, 8 | 0, 0 (the sum restarts after 3 steps)
    assert np.allclose(t["target_reward"][1], [0, 4, 8, 8, 0, 0])


def _cartpole_algo(*overrides):
    from polyzero.algos import make_algorithm
    from polyzero.games import load_game

    cfg = build_config("cartpole", "muzero", overrides=["muzero.support=10", "net.inference=eager", *overrides])
    return cfg, make_algorithm(cfg, load_game("cartpole"))


def test_search_edge_rewards_are_the_prefix_increments_with_the_lstm_reset_every_h():
    """A path of 5 steps from the roots through the search's recurrent function against
    the same steps by hand: r_k = (P_k - P_{k-1}) / gamma^(k-b-1), and the LSTM state
    and the prefix restart after every H-th step."""
    torch.manual_seed(0)
    horizon, gamma = 2, 0.9
    cfg, algo = _cartpole_algo(
        "muzero.value_prefix=true", f"muzero.value_prefix_horizon={horizon}", f"muzero.discount={gamma}"
    )
    net = algo.build_network().eval()
    evaluate = algo.make_evaluator(net, "cpu")
    obs = np.random.default_rng(0).random((3, *algo.encoder.shape)).astype(np.float32)
    row, _, _ = evaluate.initial(obs)
    size = net.prefix_head.cell.size
    assert row.shape == (3, 32 + 2 * size + 2) and not row[:, 32:].any()  # zero state, prefix 0, depth 0
    actions = np.array([[0, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 0], [1, 1, 1]])
    with torch.no_grad():
        s, lstm, before = net.represent(torch.from_numpy(obs)), None, torch.zeros(3)
        for k, a in enumerate(actions, start=1):
            reward, _, value, row = evaluate.recurrent(row, a)
            s, _ = net.dynamics(s, torch.from_numpy(a))
            out, lstm = net.value_prefix(s, lstm)
            prefix = support_to_scalar(out, 10)
            offset = (k - 1) % horizon
            expected = (prefix - (before if offset else 0.0)) / gamma**offset
            assert np.allclose(reward, expected.numpy(), atol=1e-5), k
            assert np.allclose(row[:, :32], s.numpy(), atol=1e-5) and (row[:, -1] == k).all()
            if k % horizon == 0:  # the run ends here: its children start from zero
                lstm = None
                assert not row[:, 32:-1].any()
            else:
                assert np.allclose(row[:, -2], prefix.numpy(), atol=1e-5)
            before = prefix
    assert not np.allclose(reward, 0.0)  # an untrained head: the comparison above meant something


def test_every_inference_backend_steps_the_value_prefix_as_eager_pytorch():
    from polyzero.nets.compiled import onnxruntime_available
    from polyzero.nets.muzero import MuZeroInference

    torch.manual_seed(0)
    _, algo = _cartpole_algo("muzero.value_prefix=true", "muzero.value_prefix_horizon=2")
    net = algo.build_network()
    obs = np.random.default_rng(0).random((3, *algo.encoder.shape)).astype(np.float32)
    paths = ["eager", "script"] + (["onnx"] if onnxruntime_available() else [])
    outputs = {}
    for path in paths:
        evaluate = MuZeroInference(net, "cpu", path)
        row, _, _ = evaluate.initial(obs)
        rewards = []
        for a in ([0, 1, 0], [1, 1, 0], [0, 0, 1]):  # across a reset (H = 2)
            reward, _, _, row = evaluate.recurrent(row, np.array(a))
            rewards.append(reward)
        outputs[path] = np.concatenate([np.ravel(rewards), row.ravel()])
    for path in paths[1:]:  # ONNX Runtime's kernels differ from PyTorch's by ~1e-4 after h^-1
        assert np.allclose(outputs[path], outputs["eager"], atol=1e-3), path


def test_value_prefix_searches_and_trains_on_cartpole_and_is_refused_for_board_games(tmp_path):
    from polyzero.algos import make_algorithm
    from polyzero.games import load_game

    torch.manual_seed(0)
    cfg, algo = _cartpole_algo("muzero.value_prefix=true", "search.num_simulations=8")
    net = algo.build_network()
    obs = np.random.default_rng(1).random((4, *algo.encoder.shape)).astype(np.float32)
    result = algo.search_observations(
        algo.make_evaluator(net, "cpu"),
        obs,
        np.ones((4, 2), bool),
        cfg.search.params(),
        np.random.default_rng(0),
        add_noise=False,
    )
    assert np.isfinite(result.root_value).all() and result.root_visits.sum(1).min() > 0
    first, last = _train_steps(algo, net, _batch(algo))
    print("value prefix: first", first, "last", last)
    assert last["reward"] < 0.5 * first["reward"] and last["total"] < 0.7 * first["total"]
    from polyzero.export import export_network

    with pytest.raises(UsageError, match="value-prefix"):
        export_network("muzero", net, algo.encoder.shape, "onnx", tmp_path / "model.onnx", {})
    assert not list(tmp_path.iterdir())  # no graph half-described
    ttt = build_config("tic_tac_toe", "muzero", overrides=["muzero.value_prefix=true"])
    with pytest.raises(UsageError, match="intermediate rewards"):
        make_algorithm(ttt, load_game("tic_tac_toe"))


def _batch(algo, n=12, **segment):
    """A minibatch from one 40-step CartPole-shaped episode (reward 1 a step)."""
    rng = np.random.default_rng(0)
    replay = algo.make_replay()
    steps = 40
    seg = _segment(
        steps, num_actions=algo.num_actions, rewards=np.ones(steps), values=np.linspace(20, 1, steps), **segment
    )
    seg["obs"] = rng.random((steps, *algo.encoder.shape)).astype(np.float32)
    replay.add(seg)
    batch = replay.sample(n, rng)
    return {k: torch.from_numpy(v) for k, v in batch.items() if k != "index"}


def _train_steps(algo, net, batch, steps=40):
    """Adam steps on one batch: the loss parts at the first and the last step."""
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    records = []
    for _ in range(steps):
        loss, parts = algo.loss(net, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        records.append({"total": loss.item(), **{k[5:]: v.item() for k, v in parts.items() if k != "priority"}})
    return records[0], records[-1]


# ------------------------------------------------------------------ off-policy correction (Section 4.3)
def _aged_replay():
    """n = 5, one step of horizon per 10 positions of age; 40 positions stored (one
    episode), rewards 1, 2, 4, ... and root values 100 + position."""
    replay = SequenceReplay(
        64,
        (1,),
        3,
        unroll_steps=1,
        td_steps=5,
        discount=0.5,
        board_game=False,
        prioritized=False,
        horizon_decay_positions=10,
    )
    replay.add(_segment(40, rewards=2.0 ** (np.arange(40) % 4), values=100.0 + np.arange(40)))
    return replay


def test_off_policy_horizon_shrinks_one_step_per_decay_of_age_down_to_one():
    replay = _aged_replay()
    # l = clip(5 - floor((40 - t) / 10), 1, 5): age 5 -> 5, 15 -> 4, 28 -> 3, 31 -> 2, 40 -> 1 (clipped from 1)
    assert replay.bootstrap_steps(np.array([35, 25, 12, 9, 0])).tolist() == [5, 4, 3, 2, 1]
    replay.add(_segment(10))  # ten more positions age every sample by one step
    assert replay.bootstrap_steps(np.array([35, 25, 12, 9, 0])).tolist() == [4, 3, 2, 1, 1]
    plain = SequenceReplay(64, (1,), 3, unroll_steps=1, td_steps=5, discount=0.5, board_game=False, prioritized=False)
    plain.add(_segment(40))
    assert plain.bootstrap_steps(np.array([0, 35])).tolist() == [5, 5]


def test_off_policy_value_targets_bootstrap_after_the_shortened_horizon():
    replay = _aged_replay()
    t = replay.unroll_targets(np.array([12, 0]), np.random.default_rng(0))
    # t = 12, l = 3: u = 1, 2, 4 (positions 12..14), bootstrap v_15 = 115
    #   z_12 = 1 + .5 * 2 + .25 * 4 + .125 * 115;  z_13 = 2 + .5 * 4 + .25 * 8 + .125 * 116
    assert np.allclose(t["target_value"][0], [3 + 115 / 8, 6 + 116 / 8])
    # t = 0, l = 1: z_0 = 1 + .5 * 101, z_1 = 2 + .5 * 102
    assert np.allclose(t["target_value"][1], [1 + 101 / 2, 2 + 102 / 2])


def test_reanalyse_plans_fresh_searches_where_the_shortened_horizon_ends():
    from polyzero.algos.reanalyse import plan

    replay = _aged_replay()
    work = plan(replay, np.array([12, 0]))
    assert work["boot"].tolist() == [1, 2, 15, 16]  # t + k + l for k = 0, 1: l = 1 at t = 0, 3 at t = 12
    assert work["boot_obs"][:, 0].tolist() == [1, 2, 15, 16]


def test_off_policy_correction_trains_on_cartpole_and_needs_a_searched_bootstrap():
    torch.manual_seed(0)
    on = ["muzero.off_policy_correction=true", "muzero.reanalyse_fraction=0.8", "muzero.reanalyse_bootstrap=search"]
    cfg, algo = _cartpole_algo(*on, "train.steps=1", "train.positions_per_step=10")
    replay = algo.make_replay()
    assert replay.horizon_decay_positions == pytest.approx(3.0)  # 0.3 * 1 step * 10 positions
    first, last = _train_steps(algo, algo.build_network(), _batch(algo))
    print("off-policy correction: first", first, "last", last)
    assert last["value"] < 0.5 * first["value"] and last["total"] < 0.7 * first["total"]
    with pytest.raises(UsageError, match="reanalyse_bootstrap"):
        build_config("cartpole", "muzero", overrides=on[:2])
    with pytest.raises(UsageError, match="does not read: tic_tac_toe is a board game"):
        build_config("tic_tac_toe", "muzero", overrides=on)
