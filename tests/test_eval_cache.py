"""The network-output cache (`net.cache`, polyzero.nets.eval_cache): a cached evaluation
returns exactly what the network returns, evaluates each distinct new row once, survives
eviction within a call, forgets on a weight change, and leaves self-play's searches
as they were."""

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.nets.alphazero import NetSpec, PolicyValueNet
from polyzero.nets.eval_cache import EvaluationCache, row_keys
from polyzero.nets.inference import Evaluator
from polyzero.train.selfplay import SelfPlayActor


class CountingNet:
    """A pure function of each row (a sum and a product of its entries) that counts rows."""

    def __init__(self):
        self.rows = 0

    def __call__(self, obs):
        self.rows += len(obs)
        flat = obs.reshape(len(obs), -1).astype(np.float64)
        return np.stack([flat.sum(1), flat[:, :3].prod(1)], 1).astype(np.float32), flat.max(1)


def _pool(rng, distinct, binary=True):
    pool = (rng.random((distinct, 2, 3, 4)) < 0.5) if binary else rng.random((distinct, 2, 3, 4))
    return pool.astype(np.float32)


def _rows(rng, n, pool):
    return pool[rng.integers(0, len(pool), n)]


@pytest.mark.parametrize("binary", [True, False])
def test_cached_outputs_are_the_networks_and_each_new_row_is_evaluated_once(binary):
    rng = np.random.default_rng(0)
    net, cache = CountingNet(), EvaluationCache(1000)
    seen, pool = set(), _pool(rng, 300, binary)
    for _ in range(20):
        obs = _rows(rng, 50, pool)
        new = {r.tobytes() for r in obs} - seen
        before = net.rows
        got = cache(obs, net)
        assert net.rows - before == len(new)  # duplicates within a call and earlier rows: not evaluated
        seen |= new
        for g, want in zip(got, CountingNet()(obs)):
            assert g.dtype == want.dtype
            np.testing.assert_array_equal(g, want)
    assert cache.misses == net.rows == len(seen) and cache.hits == 20 * 50 - len(seen) > 0


def test_eviction_within_a_call_keeps_every_row_right():
    rng = np.random.default_rng(1)
    net, cache, pool = CountingNet(), EvaluationCache(4), _pool(rng, 8)
    for _ in range(50):  # up to as many new rows per call as the ring holds, hits among them
        obs = _rows(rng, 6, pool)
        for g, want in zip(cache(obs, net), CountingNet()(obs)):
            np.testing.assert_array_equal(g, want)
    assert len(cache._slot_of) == 4


def test_keys_tell_binary_rows_apart_and_never_confuse_packed_with_raw():
    a = np.zeros((3, 16), np.float32)
    a[1, 3] = 1
    a[2, 3] = 0.5
    keys = row_keys(a[:2])
    assert keys[0] != keys[1] and len(keys[0]) == 2  # 16 entries of 0/1: two bytes
    assert len(set(row_keys(a))) == 3 and len(row_keys(a)[0]) == 64  # a row of 0.5: raw bytes
    assert row_keys(a[:0]) == []
    negative_zero = a[:1].copy()
    negative_zero[0, 5] = -0.0  # equal to 0.0, but other bytes: another key
    assert row_keys(negative_zero)[0] != keys[0]


def test_a_weight_change_clears_the_evaluators_cache():
    torch.manual_seed(0)
    make = lambda: PolicyValueNet((3, 6, 7), 7, NetSpec(blocks=1, channels=8))  # noqa: E731
    first, second = make(), make()
    evaluator = Evaluator(make(), inference="eager", cache=256)
    evaluator.load_state_dict(first.state_dict())
    obs = (np.random.default_rng(2).random((5, 3, 6, 7)) < 0.3).astype(np.float32)
    evaluator(obs)
    evaluator.load_state_dict(second.state_dict())
    with torch.no_grad():
        want = second.eval()(torch.from_numpy(obs))
    got = evaluator(obs)
    assert evaluator.cache.hits == 0
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1].numpy(), rtol=1e-5, atol=1e-6)


def _selfplay(cache: int, inference: str, winograd: int = 0):
    cfg = build_config(
        "connect_four",
        "alphazero",
        overrides=[
            "net.channels=8",
            "net.blocks=1",
            "selfplay.concurrent_games=6",
            f"net.inference={inference}",
            f"net.cache={cache}",
            f"net.winograd={winograd}",
        ],
    )
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    torch.manual_seed(0)
    evaluator = algo.make_evaluator(algo.build_network(), "cpu")
    actor = SelfPlayActor(algo, game, cfg, evaluator, seed=3)
    finished = [t for _ in range(14) for t in actor.tick()]
    return evaluator, finished, actor


@pytest.mark.parametrize("winograd", [0, 4])
def test_self_play_with_the_cache_is_self_play_without_it(winograd):
    pytest.importorskip("onnxruntime")  # ONNX Runtime's rows do not depend on their batch
    cached, with_cache, actor = _selfplay(4096, "onnx", winograd)
    _, without, _ = _selfplay(0, "onnx", winograd)
    assert cached.cache.hits > 0.2 * (cached.cache.hits + cached.cache.misses)
    assert [t.actions for t in with_cache] == [t.actions for t in without] and with_cache
    for a, b in zip(with_cache, without):
        np.testing.assert_array_equal(np.asarray(a.policies), np.asarray(b.policies))
        assert a.root_values == b.root_values
    assert actor.stats["searches"] == 14 * 6


def test_a_negative_cache_is_a_usage_error():
    with pytest.raises(UsageError, match="net.cache"):
        build_config("connect_four", "alphazero", overrides=["net.cache=-1"])
