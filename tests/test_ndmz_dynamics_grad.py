"""g's first layer in training (polyzero.nets.ndmz.StateActionLinear) against the
plain F.linear(cat([s, onehot(a)])) it replaces: the NDMZ loss's value and every
parameter's gradient the same bit for bit, with and without subnormal weights in the
one-hot columns (what the L2 term leaves where an action never occurs)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.games import load_game


def _batch(algo, batch_size, k, rng):
    obs_dim = int(np.prod(algo.encoder.shape))
    a = algo.layout.size
    return {
        "obs": torch.from_numpy(rng.random((batch_size, obs_dim), np.float32)),
        "actions": torch.from_numpy(rng.integers(0, 14, (batch_size, k))),  # never 14..25
        "target_identity": torch.from_numpy(rng.integers(0, 4, (batch_size, k + 1))),
        "target_policy": torch.from_numpy(rng.dirichlet(np.ones(a), (batch_size, k + 1)).astype(np.float32)),
        "target_chance": torch.from_numpy(rng.dirichlet(np.ones(a), (batch_size, k + 1)).astype(np.float32)),
        "target_value": torch.from_numpy(rng.uniform(-1, 1, (batch_size, k + 1)).astype(np.float32)),
        "target_reward": torch.from_numpy(rng.uniform(-1, 1, (batch_size, k + 1)).astype(np.float32)),
        "mask": torch.from_numpy((rng.random((batch_size, k + 1)) < 0.9).astype(np.float32)),
        "weight": torch.ones(batch_size),
    }


def _grads(algo, net, batch, training):
    net.train(training)
    net.zero_grad(set_to_none=True)
    loss, _ = algo.loss(net, batch)
    loss.backward()
    return loss.detach().clone(), {n: p.grad.clone() for n, p in net.named_parameters()}


@pytest.mark.parametrize("subnormal", [False, True])
def test_training_unroll_has_the_plain_layers_gradients_bit_for_bit(subnormal):
    torch.set_num_threads(1)
    game = load_game("nannon")
    algo = make_algorithm(build_config("nannon", "ndmz", overrides=["net.width=64", "ndmz.hidden_size=32"]), game)
    torch.manual_seed(0)
    net = algo.build_network()
    if subnormal:
        with torch.no_grad():
            w = net.dynamics_trunk[0].weight
            w[:, 32 + 14 :] = torch.sign(torch.randn_like(w[:, 32 + 14 :])) * 3e-39
    batch = _batch(algo, 96, algo.unroll_steps, np.random.default_rng(1))
    loss_new, new = _grads(algo, net, batch, training=True)  # StateActionLinear
    loss_old, old = _grads(algo, net, batch, training=False)  # the same net, the plain layers (eval mode)
    assert torch.equal(loss_new, loss_old)
    for name in old:
        assert torch.equal(new[name], old[name]), name
    assert new["dynamics_trunk.0.weight"].abs().sum() > 0  # g's first layer was trained through
