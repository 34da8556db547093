"""B independent search trees stored struct-of-arrays.

Node 0 of every tree is its root. A node is added per simulation, so a search
of n simulations needs at most n + 1 nodes. Values follow one convention
throughout: ``value[b, n]`` is the mean return *for the player to move at node
n*; an edge (parent -> child) carries the ``reward`` the mover at the parent
received and the ``discount`` that turns the child's value into the parent
mover's terms (+gamma when the same player moves again or in single-agent
games, -gamma when the opponent moves next; mctx's convention).

Every node has a kind (``kind[b, n]``):

* ``DECISION``: a player chooses, by the selection rule (NDMZ's choice node);
* ``CHANCE``: the outcome is drawn in proportion to the node's prior (known
  probabilities in AlphaZero mode, the learned chance policy in NDMZ's);
* ``TERMINAL``: the game is over; selection stops there;
* ``IDENTITY``: NDMZ's identity node (Appendix A): who acts next is drawn in
  proportion to the prior, the identity policy i^k over {0, 1, chance, terminal};
* ``PENDING``: created by a leaf-batched selection and waiting for the model;
  another descent that reaches it in the same batch is a collision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

DECISION, CHANCE, TERMINAL, IDENTITY, PENDING = 0, 1, 2, 3, 4


class TreeArrays(NamedTuple):
    """The arrays of a :class:`Tree`, in the one structure the kernels take."""

    children: np.ndarray
    parent: np.ndarray
    action: np.ndarray
    depth: np.ndarray
    visits: np.ndarray
    virtual: np.ndarray
    value: np.ndarray
    raw_value: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    prior: np.ndarray
    legal: np.ndarray
    kind: np.ndarray
    num_nodes: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray


@dataclass
class Tree:
    children: np.ndarray  # int32 [B, N, A], -1 where not expanded
    parent: np.ndarray  # int32 [B, N]
    action: np.ndarray  # int32 [B, N], the action leading from the parent
    depth: np.ndarray  # int32 [B, N]
    visits: np.ndarray  # int32 [B, N], counting the node's own expansion
    virtual: np.ndarray  # int32 [B, N], descents in flight through the node (leaf batching)
    value: np.ndarray  # float64 [B, N], mean return for the player to move
    raw_value: np.ndarray  # float64 [B, N], the model's value at expansion
    reward: np.ndarray  # float64 [B, N], reward on the edge into the node
    discount: np.ndarray  # float64 [B, N], discount (with sign) on that edge
    prior: np.ndarray  # float32 [B, N, A], masked and normalised
    legal: np.ndarray  # bool [B, N, A], actions selection may take
    kind: np.ndarray  # int8 [B, N]: DECISION, CHANCE, TERMINAL, IDENTITY or PENDING
    num_nodes: np.ndarray  # int32 [B]
    q_min: np.ndarray  # float64 [B], MuZero Eq. 5 statistics
    q_max: np.ndarray  # float64 [B]

    @classmethod
    def allocate(cls, batch: int, num_nodes: int, num_actions: int) -> Tree:
        shape = (batch, num_nodes)
        return cls(
            children=np.full(shape + (num_actions,), -1, np.int32),
            parent=np.full(shape, -1, np.int32),
            action=np.full(shape, -1, np.int32),
            depth=np.zeros(shape, np.int32),
            visits=np.zeros(shape, np.int32),
            virtual=np.zeros(shape, np.int32),
            value=np.zeros(shape, np.float64),
            raw_value=np.zeros(shape, np.float64),
            reward=np.zeros(shape, np.float64),
            discount=np.ones(shape, np.float64),
            prior=np.zeros(shape + (num_actions,), np.float32),
            legal=np.zeros(shape + (num_actions,), np.bool_),
            kind=np.zeros(shape, np.int8),
            num_nodes=np.ones(batch, np.int32),
            q_min=np.full(batch, np.inf),
            q_max=np.full(batch, -np.inf),
        )

    def arrays(self) -> TreeArrays:
        """The arrays themselves (not copies), packed for the kernels."""
        return TreeArrays(*(getattr(self, name) for name in TreeArrays._fields))

    @property
    def batch_size(self) -> int:
        return self.children.shape[0]

    @property
    def num_actions(self) -> int:
        return self.children.shape[2]

    @property
    def terminal(self) -> np.ndarray:
        """bool [B, N]: terminal nodes (a copy)."""
        return self.kind == TERMINAL

    @property
    def chance(self) -> np.ndarray:
        """bool [B, N]: chance nodes (a copy)."""
        return self.kind == CHANCE

    def root_child_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """(N(root, a) int32 [B, A], Q(root, a) float64 [B, A] for the player to move at
        the root, NaN where unvisited), in one compiled pass (kernels.root_child_stats)."""
        from .kernels import root_child_stats  # the kernels import this module

        return root_child_stats(self.children, self.visits, self.reward, self.discount, self.value)

    def root_child_visits(self) -> np.ndarray:
        """int32 [B, A]: N(root, a)."""
        return self.root_child_stats()[0]

    def root_child_q(self, fill: float = np.nan) -> np.ndarray:
        """float64 [B, A]: Q(root, a) for the player to move at the root (`fill` where
        unvisited)."""
        q = self.root_child_stats()[1]
        return q if np.isnan(fill) else np.where(np.isnan(q), fill, q)

    def depth_stats(self) -> dict:
        """Mean node depth and the mean over trees of the deepest node."""
        used = np.arange(self.depth.shape[1])[None, :] < self.num_nodes[:, None]
        depths = np.where(used, self.depth, 0)
        return {
            "mean_node_depth": float(self.depth[used].mean()),
            "max_depth_mean_over_batch": float(depths.max(axis=1).mean()),
            "max_depth": int(depths.max()),
        }
