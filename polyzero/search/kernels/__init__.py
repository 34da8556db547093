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

import os

import numba as nb

from ...errors import UsageError
from . import stale_cache  # noqa: F401  (first: it touches changed sources before any kernel is decorated)
from .backup import expand_and_backup, expand_and_backup_parallel
from .gumbel import completed_sigma, gumbel_interior_action, gumbel_root_action, gumbel_root_outputs, mixed_value
from .leaves import COLLISION, NEW_LEAF, NO_LEAF, TERMINAL_LEAF, Leaves, make_leaves
from .packed import TreeRef, pack
from .scores import action_scores, root_child_stats
from .select import seed_chance, select_leaves, select_leaves_parallel

# Fewer trees than this per thread, and a parallel region costs more than it saves.
MIN_TREES_PER_CHUNK = 32
# POLYZERO_PARALLEL_TREES: "auto" (the default: parallel kernels only on cores other
# processes leave free), "always" (numba's thread count, whatever the load) or "never".
PARALLEL_TREES_ENV = "POLYZERO_PARALLEL_TREES"
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def tree_chunks(
    batch: int,
    threads: int | None = None,
    load: float | None = None,
    cores: int | None = None,
    min_chunk: int = MIN_TREES_PER_CHUNK,
) -> int:
    """How many ranges of trees the kernels split a batch of `batch` trees into; 1 means
    the serial kernels.

    At most numba's thread count (`threads`), and no range under `min_chunk` trees
    (MIN_TREES_PER_CHUNK; the fused search, whose threads do more work a tree, its own).
    Under "auto" (POLYZERO_PARALLEL_TREES), also no more ranges than cores left free:
    `cores` (this process's CPUs) less the 1-minute load average (`load`) other than this
    search's own thread. A parallel kernel waits at every call for
    all its threads; on an oversubscribed machine one of them is often not running,
    and the search at B = 256 was measured 15-20x slower with 2 threads than with 1
    (docs/benchmarks.md, "parallel tree kernels on an oversubscribed machine").
    """
    threads = nb.get_num_threads() if threads is None else threads
    chunks = max(1, min(threads, batch // min_chunk))
    policy = os.environ.get(PARALLEL_TREES_ENV, "auto")
    if policy not in ("auto", "always", "never"):
        raise UsageError(f"{PARALLEL_TREES_ENV} must be auto, always or never, not {policy!r}")
    if chunks == 1 or policy == "always":
        return chunks
    if policy == "never":
        return 1
    load = os.getloadavg()[0] if load is None else load
    cores = _CORES if cores is None else cores
    free = cores - max(load - 1.0, 0.0)  # the search's own thread is part of the load
    return max(1, min(chunks, int(free)))


__all__ = [
    "COLLISION",
    "Leaves",
    "MIN_TREES_PER_CHUNK",
    "PARALLEL_TREES_ENV",
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
    "root_child_stats",
    "seed_chance",
    "select_leaves",
    "select_leaves_parallel",
    "tree_chunks",
    "TreeRef",
]
