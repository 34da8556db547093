"""MuZero mode of the search: a learned model is stepped inside the tree.

The tree never sees the real game below the root: every action is legal at an
interior node and no interior node is terminal (MuZero paper, Appendix A);
legal-action masking applies at the root only. Hidden states live in one
preallocated node-major ``[N, B, H]`` array, so one simulation costs a gather
of B parent states, one batched ``recurrent_fn`` call and one contiguous copy
of the B new states (every tree adds node t + 1 at simulation t) -- no Python
work per tree.

NumPy in, NumPy out; the network behind ``recurrent_fn`` is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .fused import FUSED_MAX_BATCH, run_fused
from .kernels.mlp import MLPProgram
from .loop import Expansion

# recurrent_fn(hidden [M, H], action [M]) -> (reward [M], prior_logits [M, A], value [M], hidden' [M, H])
RecurrentFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


class LearnedModel:
    """A :class:`~polyzero.search.mcts.SearchModel` over a learned dynamics function.

    Args:
      prior_logits: float [B, A], the prediction function at the roots.
      value: float [B], the roots' values for the player to move.
      hidden: float [B, H], the roots' hidden states (representation output).
      recurrent_fn: dynamics + prediction on M hidden states and actions.
      discount: the signed discount on every edge: -1 for two-player
        alternate-move games (mctx's convention), gamma for single-agent ones.
      root_legal: optional bool [B, A]; legal actions at the roots (all legal
        when omitted).
      num_nodes: optional node capacity per tree (num_simulations + 1); when
        omitted, the hidden-state store is allocated on the first step and
        grown (doubling) when a node index exceeds it.
      store: optional [N', B, H] array of the hidden states' dtype to keep the
        states in, when it is large enough: the previous search's
        ``model.hidden``, so a run of searches writes into memory already mapped
        (a fresh multi-megabyte array costs a page fault per 4 KB written). The
        model owns it until the search ends.
      program: optional; `recurrent_fn` written as an MLP program (``polyzero.nets.fused``).
        With it the search runs its simulations fused, in one compiled call
        (:mod:`polyzero.search.fused`), where that applies: see :attr:`fused`.
      fuse: with a program, "auto" fuses batches up to FUSED_MAX_BATCH trees (where it
        was measured faster), "always" any batch.
    """

    def __init__(
        self,
        prior_logits: np.ndarray,
        value: np.ndarray,
        hidden: np.ndarray,
        recurrent_fn: RecurrentFn,
        discount: float = -1.0,
        root_legal: np.ndarray | None = None,
        num_nodes: int | None = None,
        store: np.ndarray | None = None,
        program: MLPProgram | None = None,
        fuse: str = "auto",
    ):
        prior_logits = np.asarray(prior_logits, np.float32)
        hidden = np.asarray(hidden)
        batch, num_actions = prior_logits.shape
        if hidden.ndim != 2 or hidden.shape[0] != batch:
            raise ValueError(f"hidden must be [B, H] with B={batch}, got {hidden.shape}")
        self.num_actions = num_actions
        self.batch_size = batch
        self.recurrent_fn = recurrent_fn
        self.discount = float(discount)
        self.recurrent_calls = 0
        self._root_hidden = hidden
        self._root = Expansion(
            prior_logits=prior_logits,
            value=np.asarray(value, np.float64).reshape(batch),
            legal=(
                np.ones((batch, num_actions), np.bool_)
                if root_legal is None
                else np.asarray(root_legal, np.bool_).reshape(batch, num_actions)
            ),
            reward=np.zeros(batch, np.float64),
            discount=np.ones(batch, np.float64),
            terminal=np.zeros(batch, np.bool_),
        )
        # Constant parts of every in-tree expansion (never written by the search).
        self._legal = np.ones((batch, num_actions), np.bool_)
        self._discount = np.full(batch, self.discount, np.float64)
        self._terminal = np.zeros(batch, np.bool_)
        self._kind = np.zeros(batch, np.int8)  # DECISION
        self._rows = np.arange(batch, dtype=np.int64)  # node n of tree b is flat row n * B + b
        self._flat = None  # [N * B, H] view of the hidden-state store
        self._capacity = 0
        self._spare = store
        self._uniform = True  # no step so far left a tree out, so all add node t + 1 at step t
        self.fused = (
            program is not None
            and hidden.dtype == np.float32
            and hidden.shape[1] == program.hidden
            and num_actions == program.num_actions
            and (fuse == "always" or batch <= FUSED_MAX_BATCH)
        )
        self._program = program
        if num_nodes is not None:
            self._allocate(int(num_nodes))

    # ------------------------------------------------------------ storage
    def _allocate(self, num_nodes: int) -> None:
        batch, h = self._root_hidden.shape
        spare, self._spare = self._spare, None
        if (
            spare is not None
            and spare.shape[1:] == (batch, h)
            and len(spare) >= num_nodes
            and spare.dtype == self._root_hidden.dtype
            and spare.flags.c_contiguous
        ):
            store = spare[:num_nodes]
        else:
            store = np.empty((num_nodes, batch, h), self._root_hidden.dtype)
        if self._flat is not None:  # growing: keep what is stored
            store[: self._capacity] = self.hidden
        else:
            store[0] = self._root_hidden
        self.hidden = store  # [N, B, H], node-major
        self._flat = store.reshape(num_nodes * batch, h)
        self._capacity = num_nodes

    # ------------------------------------------------------------ SearchModel
    def initial(self) -> Expansion:
        return self._root

    def step(self, parent_node: np.ndarray, action: np.ndarray, new_node: np.ndarray, active: np.ndarray) -> Expansion:
        if self._uniform:  # every tree holds the same number of nodes: no reductions
            first = last = int(new_node[0])
        else:
            first, last = int(new_node.min()), int(new_node.max())
        if last >= self._capacity:
            self._allocate(max(last + 1, 2 * self._capacity, 2))
        batch = self.batch_size
        if active.all():
            h = np.take(self._flat, parent_node * batch + self._rows, axis=0)
            reward, logits, value, h2 = self.recurrent_fn(h, action)
            if first == last:  # the usual case: one contiguous copy
                self.hidden[first] = h2
            else:
                self._flat[new_node * batch + self._rows] = h2
        else:  # only with a custom root hook; learned trees have no terminal leaves
            self._uniform = False
            rows = np.flatnonzero(active)
            logits = np.zeros((batch, self.num_actions), np.float32)
            reward = np.zeros(batch, np.float64)
            value = np.zeros(batch, np.float64)
            if rows.size:
                r, lg, v, h2 = self.recurrent_fn(self._flat[parent_node[rows] * batch + rows], action[rows])
                self._flat[new_node[rows] * batch + rows] = h2
                logits[rows], reward[rows], value[rows] = lg, r, v
        self.recurrent_calls += 1
        return Expansion(
            logits,
            np.asarray(value, np.float64),
            self._legal,
            np.asarray(reward, np.float64),
            self._discount,
            self._terminal,
            kind=self._kind,
        )

    def simulate_fused(self, arrays, rules: tuple, root: tuple, leaves: tuple, num_simulations: int, gumbel: bool):
        """All `num_simulations` simulations in one compiled call (only when :attr:`fused`;
        the loop's `simulate` calls it in place of its per-simulation steps)."""
        if num_simulations + 1 > self._capacity:
            self._allocate(num_simulations + 1)
        constants = (self._legal, self._discount, self._kind)
        run_fused(self._program, self.hidden, arrays, rules, root, leaves, num_simulations, gumbel, constants)
        self.recurrent_calls += num_simulations

    def step_leaves(
        self, tree: np.ndarray, parent_node: np.ndarray, action: np.ndarray, new_node: np.ndarray
    ) -> Expansion:
        """`step` for M leaves of any trees at once (leaf batching): leaf i is the
        child of node `parent_node[i]` of tree `tree[i]` along `action[i]`."""
        last = int(new_node.max())
        if last >= self._capacity:
            self._allocate(max(last + 1, 2 * self._capacity, 2))
        self._uniform = False
        batch = self.batch_size
        reward, logits, value, h2 = self.recurrent_fn(self._flat[parent_node * batch + tree], action)
        self._flat[new_node * batch + tree] = h2
        self.recurrent_calls += 1
        m = len(tree)
        if len(self._legal) < m:  # constant rows, grown to the largest batch of leaves
            self._legal = np.ones((m, self.num_actions), np.bool_)
            self._discount = np.full(m, self.discount, np.float64)
            self._terminal = np.zeros(m, np.bool_)
            self._kind = np.zeros(m, np.int8)
        return Expansion(
            logits,
            np.asarray(value, np.float64),
            self._legal[:m],
            np.asarray(reward, np.float64),
            self._discount[:m],
            self._terminal[:m],
            kind=self._kind[:m],
        )

    def node_hidden(self, b: int, node: int) -> np.ndarray:
        """The hidden state stored for `node` of tree `b`."""
        return self.hidden[node, b]
