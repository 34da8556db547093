"""The fused search on several threads (polyzero.search.fused.simulate_fused_parallel):
the trees split into ranges, each range's simulations on its own thread, build bit for
bit the trees one thread builds, however the batch is split."""

import contextlib

import numba
import numpy as np
import pytest

from polyzero.nets.fused import muzero_programs
from polyzero.search import fused
from polyzero.search.gumbel import gumbel_search
from polyzero.search.kernels import tree_chunks
from polyzero.search.kernels.mlp import BLAS_MIN_ROWS, ROW_TILE
from polyzero.search.mcts import run_search
from polyzero.search.params import SearchParams
from test_fused_search import SEARCHES, _models, _net


@contextlib.contextmanager
def numba_threads(n):
    before = numba.get_num_threads()
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


@pytest.fixture(autouse=True)
def _threads():
    """Every thread numba has (other tests may have left it at one), so that the ranges
    run concurrently."""
    with numba_threads(numba.config.NUMBA_NUM_THREADS):
        yield


def _search(monkeypatch, net, batch, seed, params, chunks):
    monkeypatch.setattr(fused, "fused_chunks", lambda _batch, _sims: chunks)
    model = _models(net, batch, seed, fused=True)
    rng = np.random.default_rng(seed)
    if params.kind == "puct":
        res = run_search(model, params, rng)
    else:
        res = gumbel_search(model, params, rng, add_noise=True)
    return res, model


# Batches below and from BLAS_MIN_ROWS (where run_program would call BLAS, which the
# fused search never does: 64 in ranges of 32 rows; 100 and 130: ranges not a multiple
# of the split, a tail of rows outside the row tiles).
@pytest.mark.parametrize("batch", [7, 10, 30, BLAS_MIN_ROWS, 100, 130])
@pytest.mark.parametrize("settings", SEARCHES, ids=["muzero", "alphazero", "gumbel", "full_gumbel"])
def test_threads_build_the_one_thread_trees_bit_for_bit(monkeypatch, batch, settings):
    params = SearchParams(num_simulations=10, dirichlet_fraction=0.0, **settings)
    # Widths of 24 (register tiles, or BLAS from 64 rows) and 32 (packed panels).
    for seed, width in ((0, 24), (1, 32)):
        net = _net(seed, support=3 if seed == 1 else 0, width=width)
        one, one_model = _search(monkeypatch, net, batch, seed, params, 1)
        for chunks in (2, 3):
            many, many_model = _search(monkeypatch, net, batch, seed, params, chunks)
            np.testing.assert_array_equal(one.root_visits, many.root_visits)
            for name in ("children", "visits", "value", "raw_value", "reward", "prior"):
                np.testing.assert_array_equal(getattr(one.tree, name), getattr(many.tree, name), err_msg=name)
            np.testing.assert_array_equal(one_model.hidden[:11], many_model.hidden[:11])
            if one.action is not None:
                np.testing.assert_array_equal(one.action, many.action)
                np.testing.assert_array_equal(one.policy_target, many.policy_target)


def test_ranges_start_on_row_tiles_and_cover_the_batch():
    for batch in (1, 5, 7, 64, 100, 130, 255, 256):
        for chunks in (1, 2, 3, 4):
            per = fused.chunk_rows(batch, chunks)
            assert per % ROW_TILE == 0 and per * chunks >= batch
            spans = [(min(c * per, batch), min(c * per + per, batch)) for c in range(chunks)]
            assert spans[0][0] == 0 and spans[-1][1] == batch
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_the_fused_search_splits_only_batches_of_enough_work(monkeypatch):
    m = fused.FUSED_MIN_TREES_PER_CHUNK
    assert tree_chunks(2 * m - 1, threads=2, load=0.0, cores=2, min_chunk=m) == 1
    assert tree_chunks(2 * m, threads=2, load=0.0, cores=2, min_chunk=m) == 2
    assert tree_chunks(2 * m, threads=1, load=0.0, cores=2, min_chunk=m) == 1  # the actor's threads decide
    # Each thread at least FUSED_MIN_TREE_SIMS trees x simulations: short searches stay on one.
    monkeypatch.setenv("POLYZERO_PARALLEL_TREES", "always")
    sims = fused.FUSED_MIN_TREE_SIMS // m
    with numba_threads(2):
        two = numba.get_num_threads()  # 2, or 1 on a one-core machine
        assert fused.fused_chunks(2 * m, sims) == two
        assert fused.fused_chunks(2 * m, sims // 2) == 1
        assert fused.fused_chunks(4 * m, sims // 2) == two
        assert fused.fused_chunks(2 * m - 1, 10 * sims) == 1
    program = muzero_programs(_net(0))[1]
    # Each range's scratch holds its rows' blocks and starts on a cache line.
    assert fused.chunk_stride(program, 100, 2) >= 52 * program.width
    assert fused.chunk_stride(program, 100, 2) % 16 == 0
