"""Layer products through BLAS from compiled code, beyond ``np.dot``.

:func:`gemm_accumulate`: sgemm with beta = 1, the product added to what the output
block holds (Numba's ``np.dot`` calls sgemm with beta = 0), over the first k columns
of the input. The call goes through the same C wrapper as ``np.dot``
(``numba_xxgemm`` in Numba's helper library, which finds SciPy's ``cython_blas``
sgemm), named as a symbol in the compiled code, so the functions that use it stay
cacheable (a ctypes function pointer would not be).

:func:`sparse_tail_product`: a layer whose last input columns are mostly zeros (the
recurrent program's action one-hot) multiplies only the others in sgemm.
"""

from __future__ import annotations

import numba as nb
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.linalg import check_blas_return, ensure_blas, make_constant_slot

_CHAR = ir.IntType(8)


@intrinsic
def gemm_accumulate(typingctx, x, wt, out, k):
    """out += x[:, :k] @ wt[:, :k].T for C-contiguous float32 matrices x [M, Kx],
    wt [N, Kw], out [M, N] (k <= Kx, Kw: the caller checks).

    Row-major out is column-major out^T = wt (column-major [Kw, N], transposed) @ x^T
    (column-major [Kx, M]): sgemm('T', 'N', N, M, k, 1, wt, Kw, x, Kx, 1, out, N)."""
    arrays = (x, wt, out)
    if not all(isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C" for a in arrays):
        return None
    if not all(a.dtype == types.float32 for a in arrays) or not isinstance(k, types.Integer):
        return None
    ensure_blas()

    def codegen(context, builder, sig, args):
        xa, wa, oa = (context.make_array(t)(context, builder, v) for t, v in zip(sig.args[:3], args[:3]))
        rows, ldx = cgutils.unpack_tuple(builder, xa.shape, 2)
        n_out, ldw = cgutils.unpack_tuple(builder, wa.shape, 2)
        n_in = context.cast(builder, args[3], sig.args[3], types.intp)
        intp = context.get_value_type(types.intp)
        void_p = cgutils.voidptr_t
        fnty = ir.FunctionType(
            ir.IntType(32),
            [_CHAR, _CHAR, _CHAR, intp, intp, intp, void_p, void_p, intp, void_p, intp, void_p, void_p, intp],
        )
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")
        one = builder.bitcast(make_constant_slot(context, builder, types.float32, 1.0), void_p)
        res = builder.call(
            fn,
            (
                ir.Constant(_CHAR, ord("s")),
                ir.Constant(_CHAR, ord("t")),
                ir.Constant(_CHAR, ord("n")),
                n_out,
                rows,
                n_in,
                one,
                builder.bitcast(wa.data, void_p),
                ldw,
                builder.bitcast(xa.data, void_p),
                ldx,
                one,
                builder.bitcast(oa.data, void_p),
                n_out,
            ),
        )
        check_blas_return(context, builder, res)
        return context.get_dummy_value()

    return types.none(x, wt, out, k), codegen


@nb.njit(cache=True, inline="always")
def sparse_tail_product(x, wt, w_tail, k, out):
    """out = x @ W, columns k.. of x sparse: out starts as the sum of W's rows of the
    row's nonzero sparse columns (one row for a one-hot), then sgemm adds the dense
    columns' product (beta = 1). For the anchor's 71 -> 128 layer at B = 256 the
    product then runs over 64 inputs instead of 72 (BLAS multiplies every column):
    58-66 us against 63-70 in three interleaved runs on the shared 2-core EPYC.
    The bias stays in ``mlp._dense``'s pass: preloading it too and leaving a pass for
    the activation alone cost as much (3.4 us for the one pass against 2.7 + 2.4 for
    256 x 128; sgemm with beta = 1 saves its own zeroing, ~3)."""
    for r in range(x.shape[0]):
        first = True  # the first nonzero's row is written, not added to zeros
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
    gemm_accumulate(x, wt, out, k)
