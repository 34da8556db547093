"""Compiled tree bookkeeping: selection and backup for all B trees in one call each.

One round of a batched search calls :func:`select_leaves` once (a Gumbel root's
Sequential Halving and NDMZ's chance and identity nodes included), the model
once for every leaf, and :func:`expand_and_backup` once. Both loop over trees
and tree depth in compiled code (Numba), so there is no Python work per node.

Every kernel takes the tree as one structure (:func:`pack`: a structref over the
:class:`~polyzero.search.tree.TreeArrays`, :mod:`.packed` says why) and the search's
constants as a tuple (:class:`~polyzero.search.params.Rules`; a plain tuple costs
Numba's dispatcher no more than separate arguments, a named tuple ~3x, so the
kernels rebuild the named tuple inside).
The trees are independent, so selection and backup have ``_parallel`` twins that
split them into ranges walked on numba's threads (polyzero's ``threads``
setting); :func:`tree_chunks` says when that pays.

Modules by job: :mod:`.scores` (pUCT and NDMZ's rule), :mod:`.gumbel` (completed
Q, sigma, Sequential Halving, Eq. 14), :mod:`.select` (walking down, chance
draws, leaf batching with virtual loss), :mod:`.backup` (new nodes, Eq. 3-4),
:mod:`.leaves` (what one hands the other), :mod:`.packed` (the tree structure).
"""

from __future__ import annotations

import numba as nb

from .backup import expand_and_backup, expand_and_backup_parallel
from .gumbel import completed_sigma, gumbel_interior_action, gumbel_root_action, gumbel_root_outputs, mixed_value
from .leaves import COLLISION, NEW_LEAF, NO_LEAF, TERMINAL_LEAF, Leaves, make_leaves
from .packed import TreeRef, pack
from .scores import action_scores
from .select import seed_chance, select_leaves, select_leaves_parallel

# Fewer trees than this per thread, and a parallel region costs more than it saves.
MIN_TREES_PER_CHUNK = 32


def tree_chunks(batch: int) -> int:
    """How many ranges of trees the kernels split a batch of `batch` trees into:
    numba's thread count, fewer where a range would hold under MIN_TREES_PER_CHUNK
    trees; 1 means the serial kernels."""
    return max(1, min(nb.get_num_threads(), batch // MIN_TREES_PER_CHUNK))


__all__ = [
    "COLLISION",
    "Leaves",
    "MIN_TREES_PER_CHUNK",
    "NEW_LEAF",
    "NO_LEAF",
    "TERMINAL_LEAF",
    "action_scores",
    "completed_sigma",
    "expand_and_backup",
    "expand_and_backup_parallel",
    "gumbel_interior_action",
    "gumbel_root_action",
    "gumbel_root_outputs",
    "make_leaves",
    "mixed_value",
    "pack",
    "seed_chance",
    "select_leaves",
    "select_leaves_parallel",
    "tree_chunks",
    "TreeRef",
]
