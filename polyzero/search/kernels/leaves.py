"""What a selection hands the model and the backup: the leaves each tree reached."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Leaf kinds (Leaves.kind).
NO_LEAF = -1  # an unused slot
NEW_LEAF = 0  # an edge whose child is not in the tree yet: expand it
TERMINAL_LEAF = 1  # an existing terminal node: back up its value again
COLLISION = 2  # leaf batching: a descent reached a node another descent of the batch created


class Leaves(NamedTuple):
    """Per tree b and slot j: the leaves one selection call gathered.

    node[b, j] is the parent of the edge to expand (NEW_LEAF), the terminal node
    reached (TERMINAL_LEAF) or the pending node a descent ran into (COLLISION);
    action[b, j] is the edge and new_node[b, j] the index the new node takes.
    With leaf batching the NEW_LEAF rows are also listed flat, in slot order, for
    one model call over every tree (flat_*, flat_count[0] of them).
    """

    node: np.ndarray  # int32 [B, L]
    action: np.ndarray  # int32 [B, L]
    kind: np.ndarray  # int8 [B, L]
    new_node: np.ndarray  # int32 [B, L]
    count: np.ndarray  # int32 [B]: slots used (collisions included)
    remaining: np.ndarray  # int32 [B]: simulations tree b may still take (leaf batching)
    flat_tree: np.ndarray  # int32 [B * K]
    flat_parent: np.ndarray  # int32 [B * K]
    flat_action: np.ndarray  # int32 [B * K]
    flat_node: np.ndarray  # int32 [B * K]
    flat_count: np.ndarray  # int64 [1]


def make_leaves(batch: int, leaf_batch: int = 1, simulations: int = 0) -> Leaves:
    """Buffers for `leaf_batch` leaves per tree; a leaf-batched selection has twice as
    many slots, so that collisions can take some."""
    slots = 1 if leaf_batch == 1 else 2 * leaf_batch
    flat = batch * leaf_batch if leaf_batch > 1 else 0
    return Leaves(
        node=np.zeros((batch, slots), np.int32),
        action=np.zeros((batch, slots), np.int32),
        kind=np.full((batch, slots), NO_LEAF, np.int8),
        new_node=np.zeros((batch, slots), np.int32),
        count=np.zeros(batch, np.int32),
        remaining=np.full(batch, simulations, np.int32),
        flat_tree=np.zeros(flat, np.int32),
        flat_parent=np.zeros(flat, np.int32),
        flat_action=np.zeros(flat, np.int32),
        flat_node=np.zeros(flat, np.int32),
        flat_count=np.zeros(1, np.int64),
    )
