"""Student of Games' CVPN loss made cheaper (one gather for the acting player's logits,
the illegal-move mask made once, no product with a weight of 1) keeps its numbers: on
random batches its value, its reported terms and its gradients equal those of the code
before (2026-11-29, kept below as the oracle) bit for bit, and so do a Learner's
updates, loss terms and weights."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from polyzero.config import build_config
from polyzero.games import load_game
from polyzero.sog.cvpn import BeliefEncoding, build_cvpn, cvpn_loss
from polyzero.sog.trainer import CVPNModel
from polyzero.train.learner import Learner


def reference_cvpn_loss(net, batch, value_weight=1.0, policy_weight=0.05):
    values, logits = net(batch["x"])
    vmask = batch["value_mask"]
    huber = F.huber_loss(values, batch["value"], reduction="none", delta=1.0)
    value_loss = (huber * vmask).sum() / vmask.sum().clamp(min=1.0)
    rows = torch.arange(logits.shape[0], device=logits.device)
    own = logits[rows, batch["player"].long()]  # [B, S, A]
    legal = batch["legal"]
    log_p = torch.log_softmax(own.masked_fill(~legal, -1e9), dim=-1)
    ce = -(batch["policy"] * log_p.masked_fill(~legal, 0.0)).sum(-1)
    pmask = batch["policy_mask"]
    policy_loss = (ce * pmask).sum() / pmask.sum().clamp(min=1.0)
    total = value_weight * value_loss + policy_weight * policy_loss
    return total, {
        "loss/value": value_loss.detach(),
        "loss/policy": policy_loss.detach(),
        "loss/total_unregularised": total.detach(),
    }


def random_batch(encoding, size, rng, empty_masks=False):
    """Value targets out to +-3 (Huber's both pieces), some examples without any policy
    target, legal rows only where there is one; with `empty_masks` no target at all."""
    s, a = encoding.max_slots, encoding.num_actions
    pmask = (rng.random((size, s)) < 0.6).astype(np.float32) * (not empty_masks)
    legal = (rng.random((size, s, a)) < 0.6) & (pmask[..., None] > 0)
    legal[..., 0] |= pmask > 0
    policy = rng.random((size, s, a)) * legal
    policy /= np.maximum(policy.sum(-1, keepdims=True), 1e-9)
    batch = {
        "x": rng.random((size, encoding.input_size), dtype=np.float32),
        "value": rng.uniform(-3, 3, (size, 2, s)).astype(np.float32),
        "value_mask": (rng.random((size, 2, s)) < 0.7).astype(np.float32) * (not empty_masks),
        "policy": policy.astype(np.float32),
        "policy_mask": pmask,
        "legal": legal,
        "player": rng.integers(0, 2, size).astype(np.int64),
    }
    return {k: torch.from_numpy(v) for k, v in batch.items()}


@pytest.mark.parametrize("game", ["connect_four", "leduc_poker"])
@pytest.mark.parametrize("weights", [(1.0, 0.05), (0.5, 2.0)])
def test_the_cvpn_loss_equals_the_reference_bit_for_bit(game, weights):
    encoding = BeliefEncoding(load_game(game))
    torch.manual_seed(0)
    net = build_cvpn(encoding, 32, 2)
    rng = np.random.default_rng(0)
    for n in range(6):
        batch = random_batch(encoding, 16, rng, empty_masks=n == 5)
        results = []
        for loss_fn in (reference_cvpn_loss, cvpn_loss):
            net.zero_grad(set_to_none=True)
            total, parts = loss_fn(net, batch, *weights)
            total.backward()
            results.append((total.detach(), parts, [p.grad.clone() for p in net.parameters()]))
        (want, want_parts, want_grads), (got, got_parts, got_grads) = results
        assert torch.equal(got, want) and got_parts.keys() == want_parts.keys()
        assert all(torch.equal(got_parts[k], want_parts[k]) for k in want_parts)
        assert all(torch.equal(g, w) for g, w in zip(got_grads, want_grads))
        assert any(bool(w.abs().sum() > 0) for w in want_grads) == (n != 5)


class ReferenceModel(CVPNModel):
    def loss(self, net, batch):
        return reference_cvpn_loss(net, batch, self.cfg.sog.value_weight, self.cfg.sog.policy_weight)


def test_learner_updates_with_the_cvpn_loss_equal_the_reference_updates():
    cfg = build_config("connect_four", "sog", overrides=["net.kind=mlp", "net.width=32", "net.layers=2"])
    encoding = BeliefEncoding(load_game("connect_four"))
    learners = []
    for model in (ReferenceModel(encoding, cfg), CVPNModel(encoding, cfg)):
        torch.manual_seed(0)
        learners.append(Learner(model, cfg.train, torch.device("cpu")))
    reference, learner = learners
    rng = np.random.default_rng(1)
    for _ in range(4):
        batch = {k: v.numpy() for k, v in random_batch(encoding, 32, rng).items()}
        assert learner.update(batch) == reference.update(batch)
    for (name, got), want in zip(learner.net.state_dict().items(), reference.net.state_dict().values()):
        assert torch.equal(got, want), name


def test_the_cpu_read_back_gives_the_stacked_read_backs_floats():
    """Learner._read_back: the CPU's one `item` per term and a GPU's one stacked read-back
    (run here on CPU tensors) give the same floats, for 0-d and one-element terms."""
    from types import SimpleNamespace

    torch.manual_seed(0)
    terms = [torch.randn(()), torch.randn(1), torch.randn(()) * 1e-30, torch.randn((), requires_grad=True) * 3]
    on_cpu = Learner._read_back(SimpleNamespace(device=torch.device("cpu")), terms)
    stacked = Learner._read_back(SimpleNamespace(device=torch.device("cuda")), terms)
    assert on_cpu == stacked and all(type(v) is float for v in on_cpu)
    assert on_cpu == [float(t.detach().reshape(())) for t in terms]
