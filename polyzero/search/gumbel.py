"""Gumbel root search: policy improvement by planning with Gumbel (Danihelka et al., ICLR 2022).

The root of each tree draws one Gumbel vector g and visits the top m of
g + logits (Gumbel-Top-k, Eq. 3-5), then runs Sequential Halving on them
(Algorithm 2), comparing g + logits + sigma(q_hat) (Eq. 8). The search returns

* ``action``: A_{n+1}, the most visited action with the highest
  g + logits + sigma(q_hat) (what self-play plays after its first k moves);
* ``policy_target``: pi' = softmax(logits + sigma(completedQ)) (Eq. 10-11, with
  v_mix of Appendix D), whose cross-entropy is the loss KL(pi', pi) of Eq. 12;
  or, with ``policy_loss = "simple"``, the one-hot of A_{n+1} (Eq. 9).

Below the root the tree is the usual one: pUCT for kind "gumbel", the
deterministic selection of Eq. 14 for "full_gumbel" (kernels.gumbel_interior_action).
The Gumbel root uses no Dirichlet noise (Appendix F). Any SearchModel works:
the real game (AlphaZero) or a learned model (MuZero).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import kernels
from .loop import SearchHooks, SearchModel, SearchResult, finish, simulate, start_tree
from .params import GUMBEL_POLICY_LOSSES, SearchParams
from .tree import Tree


def sequential_halving_schedule(num_considered: int, num_simulations: int) -> tuple[int, ...]:
    """For each simulation, how many visits the root action it picks has had so far.

    Sequential Halving (Gumbel paper, Algorithm 2) over m = num_considered
    actions: ceil(log2 m) phases; in a phase each remaining action gets
    max(1, floor(n / (ceil(log2 m) * |remaining|))) visits (Appendix F: at least
    one new visit per phase); then the better half remains (never fewer than 2).
    Simulations left after the last halving keep going to the last two. The
    schedule is mctx's (seq_halving.get_sequence_of_considered_visits): picking, at
    simulation t, the best action among those with exactly schedule[t] visits
    performs the halving without storing the set of remaining actions.
    """
    if num_considered <= 1:
        return tuple(range(num_simulations))
    log2m = int(math.ceil(math.log2(num_considered)))
    sequence: list[int] = []
    visits = [0] * num_considered
    remaining = num_considered
    while len(sequence) < num_simulations:
        extra = max(1, int(num_simulations / (log2m * remaining)))
        for _ in range(extra):
            sequence.extend(visits[:remaining])
            for i in range(remaining):
                visits[i] += 1
        remaining = max(2, remaining // 2)
    return tuple(sequence[:num_simulations])


@functools.lru_cache(maxsize=64)
def considered_visit_table(max_considered: int, num_simulations: int) -> np.ndarray:
    """int32 [max_considered + 1, n]: row m is the schedule for m considered actions."""
    table = np.zeros((max_considered + 1, num_simulations), np.int32)
    for m in range(max_considered + 1):
        table[m] = sequential_halving_schedule(m, num_simulations)
    table.setflags(write=False)
    return table


def num_considered(params: SearchParams, legal: np.ndarray) -> np.ndarray:
    """int [B]: m = min(n, max_considered_actions, #legal) per root (Section 3.4)."""
    return np.minimum(np.minimum(params.num_simulations, params.max_considered_actions), legal.sum(axis=1))


def sample_gumbel(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """g ~ scale * Gumbel(0) (Eq. 1 and 3); zeros when scale is 0 (no draw is made)."""
    if scale == 0.0:
        return np.zeros(shape, np.float64)
    return scale * rng.gumbel(size=shape)


class GumbelRoot:
    """What the selection kernel needs to run Sequential Halving with Gumbel at
    the B roots (:func:`polyzero.search.kernels.gumbel_root_action`): g + logits
    per root, and for every simulation how many visits the root action it picks
    has had so far ([n, B]: row `sim` is what simulation `sim` reads)."""

    def __init__(self, params: SearchParams, logits: np.ndarray, gumbel: np.ndarray, legal: np.ndarray):
        self.gumbel_logits = np.where(legal, gumbel + logits, -np.inf)  # float64 [B, A]
        m = num_considered(params, legal)
        self.considered = np.ascontiguousarray(considered_visit_table(int(m.max()), params.num_simulations)[m].T)


def root_outputs(
    tree: Tree, params: SearchParams, logits: np.ndarray, gumbel: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(pi' float32 [B, A] (Eq. 11), A_{n+1} int64 [B]) of a searched tree."""
    batch, num_actions = logits.shape
    policy = np.zeros((batch, num_actions), np.float64)
    action = np.zeros(batch, np.int64)
    kernels.gumbel_root_outputs(kernels.pack(tree), tuple(params.rules()), logits, gumbel, policy, action)
    return policy.astype(np.float32), action


def gumbel_search(
    model: SearchModel,
    params: SearchParams,
    rng: np.random.Generator,
    add_noise: bool = False,
    gumbel: np.ndarray | None = None,
    hooks: SearchHooks | None = None,
) -> SearchResult:
    """Gumbel AlphaZero / Gumbel MuZero search (Gumbel paper, Algorithm 2, Eq. 8-14).

    `add_noise` picks the Gumbel scale: ``gumbel_scale`` (self-play) or
    ``eval_gumbel_scale`` (evaluation, 0 by default: Appendix F). `gumbel`
    [B, A] fixes the draw instead (tests, and the comparison with mctx). A search
    the hooks' clock stops early has run part of the halving; A_{n+1} is then the
    most visited action so far with the highest g + logits + sigma(q_hat).
    """
    if params.kind not in ("gumbel", "full_gumbel"):
        raise ValueError(f"gumbel_search needs kind 'gumbel' or 'full_gumbel', not {params.kind!r}")
    tree, root, prior = start_tree(model, params, rng, add_noise=False)  # no Dirichlet noise
    legal = tree.legal[:, 0].copy()
    # Logits of the legal actions; any constant shift is harmless (softmax, argmax).
    logits = np.where(legal, root.prior_logits.astype(np.float64), 0.0)
    if gumbel is None:
        scale = params.gumbel_scale if add_noise else params.eval_gumbel_scale
        gumbel = sample_gumbel(rng, logits.shape, scale)
    gumbel = np.asarray(gumbel, np.float64)
    calls = simulate(model, params, tree, hooks, gumbel_root=GumbelRoot(params, logits, gumbel, legal))
    result = finish(tree, prior, calls)
    policy, action = root_outputs(tree, params, logits, gumbel)
    if GUMBEL_POLICY_LOSSES[params.policy_loss] == GUMBEL_POLICY_LOSSES["simple"]:
        policy = np.zeros_like(policy)
        policy[np.arange(len(action)), action] = 1.0  # -log pi(A_{n+1}), Eq. 9
    result.policy_target = policy
    result.action = action
    return result
