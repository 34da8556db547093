"""The tree as one structure the kernels take: a Numba structref over the arrays of a
:class:`~polyzero.search.tree.Tree` (the same arrays, not copies; fields named as
:class:`~polyzero.search.tree.TreeArrays`).

Why a structref and not a named tuple of arrays: a named tuple is passed by value,
and Numba copies all sixteen arrays' descriptors at every inlined call (with one at
every tree node, selection ran 2-3x slower); a structref is one pointer, and Numba's
dispatcher types it faster than a tuple. Each kernel reads the arrays it needs out of
it once per call (benchmarks/kernel_packing.py measures the kernels against the
29-argument ones they replaced).
"""

from __future__ import annotations

import numba as nb
from numba.core import types
from numba.experimental import structref

from ..tree import Tree, TreeArrays


@structref.register
class TreeRefType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class TreeRef(structref.StructRefProxy):
    """The kernels' handle on a Tree's arrays (build it with :func:`pack`)."""


structref.define_proxy(TreeRef, TreeRefType, list(TreeArrays._fields))


@nb.njit(cache=True, nogil=True)
def _pack(arrays):
    return TreeRef(*arrays)


def pack(tree: Tree) -> TreeRef:
    """The kernels' handle on `tree`'s arrays (a few microseconds; once per search)."""
    return _pack(tuple(tree.arrays()))
