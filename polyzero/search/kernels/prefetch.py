"""A software prefetch for compiled code: ``prefetch(array, (i, j, ...))`` asks the CPU to
bring the cache line of ``array[i, j, ...]`` in (LLVM's ``llvm.prefetch``: a read, kept in
every level), without waiting for it and without effect on any value."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I32 = ir.IntType(32)


@intrinsic
def prefetch(typingctx, ary, index):
    if not isinstance(ary, types.Array) or not isinstance(index, types.BaseTuple) or len(index) != ary.ndim:
        return None
    if not all(isinstance(t, types.Integer) for t in index):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty = sig.args
        arr = context.make_array(aryty)(context, builder, args[0])
        raw = cgutils.unpack_tuple(builder, args[1], len(idxty))
        idx = [context.cast(builder, v, t, types.intp) for v, t in zip(raw, idxty)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, arr, idx, wraparound=False)
        fnty = ir.FunctionType(ir.VoidType(), [ir.PointerType(), _I32, _I32, _I32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
        return context.get_dummy_value()

    return types.none(ary, index), codegen
