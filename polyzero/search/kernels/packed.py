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

from typing import Any

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


# Numba's option to compile a function without reference counting (private, so spelled
# here once: its typed stubs do not list it). The tree kernels that allocate nothing take
# it: with counting, each inlined helper that took arrays (the scoring at every node)
# counted references to them up and down, atomic operations that took about a third of
# the selection's time at B = 256 (docs/journal/2026-11-29-tree-work-v2.md). Such a
# function cannot allocate, slice-copy or read a structure: it takes `tree_arrays`.
NO_REFCOUNTS: dict[str, Any] = {"_nrt": False}


@nb.njit(cache=True, nogil=True, inline="always")
def tree_arrays(t):
    """The structure's arrays as a tuple, in TreeArrays' order: what the kernels compiled
    without reference counting take (they cannot read the structure, which needs it)."""
    return (
        t.children,
        t.parent,
        t.action,
        t.depth,
        t.visits,
        t.virtual,
        t.value,
        t.raw_value,
        t.reward,
        t.discount,
        t.prior,
        t.legal,
        t.kind,
        t.num_nodes,
        t.q_min,
        t.q_max,
    )


def pack(tree: Tree) -> TreeRef:
    """The kernels' handle on `tree`'s arrays (a few microseconds; once per search)."""
    return _pack(tuple(tree.arrays()))
