"""The learner's one-buffer parameters (polyzero/train/flat.py) change no number: the
same updates, weights and optimizer moments bit for bit as the per-tensor learner,
through a learning-rate change and a checkpoint either way; checkpoints keep the
per-tensor layout; a gradient dropped by `net.zero_grad()` is relinked."""

import copy

import numpy as np
import pytest
import torch

from polyzero.train.flat import FlatParameters, adam_step, one_gradient_each
from polyzero.train.learner import Learner
from test_learner_exact import _setup


def _pair(case, **train):
    """(the learner with the buffer, the per-tensor one), the same weights."""
    cfg, algo, batch = _setup(case) if isinstance(case, str) else case()
    for key, value in train.items():
        setattr(cfg.train, key, value)
    torch.manual_seed(0)
    flat = Learner(algo, cfg.train, torch.device("cpu"))
    apart = Learner(algo, cfg.train, torch.device("cpu"), flat=False)
    apart.net.load_state_dict(flat.net.state_dict())
    assert flat.flat is not None and apart.flat is None
    return flat, apart, batch


def _terms(learner: Learner, batch) -> dict:
    out = learner.update(batch)
    out.pop("priority", None)
    return out


def _assert_same(a: Learner, b: Learner):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa["updates"] == sb["updates"]
    for key, value in sb["net"].items():
        assert torch.equal(sa["net"][key], value), key
    assert sa["optimizer"]["param_groups"] == sb["optimizer"]["param_groups"]
    assert sa["optimizer"]["state"].keys() == sb["optimizer"]["state"].keys()
    for index, slots in sb["optimizer"]["state"].items():
        assert slots.keys() == sa["optimizer"]["state"][index].keys()
        for name, value in slots.items():
            got = sa["optimizer"]["state"][index][name]
            assert got.shape == value.shape and torch.equal(got, value), (index, name)


@pytest.mark.parametrize("case", ["ndmz_nannon", "muzero_tiny_mlp"])
def test_the_buffer_makes_the_per_tensor_learners_numbers_through_lr_changes_and_checkpoints(case):
    flat, apart, batch = _pair(case)
    for step in range(3):
        if step == 2:  # Student of Games halves the rate between steps
            for learner in (flat, apart):
                learner.optimizer.param_groups[0]["lr"] *= 0.5
        assert _terms(flat, batch) == _terms(apart, batch)
    _assert_same(flat, apart)
    # Checkpoints cross over: the buffer's into a per-tensor learner and back.
    _, resumed_apart, _ = _pair(case)
    resumed_flat, _, _ = _pair(case)
    resumed_apart.load_state_dict(copy.deepcopy(flat.state_dict()))
    resumed_flat.load_state_dict(copy.deepcopy(apart.state_dict()))
    outs = [_terms(learner, batch) for learner in (flat, apart, resumed_apart, resumed_flat)]
    assert all(out == outs[0] for out in outs)
    for learner in (apart, resumed_apart, resumed_flat):
        _assert_same(flat, learner)


def test_the_buffer_holds_the_weights_and_gradients_the_network_sees():
    flat, _, batch = _pair("ndmz_nannon")
    buffer = flat.flat
    flat.update(batch)
    for p, (a, b) in zip(flat.net.parameters(), buffer.bounds):
        assert p.data_ptr() == buffer.data[a:b].data_ptr() and p.grad.data_ptr() == buffer.grad[a:b].data_ptr()
    before = buffer.data.clone()
    flat.net.zero_grad()  # drops the gradient views: the next update must relink them
    flat.update(batch)
    assert all(
        p.grad.data_ptr() == buffer.grad[a:b].data_ptr() for p, (a, b) in zip(flat.net.parameters(), buffer.bounds)
    )
    assert not torch.equal(before, buffer.data)  # the step moved the weights the network uses
    flat.net.load_state_dict({k: torch.zeros_like(v) for k, v in flat.net.state_dict().items()})
    assert not buffer.data.any()  # loading weights writes into the buffer


def test_the_lean_adam_step_declines_settings_it_does_not_reproduce():
    flat, apart, batch = _pair("muzero_tiny_mlp", optimizer="sgd")
    for _ in range(2):  # SGD's foreach step on the buffer: the same numbers
        assert _terms(flat, batch) == _terms(apart, batch)
        assert not adam_step(flat.optimizer, flat.flat)
        flat.optimizer.zero_grad()  # drops the buffer's gradient: the next update relinks it
    _assert_same(flat, apart)
    # The fused step: one kernel over the buffer, whose vector and tail loops split it
    # elsewhere than the per-tensor calls did -- the same update to float rounding.
    flat, apart, batch = _pair("ndmz_nannon", fused_step=True)
    for _ in range(2):
        assert _terms(flat, batch) == pytest.approx(_terms(apart, batch), rel=1e-5)
        assert not adam_step(flat.optimizer, flat.flat)
    for got, want in zip(flat.net.parameters(), apart.net.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    flat, _, batch = _pair("ndmz_nannon")
    flat.update(batch)
    flat.optimizer.param_groups[0]["amsgrad"] = True
    assert not adam_step(flat.optimizer, flat.flat)


def test_mixed_dtypes_keep_the_parameters_apart():
    assert not FlatParameters.fits([torch.zeros(2), torch.zeros(2, dtype=torch.float64)])
    assert not FlatParameters.fits([])


def _alphazero_case():
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config
    from polyzero.games import load_game

    cfg = build_config("tic_tac_toe", "alphazero", overrides=["net.kind=mlp", "net.width=16", "train.l2=1e-3"])
    algo = make_algorithm(cfg, load_game(cfg.game))
    rng = np.random.default_rng(0)
    policy = rng.random((8, algo.num_actions))
    batch = {
        "obs": rng.random((8, *algo.encoder.shape), dtype=np.float32),
        "policy": (policy / policy.sum(-1, keepdims=True)).astype(np.float32),
        "outcome": rng.uniform(-1, 1, 8).astype(np.float32),
    }
    return cfg, algo, batch


def _cvpn_case():
    from polyzero.config import build_config
    from polyzero.games import load_game
    from polyzero.sog.cvpn import BeliefEncoding
    from polyzero.sog.trainer import CVPNModel

    cfg = build_config("kuhn_poker", "sog", overrides=["net.width=16", "net.layers=2", "train.l2=1e-3"])
    encoding = BeliefEncoding(load_game(cfg.game))
    rng = np.random.default_rng(0)
    s, a, b = encoding.max_slots, encoding.num_actions, 8
    legal = rng.random((b, s, a)) < 0.7
    legal[..., 0] = True
    policy = rng.random((b, s, a)) * legal
    batch = {
        "x": rng.random((b, encoding.input_size), dtype=np.float32),
        "value": rng.uniform(-1, 1, (b, 2, s)).astype(np.float32),
        "value_mask": (rng.random((b, 2, s)) < 0.8).astype(np.float32),
        "policy": (policy / policy.sum(-1, keepdims=True)).astype(np.float32),
        "policy_mask": (rng.random((b, s)) < 0.5).astype(np.float32),
        "legal": legal,
        "player": rng.integers(0, 2, b),
    }
    return cfg, CVPNModel(encoding, cfg), batch


@pytest.mark.parametrize("make_case", [_alphazero_case, _cvpn_case])
def test_the_l2_gradient_written_before_the_backward_pass_is_the_l2_nodes_bit_for_bit(make_case):
    """AlphaZero's and the CVPN's networks are used once per loss: their L2 gradient goes
    into the buffer before the backward pass (no graph node), and the updates, weights
    and moments are the per-tensor learner's, which has the node."""
    flat, apart, batch = _pair(make_case)
    for _ in range(3):
        assert _terms(flat, batch) == _terms(apart, batch)
    assert flat._l2_preload is True and apart._l2_preload is None
    _assert_same(flat, apart)


def test_a_network_unrolled_k_times_keeps_the_l2_node():
    for case in ("ndmz_nannon", "muzero_tiny_mlp"):
        flat, _, batch = _pair(case)
        flat.update(batch)
        assert flat._l2_preload is False
    cfg, algo, batch = _alphazero_case()
    net = algo.build_network()
    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
    loss, _ = algo.loss(net, tensors)
    assert one_gradient_each(loss, list(net.parameters()))
    twice = loss + algo.loss(net, tensors)[0]  # each weight reached by two edges
    assert not one_gradient_each(twice, list(net.parameters()))


@pytest.mark.parametrize("make_case", [_cvpn_case, "ndmz_nannon"])
def test_the_fused_step_is_torchs_fused_adam_with_the_l2_gradient_as_its_weight_decay(make_case):
    """train.fused_step: the lean fused call (the L2 gradient 2c theta added inside the
    kernel, the value one dot product) makes torch's own `Adam(fused=True,
    weight_decay=2c).step()` numbers bit for bit, from the first step (which makes the
    state) through a learning-rate change; and the default update's to float rounding."""
    fused, _, batch = _pair(make_case, fused_step=True)
    exact, _, _ = _pair(make_case)
    c, lr = fused.cfg.l2, fused.cfg.learning_rate
    net = copy.deepcopy(exact.net)
    buffer = FlatParameters(list(net.parameters()))
    optimizer = torch.optim.Adam([buffer.data], lr=lr, fused=True, weight_decay=2 * c)
    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
    for step in range(3):
        if step == 2:
            for group in (*fused.optimizer.param_groups, *optimizer.param_groups, *exact.optimizer.param_groups):
                group["lr"] *= 0.5
        got, want_exact = _terms(fused, batch), _terms(exact, batch)
        buffer.zero_grad()
        loss, _ = fused.algo.loss(net, tensors)
        l2 = c * torch.dot(buffer.data, buffer.data)
        loss.backward()
        optimizer.step()
        assert got["loss/l2"] == l2.item() and got["loss/total"] == (loss + l2).item()
        assert got == pytest.approx(want_exact, rel=1e-5)
    assert torch.equal(fused.flat.data, buffer.data)
    assert torch.equal(fused.flat.grad, buffer.grad)
    for name, value in optimizer.state[buffer.data].items():
        assert torch.equal(fused.optimizer.state[fused.flat.data][name], value), name
    for got, want in zip(fused.net.parameters(), exact.net.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=0.01 * lr)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_l2_value_is_the_per_tensor_sums_added_in_order_bit_for_bit(dtype):
    """The reported L2 value: c times the per-tensor sums of squares added in order, as
    the L2 node made it (on the CPU in float32 added as NumPy scalars)."""
    from polyzero.train.flat import scaled_sum

    torch.manual_seed(0)
    for trial in range(20):
        shapes = [(int(torch.randint(1, 40, ())), int(torch.randint(1, 90, ()))), (int(torch.randint(1, 300, ())),)] * 3
        params = [torch.nn.Parameter(torch.randn(s, dtype=dtype) * 10 ** (trial % 5 - 2)) for s in shapes]
        want = scaled_sum(1e-4 * (trial + 1), [(p.detach() * p.detach()).sum() for p in params])
        got = FlatParameters(params).l2_value(1e-4 * (trial + 1))
        assert got.dtype == dtype and got.item() == want.item(), trial


def test_an_update_trains_in_training_mode_after_the_network_was_put_in_eval():
    """The learner skips `net.train()` when every module is training already; a network
    put in eval mode, whole or one module of it, trains in training mode again."""
    flat, _, batch = _pair("muzero_tiny_mlp")
    flat.update(batch)
    for switch_off in (lambda net: net.eval(), lambda net: list(net.modules())[-1].eval()):
        switch_off(flat.net)
        assert not all(m.training for m in flat.net.modules())
        flat.update(batch)
        assert all(m.training for m in flat.net.modules())
