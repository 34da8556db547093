"""The fused search: every simulation of a MuZero-mode search in one compiled call.

The loop of :mod:`polyzero.search.loop` costs three dispatches per simulation
(selection kernel, network, backup kernel) plus the Python between them: ~60 us at
B = 1, against ~15 us of arithmetic for the anchor's tiny MLP. When the recurrent
function is an MLP given as a program (:class:`~polyzero.search.kernels.mlp.MLPProgram`,
written by ``polyzero.nets.fused``), :func:`simulate_fused` runs all S simulations
(selection, the gather of the parents' hidden states, the network, the store of the
new states, expansion and backup) inside one Numba function, as mctx compiles its whole
loop with XLA (mctx ``search``: a ``fori_loop`` over simulate, expand, backward).

It calls the same selection and backup code as the loop (``select_trees``,
``_backup_range``), so with the same network outputs it builds the same trees;
``tests/test_fused_search.py`` checks that, and the network against PyTorch.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import tree_chunks
from .kernels.backup import _backup_range
from .kernels.leaves import Leaves
from .kernels.mlp import (
    HIDDEN_OUT,
    LOGITS_OUT,
    NO_OUTPUT,
    REWARD_OUT,
    ROW_TILE,
    VALUE_OUT,
    MLPProgram,
    aligned_zeros,
    input_block,
    output,
    run_rows,
)
from .kernels.packed import NO_REFCOUNTS, tree_arrays
from .kernels.prefetch import prefetch
from .kernels.scores import prior_coefficients
from .kernels.select import select_trees
from .params import Rules

# The largest batch `auto` fuses: the fused search beat the loop over ONNX Runtime at
# every batch measured, 64-512 trees (0.65-0.77 of its time at 16 simulations, the
# program's large layers then through BLAS; benchmarks/results/net_path_ab.md; its
# register tiles since, 0.96-1.01 of BLAS's time at 64-256 rows, fused_threads_ab*.md);
# larger batches keep the loop, unmeasured.
FUSED_MAX_BATCH = 512
# The gather asks for the parent state of the tree this many rows ahead while it copies
# one: the fused search at B = 256 / 64 simulations 0.93-0.985 of its time (three
# in-process A/Bs, load 2.5-2.9; docs/journal/2026-11-29-tree-work-v2.md).
GATHER_AHEAD = 8
# The least work a thread of the fused search takes (fused_chunks): 32 trees and 2048
# trees x simulations (2 threads from B = 64 at 64 simulations, from B = 256 at 16). A
# parallel region waits for its last thread; on a busy machine a woken worker waits for a
# time slice, several ms, which only long searches amortise. Measured against 1 thread
# on the shared 2-core machine (load 3.3-4.6; benchmarks/results/fused_threads_ab*.md,
# interleaved, and search_throughput_alone_threads2*.md): B = 16 and 32 lost in most
# cells (0.39-1.37x), B = 64 / 16 lost in all four runs (0.85-0.92x interleaved; 11.9 ms
# against 3.6-8.5 alone), B = 64 / 64 gained interleaved (1.25x, 1.32x), B = 256 / 64
# 1.62x, 1.64x.
FUSED_MIN_TREES_PER_CHUNK = 32
FUSED_MIN_TREE_SIMS = 2048


@nb.njit(cache=True, nogil=True)
def simulate_fused(t, rules, root, leaves, num_simulations, gumbel, hidden, ops, weights, scratch, outs, expansion):
    """`num_simulations` simulations on every tree (one leaf each, as the loop's k = 1).

    hidden [N, B, H] float32: the node-major hidden-state store (node 0 holds the roots');
    outs: the program's output places (MLPProgram.outs); expansion: the backup kernel's
    buffers (logits, legal, value, reward, discount, kind), of which logits, value and
    reward are written here. With `gumbel` the root's Sequential Halving reads simulation
    `sim`'s row of ``root``'s considered actions.
    """
    num_actions = t.children.shape[2]
    bufs = (np.empty(num_actions), np.empty(num_actions), np.empty(num_actions))
    coefs = prior_coefficients(Rules(*rules), t.children.shape[1] + 1)  # every N the search reaches
    batch = t.children.shape[0]
    _simulate(
        tree_arrays(t),
        rules,
        root,
        leaves,
        num_simulations,
        gumbel,
        hidden,
        ops,
        weights,
        scratch,
        outs,
        expansion,
        coefs,
        bufs,
        (0, batch),
    )


@nb.njit(cache=True, nogil=True, parallel=True)
def simulate_fused_parallel(
    num_chunks, t, rules, root, leaves, num_simulations, gumbel, hidden, ops, weights, scratch, outs, expansion
):
    """:func:`simulate_fused` with the trees split into `num_chunks` ranges
    (:func:`chunk_rows`), each running all its simulations on its own thread (numba's
    prange: one parallel region for the whole search, no barrier per simulation). Each
    range has its own part of `scratch` (:func:`chunk_stride` floats) and its own
    selection buffers; the trees, the store and the expansion's rows are indexed by tree,
    so no two threads write the same element. The ranges start on row tiles and the
    network runs without BLAS (:func:`_simulate`), so a tree's sums, and its search, are
    bit for bit those of one thread (``tests/test_fused_threads.py``)."""
    num_actions = t.children.shape[2]
    coefs = prior_coefficients(Rules(*rules), t.children.shape[1] + 1)
    batch = t.children.shape[0]
    arrays = tree_arrays(t)
    per = chunk_rows(batch, num_chunks)
    stride = scratch.shape[0] // num_chunks
    for c in nb.prange(num_chunks):
        lo = min(c * per, batch)
        hi = min(lo + per, batch)
        bufs = (np.empty(num_actions), np.empty(num_actions), np.empty(num_actions))
        part = scratch[c * stride : (c + 1) * stride]
        _simulate(
            arrays,
            rules,
            root,
            leaves,
            num_simulations,
            gumbel,
            hidden,
            ops,
            weights,
            part,
            outs,
            expansion,
            coefs,
            bufs,
            (lo, hi),
        )


@nb.njit(cache=True, nogil=True)
def chunk_rows(batch, num_chunks):
    """Trees per range when `batch` trees are split into `num_chunks`: a multiple of the
    row tiles' height (ROW_TILE), so that each tree falls in the same tile of four rows
    (or the same tail) as in the whole batch; the last range takes what is left."""
    per = -(-batch // num_chunks)
    return -(-per // ROW_TILE) * ROW_TILE


def chunk_stride(program: MLPProgram, batch: int, num_chunks: int) -> int:
    """Scratch floats each range of :func:`simulate_fused_parallel` takes: its rows' blocks,
    rounded up to a cache line."""
    rows = max(int(chunk_rows(batch, num_chunks)), 1)
    return -(-rows * program.width // 16) * 16


@nb.njit(cache=True, nogil=True, **NO_REFCOUNTS)
def _simulate(
    arrays,
    rules,
    root,
    leaves,
    num_simulations,
    gumbel,
    hidden,
    ops,
    weights,
    scratch,
    outs,
    expansion,
    coefs,
    bufs,
    span,
):
    """:func:`simulate_fused`'s loop over trees lo..hi-1 (`span` = (lo, hi)) of the tree's
    arrays (:func:`.kernels.packed.tree_arrays`), with the selection's table and buffers;
    compiled without reference counting (:data:`.kernels.packed.NO_REFCOUNTS`), as the
    kernels it calls. The network's rows are the range's, row 0 tree lo, and its layers
    without panels run on the register tiles at every batch, never BLAS: OpenBLAS's
    sums for a row depend on where the row lies in the product (its micro-tiles of rows,
    its threads' split; measured: a row moved 16 or 64 rows rounds differently), the
    tiles' only on the row's place in its group of ROW_TILE rows."""
    r = Rules(*rules)
    lv = Leaves(*leaves)
    forced, gumbel_logits, considered, _ = root
    lo, hi = span
    rows = hi - lo
    if rows <= 0:
        return
    # Never BLAS (see above), as a run-time False: with the literal, numba retyped the BLAS
    # branch in this function's no-reference-counting mode and refused np.dot there.
    no_blas = rows < 0
    x = input_block(ops, scratch, rows)
    new = program_outputs(scratch, rows, outs)
    for sim in range(num_simulations):
        select_trees(lo, hi, arrays, r, (forced, gumbel_logits, considered, sim if gumbel else 0), lv, 1, coefs, bufs)
        gather_inputs(x, hidden, lv.node, lv.action, lo, hi)
        run_rows(ops, weights, scratch, rows, no_blas)
        store_outputs(new, hidden, lv.new_node, expansion, lo, hi)
        _backup_range(lo, hi, arrays, r, lv, expansion, 1, False)


# The loop's two steps around the network, inlined into it (inline="always": the same
# compiled loop as written in place) and called alone by benchmarks/profile_fused_tree.py.
@nb.njit(cache=True, nogil=True, inline="always")
def program_outputs(scratch, batch, outs):
    """The program's output blocks (hidden, logits, value, reward) and whether it has a
    reward output (the reward block is the value's when it has none, and not read)."""
    has_reward = outs[REWARD_OUT, 0] != NO_OUTPUT
    return (
        output(scratch, batch, outs, HIDDEN_OUT),
        output(scratch, batch, outs, LOGITS_OUT),
        output(scratch, batch, outs, VALUE_OUT),
        output(scratch, batch, outs, REWARD_OUT if has_reward else VALUE_OUT),
        has_reward,
    )


@nb.njit(cache=True, nogil=True, inline="always")
def gather_inputs(x, hidden, node, action, lo, hi):
    """g's input rows for trees lo..hi-1 (row b - lo): each tree's parent state
    (node[b, 0]) and its action's one-hot."""
    h = hidden.shape[2]
    for b in range(lo, hi):
        if b + GATHER_AHEAD < hi:  # each parent's row is in a random place of the store
            for j in range(0, h, 16):  # (16 floats: a cache line)
                prefetch(hidden, (node[b + GATHER_AHEAD, 0], b + GATHER_AHEAD, j))
        p = node[b, 0]
        i = b - lo
        for j in range(h):
            x[i, j] = hidden[p, b, j]
        for j in range(h, x.shape[1]):  # the one-hot and block 0's padding
            x[i, j] = 0.0
        x[i, h + action[b, 0]] = 1.0


@nb.njit(cache=True, nogil=True, inline="always")
def store_outputs(new, hidden, new_node, expansion, lo, hi):
    """Trees lo..hi-1's new states (the network's rows b - lo) into the hidden store (node
    new_node[b, 0]), logits, value and reward into the expansion's buffers."""
    new_hidden, new_logits, new_value, new_reward, has_reward = new
    logits, _, value, reward, _, _ = expansion
    h = hidden.shape[2]
    for b in range(lo, hi):
        n = new_node[b, 0]
        i = b - lo
        for j in range(h):
            hidden[n, b, j] = new_hidden[i, j]
        for j in range(logits.shape[1]):
            logits[b, j] = new_logits[i, j]
        value[b] = new_value[i, 0]
        reward[b] = new_reward[i, 0] if has_reward else 0.0


def run_fused(
    program: MLPProgram,
    hidden: np.ndarray,
    arrays,
    rules: tuple,
    root: tuple,
    leaves: tuple,
    num_simulations: int,
    gumbel: bool,
    constants: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """:func:`simulate_fused` with its buffers: `constants` = (legal [B, A], discount [B],
    kind [B]), the expansion's rows every in-tree node shares. On :func:`fused_chunks`
    threads (:func:`simulate_fused_parallel`) where that pays."""
    legal, discount, kind = constants
    batch, num_actions = legal.shape
    expansion = (
        np.zeros((batch, num_actions), np.float32),
        legal,
        np.zeros(batch, np.float64),
        np.zeros(batch, np.float64),
        discount,
        kind,
    )
    chunks = fused_chunks(batch, num_simulations)
    if chunks == 1:
        scratch = program.scratch(batch)
        simulate_fused(
            arrays,
            rules,
            root,
            leaves,
            num_simulations,
            gumbel,
            hidden,
            program.ops,
            program.weights,
            scratch,
            program.outs,
            expansion,
        )
        return
    scratch = aligned_zeros(chunks * chunk_stride(program, batch, chunks))
    simulate_fused_parallel(
        chunks,
        arrays,
        rules,
        root,
        leaves,
        num_simulations,
        gumbel,
        hidden,
        program.ops,
        program.weights,
        scratch,
        program.outs,
        expansion,
    )


def fused_chunks(batch: int, num_simulations: int) -> int:
    """How many ranges (threads) the fused search splits `batch` trees into: as the tree
    kernels' :func:`.kernels.tree_chunks` (numba's thread count, the cores other processes
    leave free under POLYZERO_PARALLEL_TREES = auto), with ranges of at least
    FUSED_MIN_TREES_PER_CHUNK trees and FUSED_MIN_TREE_SIMS trees x simulations."""
    least = max(FUSED_MIN_TREES_PER_CHUNK, -(-FUSED_MIN_TREE_SIMS // max(num_simulations, 1)))
    return tree_chunks(batch, min_chunk=least)
