"""The compiled inference paths (`net.inference`): outputs equal PyTorch eager within
float tolerance for every network shape, weight refreshes reach them, the search's
choices do not move, and the fallbacks and refusals are as documented."""

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.nets import compiled
from polyzero.nets.alphazero import NetSpec, PolicyValueNet
from polyzero.nets.inference import Evaluator
from polyzero.nets.muzero import MuZeroInference, MuZeroNet, MuZeroSpec
from polyzero.nets.ndmz import ActionLayout, NDMZInference, NDMZNet, NDMZSpec

# Float32 kernels differ in summation order (ONNX Runtime's MLAS, oneDNN's folded
# batch norm): agreement to about 1e-6 measured; the values searched are O(1).
RTOL, ATOL = 1e-4, 2e-5
PATHS = ["script", "onnx"]


def _close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def _alphazero(spec: NetSpec, shape=(3, 6, 7), actions=7):
    torch.manual_seed(0)
    return lambda: PolicyValueNet(shape, actions, spec)


def _muzero(spec: MuZeroSpec, shape=(3, 6, 7), actions=7):
    torch.manual_seed(0)
    return lambda: MuZeroNet(shape, actions, spec)


NETWORKS = {
    "alphazero_resnet": (_alphazero(NetSpec(blocks=2, channels=16)), Evaluator),
    "alphazero_bottleneck": (
        _alphazero(NetSpec(blocks=2, channels=16, block="bottleneck", broadcast_every=2)),
        Evaluator,
    ),
    "alphazero_mlp": (_alphazero(NetSpec(kind="mlp"), shape=(27,), actions=9), Evaluator),
    "muzero_resnet": (_muzero(MuZeroSpec(net=NetSpec(blocks=1, channels=16), terminal_reward=True)), MuZeroInference),
    "muzero_mlp_support": (
        _muzero(MuZeroSpec(net=NetSpec(kind="mlp"), support=10), shape=(4,), actions=2),
        MuZeroInference,
    ),
    "ndmz": (lambda: NDMZNet(20, ActionLayout(8, 16), NDMZSpec(width=32, hidden_size=16)), NDMZInference),
}


def _inputs(net, batch, seed):
    rng = np.random.default_rng(seed)
    obs_shape = net.obs_shape if hasattr(net, "obs_shape") else (net.representation[0][0].in_features,)
    obs = rng.random((batch, *obs_shape), dtype=np.float32)
    return obs, rng.integers(0, net.num_actions, batch)


def _outputs(inference, net, batch, seed):
    obs, actions = _inputs(net, batch, seed)
    if isinstance(inference, Evaluator):
        return inference(obs)
    root = inference.initial(obs)
    return (*root, *inference.recurrent(root[0], actions))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_compiled_outputs_equal_eager_before_and_after_a_weight_refresh(name, path):
    make, kind = NETWORKS[name]
    net, other = make(), make()
    with torch.no_grad():  # a second, different set of weights (batch norm statistics too)
        for t in list(other.parameters()) + [b for b in other.buffers() if b.is_floating_point()]:
            t.add_(0.1 * torch.randn_like(t))
    eager, fast = kind(make(), inference="eager"), kind(net, inference=path)
    eager.load_state_dict(net.state_dict())
    for batch in (1, 5):
        _close(_outputs(fast, net, batch, seed=batch), _outputs(eager, net, batch, seed=batch))
    fast.load_state_dict(other.state_dict())
    eager.load_state_dict(other.state_dict())
    after = _outputs(fast, net, 3, seed=7)
    _close(after, _outputs(eager, net, 3, seed=7))
    # not the old weights: the refresh reached the baked-in copy
    assert np.abs(after[0] - _outputs(kind(make(), inference="eager"), net, 3, seed=7)[0]).max() > 1e-3


@pytest.mark.parametrize("algo_name", ["alphazero", "muzero"])
def test_search_visits_are_the_same_through_onnx_as_through_eager(algo_name):
    cfg = build_config("connect_four", algo_name, overrides=["net.blocks=1", "net.channels=16"])
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    torch.manual_seed(0)
    net = algo.build_network()
    rng = np.random.default_rng(3)
    states = []
    for _ in range(8):
        s = game.new_initial_state()
        for _ in range(int(rng.integers(0, 6))):
            s.apply_action(int(rng.choice(s.legal_actions())))
        states.append(s)
    params = cfg.search.params(32)
    visits = {}
    for path in ("eager", "onnx"):
        evaluate = type(algo.make_evaluator(net, "cpu"))(net, "cpu", path)
        result = algo.search(evaluate, states, params, np.random.default_rng(11), add_noise=True)
        visits[path] = result.root_visits
    np.testing.assert_array_equal(visits["onnx"], visits["eager"])


def test_auto_is_onnx_runtime_on_the_cpu_and_eager_without_it(monkeypatch):
    assert compiled.resolve_path("auto", torch.device("cpu")) == "onnx"
    assert compiled.resolve_path("auto", torch.device("cuda")) == "eager"
    monkeypatch.setattr(compiled, "onnxruntime_available", lambda: False)
    assert compiled.resolve_path("auto", torch.device("cpu")) == "eager"
    with pytest.raises(UsageError, match="needs onnxruntime"):
        compiled.resolve_path("onnx", torch.device("cpu"))
    evaluate = Evaluator(PolicyValueNet((27,), 9, NetSpec(kind="mlp")))
    assert evaluate(np.zeros((2, 27), np.float32))[0].shape == (2, 9)


def test_cpu_only_paths_are_refused_on_a_gpu_and_unknown_paths_by_the_config():
    with pytest.raises(UsageError, match="runs on the CPU only"):
        compiled.resolve_path("script", torch.device("cuda"))
    with pytest.raises(UsageError, match="net.inference must be one of"):
        build_config("tic_tac_toe", "alphazero", overrides=["net.inference=fast"])


def test_an_empty_batch_comes_back_empty():
    evaluate = Evaluator(PolicyValueNet((27,), 9, NetSpec(kind="mlp")), inference="onnx")
    logits, value = evaluate(np.zeros((0, 27), np.float32))
    assert logits.shape == (0, 9) and value.shape == (0,)
