"""A small MLP's forward pass as compiled code: the network half of the fused search.

At B = 1-16 a call through PyTorch costs ~40 us of dispatch for ~60k multiply-adds
(the anchor's tiny MuZero MLP), more than mctx's whole 16-simulation search; run in
Numba beside the tree kernels, the network and the tree share one compiled loop
(:mod:`polyzero.search.fused`), as mctx's XLA loop does.

A network is a :class:`MLPProgram`: its weights in one float32 array and a list of
operations over one float32 scratch row per batch element (``scratch [M, width]``;
every operation reads and writes column ranges of it):

* ``DENSE (src, n_in, dst, n_out, w, b, act)``: ``scratch[:, dst:dst+n_out] =
  act(scratch[:, src:src+n_in] @ W + bias)``, W stored [n_in, n_out] row-major at
  ``weights[w:]`` and the bias at ``weights[b:]``; act: none, ReLU or tanh;
* ``MINMAX (off, n)``: ``(x - min x) / (max x - min x + 1e-5)`` per row over the
  range (MuZero Appendix G's hidden-state scaling, as ``nets.muzero``);
* ``SUPPORT (src, n, dst)``: a categorical output over -S..S (n = 2S + 1) decoded to
  a scalar, h^-1(E[softmax]) (MuZero Appendix F, as ``nets.support``);
* ``TANH (off, n)``.

The weights and the operations are plain arrays, so one compiled function serves
every such network; ``polyzero.nets.fused`` writes the programs of MuZero's MLP
networks. The products skip zero inputs (one-hot actions, ReLU's zeros): adding
``0 * w`` changes nothing, so the outputs are those of the dense product.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

DENSE, MINMAX, SUPPORT, TANH = 0, 1, 2, 3
ACT_NONE, ACT_RELU, ACT_TANH = 0, 1, 2
NO_OUTPUT = -1  # an output the network does not have (a board game's reward)
_SCALE_EPS = 1e-5  # nets.muzero's hidden-state scaling
_SUPPORT_EPS = 0.001  # nets.support's h transform


class MLPProgram(NamedTuple):
    """A network as the compiled forward runs it (see the module docstring).

    Inputs are written to the scratch row before the program runs: the observation
    (initial inference) or the hidden state at ``[0, hidden)`` followed by the
    action's one-hot at ``[hidden, hidden + num_actions)`` (recurrent inference).
    The outputs are read at their column offsets afterwards.
    """

    ops: np.ndarray  # int64 [n_ops, 8]
    weights: np.ndarray  # float32 [n_weights]
    width: int  # scratch columns a row needs
    hidden: int  # hidden-state size
    num_actions: int
    hidden_out: int  # column of the output hidden state (hidden columns)
    logits_out: int  # column of the policy logits (num_actions columns)
    value_out: int  # column of the scalar value
    reward_out: int  # column of the scalar reward, NO_OUTPUT: always 0

    def scratch(self, rows: int) -> np.ndarray:
        return np.zeros((max(rows, 1), self.width), np.float32)


@nb.njit(cache=True)
def run_program(ops, weights, scratch, rows):
    """Run the operations on the first `rows` rows of `scratch`, in place."""
    for k in range(ops.shape[0]):
        op = ops[k, 0]
        if op == DENSE:
            _dense(weights, scratch, rows, ops[k, 1], ops[k, 2], ops[k, 3], ops[k, 4], ops[k, 5], ops[k, 6], ops[k, 7])
        elif op == MINMAX:
            _minmax(scratch, rows, ops[k, 1], ops[k, 2])
        elif op == SUPPORT:
            _support(scratch, rows, ops[k, 1], ops[k, 2], ops[k, 3])
        else:
            for r in range(rows):
                for j in range(ops[k, 1], ops[k, 1] + ops[k, 2]):
                    scratch[r, j] = math.tanh(scratch[r, j])


@nb.njit(cache=True, inline="always")
def _dense(weights, scratch, rows, src, n_in, dst, n_out, w, b, act):
    """One layer for every row. Input-major: each weight row is read once for all rows
    (it stays in L1 while the rows' accumulators do), the inner loop runs over the
    outputs (contiguous: vectorised)."""
    for r in range(rows):
        for o in range(n_out):
            scratch[r, dst + o] = weights[b + o]
    for i in range(n_in):
        base = w + i * n_out
        for r in range(rows):
            x = scratch[r, src + i]
            if x != 0.0:
                for o in range(n_out):
                    scratch[r, dst + o] += x * weights[base + o]
    if act == ACT_RELU:
        for r in range(rows):
            for o in range(n_out):
                if scratch[r, dst + o] < 0.0:
                    scratch[r, dst + o] = 0.0
    elif act == ACT_TANH:
        for r in range(rows):
            for o in range(n_out):
                scratch[r, dst + o] = math.tanh(scratch[r, dst + o])


@nb.njit(cache=True, inline="always")
def _minmax(scratch, rows, off, n):
    for r in range(rows):
        lo = scratch[r, off]
        hi = lo
        for j in range(off, off + n):
            lo = min(lo, scratch[r, j])
            hi = max(hi, scratch[r, j])
        span = hi - lo + np.float32(_SCALE_EPS)
        for j in range(off, off + n):
            scratch[r, j] = (scratch[r, j] - lo) / span


@nb.njit(cache=True, inline="always")
def _support(scratch, rows, src, n, dst):
    """h^-1(sum_i softmax(logits)_i * (i - S)); the inverse in float64 as nets.support's."""
    s = (n - 1) // 2
    for r in range(rows):
        top = scratch[r, src]
        for j in range(src, src + n):
            top = max(top, scratch[r, j])
        total = 0.0
        mean = 0.0
        for j in range(n):
            e = math.exp(scratch[r, src + j] - top)
            total += e
            mean += e * (j - s)
        y = mean / total
        eps = _SUPPORT_EPS
        t = (math.sqrt(1.0 + 4.0 * eps * (abs(y) + 1.0 + eps)) - 1.0) / (2.0 * eps)
        scratch[r, dst] = math.copysign(t * t - 1.0, y) if y != 0.0 else 0.0


@nb.njit(cache=True)
def recurrent_rows(ops, weights, scratch, hidden, action, rows, num_actions):
    """Write rows' inputs (hidden [M, H], action [M]) into the scratch and run: the
    recurrent inference of one batch, outside the fused search (tests, benchmarks)."""
    h = hidden.shape[1]
    for r in range(rows):
        for j in range(h):
            scratch[r, j] = hidden[r, j]
        for j in range(num_actions):
            scratch[r, h + j] = 0.0
        scratch[r, h + action[r]] = 1.0
    run_program(ops, weights, scratch, rows)


@nb.njit(cache=True)
def initial_rows(ops, weights, scratch, obs, rows):
    """Write the observations [M, D] into the scratch and run (initial inference)."""
    for r in range(rows):
        for j in range(obs.shape[1]):
            scratch[r, j] = obs[r, j]
    run_program(ops, weights, scratch, rows)


class ProgramWriter:
    """Builds an :class:`MLPProgram` layer by layer; every output takes fresh columns
    after the input's (`input_width`), so no operation reads what it writes."""

    def __init__(self, input_width: int):
        self.width = input_width
        self._ops: list[list[int]] = []
        self._weights: list[np.ndarray] = []
        self._size = 0

    def _columns(self, n: int) -> int:
        off, self.width = self.width, self.width + n
        return off

    def _store(self, array: np.ndarray) -> int:
        off = self._size
        flat = np.ascontiguousarray(array, np.float32).ravel()
        self._weights.append(flat)
        self._size += flat.size
        return off

    def dense(self, src: int, weight: np.ndarray, bias: np.ndarray | None, act: int = ACT_NONE) -> int:
        """A layer on columns [src, src + n_in): weight [n_in, n_out] (a torch Linear's
        ``weight.T``), bias [n_out] or None; returns the output's first column."""
        n_in, n_out = weight.shape
        w = self._store(weight)
        b = self._store(np.zeros(n_out, np.float32) if bias is None else bias)
        dst = self._columns(n_out)
        self._ops.append([DENSE, src, n_in, dst, n_out, w, b, act])
        return dst

    def relu_last(self) -> None:
        """A ReLU after the last layer (a Sequential's ``nn.ReLU``)."""
        if not self._ops or self._ops[-1][0] != DENSE or self._ops[-1][7] != ACT_NONE:
            raise ValueError("a ReLU must follow a linear layer without activation")
        self._ops[-1][7] = ACT_RELU

    def minmax(self, off: int, n: int) -> None:
        self._ops.append([MINMAX, off, n, 0, 0, 0, 0, 0])

    def tanh(self, off: int, n: int) -> None:
        self._ops.append([TANH, off, n, 0, 0, 0, 0, 0])

    def support(self, src: int, n: int) -> int:
        """The scalar a categorical output over -S..S (n = 2S + 1 columns at src) decodes to."""
        dst = self._columns(1)
        self._ops.append([SUPPORT, src, n, dst, 0, 0, 0, 0])
        return dst

    def program(
        self, hidden: int, num_actions: int, hidden_out: int, logits_out: int, value_out: int, reward_out: int
    ) -> MLPProgram:
        weights = np.concatenate(self._weights) if self._weights else np.zeros(0, np.float32)
        ops = np.asarray(self._ops, np.int64).reshape(-1, 8)
        return MLPProgram(ops, weights, self.width, hidden, num_actions, hidden_out, logits_out, value_out, reward_out)
