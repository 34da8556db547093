"""The learner's speed work keeps its math: on fixed batches the MuZero and NDMZ losses,
their parts, priorities and gradients, and one whole learner update (loss terms,
L2 term, the weights after the step), equal those of the reference implementation
below -- the code as it was before the learner was made faster (2026-11-28), kept
here as the oracle -- within float32 tolerance."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from polyzero.algos import make_algorithm
from polyzero.algos.muzero import scale_gradient
from polyzero.config import build_config
from polyzero.games import load_game
from polyzero.train.learner import Learner

RTOL, ATOL = 1e-5, 1e-6


# ------------------------------------------------------------------ the reference (old code)
def reference_muzero_loss(algo, net, batch):
    mz = algo.mz
    k_steps = batch["actions"].shape[1]
    weight = batch["weight"]
    s = net.represent(batch["obs"])
    total = torch.zeros_like(weight)
    parts = {"value": 0.0, "policy": 0.0, "reward": 0.0, "consistency": 0.0}
    if mz.consistency_weight:
        with torch.no_grad():
            target = net.project(net.represent(batch["next_obs"].flatten(0, 1)), predict=False)
            target = target.view(weight.shape[0], k_steps, -1)
    priority = None
    for k in range(k_steps + 1):
        if k > 0:
            if mz.gradient_scaling:
                s = scale_gradient(s, 0.5)
            s, reward_out = net.dynamics(s, batch["actions"][:, k - 1])
        logits, value_out = net.predict(s, root=k == 0)
        value_loss = algo._scalar_loss(value_out, batch["target_value"][:, k])
        policy_loss = -(batch["target_policy"][:, k] * F.log_softmax(logits, -1)).sum(-1) * batch["policy_mask"][:, k]
        step = mz.value_loss_weight * value_loss + policy_loss
        if k > 0 and reward_out is not None:
            reward_loss = algo._scalar_loss(reward_out, batch["target_reward"][:, k])
            step = step + reward_loss
            parts["reward"] += reward_loss.mean() / k_steps
        if k > 0 and mz.consistency_weight:
            similarity = F.cosine_similarity(net.project(s, predict=True), target[:, k - 1], dim=-1)
            consistency = -similarity * batch["next_obs_mask"][:, k - 1]
            step = step + mz.consistency_weight * consistency
            parts["consistency"] += consistency.mean() / k_steps
        scale = 1.0 / k_steps if (k > 0 and mz.gradient_scaling) else 1.0
        total = total + scale * step
        parts["value"] += value_loss.mean() / (k_steps + 1)
        parts["policy"] += policy_loss.mean() / (k_steps + 1)
        if k == 0:
            nu = batch["search_value"] if mz.priority_value == "search" else net.value_scalar(value_out)
            priority = (nu - batch["target_value"][:, 0]).abs().detach()
    if "final_obs" in batch:
        _, final_value = net.predict(net.represent(batch["final_obs"]), root=True)
        terminal = algo._scalar_loss(final_value, batch["final_value"]) * batch["final_mask"]
        total = total + terminal / k_steps
        parts["terminal"] = terminal.mean()
    out = {f"loss/{name}": v for name, v in parts.items() if torch.is_tensor(v)}
    out["priority"] = priority
    return (total * weight).mean(), out


def reference_ndmz_loss(algo, net, batch):
    k_steps = batch["actions"].shape[1]
    mask = batch["mask"]
    s = net.represent(batch["obs"])
    total = torch.zeros_like(mask[:, 0])
    parts = dict.fromkeys(("value", "policy", "chance", "identity", "reward"), 0.0)
    for k in range(k_steps + 1):
        m = mask[:, k]
        if k > 0:
            reward, s, ident = net.dynamics(s, batch["actions"][:, k - 1])
            l_i = F.cross_entropy(ident, batch["target_identity"][:, k], reduction="none") * m
            l_r = (reward - batch["target_reward"][:, k]) ** 2 * m
            total = total + l_i + l_r
            parts["identity"] += l_i.mean()
            parts["reward"] += l_r.mean()
        p, c, v = net.predict(s)
        l_v = (v - batch["target_value"][:, k]) ** 2 * m
        l_p = -(batch["target_policy"][:, k] * F.log_softmax(p, -1)).sum(-1) * m
        l_c = -(batch["target_chance"][:, k] * F.log_softmax(c, -1)).sum(-1) * m
        total = total + l_v + l_p + l_c
        parts["value"] += l_v.mean()
        parts["policy"] += l_p.mean()
        parts["chance"] += l_c.mean()
    out = {f"loss/{name}": v / (k_steps + 1) for name, v in parts.items() if torch.is_tensor(v)}
    return (total * batch["weight"]).mean(), out


def reference_update(learner, batch):
    """Learner.update as it was: L2 through autograd, Adam's default (single-tensor) step."""
    learner.net.train()
    tensors = {k: torch.from_numpy(v) for k, v in batch.items() if k != "index"}
    loss, parts = learner.algo.loss(learner.net, tensors)
    parts.pop("priority", None)
    l2 = learner.cfg.l2 * sum((p * p).sum() for p in learner.net.parameters())
    total = loss + l2
    learner.optimizer.zero_grad(set_to_none=True)
    total.backward()
    learner.optimizer.step()
    out = {k: v.item() for k, v in parts.items()}
    out["loss/l2"] = l2.item()
    out["loss/total"] = total.item()
    return out


# ------------------------------------------------------------------ fixed batches
def _policy(rng, shape):
    p = rng.random(shape)
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def muzero_batch(algo, batch=6, seed=0):
    rng = np.random.default_rng(seed)
    k, a, obs = algo.mz.unroll_steps, algo.num_actions, algo.encoder.shape
    out = {
        "obs": rng.random((batch, *obs), dtype=np.float32),
        "actions": rng.integers(0, a, (batch, k)),
        "target_value": rng.uniform(-1, 1, (batch, k + 1)).astype(np.float32),
        "target_reward": rng.uniform(-1, 1, (batch, k + 1)).astype(np.float32),
        "target_policy": _policy(rng, (batch, k + 1, a)),
        "policy_mask": (rng.random((batch, k + 1)) < 0.8).astype(np.float32),
        "search_value": rng.uniform(-1, 1, batch).astype(np.float32),
        "weight": rng.uniform(0.5, 1.5, batch).astype(np.float32),
    }
    if algo.single_agent:
        out["target_value"] *= 30
        out["target_reward"] *= 3
    if algo.mz.consistency_weight:
        out["next_obs"] = rng.random((batch, k, *obs), dtype=np.float32)
        out["next_obs_mask"] = (rng.random((batch, k)) < 0.7).astype(np.float32)
    if algo.mz.terminal_value and not algo.single_agent:
        out["final_obs"] = rng.random((batch, *obs), dtype=np.float32)
        out["final_value"] = rng.uniform(-1, 1, batch).astype(np.float32)
        out["final_mask"] = (rng.random(batch) < 0.5).astype(np.float32)
    return out


def ndmz_batch(algo, batch=6, seed=0):
    rng = np.random.default_rng(seed)
    k, a = algo.nd.unroll_steps, algo.layout.size
    return {
        "obs": rng.random((batch, *algo.encoder.shape), dtype=np.float32),
        "actions": rng.integers(0, a, (batch, k)),
        "mask": (rng.random((batch, k + 1)) < 0.8).astype(np.float32),
        "target_identity": rng.integers(0, 4, (batch, k + 1)),
        "target_reward": rng.uniform(-1, 1, (batch, k + 1)).astype(np.float32),
        "target_value": rng.uniform(-1, 1, (batch, k + 1)).astype(np.float32),
        "target_policy": _policy(rng, (batch, k + 1, a)),
        "target_chance": _policy(rng, (batch, k + 1, a)),
        "weight": np.ones(batch, np.float32),
    }


CASES = {
    "muzero_connect_four": ("connect_four", "muzero", ["net.blocks=1", "net.channels=8"]),
    "muzero_connect_four_extras": (
        "connect_four",
        "muzero",
        [
            "net.blocks=1",
            "net.channels=8",
            "muzero.consistency_weight=2",
            "muzero.terminal_value=true",
            "muzero.terminal_reward=true",
            "muzero.prioritized=on",
            "muzero.priority_value=network",
            "muzero.unroll_norm=layer",
        ],
    ),
    "muzero_tic_tac_toe_mlp": ("tic_tac_toe", "muzero", []),
    "muzero_cartpole_support": ("cartpole", "muzero", ["muzero.support=20"]),
    "muzero_tiny_mlp": (
        "tic_tac_toe",
        "muzero",
        ["net.width=16", "net.layers=1", "muzero.hidden_size=8", "net.value_hidden=8", "muzero.unroll_steps=2"],
    ),
    "ndmz_nannon": ("nannon", "ndmz", ["net.width=32", "ndmz.hidden_size=16"]),
}


def _setup(case):
    game, algo_name, overrides = CASES[case]
    cfg = build_config(game, algo_name, overrides=overrides + ["train.l2=1e-3"])
    algo = make_algorithm(cfg, load_game(cfg.game))
    batch = ndmz_batch(algo) if algo_name == "ndmz" else muzero_batch(algo)
    return cfg, algo, batch


def _grads(net):
    return [None if p.grad is None else p.grad.clone() for p in net.parameters()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_parts_priorities_and_gradients_equal_the_reference(case):
    cfg, algo, batch = _setup(case)
    torch.manual_seed(0)
    net = algo.build_network().train()
    ref_net = copy.deepcopy(net)
    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
    reference = reference_ndmz_loss if algo.name == "ndmz" else reference_muzero_loss
    loss, parts = algo.loss(net, tensors)
    ref_loss, ref_parts = reference(algo, ref_net, tensors)
    assert torch.isfinite(loss) and abs(loss.item()) > 1e-3  # a loss that could differ
    assert loss.item() == pytest.approx(ref_loss.item(), rel=RTOL, abs=ATOL)
    assert parts.keys() == ref_parts.keys()
    for key, value in ref_parts.items():
        np.testing.assert_allclose(parts[key].detach().numpy(), value.detach().numpy(), rtol=RTOL, atol=ATOL)
    loss.backward()
    ref_loss.backward()
    for got, want in zip(_grads(net), _grads(ref_net)):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    # batch-norm running statistics move the same way
    for got, want in zip(net.buffers(), ref_net.buffers()):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "case,compiled,fused",
    [
        ("muzero_connect_four", False, False),
        ("muzero_connect_four", False, True),
        ("ndmz_nannon", False, True),
        ("muzero_tiny_mlp", True, False),
    ],
)
def test_a_learner_update_equals_the_reference_update(case, compiled, fused):
    """The default update, train.fused_step (fused optimizer, the L2 term as a
    gradient) and train.compile (the loss through inductor): the same loss terms and
    weights as the old update."""
    cfg, algo, batch = _setup(case)
    cfg.train.compile, cfg.train.fused_step = compiled, fused
    torch.manual_seed(0)
    learner = Learner(algo, cfg.train, torch.device("cpu"))
    reference = Learner(algo, cfg.train, torch.device("cpu"))
    reference.net.load_state_dict(learner.net.state_dict())
    reference.optimizer = torch.optim.Adam(reference.net.parameters(), lr=cfg.train.learning_rate)
    for step in range(3):  # Adam's moments carried over steps
        got = learner.update(batch)
        want = reference_update(reference, batch)
        for key in ("loss/total", "loss/l2", "loss/value", "loss/policy"):
            assert got[key] == pytest.approx(want[key], rel=RTOL, abs=ATOL), (step, key)
    # Adam divides each gradient by its own running scale, so a component near zero moves
    # by up to the learning rate whichever way its rounding goes: weights to 1% of lr.
    for got, want in zip(learner.net.parameters(), reference.net.parameters()):
        np.testing.assert_allclose(
            got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=0.01 * cfg.train.learning_rate
        )


@pytest.mark.parametrize(
    "case,optimizer", [("ndmz_nannon", "adam"), ("muzero_connect_four", "adam"), ("muzero_tiny_mlp", "sgd")]
)
def test_the_default_update_is_the_reference_update_bit_for_bit(case, optimizer):
    """The default update (the L2 term as one graph node, the optimizer's foreach step,
    one read-back) makes exactly the old update's numbers: loss terms, weights and the
    optimizer's moments after three steps, on models whose dynamics use their weights
    K times (the order gradients are summed in matters there)."""
    cfg, algo, batch = _setup(case)
    cfg.train.optimizer = optimizer
    torch.manual_seed(0)
    learner = Learner(algo, cfg.train, torch.device("cpu"))
    reference = Learner(algo, cfg.train, torch.device("cpu"))
    reference.net.load_state_dict(learner.net.state_dict())
    old = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    extra = {} if optimizer == "adam" else {"momentum": cfg.train.momentum}
    reference.optimizer = old(reference.net.parameters(), lr=cfg.train.learning_rate, foreach=False, **extra)
    for _ in range(3):
        got, want = learner.update(batch), reference_update(reference, batch)
        got.pop("priority", None)
        assert got == want
    for got, want in zip(learner.net.state_dict().values(), reference.net.state_dict().values()):
        assert torch.equal(got, want)
    states = learner.state_dict()["optimizer"]["state"], reference.optimizer.state_dict()["state"]
    assert states[0].keys() == states[1].keys() and states[0]
    for index, slots in states[1].items():
        for name, value in slots.items():
            assert torch.equal(states[0][index][name], value), (index, name)


def test_the_l2_node_is_c_times_the_squared_norm_and_its_gradient():
    from polyzero.train.learner import L2Penalty

    torch.manual_seed(0)
    params = [torch.randn(3, 4, requires_grad=True), torch.randn(5, requires_grad=True)]
    l2 = L2Penalty.apply(0.01, None, *params)
    assert l2.item() == pytest.approx(0.01 * sum(float((p.detach() ** 2).sum()) for p in params), rel=1e-6)
    (3.0 * l2).backward()  # the upstream gradient scales it
    for p in params:
        torch.testing.assert_close(p.grad, 6.0 * 0.01 * p.detach())


def test_an_optimizer_saved_before_the_foreach_step_resumes_on_it_with_the_same_numbers():
    cfg, algo, batch = _setup("ndmz_nannon")
    torch.manual_seed(0)
    learner = Learner(algo, cfg.train, torch.device("cpu"))
    learner.update(batch)
    state = copy.deepcopy(learner.state_dict())  # as read from a checkpoint: nothing shared
    for group in state["optimizer"]["param_groups"]:  # as a checkpoint of the single-tensor loop has it
        group["foreach"] = None
    resumed = Learner(algo, cfg.train, torch.device("cpu"))
    resumed.load_state_dict(state)
    assert all(group["foreach"] for group in resumed.optimizer.param_groups)
    assert resumed.update(batch) == learner.update(batch)
    for got, want in zip(resumed.net.parameters(), learner.net.parameters()):
        assert torch.equal(got, want)
