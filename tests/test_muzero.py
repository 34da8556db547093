"""MuZero: the value transform, replay targets, prioritized sampling, the unrolled
loss, learning on tic-tac-toe, and exact resume with priorities."""

import io

import numpy as np
import pytest
import torch

from conftest import SMALL_RUN, assert_same_final_weights, score_against_untrained
from polyzero.algos.muzero import scale_gradient
from polyzero.config import build_config
from polyzero.nets.support import h, h_inverse, scalar_to_support, support_to_scalar, two_hot
from polyzero.replay import SequenceReplay
from polyzero.train.driver import Trainer


# ------------------------------------------------------------------ value transform (Appendix F)
def test_h_and_its_inverse_round_trip():
    x = torch.tensor([-1000.0, -37.5, -3.7, -1.0, 0.0, 0.25, 3.7, 42.0, 1000.0], dtype=torch.float64)
    assert torch.allclose(h_inverse(h(x)), x, rtol=1e-9, atol=1e-9)
    # h(3) = sqrt(4) - 1 + 0.003 = 1.003, and h is odd
    assert h(torch.tensor(3.0, dtype=torch.float64)).item() == pytest.approx(1.003, abs=1e-12)
    assert torch.equal(h(-x), -h(x))


def test_two_hot_of_3_7_is_0_3_on_3_and_0_7_on_4():
    phi = two_hot(torch.tensor([3.7], dtype=torch.float64), support=5)[0]
    expected = np.zeros(11)
    expected[5 + 3], expected[5 + 4] = 0.3, 0.7
    assert np.allclose(phi.numpy(), expected, atol=1e-12)
    phi = two_hot(torch.tensor([-2.25], dtype=torch.float64), support=5)[0]
    assert phi[5 - 3].item() == pytest.approx(0.25) and phi[5 - 2].item() == pytest.approx(0.75)


def test_expectation_of_the_projection_recovers_the_scalar():
    x = torch.tensor([-250.0, -3.7, 0.0, 1.5, 3.7, 99.0], dtype=torch.float64)
    logits = torch.log(scalar_to_support(x, 300).clamp_min(1e-300))
    assert torch.allclose(support_to_scalar(logits, 300), x, atol=1e-6)


# ------------------------------------------------------------------ targets (Appendix G)
def _segment(n, num_actions=3, rewards=None, values=None, outcome=None, done=True):
    return {
        "obs": np.arange(n, dtype=np.float32)[:, None],
        "action": np.arange(n) % num_actions,
        "reward": np.asarray(rewards if rewards is not None else np.zeros(n), np.float32),
        "root_value": np.asarray(values if values is not None else np.zeros(n), np.float32),
        "policy": np.eye(num_actions, dtype=np.float32)[np.arange(n) % num_actions],
        "legal": np.ones((n, num_actions), bool),
        "outcome": np.asarray(outcome if outcome is not None else np.zeros(n), np.float32),
        "sampleable": np.ones(n, bool),
        "done": np.array([done]),
    }


def _single_agent_replay(**kw):
    return SequenceReplay(
        16, (1,), 3, unroll_steps=2, td_steps=3, discount=0.5, board_game=False, prioritized=False, **kw
    )


def test_n_step_value_targets_with_discount_and_episode_end():
    replay = _single_agent_replay()
    replay.add(_segment(5, rewards=[1, 2, 3, 4, 5], values=[10, 20, 30, 40, 50]))
    t = replay.unroll_targets(np.array([0, 2, 3, 4]), np.random.default_rng(0))
    # z_0 = 1 + .5*2 + .25*3 + .125*v_3 = 7.75; z_1 = 2 + .5*3 + .25*4 + .125*v_4 = 10.75;
    # z_2 = 3 + .5*4 + .25*5 (no bootstrap past the end) = 6.25; z_3 = 4 + .5*5; z_4 = 5; past the end 0.
    assert np.allclose(t["target_value"][0], [7.75, 10.75, 6.25])
    assert np.allclose(t["target_value"][1], [6.25, 6.5, 5.0])
    assert np.allclose(t["target_value"][2], [6.5, 5.0, 0.0])
    assert np.allclose(t["target_value"][3], [5.0, 0.0, 0.0])
    assert t["search_value"].tolist() == [10, 30, 40, 50]  # nu_t of each sample, for its priority


def test_unroll_alignment_of_actions_rewards_policies_and_masks():
    replay = _single_agent_replay()
    replay.add(_segment(3, rewards=[1, 2, 3]))
    replay.add(_segment(4, rewards=[7, 8, 9, 10]))  # a second episode right behind the first
    t = replay.unroll_targets(np.array([0, 1, 2]), np.random.default_rng(0))
    assert t["obs"][:, 0].tolist() == [0, 1, 2]
    assert t["actions"][0].tolist() == [0, 1]  # a_t, a_{t+1}
    assert t["target_reward"][0].tolist() == [0, 1, 2]  # u_{t+1} after a_t, u_{t+2} after a_{t+1}
    assert t["target_reward"][1].tolist() == [0, 2, 3]
    assert t["target_reward"][2].tolist() == [0, 3, 0]  # absorbing after the episode's end
    assert t["policy_mask"].tolist() == [[1, 1, 1], [1, 1, 0], [1, 0, 0]]
    assert np.array_equal(t["target_policy"][1, 0], np.eye(3)[1])
    assert not t["target_policy"][2, 1:].any()
    assert set(t["actions"][2, 1:].tolist()) <= {0, 1, 2}  # random action past the end


def test_consistency_targets_are_the_stored_next_observations():
    replay = _single_agent_replay(next_observations=True)
    replay.add(_segment(3))
    replay.add(_segment(4))
    t = replay.unroll_targets(np.array([0, 1, 2, 3]), np.random.default_rng(0))
    assert t["next_obs"][..., 0].tolist() == [[1, 2], [2, 0], [0, 0], [1, 2]]  # o_{t+1}, o_{t+2}
    assert t["next_obs_mask"].tolist() == [[1, 1], [1, 0], [0, 0], [1, 1]]  # none past the end


def test_consistency_terminal_targets_the_final_position_right_after_the_last_move():
    """muzero.consistency_terminal: a finished game keeps its final position, the target
    of the step right after its last move; a game cut short has none."""
    replay = SequenceReplay(
        16,
        (1,),
        3,
        unroll_steps=3,
        td_steps=10,
        discount=1.0,
        board_game=True,
        prioritized=False,
        next_observations=True,
        final_observations=True,
    )
    finished = {
        **_segment(3),
        "final_obs": np.array([[0], [0], [9]], np.float32),
        "has_final": np.array([False, False, True]),
    }
    cut = {**_segment(2), "final_obs": np.zeros((2, 1), np.float32), "has_final": np.zeros(2, bool)}
    replay.add(finished)
    replay.add(cut)
    t = replay.unroll_targets(np.array([1, 2, 3]), np.random.default_rng(0))
    assert t["next_obs"][..., 0].tolist() == [[2, 9, 0], [9, 0, 0], [1, 0, 0]]
    assert t["next_obs_mask"].tolist() == [[1, 1, 0], [1, 0, 0], [1, 0, 0]]


def test_terminal_value_targets_the_final_position_with_the_value_past_the_end():
    """muzero.terminal_value: every sample carries its game's final position and the value
    the side to move there has (the negated outcome of the last mover; 0 after a draw); a
    game cut short has none."""
    replay = SequenceReplay(
        16,
        (1,),
        3,
        unroll_steps=2,
        td_steps=10,
        discount=1.0,
        board_game=True,
        prioritized=False,
        final_observations=True,
        final_values=True,
    )
    won = {
        **_segment(3, outcome=[-1, 1, -1]),
        "final_obs": np.array([[0], [0], [9]], np.float32),
        "has_final": np.array([False, False, True]),
    }
    drawn = {**_segment(2), "final_obs": np.array([[0], [7]], np.float32), "has_final": np.array([False, True])}
    cut = {**_segment(2, done=False), "final_obs": np.zeros((2, 1), np.float32), "has_final": np.zeros(2, bool)}
    for segment in (won, drawn, cut):
        replay.add(segment)
    t = replay.unroll_targets(np.array([0, 2, 3, 5]), np.random.default_rng(0))
    assert t["final_obs"][:, 0].tolist() == [9, 9, 7, 0]
    assert t["final_value"].tolist() == [1, 1, 0, 0]  # the last mover lost (-1): the next one won
    assert t["final_mask"].tolist() == [1, 1, 1, 0]
    assert t["target_value"][1].tolist() == [-1, 1, -1]  # the unroll gives the step past the end the same


def test_consistency_terminal_keeps_a_finished_games_final_position_in_its_segment():
    from polyzero.algos import make_algorithm
    from polyzero.algos.base import Trajectory
    from polyzero.errors import UsageError
    from polyzero.games import load_game

    with pytest.raises(UsageError, match="consistency_terminal needs the consistency loss"):
        build_config("tic_tac_toe", "muzero", overrides=["muzero.consistency_terminal=true"])
    cfg = build_config(
        "tic_tac_toe", "muzero", overrides=["muzero.consistency_weight=2", "muzero.consistency_terminal=true"]
    )
    game = load_game("tic_tac_toe")
    algo = make_algorithm(cfg, game)
    assert algo.records_final_observation
    state = game.new_initial_state()
    traj = Trajectory()
    for action in (4, 0, 2, 1, 6):  # the first player wins on the diagonal 2-4-6
        traj.observations.append(algo.encode([state])[0])
        traj.policies.append(np.full(9, 1 / 9, np.float32))
        traj.players.append(state.current_player())
        traj.actions.append(action)
        traj.legal.append(np.isin(np.arange(9), state.legal_actions()))
        traj.root_values.append(0.0)
        traj.returns_before.append(0.0)
        state.apply_action(action)
    traj.returns = np.asarray(state.returns(), np.float32)
    # The step after the first player's winning move is the second player's: the final
    # position is seen as the second player sees it (colour planes swapped), not as the
    # encoder shows a terminal state by default (player 0's view).
    final = algo.encode_final(state, last_mover=0)
    assert np.array_equal(final, algo.encoder.encode([state], players=[1])[0])
    assert not np.array_equal(final, algo.encode([state])[0])
    traj.final_observation = final
    seg = algo.trajectory_examples(traj)
    assert seg["has_final"].tolist() == [False] * 4 + [True]
    assert np.array_equal(seg["final_obs"][-1], final) and not seg["final_obs"][:-1].any()
    assert seg["outcome"].tolist() == [1, -1, 1, -1, 1]
    traj.final_observation = None  # a game cut at selfplay.max_moves: no final position
    assert not algo.trajectory_examples(traj)["has_final"].any()


def test_self_play_keeps_the_final_position_as_the_next_mover_would_see_it():
    from polyzero.algos import make_algorithm
    from polyzero.games import load_game
    from polyzero.train.selfplay import SelfPlayActor

    cfg = build_config(
        "tic_tac_toe",
        "muzero",
        overrides=[
            "muzero.consistency_weight=2",
            "muzero.consistency_terminal=true",
            "search.num_simulations=2",
            "selfplay.concurrent_games=8",
        ],
    )
    game = load_game("tic_tac_toe")
    algo = make_algorithm(cfg, game)
    actor = SelfPlayActor(algo, game, cfg, algo.make_evaluator(algo.build_network(), "cpu"), seed=0)
    trajs = []
    while len({t.players[-1] for t in trajs}) < 2:  # games ended by either player
        trajs += [t for t in actor.tick() if t.ended]
    for t in trajs:
        state = game.new_initial_state()
        for a in t.actions:
            state.apply_action(a)
        next_mover = 1 - t.players[-1]
        assert np.array_equal(t.final_observation, algo.encoder.encode([state], players=[next_mover])[0])


def test_board_game_targets_are_the_outcome_for_the_mover_and_alternate_past_the_end():
    replay = SequenceReplay(16, (1,), 3, unroll_steps=3, td_steps=10, discount=1.0, board_game=True, prioritized=False)
    replay.add(_segment(3, outcome=[1, -1, 1]))  # the first player won with the last move
    t = replay.unroll_targets(np.array([1]), np.random.default_rng(0))
    # positions 1, 2, then two plies past the end: the side to move there lost, then won
    assert t["target_value"][0].tolist() == [-1, 1, -1, 1]
    assert t["target_reward"][0].tolist() == [0, 0, 0, 0]


def test_board_game_terminal_reward_is_the_last_movers_outcome_and_the_end_absorbs_at_0():
    """muzero.terminal_reward (the published pseudocode's board games): the final
    outcome is the last move's reward, and past the end value and reward are 0."""
    replay = SequenceReplay(
        16, (1,), 3, unroll_steps=3, td_steps=10, discount=1.0, board_game=True, prioritized=False, terminal_reward=True
    )
    replay.add(_segment(3, rewards=[0, 0, 1], outcome=[1, -1, 1]))
    t = replay.unroll_targets(np.array([1]), np.random.default_rng(0))
    assert t["target_value"][0].tolist() == [-1, 1, 0, 0]
    assert t["target_reward"][0].tolist() == [0, 0, 1, 0]
    algo, batch = _algo_and_batch(overrides=["muzero.terminal_reward=true"])
    _, parts = algo.loss(algo.build_network(), batch)
    assert "loss/reward" in parts


def test_ring_wraps_and_only_keeps_whole_forward_sequences():
    replay = _single_agent_replay()
    for _ in range(5):
        replay.add(_segment(5, rewards=[1, 1, 1, 1, 1]))
    assert len(replay) == 16 and replay.total_added == 25
    slots, _ = replay.sample_slots(200, np.random.default_rng(1))
    t = replay.unroll_targets(slots, np.random.default_rng(1))
    # every episode of 5 steps: z_t = 1 + .5 + .25 (n = 3 rewards), or fewer near the end
    assert set(np.round(t["target_value"][:, 0], 6)) <= {1.75, 1.5, 1.0}


def test_fresh_policies_feed_only_the_reanalysed_share_and_die_with_their_positions():
    """Appendix H: "this fresh policy is used as the policy target for 80% of updates":
    the first round(f B) rows learn from fresh policies where there are some, the
    others from the self-play search's, which a refresh leaves in place; a position
    overwritten by a new segment loses its fresh policy; old checkpoints load."""
    replay = _single_agent_replay(reanalyse_fraction=0.5)
    replay.add(_segment(6))
    selfplay = replay.data["policy"][:6].copy()
    fresh = np.full((2, 3), 1 / 3, np.float32)
    replay.refresh(np.array([1, 2]), policy=fresh)
    assert np.array_equal(replay.data["policy"][:6], selfplay)  # kept beside, not over
    t = replay.unroll_targets(np.array([0, 0]), np.random.default_rng(0), fresh_rows=1)
    assert np.allclose(t["target_policy"][0], [selfplay[0], fresh[0], fresh[1]])  # fresh where refreshed
    assert np.allclose(t["target_policy"][1], selfplay[:3])  # the other share: self-play's
    batch = replay.sample(4, np.random.default_rng(0))  # f = 0.5 of 4 rows: the first 2
    for row, slot in enumerate(batch["index"]):
        uses = [np.allclose(batch["target_policy"][row, k], 1 / 3) for k in range(3)]
        assert uses == [row < 2 and (slot + k) in (1, 2) for k in range(3)]
    raw = replay.to_bytes()
    for _ in range(3):
        replay.add(_segment(5))  # wraps the ring over slots 1 and 2
    assert not replay.data["fresh"][1:3].any()
    with np.load(io.BytesIO(raw)) as f:  # a checkpoint from before fresh policies existed
        old = {k: f[k] for k in f.files if k not in ("fresh", "fresh_policy")}
    buf = io.BytesIO()
    np.savez(buf, **old)
    restored = _single_agent_replay(reanalyse_fraction=0.5)
    restored.load_bytes(buf.getvalue())
    assert not restored.data["fresh"].any() and np.array_equal(restored.data["policy"][:6], selfplay)


# ------------------------------------------------------------------ prioritized replay (Appendix G)
def test_prioritized_sampling_frequencies_and_importance_weights():
    replay = SequenceReplay(
        8, (1,), 3, unroll_steps=1, td_steps=1, discount=1.0, board_game=False, prioritized=True, alpha=1.0, beta=1.0
    )
    replay.add(_segment(4))
    replay.update_priorities(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]))
    expected = np.array([0.1, 0.2, 0.3, 0.4])
    assert np.allclose(replay.sampling_probabilities()[:4], expected, atol=1e-6)
    slots, weights = replay.sample_slots(40_000, np.random.default_rng(0))
    freq = np.bincount(slots, minlength=8)[:4] / len(slots)
    assert np.allclose(freq, expected, atol=0.01)
    # w_i = (N P(i))^-beta / max_j w_j: slot 0 has the largest weight, 1 / (4 * 0.1) = 2.5
    w = dict(zip(slots.tolist(), weights.tolist()))
    assert w[0] == pytest.approx(1.0) and w[3] == pytest.approx(0.25, rel=1e-5)
    assert w[1] == pytest.approx(0.5, rel=1e-5)


def test_new_positions_enter_with_the_largest_priority():
    replay = SequenceReplay(8, (1,), 3, unroll_steps=1, td_steps=1, discount=1.0, board_game=False, prioritized=True)
    replay.add(_segment(2))
    replay.update_priorities(np.array([0, 1]), np.array([5.0, 0.5]))
    replay.add(_segment(2))
    assert replay.data["priority"][2] == pytest.approx(5.0, rel=1e-5)


# ------------------------------------------------------------------ the loss (Eq. 1, Appendix G)
def test_scale_gradient_scales_only_the_gradient():
    x = torch.tensor([2.0, -3.0], requires_grad=True)
    y = scale_gradient(x, 0.5)
    assert torch.equal(y, x)
    y.sum().backward()
    assert torch.equal(x.grad, torch.tensor([0.5, 0.5]))


def _algo_and_batch(game="tic_tac_toe", overrides=()):
    from polyzero.algos import make_algorithm
    from polyzero.games import load_game

    cfg = build_config(game, "muzero", overrides=list(overrides))
    algo = make_algorithm(cfg, load_game(game))
    replay = algo.make_replay()
    rng = np.random.default_rng(0)
    n = 7
    seg = _segment(n, num_actions=algo.num_actions, outcome=(-1.0) ** np.arange(n))
    seg["obs"] = rng.random((n, *algo.encoder.shape)).astype(np.float32)
    replay.add(seg)
    batch = replay.sample(6, rng)
    return algo, {k: torch.from_numpy(v) for k, v in batch.items() if k != "index"}


def test_loss_sums_the_unrolled_steps_with_one_over_k():
    torch.manual_seed(0)
    algo, batch = _algo_and_batch()
    net = algo.build_network()
    loss, parts = algo.loss(net, batch)
    # the same loss by hand: step 0 in full, steps 1..K at 1/K
    k_steps = batch["actions"].shape[1]
    s = net.represent(batch["obs"])
    total = 0
    for k in range(k_steps + 1):
        if k:
            s, _ = net.dynamics(s, batch["actions"][:, k - 1])
        logits, v = net.predict(s)
        step = (v - batch["target_value"][:, k]) ** 2 - (
            batch["target_policy"][:, k] * torch.log_softmax(logits, -1)
        ).sum(-1) * batch["policy_mask"][:, k]
        total = total + (step / k_steps if k else step)
    assert loss.item() == pytest.approx((total * batch["weight"]).mean().item(), rel=1e-5)
    assert parts["priority"].shape == (6,)
    assert "loss/reward" not in parts  # board games: no reward loss


def test_consistency_loss_is_the_negative_cosine_to_a_stop_gradient_target():
    """EfficientZero's term: -cos(P(proj(s^k)), sg(proj(h(o_{t+k})))) at 1/K per unrolled step,
    on the observations inside the episode; no gradient reaches the target branch."""
    torch.manual_seed(0)
    algo, batch = _algo_and_batch(overrides=["muzero.consistency_weight=2"])
    net = algo.build_network()
    batch["next_obs"].requires_grad_(True)
    loss, parts = algo.loss(net, batch)
    algo.mz.consistency_weight = 0.0
    plain, _ = algo.loss(net, batch)
    k_steps = batch["actions"].shape[1]
    s = net.represent(batch["obs"])
    targets = net.project(net.represent(batch["next_obs"].flatten(0, 1)), predict=False).view(6, k_steps, -1)
    extra = 0
    for k in range(1, k_steps + 1):
        s, _ = net.dynamics(s, batch["actions"][:, k - 1])
        cos = torch.nn.functional.cosine_similarity(net.project(s, predict=True), targets[:, k - 1], dim=-1)
        extra = extra - 2.0 * cos * batch["next_obs_mask"][:, k - 1] / k_steps
    assert loss.item() == pytest.approx(plain.item() + (extra * batch["weight"]).mean().item(), rel=1e-4)
    assert -1.0 <= parts["loss/consistency"].item() <= 1.0
    loss.backward()
    assert batch["next_obs"].grad is None
    assert net.projection_predictor[0].weight.grad is not None


@pytest.mark.parametrize("source", ["search", "network"])
def test_priority_is_the_distance_of_the_value_from_its_target(source):
    """p_i = |nu_i - z_i| (Appendix G): nu the stored search value by default."""
    torch.manual_seed(0)
    algo, batch = _algo_and_batch(overrides=["muzero.prioritized=on", f"muzero.priority_value={source}"])
    batch["search_value"] = torch.linspace(-1, 1, 6)
    net = algo.build_network()
    _, parts = algo.loss(net, batch)
    nu = batch["search_value"] if source == "search" else net.predict(net.represent(batch["obs"]))[1]
    assert torch.allclose(parts["priority"], (nu - batch["target_value"][:, 0]).abs(), atol=1e-6)


def test_half_gradient_enters_the_dynamics():
    """With K = 1 the 1/K factor is 1, so switching gradient scaling changes only the
    1/2 at g's input: g's own parameters get the same gradient, h's get less through g."""
    algo, batch = _algo_and_batch(overrides=["muzero.unroll_steps=1"])
    torch.manual_seed(1)
    weights = algo.build_network().state_dict()
    grads = {}
    for scaling in (True, False):
        algo.mz.gradient_scaling = scaling
        net = algo.build_network()
        net.load_state_dict(weights)
        loss, _ = algo.loss(net, batch)
        loss.backward()
        grads[scaling] = {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}
    for name, g in grads[True].items():
        if name.startswith("dynamics_tower"):
            assert torch.allclose(g, grads[False][name], atol=1e-6), name
    changed = [
        n for n in grads[True] if n.startswith("representation") and not torch.allclose(grads[True][n], grads[False][n])
    ]
    assert changed


def test_categorical_value_and_reward_for_single_agent():
    torch.manual_seed(0)
    algo, batch = _algo_and_batch("cartpole")
    net = algo.build_network()
    logits, value = net.predict(net.represent(batch["obs"]))
    assert value.shape[-1] == 2 * algo.mz.support + 1
    loss, parts = algo.loss(net, batch)
    assert torch.isfinite(loss) and "loss/reward" in parts


# ------------------------------------------------------------------ learning and resume
def test_trained_muzero_beats_untrained_at_equal_search(trained_muzero):
    trainer, untrained = trained_muzero
    result = score_against_untrained(trainer, untrained)
    print("muzero trained vs untrained:", result)
    assert result.score >= 0.65


SMALL = ["train.steps=6", "train.checkpoint_every=2", *SMALL_RUN, 'muzero.prioritized="on"']


def test_resumed_muzero_run_keeps_priorities_and_reaches_the_same_weights(tmp_path):
    Trainer.create(build_config("tic_tac_toe", "muzero", overrides=SMALL), tmp_path / "full", progress=False).run()
    half = build_config("tic_tac_toe", "muzero", overrides=SMALL + ["train.steps=3"])
    first = Trainer.create(half, tmp_path / "split", progress=False)
    first.run()
    saved = first.replay.data["priority"][: len(first.replay)].copy()
    assert len(np.unique(saved)) > 10  # learned priorities, not the initial ones
    resumed = Trainer.resume(tmp_path / "split", ["train.steps=6"], progress=False)
    assert np.array_equal(resumed.replay.data["priority"][: len(resumed.replay)], saved)
    resumed.run()
    assert_same_final_weights(tmp_path / "full", tmp_path / "split")


def test_long_episodes_enter_replay_in_chunks_with_look_ahead():
    """Appendix D: a chunk of `chunk_length` samples plus K + n positions of context;
    the next chunk starts where the samples of the previous one ended."""
    from polyzero.algos import make_algorithm
    from polyzero.games import load_game
    from polyzero.train.selfplay import SelfPlayActor

    cfg = build_config(
        "cartpole",
        "muzero",
        overrides=[
            "muzero.chunk_length=5",
            "muzero.unroll_steps=2",
            "muzero.td_steps=3",
            "selfplay.concurrent_games=1",
            "search.num_simulations=2",
        ],
    )
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    actor = SelfPlayActor(algo, game, cfg, algo.make_evaluator(algo.build_network(), "cpu"), seed=0)
    pieces = []
    while len(pieces) < 2 or pieces[-1].returns is None:  # an episode of more than 10 steps
        if pieces and pieces[-1].returns is not None:
            pieces = []
        pieces.extend(actor.tick())
    chunks, last = pieces[:-1], pieces[-1]
    for c in chunks:
        assert c.samples == 5 and len(c.actions) == 5 + 2 + 3
        seg = algo.trajectory_examples(c)
        assert seg["sampleable"].tolist() == [True] * 5 + [False] * 5 and not seg["done"][0]
        assert np.allclose(seg["reward"][:-1], 1.0)  # CartPole pays 1 a step
    for a, b in zip(chunks, pieces[1:]):
        assert np.array_equal(a.observations[5], b.observations[0])
    seg = algo.trajectory_examples(last)
    assert seg["done"][0] and seg["sampleable"].all()
    total = sum(c.samples for c in chunks) + len(last.actions)
    assert total == last.returns[0]  # every step of the episode is a sample exactly once


def test_observation_history_stacks_frames_and_action_planes():
    """Appendix E: the last H observations with the action that led to each as a bias plane."""
    from polyzero.games import ObservationEncoder, load_game

    game = load_game("minatar(game=breakout,history=3)")
    assert game.observation_tensor_shape() == [3 * (4 + 1), 10, 10]
    state = game.new_initial_state()
    first = ObservationEncoder(game).encode([state])[0]
    assert not first[:8].any()  # two empty frames before the episode's start
    state.apply_action(1)
    state.apply_action(2)
    obs = ObservationEncoder(game).encode([state])[0]
    assert np.allclose(obs[12:15], np.array([0, 2 / 3, 1])[:, None, None])  # (a + 1) / A; none before
    assert np.array_equal(obs[0:4], first[8:12])  # the oldest frame is the first observation


def test_downsampling_stack_takes_96_by_96_frames_to_6_by_6():
    from polyzero.nets.alphazero import NetSpec
    from polyzero.nets.muzero import MuZeroNet, MuZeroSpec

    net = MuZeroNet((4, 96, 96), 18, MuZeroSpec(net=NetSpec(channels=16, blocks=1), support=5, downsample=True))
    s = net.represent(torch.zeros(2, 4, 96, 96))
    s2, reward = net.dynamics(s, torch.tensor([0, 17]))
    assert s.shape == s2.shape == (2, 16, 6, 6) and reward.shape == (2, 11)


@pytest.mark.parametrize(
    "kind,obs_shape,support", [("resnet", (4, 10, 10), 5), ("mlp", (8,), 5), ("resnet", (4, 10, 10), 0)]
)
def test_zero_init_heads_start_every_value_and_reward_at_zero(kind, obs_shape, support):
    from polyzero.nets.alphazero import NetSpec
    from polyzero.nets.muzero import MuZeroNet, MuZeroSpec, last_layer

    torch.manual_seed(0)
    spec = NetSpec(kind=kind, channels=8, blocks=1, width=16, layers=1)
    obs = torch.rand(6, *obs_shape)
    for zero in (False, True):
        net = MuZeroNet(obs_shape, 3, MuZeroSpec(net=spec, hidden_size=8, support=support, zero_init_heads=zero))
        s = net.represent(obs)
        value = net.value_scalar(net.predict(s)[1]).reshape(-1)
        s2, reward_out = net.dynamics(s, torch.tensor([0, 1, 2, 0, 1, 2]))
        reward = net.reward_scalar(reward_out, 6, value)
        if zero:
            assert value.abs().max() < 1e-4 and reward.abs().max() < 1e-4  # uniform on -S..S: 0 up to rounding
            value.sum().backward()  # the zeroed layer still learns
            assert last_layer(net.value_head).weight.grad.abs().sum() > 0 or support == 0
        else:
            assert value.abs().max() > 1e-3


@pytest.mark.parametrize(
    "searcher, targets, bootstrap",
    [
        ("latest", "both", "network"),
        ("target", "both", "network"),
        ("latest", "policy", "network"),
        ("latest", "value", "network"),
        ("latest", "value", "search"),
    ],
)
def test_reanalyse_refreshes_policy_targets_and_bootstrap_values(tmp_path, searcher, targets, bootstrap):
    """Appendix H: the sampled unroll's stored policies become the latest parameters'
    search policies (or the target network's, with muzero.reanalyse_network = target),
    and its bootstrap values the target network's (its prediction, or its search's root
    value with muzero.reanalyse_bootstrap = search); muzero.reanalyse_targets keeps one."""
    from polyzero.search.policy import visit_policy

    cfg = build_config(
        "cartpole",
        "muzero",
        overrides=SMALL[:-1]
        + [
            "train.steps=1",
            "train.positions_per_step=300",
            "muzero.support=10",
            "muzero.reanalyse_fraction=1.0",
            "muzero.chunk_length=0",
            f"muzero.reanalyse_network={searcher}",
            f"muzero.reanalyse_targets={targets}",
            f"muzero.reanalyse_bootstrap={bootstrap}",
        ],
    )
    trainer = Trainer.create(cfg, tmp_path / "run", progress=False)
    trainer.run()
    replay, reanalyser = trainer.replay, trainer.reanalyser
    k, n = cfg.muzero.unroll_steps, cfg.muzero.td_steps
    d = replay.data
    s = int(np.flatnonzero(d["seg_end"][: len(replay)] - d["position"][: len(replay)] > k + n)[0])
    torch.manual_seed(5)
    reanalyser.target.load_state_dict(trainer.algo.build_network().state_dict())  # differs from latest
    unroll = slice(s, s + k + 1)
    selfplay = d["policy"][unroll].copy()
    d["fresh"][:] = False
    stored_values = d["root_value"].copy()
    reanalyser.refresh(replay, np.array([s]))
    policies = {}
    for name in ("latest", "target"):
        result = trainer.algo.search_observations(
            getattr(reanalyser, name),
            d["obs"][unroll],
            d["legal"][unroll],
            reanalyser.params,
            np.random.default_rng(0),
            add_noise=False,
        )
        policies[name] = visit_policy(result.root_visits, 1.0)
    assert not np.allclose(policies["latest"], policies["target"])  # so the check below tells them apart
    assert np.array_equal(d["policy"][unroll], selfplay)  # the self-play search's stays for the other 20%
    if targets == "value":
        assert not d["fresh"].any()
    else:
        assert np.allclose(d["fresh_policy"][unroll], policies[searcher]) and d["fresh"][unroll].all()
    boot = slice(s + n, s + n + k + 1)
    _, _, target_values = reanalyser.target.initial(d["obs"][boot])
    if bootstrap == "search":
        predicted = target_values
        target_values = trainer.algo.search_observations(
            reanalyser.target,
            d["obs"][boot],
            d["legal"][boot],
            reanalyser.params,
            np.random.default_rng(0),
            add_noise=False,
        ).root_value
        assert not np.allclose(target_values, predicted, atol=1e-6)  # the search is what is stored
    assert not np.allclose(stored_values[boot], target_values, atol=1e-6)  # so the check below tells
    if targets == "policy":
        assert np.array_equal(d["root_value"], stored_values)
    else:
        assert np.allclose(d["root_value"][boot], target_values, atol=1e-6)


def test_reanalyse_c_scale_applies_to_the_reanalysis_search_alone():
    from polyzero.algos import make_algorithm
    from polyzero.algos.reanalyse import Reanalyser
    from polyzero.games import load_game

    for value, expected in ((0.0, 0.1), (0.01, 0.01)):
        overrides = ["muzero.reanalyse_fraction=0.8", f"muzero.reanalyse_c_scale={value}"]
        cfg = build_config("minatar-breakout", "muzero", overrides=overrides)
        assert cfg.search.c_scale == 0.1  # the preset's, which self-play and evaluation keep
        algo = make_algorithm(cfg, load_game(cfg.game))
        assert Reanalyser(algo, cfg, "cpu", 0).params.c_scale == expected


def test_short_cartpole_run_reaches_150(tmp_path):
    """The CartPole preset for at most 100 learning steps, evaluated every 25: the run
    reaches a mean return of at least 150 over 20 episodes (random play: about 22; the
    untrained agent about 10). Single evaluations of such short runs swing (e.g. 413
    then 161), so the test asks that the run gets there, as the issue does."""
    from polyzero.train.metrics import read_metrics

    # Eager inference: the seed and threshold were set on eager PyTorch's trajectory. ONNX
    # Runtime's outputs differ from it by ~1e-6 (tests/test_inference_paths.py), enough to
    # take a different run from the same seed: on 2026-11-28 seed 1 evaluated 89.9, 113.7,
    # 110.3, 140.2 through it against eager's 41.5, 119.7, 125.0, 192.8 (docs/benchmarks.md).
    cfg = build_config(
        "cartpole",
        "muzero",
        overrides=[
            "train.steps=100",
            "eval.every=25",
            "eval.games=20",
            "eval.final_games=0",
            "threads=1",
            "seed=1",
            "net.inference=eager",
        ],
    )
    trainer = Trainer.create(cfg, tmp_path / "cartpole", progress=False)
    before = trainer.evaluate(20, seed=5)["eval/return/mean"]
    evaluate = trainer.evaluate

    def evaluate_and_stop(games, seed=None, **opponents):
        out = evaluate(games, seed, **opponents)
        if out["eval/return/mean"] >= 150:
            trainer.cfg.train.steps = trainer.step  # reached: end the run here
        return out

    trainer.evaluate = evaluate_and_stop
    trainer.run()
    records = read_metrics(tmp_path / "cartpole")
    returns = [r["eval/return/mean"] for r in records if r["kind"] == "eval"]
    print(f"cartpole mean returns over 20 episodes: untrained {before:.1f}, then {returns}")
    assert before < 50 and max(returns) >= 150
    # Self-play's own mean return per step (CartPole pays 1 per step of an episode of 8 to 500).
    train = [r for r in records if r["kind"] == "train" and r["selfplay/games_per_step"]]
    assert train and all(5 <= r["selfplay/mean_return"] <= 500 for r in train)


def _warm_batch_norms(net, obs, actions, passes=80):
    """Forward passes in train mode shaped like the learner's K-step unroll (no optimiser:
    only the batch norms' running statistics move)."""
    net.train()
    with torch.no_grad():
        for _ in range(passes):
            s = net.represent(obs)
            net.predict(s, root=True)
            for a in actions:
                s, _ = net.dynamics(s, a)
                net.predict(s)
    net.eval()


def test_search_roots_see_the_prediction_heads_the_learner_trained():
    """The root inference (eval mode) gives the logits and values the learner's k = 0 step
    (train mode) gives on the same batch, though h's and g's states differ in statistics."""
    from polyzero.nets.alphazero import NetSpec
    from polyzero.nets.muzero import MuZeroInference, MuZeroNet, MuZeroSpec

    torch.manual_seed(0)
    net = MuZeroNet((4, 10, 10), 3, MuZeroSpec(net=NetSpec(channels=8, blocks=1), support=5))
    obs = torch.rand(64, 4, 10, 10)
    actions = [torch.randint(0, 3, (64,)) for _ in range(5)]
    _warm_batch_norms(net, obs, actions)
    net.train()
    with torch.no_grad():
        logits, value = net.predict(net.represent(obs), root=True)
    _, eval_logits, eval_value = MuZeroInference(net).initial(obs.numpy())
    assert np.allclose(eval_logits, logits.numpy(), rtol=0.05, atol=0.02)
    assert np.allclose(eval_value, net.value_scalar(value).numpy(), rtol=0.05, atol=0.02)


def test_checkpoints_from_before_the_split_heads_load():
    """A state dict with f's heads as Sequential(conv, bn, relu, flatten, *tail) loads; its
    one batch norm serves both h's and g's states."""
    from polyzero.nets.alphazero import NetSpec
    from polyzero.nets.muzero import MuZeroNet, MuZeroSpec

    torch.manual_seed(0)
    spec = MuZeroSpec(net=NetSpec(channels=8, blocks=1), support=5)
    new = MuZeroNet((4, 10, 10), 3, spec).state_dict()
    old = {}
    for key, value in new.items():
        head, _, rest = key.partition(".")
        if head not in ("policy_head", "value_head", "reward_head"):
            old[key] = value
        elif not rest.startswith("root_norm."):
            part, _, leaf = rest.partition(".")
            if part == "tail":
                index, _, inner = leaf.partition(".")
                leaf = f"{int(index) + 4}.{inner}" if inner else f"4.{index}"
            else:
                leaf = {"conv": "0", "norm": "1"}[part] + "." + leaf
            old[f"{head}.{leaf}"] = value + 1.0 if value.is_floating_point() else value
    net = MuZeroNet((4, 10, 10), 3, spec)
    net.load_state_dict(old)
    loaded = net.state_dict()
    for head in ("policy_head", "value_head"):
        assert torch.equal(loaded[f"{head}.root_norm.running_var"], loaded[f"{head}.norm.running_var"])
        assert torch.equal(loaded[f"{head}.norm.running_var"], new[f"{head}.norm.running_var"] + 1.0)
    assert torch.equal(loaded["policy_head.tail.weight"], new["policy_head.tail.weight"] + 1.0)
    assert torch.equal(loaded["value_head.tail.2.bias"], new["value_head.tail.2.bias"] + 1.0)
    assert "reward_head.root_norm.weight" not in loaded


def _unrolled_outputs(net, s, actions, train: bool):
    net.train(train)
    out = []
    with torch.no_grad():
        for a in actions:
            s, _ = net.dynamics(s, a)
            logits, value = net.predict(s)
            out.append(torch.cat([logits, net.value_scalar(value)[:, None]], 1))
    return torch.stack(out)


@pytest.mark.parametrize("unroll_norm", ["batch", "layer"])
def test_unroll_norm_layer_searches_the_unroll_the_learner_trained(unroll_norm):
    """With muzero.unroll_norm = "layer", the search's recurrent steps (eval mode) compute
    what the learner's unrolled steps k >= 1 (train mode) compute on the same states; batch
    norm's running statistics, one average over the depths, do not."""
    from polyzero.nets.alphazero import NetSpec
    from polyzero.nets.muzero import MuZeroNet, MuZeroSpec

    torch.manual_seed(0)
    spec = MuZeroSpec(net=NetSpec(channels=8, blocks=1), support=5, unroll_norm=unroll_norm)
    net = MuZeroNet((4, 10, 10), 3, spec)
    obs = torch.rand(64, 4, 10, 10)
    actions = [torch.randint(0, 3, (64,)) for _ in range(5)]
    _warm_batch_norms(net, obs, actions)
    with torch.no_grad():
        s = net.represent(obs)
    gap = (_unrolled_outputs(net, s, actions, True) - _unrolled_outputs(net, s, actions, False)).abs().max()
    if unroll_norm == "layer":
        assert gap < 1e-4
    else:
        assert gap > 1e-2  # what "layer" removes


def test_connect_four_actions_reach_the_dynamics_as_their_column():
    """Appendix E's action plane, for a game whose action is a column: the dynamics reads
    a one in every cell of the chosen column (the piece may land at any height); one-cell
    actions keep their cell; runs saved before the option keep the flat-cell plane."""
    from polyzero.algos import make_algorithm
    from polyzero.games import load_game
    from polyzero.games.symmetry import action_planes

    c4 = load_game("connect_four")
    algo = make_algorithm(build_config("connect_four", "muzero"), c4)
    net = algo.build_network()
    s = torch.zeros(7, *net.hidden_shape)
    planes = net._action_planes(torch.arange(7), s)[:, 0]  # [7, 6, 7]
    assert planes.shape == (7, 6, 7)
    for a in range(7):
        assert planes[a, :, a].eq(1).all() and planes[a].sum() == 6
    ttt = load_game("tic_tac_toe")
    assert np.array_equal(action_planes(ttt, (3, 3, 3)), np.eye(9))
    assert action_planes(load_game("go(board_size=9)"), (4, 9, 9)) is None  # the pass has no cell
    saved = build_config("connect_four", "muzero").to_dict()
    del saved["muzero"]["action_planes"]
    old = make_algorithm(build_config(base=saved), c4).build_network()
    flat = old._action_planes(torch.tensor([3]), s[:1])[0, 0]
    assert flat.sum() == 1 and flat[0, 3] == 1
    assert set(old.state_dict()) == set(net.state_dict())  # the same checkpoint either way
