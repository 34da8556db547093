"""A layer's product on packed weight panels: every layer of 16k outputs, any batch.

OpenBLAS's sgemm packs both operands and zeroes its output on every call; for the
anchor's 256 x 128 x 128 layer that came to ~10% of the call, and XLA's CPU backend
(YNNPACK) ran the same products faster. Here W is packed once, when the program is
written, into panels of 16 outputs ([n_out / 16, n_in, 16], :func:`pack_panels`), and
a tile of MR rows x 16 outputs keeps its 2 * MR sums in AVX registers (eight floats
each) while it walks the inputs: per input, two vector loads of the panel, one
broadcast of each row's input and 2 * MR fused multiply-adds. The tile then adds the
bias and applies the ReLU as it stores (no pass after it for those).

The tile is written as LLVM IR (a Numba intrinsic): written in Python the 32 sums
stayed scalar (the SLP vectoriser does not pack loop-carried sums). Measured against
np.dot + the bias-and-ReLU pass on the shared 2-core EPYC (Zen 3, AVX2), process
time, interleaved: 256 x 128 -> 128 115 us against 135, 256 x 72 -> 128 57 against
67, 256 x 128 -> 64 57 against 68, 64 x 128 -> 128 31 against 44 (row tiles outer,
MR = 4; 6 x 16, the BLIS / OpenBLAS Haswell shape, 5 x 16, 8 x 8, panels outer and
row blocks: none faster across the layers, benchmarks/panel_tiles.py, where MR = 4
runs the B = 256 layers at 0.71-0.88 of the core's FMA peak under a load of 4).
Below 64 rows against ``mlp``'s register tiles and the pass: 128 -> 128 at 16 rows
7.1 us against 10.3, 72 -> 128 4.2 against 6.8, at one row 1.04 against 1.08 and 0.51
against 0.84.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

PANEL = 16  # outputs a panel holds: two AVX vectors
_MR = 4  # rows a tile holds

_F32 = ir.FloatType()
_VEC = ir.VectorType(_F32, 8)
_I32 = ir.IntType(32)


def pack_panels(wt: np.ndarray, width: int = PANEL) -> np.ndarray:
    """W^T [n_out, n_in] (n_out a multiple of width) as panels [n_out / width, n_in, width]."""
    n_out, n_in = wt.shape
    return np.ascontiguousarray(wt.reshape(n_out // width, width, n_in).transpose(0, 2, 1))


def make_tile(rows_in_tile: int, vectors: int = 2):
    """The intrinsic tile(x, panels, k, bias, out, r0, o0, relu, accumulate): out[r0 : r0 +
    rows_in_tile, o0 : o0 + w] = act(x[rows, :k] @ W[:k, o0 : o0 + w] + bias (+ out's
    values there first, with accumulate)), w = 8 * vectors outputs (PANEL here; other
    widths for benchmarks/panel_tiles.py); panels: the layer's W packed in panels of w,
    flat, with x.shape[1] inputs per panel."""
    width = 8 * vectors

    @intrinsic
    def tile(typingctx, x, panels, k, bias, out, r0, o0, relu, accumulate):
        def codegen(context, builder, sig, args):
            xa, wa, ba, oa = (context.make_array(sig.args[i])(context, builder, args[i]) for i in (0, 1, 3, 4))
            intp = context.get_value_type(types.intp)
            k_, r0_, o0_, relu_, acc_ = (
                context.cast(builder, args[i], sig.args[i], types.intp) for i in (2, 5, 6, 7, 8)
            )
            ldx = cgutils.unpack_tuple(builder, xa.shape, 2)[1]
            ldo = cgutils.unpack_tuple(builder, oa.shape, 2)[1]
            fma = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_VEC, [_VEC, _VEC, _VEC]), "llvm.fma.v8f32"
            )
            vptr = _VEC.as_pointer()
            zero = ir.Constant(_VEC, [0.0] * 8)

            def c(n):
                return ir.Constant(intp, n)

            def vload(ptr, off):
                return builder.load(builder.bitcast(builder.gep(ptr, [c(off)]), vptr), align=4)

            out_rows = [
                builder.gep(oa.data, [builder.add(builder.mul(builder.add(r0_, c(m)), ldo), o0_)])
                for m in range(rows_in_tile)
            ]
            start = builder.icmp_signed("!=", acc_, c(0))
            sums = [
                [
                    cgutils.alloca_once_value(builder, builder.select(start, vload(row, 8 * h), zero))
                    for h in range(vectors)
                ]
                for row in out_rows
            ]
            panel = builder.gep(wa.data, [builder.mul(o0_, ldx)])  # panel o0 / w holds ldx rows of w
            x_rows = [builder.gep(xa.data, [builder.mul(builder.add(r0_, c(m)), ldx)]) for m in range(rows_in_tile)]
            undef = ir.Constant(_VEC, ir.Undefined)
            splat = ir.Constant(ir.VectorType(_I32, 8), [0] * 8)
            with cgutils.for_range(builder, k_) as loop:
                w_row = builder.gep(panel, [builder.mul(loop.index, c(width))])
                w = [vload(w_row, 8 * h) for h in range(vectors)]
                for m in range(rows_in_tile):
                    xi = builder.load(builder.gep(x_rows[m], [loop.index]))
                    xv = builder.shuffle_vector(builder.insert_element(undef, xi, ir.Constant(_I32, 0)), undef, splat)
                    for h in range(vectors):
                        builder.store(builder.call(fma, [xv, w[h], builder.load(sums[m][h])]), sums[m][h])
            bias_ptr = builder.gep(ba.data, [o0_])
            b = [vload(bias_ptr, 8 * h) for h in range(vectors)]
            is_relu = builder.icmp_signed("!=", relu_, c(0))
            for m, row in enumerate(out_rows):
                for h in range(vectors):
                    v = builder.fadd(builder.load(sums[m][h]), b[h])
                    # unordered ">": a NaN stays NaN, as under max(v, 0), np.maximum and torch.relu
                    v = builder.select(is_relu, builder.select(builder.fcmp_unordered(">", v, zero), v, zero), v)
                    builder.store(v, builder.bitcast(builder.gep(row, [c(8 * h)]), vptr), align=4)
            return context.get_dummy_value()

        arrays = (x, panels, bias, out)
        if not all(isinstance(a, types.Array) and a.dtype == types.float32 and a.layout == "C" for a in arrays):
            return None
        return types.none(x, panels, k, bias, out, r0, o0, relu, accumulate), codegen

    return tile


_tile_rows = make_tile(_MR)
_tile_row = make_tile(1)


@nb.njit(cache=True, nogil=True)
def panel_product(x, panels, k, bias, out, relu, accumulate):
    """out = act(x[:, :k] @ W[:k] + bias (+ out, with accumulate)), act ReLU (relu) or
    none; out's width a multiple of PANEL. Row tiles outer: a tile's rows stay in L1
    while every panel passes them."""
    rows, n_out = out.shape
    grouped = rows - rows % _MR
    for r in range(0, grouped, _MR):
        for o in range(0, n_out, PANEL):
            _tile_rows(x, panels, k, bias, out, r, o, relu, accumulate)
    for r in range(grouped, rows):
        for o in range(0, n_out, PANEL):
            _tile_row(x, panels, k, bias, out, r, o, relu, accumulate)


@nb.njit(cache=True, nogil=True)
def add_sparse_rows(x, w_tail, k, out):
    """out = x[:, k:] @ W[k:] for sparse columns k.. of x (w_tail: W's rows for them,
    [n_in - k, n_out]): the first nonzero's row written, any other added, zeros where a
    row has none. Then :func:`panel_product` with accumulate adds the dense columns'
    product: for the recurrent program's first layer (64 state columns, the action's
    one-hot and a padding column) the tiles then walk 64 inputs instead of 72."""
    for r in range(x.shape[0]):
        first = True
        for j in range(k, x.shape[1]):
            v = x[r, j]
            if v != 0.0:
                if first:
                    for o in range(out.shape[1]):
                        out[r, o] = v * w_tail[j - k, o]
                else:
                    for o in range(out.shape[1]):
                        out[r, o] += v * w_tail[j - k, o]
                first = False
        if first:
            for o in range(out.shape[1]):
                out[r, o] = 0.0
