"""What search_throughput's modes time: polyzero's MuZero-mode search over the
anchor's tiny network (network time measured inside), the same network calls alone
(polyzero's floor), mctx's policy over the same weights, and the batches they run on."""

from __future__ import annotations

import time

import numba as nb
import numpy as np

import tinynet
from polyzero.search.gumbel import gumbel_search
from polyzero.search.kernels.mlp import input_block, run_program
from polyzero.search.learned import LearnedModel
from polyzero.search.mcts import run_search
from polyzero.search.params import SearchParams

SEED = 0


def depth_from_parents(parents):
    """parents [B, N] (root and unused = -1) -> mean node depth, max depth."""
    parents = np.asarray(parents)
    b, n = parents.shape
    depth = np.zeros((b, n), np.int64)
    for j in range(1, n):
        par = parents[:, j]
        ok = par >= 0
        depth[ok, j] = depth[ok, par[ok]] + 1
    valid = np.concatenate([np.ones((b, 1), bool), parents[:, 1:] >= 0], axis=1)
    return {
        "mean_node_depth": float(depth[valid].mean()),
        "max_depth_mean_over_batch": float(depth.max(axis=1).mean()),
        "max_depth": int(depth.max()),
    }


def batch_inputs(b: int) -> tuple[list, np.ndarray, np.ndarray]:
    """Four observation batches of `b` rows, a root mask with every action legal, and a
    random root mask (about 30% of the actions illegal, at least one legal per row)."""
    obs_list = [tinynet.make_obs(b, seed=s) for s in range(4)]
    no_mask = np.zeros((b, tinynet.A), bool)
    mrng = np.random.default_rng(SEED + 7)
    invalid = mrng.random((b, tinynet.A)) < 0.3
    invalid[np.arange(b), mrng.integers(0, tinynet.A, b)] = False  # >= 1 legal per row
    return obs_list, no_mask, invalid


# ------------------------------------------------------------------ polyzero (MuZero mode)
MUZERO_PARAMS = dict(
    selection="muzero",
    q_normalisation="parent_siblings",
    unvisited_q="min",
    c1=1.25,
    c2=19652.0,
    dirichlet_fraction=0.0,
)


class PolyzeroMuZero:
    """One call = root forward + batched search over a LearnedModel; the
    network time inside is accumulated in `net_s`."""

    def __init__(self, net: tinynet.TinyNetNumpy, num_simulations: int, **params):
        self.net = net
        self.params = SearchParams(num_simulations=num_simulations, **{**MUZERO_PARAMS, **params})
        self.rng = np.random.default_rng(SEED)
        self.net_s = 0.0
        self.calls = 0
        self.net_shares = []  # per call: network time / call time
        self.fused = False  # the last call ran the fused search (no recurrent_fn calls to time)
        self.store = None  # the hidden-state store, reused across calls

    def _timed_recurrent(self, h, a):
        t0 = time.perf_counter()
        out = self.net.recurrent(h, a)
        self.net_s += time.perf_counter() - t0
        return out

    def __call__(self, obs, root_legal=None, gumbel=None):
        t0 = time.perf_counter()
        net0 = self.net_s
        logits, value, hidden = self.net.initial(obs)
        self.net_s += time.perf_counter() - t0
        model = LearnedModel(
            logits,
            value,
            hidden,
            self._timed_recurrent,
            discount=-1.0,
            root_legal=root_legal,
            num_nodes=self.params.num_simulations + 1,
            store=self.store,
            program=self.net.program,
            fuse=self.net.fuse,
        )
        self.store = model.hidden  # reused by the next call, as polyzero's MuZero does
        self.fused = model.fused
        self.calls += 1
        if self.params.kind == "puct":
            res = run_search(model, self.params, self.rng, add_noise=False)
        else:  # Gumbel noise on (scale 1), as mctx.gumbel_muzero_policy's default
            res = gumbel_search(model, self.params, self.rng, add_noise=True, gumbel=gumbel)
        self.net_shares.append((self.net_s - net0) / (time.perf_counter() - t0))
        return res


@nb.njit(cache=True)
def _program_loop(ops, weights, scratch, store, idx, acts, num_simulations, num_actions):
    """num_simulations recurrent inferences of a program in one compiled call, each
    gathering its rows' states from `store` as the fused search does: its network alone."""
    h = store.shape[1]
    rows = idx.shape[1]
    x = input_block(ops, scratch, rows)
    for i in range(num_simulations):
        k = i % idx.shape[0]
        for r in range(rows):
            for j in range(h):
                x[r, j] = store[idx[k, r], j]
            for j in range(h, x.shape[1]):  # the one-hot and block 0's padding
                x[r, j] = 0.0
            x[r, h + acts[k, r]] = 1.0
        run_program(ops, weights, scratch, rows)


def net_alone_fn(net: tinynet.TinyNetNumpy, num_simulations: int, batch: int):
    """Root forward + num_simulations recurrent calls at batch B (gathering the
    parent state from a stored array as the search does), no tree. Where the search
    runs fused (the net's program at this batch), the recurrent calls run as the fused
    search runs them: in one compiled loop."""
    rng = np.random.default_rng(SEED + 1)
    store = rng.standard_normal((batch * 8, tinynet.HID)).astype(np.float32)
    idx = [rng.integers(0, batch * 8, batch) for _ in range(8)]
    acts = [rng.integers(0, tinynet.A, batch).astype(np.int32) for _ in range(8)]
    if net.program is not None and net._fused(batch):
        p = net.program
        scratch = p.scratch(batch)
        idx_a, acts_a = np.stack(idx), np.stack(acts)

        def fused(obs):
            net.initial(obs)
            _program_loop(p.ops, p.weights, scratch, store, idx_a, acts_a, num_simulations, p.num_actions)

        return fused

    def f(obs):
        net.initial(obs)
        for i in range(num_simulations):
            net.recurrent(store[idx[i % 8]], acts[i % 8])

    return f


# ------------------------------------------------------------------ mctx (JAX)
make_mctx = tinynet.mctx_policy  # the same network and policy, shared with engine_search_speed
