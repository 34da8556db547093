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
from polyzero.nets.winograd import (
    AUTO_MIN_GAMES,
    AUTO_MIN_SIDE,
    AUTO_TILE,
    WinogradNet,
    axis_tile,
    chosen_tile,
    supports,
    transforms,
)
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


# ------------------------------------------------------------------ net.winograd = "auto"
def _algo(game="connect_four", *overrides):
    cfg = build_config(game, "alphazero", overrides=["net.inference=onnx", *overrides])
    return make_algorithm(cfg, load_game(cfg.game))


def _tiles(algo, selfplay):
    w = algo.make_evaluator(algo.build_network(), "cpu", selfplay=selfplay)._winograd
    return None if w is None else (w.m_h, w.m_w)


def test_auto_is_the_default_and_runs_winograd_in_self_play_only():
    """The quick start's settings (Connect Four, 3 x 64 tower, 64 games): self-play's
    evaluator F(6 x 4), evaluation's and play's the direct convolution."""
    pytest.importorskip("onnxruntime")
    algo = _algo()
    assert algo.cfg.net.winograd == "auto" and algo.cfg.selfplay.concurrent_games == 64
    assert _tiles(algo, selfplay=True) == (6, 4)
    assert _tiles(algo, selfplay=False) is None


@pytest.mark.parametrize(
    "game, overrides",
    [
        ("connect_four", ["selfplay.concurrent_games=16"]),  # batches too small to gain
        ("tic_tac_toe", ["net.kind=resnet", "selfplay.concurrent_games=64"]),  # a board too small to gain
        ("connect_four", ["net.block=bottleneck"]),  # a tower this path does not compute
        ("connect_four", ["net.kind=mlp"]),
    ],
)
def test_auto_keeps_the_direct_convolution_where_winograd_does_not_pay(game, overrides):
    pytest.importorskip("onnxruntime")
    algo = _algo(game, *overrides)
    assert _tiles(algo, selfplay=True) is None and _tiles(algo, selfplay=False) is None


@pytest.mark.parametrize("m, want", [(0, None), (4, (3, 4)), (6, (6, 4))])
def test_an_explicit_tile_is_itself_everywhere(m, want):
    pytest.importorskip("onnxruntime")
    algo = _algo("connect_four", f"net.winograd={m}", "selfplay.concurrent_games=4")
    assert _tiles(algo, selfplay=True) == want and _tiles(algo, selfplay=False) == want


def test_the_rule_reads_the_board_and_the_games():
    net = _net(obs_shape=(2, 6, 7))
    assert chosen_tile("auto", net, 64) == AUTO_TILE and chosen_tile("auto", net, AUTO_MIN_GAMES) == AUTO_TILE
    assert chosen_tile("auto", net, AUTO_MIN_GAMES - 1) == 0 and chosen_tile("auto", net, 0) == 0
    small = AUTO_MIN_SIDE - 1
    assert chosen_tile("auto", _net(obs_shape=(2, small, 9)), 64) == 0
    assert chosen_tile("auto", _net(obs_shape=(2, AUTO_MIN_SIDE, 9)), 64) == AUTO_TILE
    assert chosen_tile(3, net, 0) == 3 and chosen_tile(0, net, 64) == 0
    # a module without the tower or without obs_shape (any other network): the direct convolution
    assert chosen_tile("auto", torch.nn.Linear(4, 2), 64) == 0


@pytest.mark.parametrize("value", ["5", "fast", "true", "6.0", "[6]"])
def test_a_bad_setting_is_one_line_and_exit_code_2(value, capsys, tmp_path):
    from polyzero.cli import main

    with pytest.raises(UsageError, match="net.winograd"):
        build_config("connect_four", "alphazero", overrides=[f"net.winograd={value}"])
    run = tmp_path / "run"
    assert main(["train", "connect_four", "--run-dir", str(run), "--set", f"net.winograd={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "net.winograd" in err and "\n" not in err and "Traceback" not in err and not run.exists()


def test_auto_and_the_tiles_are_read_from_the_command_line_and_a_file(tmp_path):
    assert build_config("connect_four", "alphazero", overrides=["net.winograd=auto"]).net.winograd == "auto"
    assert build_config("connect_four", "alphazero", overrides=["net.winograd=6"]).net.winograd == 6
    path = tmp_path / "c.toml"
    path.write_text('[net]\nwinograd = "auto"\n')
    assert build_config("connect_four", "alphazero", config_file=str(path)).net.winograd == "auto"


def test_a_run_saved_before_the_setting_keeps_the_direct_convolution():
    """A saved config without net.winograd ran with the direct convolution: resuming it
    keeps that (the new default would change its self-play's rounding)."""
    saved = build_config("connect_four", "alphazero").to_dict()
    del saved["net"]["winograd"]
    assert build_config(base=saved).net.winograd == 0
    saved["net"]["winograd"] = "auto"
    assert build_config(base=saved).net.winograd == "auto"


def test_auto_counts_the_rows_a_shared_services_forward_takes():
    pytest.importorskip("onnxruntime")
    shared = ["selfplay.shared_inference=true", "selfplay.actors=2"]
    assert _tiles(_algo("connect_four", *shared), selfplay=True) == (6, 4)
    assert _tiles(_algo("connect_four", *shared, "selfplay.inference_max_batch=8"), selfplay=True) is None
