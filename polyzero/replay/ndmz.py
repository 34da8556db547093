"""Replay for Nondeterministic MuZero: every step of a game in order -- choice and
chance steps and the terminal step -- so that the K-step unroll goes through chance
events as the game did (NDMZ paper, Section 3.2, Eq. 1).

A game's steps (see :func:`polyzero.algos.ndmz.trajectory_steps`) are stored
contiguously in a ring; positions where a choice player was to move are the
samples (only they have observations). Targets of the unroll from step t, for
k = 0..K, are read at sample time:

* the action a_{t+k} that led from step t+k to t+k+1 (a choice action, a chance
  outcome at C + o, or end at a terminal step);
* the identity i_{t+k} of the player to act at step t+k (k >= 1), the choice
  players relative to the one to move at step t (0: that player, 1: the other;
  see below);
* the choice policy target ``policy`` (the search policy at choice steps, no-op
  elsewhere) and the chance policy target ``chance_policy`` (the outcome
  probabilities at chance steps, no-op elsewhere) over the full action set;
* the value z_{t+k} (``outcome``: the final outcome for the player to move at a
  choice step, for the last choice player at chance and terminal steps; with
  ``td_steps`` n > 0 the n-step bootstrap instead, :meth:`NDMZReplay.bootstrapped`)
  and the reward u_{t+k} received on entering step t+k.

Past the terminal step the game is absorbing: action end, identity terminal,
no-op targets, the terminal step's value, reward 0. Segments that end without a
terminal step (cut games) mask their losses past their end. Sampling is uniform
over the stored choice steps.

Why relative identities: the paper's N = {1, 2, c, d} names the players
absolutely, but observations here are the player to move's own view (Nannon's
tensor says "me" and "the opponent", never which seat), so h(o) cannot know
whether it is player 1 or 2 and an absolute identity target after k steps
cannot be learned: with them the search backed up the wrong sign about half the
time and NDMZ did not learn to play. Naming the players relative to the
unroll's root is the same labelling up to a swap that the observation already
makes; the search's root is player 0 (:meth:`polyzero.algos.ndmz.NDMZ.search`).
"""

from __future__ import annotations

import numpy as np

from ..nets.ndmz import CHANCE, TERMINAL, ActionLayout
from .segment_ring import SegmentRing


class NDMZReplay(SegmentRing):
    prioritized = False
    STEP_KEYS: tuple[str, ...] = ("obs", "action", "identity", "policy", "chance_policy", "outcome", "reward")

    def __init__(
        self, capacity: int, obs_shape: tuple[int, ...], layout: ActionLayout, unroll_steps: int, td_steps: int = 0
    ):
        c, a = capacity, layout.size
        super().__init__(
            capacity,
            {
                "obs": np.zeros((c, *obs_shape), np.float32),
                "action": np.zeros(c, np.int64),
                "identity": np.zeros(c, np.int64),
                "policy": np.zeros((c, a), np.float32),  # the search policy (no-op off choice steps)
                "chance_policy": np.zeros((c, a), np.float32),  # outcome probabilities at chance steps
                "outcome": np.zeros(c, np.float32),
                "reward": np.zeros(c, np.float32),
            },
        )
        if td_steps:  # the search values nu to bootstrap from (a checkpoint without them loads zeros)
            self.data["root_value"] = np.zeros(c, np.float32)
            self.STEP_KEYS = self.STEP_KEYS + ("root_value",)
            self.OPTIONAL_KEYS = ("root_value",)
        self.layout = layout
        self.unroll_steps = unroll_steps
        self.td_steps = td_steps
        self.reanalyser = None

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        choices = self.sampleable_slots()
        if not len(choices):
            raise ValueError("cannot sample from an empty replay buffer")
        slots = rng.choice(choices, size=n)
        batch = self.unroll_targets(slots)
        batch["weight"] = np.ones(n, np.float32)
        batch["index"] = slots
        return batch

    def unroll_targets(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        d, lay = self.data, self.layout
        pos, end, inside, at = self.unroll_index(slots, self.unroll_steps)
        done = d["done"][slots][:, None]
        last = self.last_slot(slots)  # the terminal step
        noop = np.zeros(lay.size, np.float32)
        noop[lay.noop] = 1.0
        mask = inside | done
        actions = np.where(inside, d["action"][at], lay.end)[:, :-1]
        identity = np.where(inside, d["identity"][at], TERMINAL)
        root = d["identity"][slots][:, None]  # a choice player: samples are choice steps
        identity = np.where(identity < CHANCE, (identity != root).astype(np.int64), identity)
        policy = np.where(inside[..., None], d["policy"][at], noop)
        chance = np.where(inside[..., None], d["chance_policy"][at], noop)
        value = np.where(inside, d["outcome"][at], np.where(done, d["outcome"][last], 0.0))
        if self.td_steps:
            value = np.where(inside, self.bootstrapped(pos, end, inside, at), value)
        reward = np.where(inside, d["reward"][at], 0.0)
        return {
            "obs": d["obs"][slots],
            "actions": actions.astype(np.int64),
            "target_identity": identity.astype(np.int64),
            "target_policy": policy.astype(np.float32),
            "target_chance": chance.astype(np.float32),
            "target_value": value.astype(np.float32),
            "target_reward": reward.astype(np.float32),
            "mask": mask.astype(np.float32),
        }

    def bootstrapped(self, pos, end, inside, at) -> np.ndarray:
        """[B, K+1]: the n-step value targets of the unroll's steps t+k (n = `td_steps`).

        MuZero's z_t (MuZero paper, Section 3 and Appendix G: u_{t+1} + gamma u_{t+2} +
        ... + gamma^(n-1) u_{t+n} + gamma^n nu_{t+n}, with board games' gamma = 1), which
        NDMZ's value target takes over unchanged (NDMZ paper, Section 3.2: v^k ~ z_{t+k}
        "already present in MuZero"). Here n counts **choice steps**: the search value
        nu exists only where a choice player searched (chance and terminal steps have
        no search and no observation), and MuZero's n counts the agent's decisions; so
        a chance step bootstraps where the choice step before it does, as it already
        carries that step's outcome. The target at step j, for the value's owner p (the
        mover at a choice step, the last choice player at a chance step), is the final
        outcome when the game ends within n choice steps (or the segment was cut
        first), else, b the n-th choice step after j and q its mover,

            z_j = (z_j - s z_b) + s nu_b,   s = +1 if q = p else -1,

        z the stored outcomes and nu_b the search value for q: in a two-player zero-sum
        game z_j - s z_b is p's reward from j to b (each outcome is the owner's rest of
        the game's return, and q's returns are s times p's), so the n-step reward sum
        with gamma = 1 is this difference of two stored suffix sums, not a second copy
        of MuZero's discounted sum (`SequenceReplay._value_targets`); s nu_b is q's
        search value in p's view. Terminal steps and steps past the end keep the
        final outcome.
        """
        d, cap, n = self.data, self.capacity, self.td_steps
        ident = d["identity"]
        choice = inside & (ident[at] < CHANCE)
        # the owner: the identity of the last choice step at or before t+k (t is one)
        last_choice = np.maximum.accumulate(np.where(choice, np.arange(pos.shape[1]), 0), axis=1)
        owner = np.take_along_axis(ident[at], last_choice, axis=1)
        off = np.zeros_like(pos)
        count = np.zeros_like(pos)
        searching = inside & (ident[at] != TERMINAL)
        while searching.any():  # walk forward to the n-th choice step inside the segment
            off += searching
            searching &= pos + off < end
            count += searching & (ident[(at + off) % cap] < CHANCE)
            searching &= count < n
        b = (at + off) % cap
        sign = np.where(ident[b] == owner, 1.0, -1.0)
        boot = d["outcome"][at] - sign * (d["outcome"][b] - d["root_value"][b])
        return np.where(count == n, boot, d["outcome"][at]).astype(np.float32)
