"""A small MLP's forward pass as compiled code: the network half of the fused search.

At B = 1-16 a call through PyTorch costs ~40 us of dispatch for ~60k multiply-adds
(the anchor's tiny MuZero MLP), more than mctx's whole 16-simulation search; run in
Numba beside the tree kernels, the network and the tree share one compiled loop
(:mod:`polyzero.search.fused`), as mctx's XLA loop does.

A network is a :class:`MLPProgram`: its weights in one float32 array and a list of
operations over one float32 scratch buffer. The buffer holds blocks, each a
row-major ``[M, width]`` matrix for the M batch rows (block ``(start, width)`` lies at
``scratch[start * M : (start + width) * M]``); block 0 is the input, its width rounded up
to a multiple of INPUT_ALIGN (see there), the columns past the real inputs zero and
their weights zero. Operations:

* ``DENSE (src, n_in, dst, n_out, w, b, act, k, tail, panels)``: block dst =
  ``act(block src @ W + bias)``, W^T stored [n_out, n_in] row-major at ``weights[w:]``,
  the bias at ``weights[b:]``; act: none, ReLU or tanh. W also packed in panels of 16
  outputs at ``weights[panels:]`` where n_out is a multiple of 16 (else panels = -1;
  :mod:`polyzero.search.kernels.panels`). Columns k..n_in of the input are sparse
  (k < n_in: the recurrent program's action one-hot, see
  :meth:`ProgramWriter.__init__`), W's rows for them also stored [n_in - k, n_out] at
  ``weights[tail:]``;
* ``MINMAX (start, width, col, n)``: ``(x - min x) / (max x - min x + 1e-5)`` per row over
  columns col..col+n of a block (MuZero Appendix G's hidden-state scaling, as
  ``nets.muzero``);
* ``SUPPORT (start, width, col, n, dst)``: a categorical output over -S..S (n = 2S + 1
  columns) decoded to a scalar in the one-column block dst, h^-1(E[softmax]) (MuZero
  Appendix F, as ``nets.support``);
* ``TANH (start, width, col, n)``.

Blocks, not column ranges of one [M, total] matrix: a layer then works on contiguous
matrices whose loops LLVM vectorises; with run-time column offsets it did not (the
anchor's 128 x 128 layer ran at 0.6-0.8 GMAC/s against 11-12 as blocks).

The weights and the operations are plain arrays, so one compiled function serves
every such network; ``polyzero.nets.fused`` writes the programs of MuZero's MLP
networks. The sums run in another order than PyTorch's (outputs equal within ~1e-6,
``tests/test_fused_search.py``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from polyzero.search.kernels.panels import PANEL, add_sparse_rows, pack_panels, panel_product

DENSE, MINMAX, SUPPORT, TANH = 0, 1, 2, 3
OP_FIELDS = 11  # an operation's row in MLPProgram.ops
ACT_NONE, ACT_RELU, ACT_TANH = 0, 1, 2
NO_OUTPUT = -1  # an output the network does not have (a board game's reward)
_SCALE_EPS = 1e-5  # nets.muzero's hidden-state scaling
_SUPPORT_EPS = 0.001  # nets.support's h transform
# Block 0's width is a multiple of this: the register tiles' inner loop over the inputs
# is vectorised eight floats (AVX2) at a time, the rest one at a time, and with g's 71
# inputs (64 state + 7 actions) the rest cost as much as the 64: 10.8 us against 7.1
# at 72 for the anchor's 71 -> 128 layer at B = 16. The padding's terms are exact
# zeros, but the sums' order changes with the width: outputs move by rounding only.
INPUT_ALIGN = 8


class MLPProgram(NamedTuple):
    """A network as the compiled forward runs it (see the module docstring).

    The inputs are written to block 0 before the program runs: the observation
    (initial inference) or the hidden state at columns [0, hidden) followed by the
    action's one-hot at [hidden, hidden + num_actions) (recurrent inference). The
    outputs are read afterwards at ``outs`` (int64 [4, 3], a row (block start, block
    width, column) each for the hidden state, the policy logits, the scalar value and
    the scalar reward; a reward row starting at NO_OUTPUT: always 0).
    """

    ops: np.ndarray  # int64 [n_ops, OP_FIELDS]
    weights: np.ndarray  # float32 [n_weights]
    width: int  # scratch columns a row needs, over all blocks
    hidden: int  # hidden-state size
    num_actions: int
    outs: np.ndarray  # int64 [4, 3]

    def scratch(self, rows: int) -> np.ndarray:
        return aligned_zeros(max(rows, 1) * self.width)


# Weights and scratch start on a cache line, each layer's weights too: a layer whose
# rows began 4 bytes past one ran 1-5% slower (vector loads split across lines), and
# which it was changed from one process to the next with malloc's addresses.
_ALIGN_FLOATS = 16


def aligned_zeros(n: int) -> np.ndarray:
    """float32 zeros [n] starting on a 64-byte boundary."""
    buf = np.zeros(n + _ALIGN_FLOATS, np.float32)
    skip = (-buf.ctypes.data // 4) % _ALIGN_FLOATS
    return buf[skip : skip + n]


HIDDEN_OUT, LOGITS_OUT, VALUE_OUT, REWARD_OUT = 0, 1, 2, 3


@nb.njit(cache=True, nogil=True, inline="always")
def block(scratch, rows, start, width):
    """Block (start, width) of the scratch as a [rows, width] matrix."""
    return scratch[start * rows : (start + width) * rows].reshape((rows, width))


# error_model="numpy" (here and on _dense): a float division returns inf/NaN on a zero
# divisor, as IEEE says, instead of Numba's check and raise, a branch that kept LLVM
# from vectorising every loop with a division (tanh's rational function, the
# hidden-state scaling): 5x slower.
@nb.njit(cache=True, nogil=True)
def run_program(ops, weights, scratch, rows):
    """Run the operations on `rows` rows, in place in `scratch`."""
    run_rows(ops, weights, scratch, rows, rows >= BLAS_MIN_ROWS)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def run_rows(ops, weights, scratch, rows, blas):
    """:func:`run_program`, BLAS for the layers without panels only with `blas` (the
    fused search takes none: ``search.fused._simulate`` says why)."""
    for k in range(ops.shape[0]):
        op, a, n = ops[k, 0], ops[k, 1], ops[k, 2]
        if op == DENSE:
            _dense(weights, block(scratch, rows, a, n), block(scratch, rows, ops[k, 3], ops[k, 4]), ops[k, 5:], blas)
            continue
        x = block(scratch, rows, a, n)
        col, cols = ops[k, 3], ops[k, 4]
        if op == MINMAX:
            _minmax(x, col, cols)
        elif op == SUPPORT:
            _support(x, col, cols, block(scratch, rows, ops[k, 5], 1))
        else:
            for r in range(x.shape[0]):
                for j in range(col, col + cols):
                    x[r, j] = tanh32(x[r, j])


# Reassociation lets LLVM vectorise a dot product's sum (several partial sums); no other
# fast-math assumption (NaN and infinity stay as IEEE has them).
_DOT_MATH = {"reassoc", "contract"}


# A layer whose outputs are a multiple of 16 runs on its packed panels at any row count
# (kernels.panels; the anchor's 128 x 128 layer: 7.1 us against the tiles' 10.3 at 16
# rows, 1.04 against 1.08 at one, 115 against sgemm's 135 at 256). Another goes to BLAS
# from this many rows (sgemm, through np.dot on the contiguous blocks; one thread under
# set_threads(1)): measured on the shared 2-core EPYC for a 128 x 128 layer, BLAS 32
# GMAC/s against the register tiles' 27 at 256 rows, level at 64, the tiles ahead below
# (29 against 19 at 32 rows: BLAS packs both operands every call).
BLAS_MIN_ROWS = 64
# Rows of a register tile (_dense_tiles', panels' _MR): a row's sums differ with its place
# in a tile or the tail, so the fused search's threads start their ranges on a multiple.
ROW_TILE = 4
# ... and BLAS this many outputs, or one (np.dot's gemv): the tiles ran a 128 -> 8 layer
# at 256 rows in 10.2 us against sgemm's 12.9 (16 outputs: 20.3 and 22.1; 32: 39.7,
# 38.5; 1: 3.7 against gemv's 2.8).
BLAS_MIN_OUTPUTS = 16


@nb.njit(cache=True, nogil=True, fastmath=_DOT_MATH, error_model="numpy")
def _dense(weights, x, out, wba, blas):
    """One layer for every row: out[r, o] = act(x[r] . W^T[o] + bias[o]), W^T stored
    [n_out, n_in]. The packed panels where the layer has them (wba[5] >= 0), which add
    the bias and apply a ReLU as they store (sparse input columns, wba[3] < n_in: their
    W rows first, :func:`panels.add_sparse_rows`); else BLAS with `blas` (the caller's
    choice: from BLAS_MIN_ROWS rows), without it :func:`_dense_tiles`, then the bias and
    the activation in one vectorised pass."""
    rows, n_in = x.shape
    n_out = out.shape[1]
    w, b, act, k, tail, packed = wba[0], wba[1], wba[2], wba[3], wba[4], wba[5]
    wt = weights[w : w + n_in * n_out].reshape((n_out, n_in))
    bias = weights[b : b + n_out]
    if packed >= 0:
        if k < n_in:
            add_sparse_rows(x, weights[tail : tail + (n_in - k) * n_out].reshape((n_in - k, n_out)), k, out)
        panel_product(x, weights[packed : packed + n_in * n_out], k, bias, out, act == ACT_RELU, k < n_in)
        if act == ACT_TANH:
            for r in range(rows):
                for o in range(n_out):  # + 0.0: see _bias_activate
                    out[r, o] = tanh32(out[r, o] + np.float32(0.0))
        return
    if not blas or 1 < n_out < BLAS_MIN_OUTPUTS:
        _dense_tiles(x, wt, out)
    else:
        np.dot(x, wt.T, out)
    _bias_activate(out, bias, act)


@nb.njit(cache=True, nogil=True, fastmath=_DOT_MATH, inline="always")
def _bias_activate(out, bias, act):
    """out = act(out + bias), one loop per activation so that each vectorises (tanh in
    the tiles' stores ran one element at a time: ~40% of a 128 -> 64 tanh layer; 16k
    tanh 82 us before, 15 us vectorised). Without the bias a loop ``out = f(out)`` may
    compile to a store only where the value changes, which LLVM leaves scalar (a
    ReLU's 22.6 us against 2.4 for 256 x 128): such passes add + 0.0 (not folded
    without no-signed-zeros; max and tanh give the same for -0.0 and +0.0)."""
    rows, n_out = out.shape
    if act == ACT_RELU:
        for r in range(rows):
            for o in range(n_out):
                out[r, o] = max(out[r, o] + bias[o], np.float32(0.0))
    elif act == ACT_TANH:
        for r in range(rows):
            for o in range(n_out):
                out[r, o] = tanh32(out[r, o] + bias[o])
    else:
        for r in range(rows):
            for o in range(n_out):
                out[r, o] += bias[o]


@nb.njit(cache=True, nogil=True, fastmath=_DOT_MATH, inline="always")
def _dense_tiles(x, wt, out):
    """out = x @ W in blocks of four rows by two outputs: each weight load serves four
    rows and each input load two outputs (eight sums in registers).

    Measured on the 2-core EPYC, a 128 x 128 layer: ~29 GMAC/s at B = 16 and ~27 at
    B = 256 (four rows by one output: 22 and 19; an input-major loop without fast-math,
    vectorised over the outputs: ~11). The price of the reassociated sums: their
    rounding may differ with the batch (a block of four rows or the tail) and, as LLVM
    may reorder them, with the code the function is compiled into (outputs equal
    PyTorch's within ~1e-6 either way, ``tests/test_fused_search.py``)."""
    rows = x.shape[0]
    n_out = out.shape[1]
    grouped = rows // 4 * 4
    paired = n_out // 2 * 2
    for r in range(0, grouped, 4):
        for o in range(0, paired, 2):
            a0 = a1 = a2 = a3 = c0 = c1 = c2 = c3 = np.float32(0.0)
            for i in range(x.shape[1]):
                u, v = wt[o, i], wt[o + 1, i]
                x0, x1, x2, x3 = x[r, i], x[r + 1, i], x[r + 2, i], x[r + 3, i]
                a0 += x0 * u
                a1 += x1 * u
                a2 += x2 * u
                a3 += x3 * u
                c0 += x0 * v
                c1 += x1 * v
                c2 += x2 * v
                c3 += x3 * v
            out[r, o], out[r, o + 1] = a0, c0
            out[r + 1, o], out[r + 1, o + 1] = a1, c1
            out[r + 2, o], out[r + 2, o + 1] = a2, c2
            out[r + 3, o], out[r + 3, o + 1] = a3, c3
        for o in range(paired, n_out):
            for k in range(r, r + 4):
                out[k, o] = _dot(x, wt, k, o)
    for r in range(grouped, rows):
        for o in range(n_out):
            out[r, o] = _dot(x, wt, r, o)


@nb.njit(cache=True, nogil=True, fastmath=_DOT_MATH, inline="always")
def _dot(x, wt, r, o):
    acc = np.float32(0.0)
    for i in range(x.shape[1]):
        acc += x[r, i] * wt[o, i]
    return acc


# tanh as the rational function Eigen's ptanh_float (and so XLA's CPU backend) uses:
# a few ulp from float32's tanh, plain arithmetic that LLVM vectorises, where math.tanh
# is a libm call per element (~1/3 of the anchor's recurrent function at B = 16).
_TANH_CLAMP = np.float32(7.90531110763549805)
_TANH_ALPHA = tuple(
    np.float32(a)
    for a in (
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    )
)
_TANH_BETA = tuple(np.float32(b) for b in (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03))
_TANH_BETA0 = np.float32(4.89352518554385e-03)
_TANH_TINY = np.float32(0.0004)


@nb.njit(cache=True, nogil=True, inline="always")
def tanh32(x):
    """float32 tanh (Eigen's rational approximation, see above); exact for |x| < 4e-4."""
    if abs(x) < _TANH_TINY:
        return x
    x = min(max(x, -_TANH_CLAMP), _TANH_CLAMP)
    x2 = x * x
    p = _TANH_ALPHA[0]
    for a in _TANH_ALPHA[1:]:
        p = x2 * p + a
    q = _TANH_BETA[0]
    for b in _TANH_BETA[1:]:
        q = x2 * q + b
    q = x2 * q + _TANH_BETA0
    return x * p / q


@nb.njit(cache=True, nogil=True, inline="always")
def _minmax(x, col, n):
    for r in range(x.shape[0]):
        lo = x[r, col]
        hi = lo
        for j in range(col, col + n):
            lo = min(lo, x[r, j])
            hi = max(hi, x[r, j])
        span = hi - lo + np.float32(_SCALE_EPS)
        for j in range(col, col + n):
            x[r, j] = (x[r, j] - lo) / span


@nb.njit(cache=True, nogil=True, inline="always")
def _support(x, col, n, out):
    """h^-1(sum_i softmax(logits)_i * (i - S)); the inverse in float64 as nets.support's."""
    s = (n - 1) // 2
    for r in range(x.shape[0]):
        top = x[r, col]
        for j in range(col, col + n):
            top = max(top, x[r, j])
        total = 0.0
        mean = 0.0
        for j in range(n):
            e = math.exp(x[r, col + j] - top)
            total += e
            mean += e * (j - s)
        y = mean / total
        eps = _SUPPORT_EPS
        t = (math.sqrt(1.0 + 4.0 * eps * (abs(y) + 1.0 + eps)) - 1.0) / (2.0 * eps)
        out[r, 0] = math.copysign(t * t - 1.0, y) if y != 0.0 else 0.0


@nb.njit(cache=True, nogil=True, inline="always")
def output(scratch, rows, outs, which):
    """Output `which` (HIDDEN_OUT, ...) as a [rows, n] view of its block's columns from
    its first one on."""
    return block(scratch, rows, outs[which, 0], outs[which, 1])[:, outs[which, 2] :]


@nb.njit(cache=True, nogil=True, inline="always")
def input_block(ops, scratch, rows):
    """Block 0 as a [rows, width] matrix, its width (padded, see INPUT_ALIGN) as the
    first operation reading it has it. Its writers zero the columns past their inputs:
    a scratch used before with another row count holds other blocks' values there."""
    for k in range(ops.shape[0]):
        if ops[k, 1] == 0:
            return block(scratch, rows, 0, ops[k, 2])
    return block(scratch, rows, 0, 0)


@nb.njit(cache=True, nogil=True)
def recurrent_rows(ops, weights, scratch, hidden, action, rows, num_actions):
    """Write rows' inputs (hidden [M, H], action [M]) into block 0 and run: the
    recurrent inference of one batch, outside the fused search (tests, benchmarks)."""
    h = hidden.shape[1]
    x = input_block(ops, scratch, rows)
    for r in range(rows):
        for j in range(h):
            x[r, j] = hidden[r, j]
        for j in range(h, x.shape[1]):
            x[r, j] = 0.0
        x[r, h + action[r]] = 1.0
    run_program(ops, weights, scratch, rows)


@nb.njit(cache=True, nogil=True)
def initial_rows(ops, weights, scratch, obs, rows):
    """Write the observations [M, D] into block 0 and run (initial inference)."""
    x = input_block(ops, scratch, rows)
    for r in range(rows):
        for j in range(obs.shape[1]):
            x[r, j] = obs[r, j]
        for j in range(obs.shape[1], x.shape[1]):
            x[r, j] = 0.0
    run_program(ops, weights, scratch, rows)


class ProgramWriter:
    """Builds an :class:`MLPProgram` layer by layer. A block is named by its start column;
    block 0, of `input_width` columns padded to a multiple of INPUT_ALIGN, is the input;
    every output takes a fresh block, so no operation reads what it writes."""

    def __init__(self, input_width: int, sparse_from: int | None = None):
        """Input columns from `sparse_from` on are mostly zeros (the recurrent program's
        action one-hot): a layer on the input then multiplies only the columns before
        them in BLAS and adds W's rows for their nonzeros (see :func:`_dense`)."""
        self.width = -(-input_width // INPUT_ALIGN) * INPUT_ALIGN
        self._sparse_from = input_width if sparse_from is None else sparse_from
        self._widths = {0: self.width}
        self._inputs = {0: input_width}  # a block's real columns, where fewer than its width
        self._ops: list[list[int]] = []
        self._weights: list[np.ndarray] = []
        self._size = 0

    def _block(self, n: int) -> int:
        start, self.width = self.width, self.width + n
        self._widths[start] = n
        return start

    def _store(self, array: np.ndarray) -> int:
        off = self._size
        flat = np.ascontiguousarray(array, np.float32).ravel()
        tail = -flat.size % _ALIGN_FLOATS  # the next array starts on a cache line
        self._weights += [flat, np.zeros(tail, np.float32)]
        self._size += flat.size + tail
        return off

    def dense(self, src: int, weight: np.ndarray, bias: np.ndarray | None, act: int = ACT_NONE) -> int:
        """A layer on block src: weight [n_in, n_out] (a torch Linear's ``weight.T``),
        bias [n_out] or None; returns its output block."""
        n_in, n_out = weight.shape
        if self._inputs.get(src, self._widths[src]) != n_in:
            raise ValueError(
                f"a layer of {n_in} inputs on a block of {self._inputs.get(src, self._widths[src])} columns"
            )
        padded = np.zeros((self._widths[src], n_out), np.float32)  # zero weights for block 0's padding
        padded[:n_in] = weight
        w = self._store(padded.T)  # the kernel reads W^T's rows
        b = self._store(np.zeros(n_out, np.float32) if bias is None else bias)
        dst = self._block(n_out)
        k, tail = self._widths[src], 0
        if src == 0 and self._sparse_from < n_in:
            k, tail = self._sparse_from, self._store(padded[self._sparse_from :])
        panels = self._store(pack_panels(padded.T)) if n_out % PANEL == 0 else -1
        self._ops.append([DENSE, src, self._widths[src], dst, n_out, w, b, act, k, tail, panels])
        return dst

    def relu_last(self) -> None:
        """A ReLU after the last layer (a Sequential's ``nn.ReLU``)."""
        if not self._ops or self._ops[-1][0] != DENSE or self._ops[-1][7] != ACT_NONE:
            raise ValueError("a ReLU must follow a linear layer without activation")
        self._ops[-1][7] = ACT_RELU

    def _columns(self, op: int, start: int, col: int, n: int, dst: int = 0) -> None:
        if col + n > self._widths[start]:
            raise ValueError(f"columns {col}..{col + n} past block {start}'s {self._widths[start]}")
        self._ops.append([op, start, self._widths[start], col, n, dst, 0, 0, 0, 0, 0])

    def minmax(self, start: int, col: int, n: int) -> None:
        self._columns(MINMAX, start, col, n)

    def tanh(self, start: int, col: int, n: int) -> None:
        self._columns(TANH, start, col, n)

    def support(self, start: int, col: int, n: int) -> int:
        """The block of the scalar a categorical output over -S..S (n = 2S + 1 columns
        from `col` of block `start`) decodes to."""
        dst = self._block(1)
        self._columns(SUPPORT, start, col, n, dst)
        return dst

    def program(self, hidden: int, num_actions: int, hidden_out, logits_out, value_out, reward_out) -> MLPProgram:
        """The program; each output is (block, column) or, for the reward, None."""
        outs = np.full((4, 3), NO_OUTPUT, np.int64)
        for row, where in enumerate((hidden_out, logits_out, value_out, reward_out)):
            if where is not None:
                outs[row] = (where[0], self._widths[where[0]], where[1])
        weights = aligned_zeros(self._size)
        if self._weights:
            weights[:] = np.concatenate(self._weights)
        ops = np.asarray(self._ops, np.int64).reshape(-1, OP_FIELDS)
        width = _share_dead_blocks(ops, outs, self._widths)
        return MLPProgram(ops, weights, width, hidden, num_actions, outs)


# Where an operation names blocks: its row's columns that hold a block's start.
_BLOCK_FIELDS = {DENSE: (1, 3), MINMAX: (1,), SUPPORT: (1, 5), TANH: (1,)}


def _share_dead_blocks(ops: np.ndarray, outs: np.ndarray, widths: dict[int, int]) -> int:
    """Move the blocks (in place in `ops` and `outs`) so that a block takes the columns of
    blocks no longer read when it is written; returns the scratch's width. At B = 256 the
    anchor's recurrent program then needs 328 columns a row (336 KB) instead of 658
    (674 KB against a 512 KB L2). Block 0 stays at 0; a block lives from the operation
    that writes it to the last one that reads it, an output to the end; an operation's
    output never shares its inputs' columns (the kernels read while they write)."""
    born, last = {0: -1}, {0: -1}
    for k, op in enumerate(ops):
        for field in _BLOCK_FIELDS[int(op[0])]:
            start = int(op[field])
            born.setdefault(start, k)
            last[start] = k
    for row in outs:
        if row[0] != NO_OUTPUT:
            last[int(row[0])] = len(ops)
    place: dict[int, int] = {}
    for b in sorted(born, key=lambda b: (born[b], b)):
        live = [o for o in place if born[o] <= last[b] and born[b] <= last[o]]
        for s in sorted({0, *(place[o] + widths[o] for o in live)}):
            if all(s + widths[b] <= place[o] or place[o] + widths[o] <= s for o in live):
                place[b] = s
                break
    for op in ops:
        for field in _BLOCK_FIELDS[int(op[0])]:
            op[field] = place[int(op[field])]
    for row in outs:
        if row[0] != NO_OUTPUT:
            row[0] = place[int(row[0])]
    return max(place[b] + widths[b] for b in place)
