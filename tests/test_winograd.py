"""Winograd's minimal filtering for AlphaZero's residual tower (`net.winograd`,
polyzero.nets.winograd): the 1-D transforms compute the correlation, the tower equals
the direct convolution up to float32 rounding (eager and through ONNX Runtime, before
and after a weight publication), a row's outputs do not depend on its batch, and
self-play's searches choose what they chose with the direct convolution."""

import functools

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.nets.alphazero import NetSpec, PolicyValueNet
from polyzero.nets.inference import Evaluator
from polyzero.nets.winograd import WinogradNet, axis_tile, supports, transforms
from polyzero.train.selfplay import SelfPlayActor


@pytest.mark.parametrize("m", [2, 3, 4, 6])
def test_the_1d_transforms_compute_the_correlation(m):
    at, g, bt = transforms(m)
    rng = np.random.default_rng(m)
    d, w = rng.normal(size=m + 2), rng.normal(size=3)
    want = np.array([d[i : i + 3] @ w for i in range(m)])
    np.testing.assert_allclose(at @ ((g @ w) * (bt @ d)), want, rtol=1e-12, atol=1e-12)


def test_each_axis_takes_the_smallest_tile_that_covers_it_in_as_many_tiles():
    assert [axis_tile(7, m) for m in (2, 3, 4, 6)] == [2, 3, 4, 4]  # 4, 3, 2, 2 tiles
    assert [axis_tile(6, m) for m in (2, 3, 4, 6)] == [2, 3, 3, 6]  # 3, 2, 2, 1 tiles
    net = WinogradNet(_net(), 6)
    assert (net.m_h, net.tiles_h, net.m_w, net.tiles_w) == (6, 1, 4, 2)
    assert tuple(net.u0.shape[:3]) == (8, 1, 6)


def _net(seed=0, obs_shape=(2, 6, 7), **spec):
    torch.manual_seed(seed)
    return _trained_like(PolicyValueNet(obs_shape, obs_shape[2], NetSpec(**spec)))


def _trained_like(net):
    """`net` with batch norms that are not the identity (as after training)."""
    for mod in net.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.2, 0.2)
    return net.eval()


def _obs(n, shape=(2, 6, 7), seed=1):
    return (np.random.default_rng(seed).random((n, *shape)) < 0.3).astype(np.float32)


def _eager(net, obs):
    with torch.no_grad():
        return [t.numpy() for t in net(torch.from_numpy(obs))]


@pytest.mark.parametrize("m", [2, 3, 4, 6])
@pytest.mark.parametrize("shape", [(2, 6, 7), (3, 7, 7)])
def test_the_tower_equals_the_direct_convolution_up_to_rounding(m, shape):
    net = _net(obs_shape=shape)
    obs = _obs(9, shape)
    with torch.no_grad():
        got = [t.numpy() for t in WinogradNet(net, m).eval()(torch.from_numpy(obs))]
    for g, want in zip(got, _eager(net, obs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m", [4, 6])
def test_the_rounding_stays_near_the_direct_convolutions_at_trained_magnitudes(m):
    """The preset's tower (3 x 64) with its filters scaled up (logits spread 0.16, 3.8 and
    4e4 at scales 1, 3 and 10): against the network in float64, F(m)'s largest logit
    error stays within a few times the direct float32 convolution's (measured 1.2-1.8x
    at m = 4, 1.5-3.3x at m = 6), and every row's best move is the direct one's."""
    for scale in (1.0, 3.0, 10.0):
        net = _net(obs_shape=(2, 6, 7), channels=64, blocks=3)
        with torch.no_grad():
            for mod in net.modules():
                if isinstance(mod, torch.nn.Conv2d):
                    mod.weight.mul_(scale)
        obs = _obs(64)
        direct = _eager(net, obs)[0]
        with torch.no_grad():
            got = WinogradNet(net, m).eval()(torch.from_numpy(obs))[0].numpy()
            exact = net.double()(torch.from_numpy(obs).double())[0].numpy()
        direct_error, error = np.abs(direct - exact).max(), np.abs(got - exact).max()
        assert error <= 6 * direct_error, (scale, error, direct_error)
        assert np.array_equal(got.argmax(1), direct.argmax(1))


def test_only_towers_of_basic_blocks_are_supported():
    assert supports(_net())
    assert not supports(_net(block="bottleneck"))
    assert not supports(PolicyValueNet((2, 6, 7), 7, NetSpec(kind="mlp")))
    with pytest.raises(ValueError, match="basic blocks"):
        WinogradNet(_net(block="bottleneck"))


def test_through_onnx_runtime_before_and_after_a_publication():
    """A publication rewrites the transformed filters and the heads' weights in place;
    the one ONNX Runtime session reads them there."""
    pytest.importorskip("onnxruntime")
    net, other = _net(0), _net(5)
    evaluator = Evaluator(_net(0), "cpu", "onnx", 0, 4)
    obs = _obs(33)
    for g, want in zip(evaluator(obs), _eager(net, obs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)
    evaluator.load_state_dict(other.state_dict())  # every weight changes, batch norms too
    for g, want in zip(evaluator(obs), _eager(other, obs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)
    assert evaluator._forward._onnx.sessions == 1  # the session reads the weights where they are: no rebuild


@pytest.mark.parametrize("m", [4, 6])
def test_a_rows_outputs_do_not_depend_on_its_batch(m):
    pytest.importorskip("onnxruntime")
    evaluator = Evaluator(_net(), "cpu", "onnx", 0, m)
    obs = _obs(70)
    whole = evaluator(obs)
    for rows in (slice(0, 1), slice(3, 4), slice(6, 8), slice(9, 12), slice(5, 22), slice(1, 65)):
        for part, full in zip(evaluator(obs[rows]), whole):
            np.testing.assert_array_equal(part, full[rows])


@functools.cache
def _searches(winograd: int):
    """12 moves of 8 self-play games at the preset's settings: each move's (policy targets,
    moves played, root values)."""
    cfg = build_config(
        "connect_four",
        "alphazero",
        overrides=["selfplay.concurrent_games=8", "net.inference=onnx", f"net.winograd={winograd}"],
    )
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    torch.manual_seed(0)
    evaluator = algo.make_evaluator(_trained_like(algo.build_network()), "cpu")
    actor = SelfPlayActor(algo, game, cfg, evaluator, seed=3)
    searched = []
    search_moves = actor.search_moves
    actor.search_moves = lambda states: searched.append(search_moves(states)) or searched[-1]
    for _ in range(12):
        actor.tick()
    return searched, evaluator


@pytest.mark.parametrize("m", [4, 6])  # 6: F(6 x 4) on the board, the benchmarks' setting
def test_self_plays_searches_choose_as_with_the_direct_convolution(m):
    """The preset's network (3 x 64 tower, batch norms as after training): at every root
    of 12 moves of 8 games the same visit counts and moves; root values equal up to
    rounding."""
    pytest.importorskip("onnxruntime")
    direct, plain = _searches(0)
    wino, evaluator = _searches(m)
    assert plain._winograd is None and evaluator._winograd is not None
    assert len(direct) == len(wino) == 12
    for (pa, aa, va), (pb, ab, vb) in zip(wino, direct):
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(aa, ab)
        np.testing.assert_allclose(va, vb, rtol=1e-4, atol=1e-5)


def test_an_unknown_tile_is_a_usage_error():
    with pytest.raises(UsageError, match="net.winograd"):
        build_config("connect_four", "alphazero", overrides=["net.winograd=5"])
