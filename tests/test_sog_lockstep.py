"""GT-CFR searches advanced together (polyzero/sog/lockstep.py): each solve answers what
it answers alone, up to the network's summation order, in fewer network calls, and
each search's queries reach its own listener in its own order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from polyzero.games import load_game
from polyzero.games.public_states import DECISION, PublicTree
from polyzero.sog.cvpn import BeliefEncoding, NetworkValueFunction, build_cvpn
from polyzero.sog.gtcfr import SoGSettings
from polyzero.sog.query_store import Collector
from polyzero.sog.selfplay import solve_queries, solve_query
from polyzero.sog.values import Query


class Counting(NetworkValueFunction):
    """A CVPN value function that counts its calls."""

    calls = 0

    def evaluate(self, queries):
        self.calls += 1
        return super().evaluate(queries)


def _setup(game_name: str, count: int):
    game = load_game(game_name)
    encoding = BeliefEncoding(game)
    torch.manual_seed(0)
    value_fn = Counting(encoding, build_cvpn(encoding, width=16, layers=1))
    nodes = [n for n in PublicTree(game).nodes if n.kind == DECISION]
    source = np.random.default_rng(1)
    picks = [nodes[int(i)] for i in source.integers(0, len(nodes), count)]
    queries = [Query(n, [source.random(len(s)) + 0.05 for s in n.info_states]) for n in picks]
    return game, value_fn, queries


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_solves_together_answer_as_alone(game_name):
    torch.set_num_threads(1)
    game, value_fn, queries = _setup(game_name, 6)
    settings = SoGSettings(simulations=8, expansions_per_update=1.0)
    alone, alone_collectors = [], []
    for k, query in enumerate(queries):
        value_fn.listener = collector = Collector(0.5, np.random.default_rng([7, k]))
        alone.append(solve_query(game, query, value_fn, settings, np.random.default_rng([3, k])))
        alone_collectors.append(collector)
    value_fn.listener = None
    alone_calls, value_fn.calls = value_fn.calls, 0
    collectors = [Collector(0.5, np.random.default_rng([7, k])) for k in range(len(queries))]
    rngs = [np.random.default_rng([3, k]) for k in range(len(queries))]
    together = solve_queries(game, queries, value_fn, settings, rngs, collectors)
    assert value_fn.listener is None
    # the searches' CFR iterations (8 each) share calls; the final average walks are one each
    assert value_fn.calls <= 8 + len(queries) < alone_calls
    scale = max(float(np.abs(v).max()) for cfv in alone for v in cfv)
    for a, b in zip(alone, together):
        for x, y in zip(a, b):
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-6 * scale)
    for a, b in zip(alone_collectors, collectors):
        assert (a.seen, a.count) == (b.seen, b.count)
        assert [q.key for q in a.kept] == [q.key for q in b.kept]
        for qa, qb in zip(a.kept, b.kept):  # ranges from regrets the network's last bits moved
            for ra, rb in zip(qa.ranges, qb.ranges):
                np.testing.assert_allclose(rb, ra, rtol=1e-5, atol=1e-12)


def test_one_search_together_is_the_search_alone():
    """A single search driven by the lockstep driver asks the same batches: bit for bit."""
    torch.set_num_threads(1)
    game, value_fn, queries = _setup("leduc_poker", 2)
    settings = SoGSettings(simulations=8, expansions_per_update=1.0)
    for k, query in enumerate(queries):
        alone = solve_query(game, query, value_fn, settings, np.random.default_rng([3, k]))
        (together,) = solve_queries(game, [query], value_fn, settings, [np.random.default_rng([3, k])])
        for x, y in zip(alone, together):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("together", [True, False])
def test_ray_solver_actor_solves_its_share_as_each_solve_alone(together):
    """A Ray solver actor's share of a step's solves (strided indices, as the driver deals
    them) gives what `solve_indexed` gives for each index alone: bit for bit one after
    another, within the network's summation order together, in fewer network calls."""
    from polyzero.config import build_config
    from polyzero.sog.ray_trainer import SoGWorker
    from polyzero.sog.selfplay import solve_indexed

    torch.set_num_threads(1)
    overrides = [
        "net.width=16",
        "net.layers=1",
        "sog.solve_simulations=8",
        f"sog.solve_together={str(together).lower()}",
    ]
    cfg = build_config("leduc_poker", "sog", overrides=overrides)
    worker = SoGWorker(cfg.to_dict())
    game = load_game("leduc_poker")
    root = PublicTree(game, max_depth=0).nodes[0]  # solves with leaves for the network
    source = np.random.default_rng(2)
    queries = [Query(root, [source.random(len(s)) + 0.05 for s in root.info_states]) for _ in range(3)]
    items = [(1, queries[0]), (3, queries[1]), (5, queries[2])]
    calls = []
    evaluate = worker.values.evaluate
    worker.values.evaluate = lambda batch: calls.append(len(batch)) or evaluate(batch)
    shared = worker.solve(items)
    shared_calls = len(calls)
    settings, sog = cfg.sog.search_settings(solver=True), cfg.sog
    alone = [
        solve_indexed(game, worker.encoding, q, worker.values, settings, cfg.seed, i, sog.q_recursive, sog.query_buffer)
        for i, q in items
    ]
    assert (shared_calls < len(calls) - shared_calls) == together
    for a, b in zip(alone, shared):
        assert (a.queries_seen, a.queries_kept) == (b.queries_seen, b.queries_kept)
        assert [q.key for q in a.collected] == [q.key for q in b.collected]
        for field in ("x", "value", "value_mask"):
            x, y = getattr(a.example, field), getattr(b.example, field)
            if together:  # the network's last bits move with the rows in a call
                np.testing.assert_allclose(y, x, rtol=0, atol=1e-5)
            else:
                assert np.array_equal(x, y)
