"""Replay for Nondeterministic MuZero: every step of a game in order -- choice and
chance steps and the terminal step -- so that the K-step unroll goes through chance
events as the game did (NDMZ paper, Section 3.2, Eq. 1).

A game's steps (see :func:`polyzero.algos.ndmz.trajectory_steps`) are stored
contiguously in a ring; positions where a choice player was to move are the
samples (only they have observations). Targets of the unroll from step t, for
k = 0..K, are read at sample time:

* the action a_{t+k} that led from step t+k to t+k+1 (a choice action, a chance
  outcome at C + o, or end at a terminal step);
* the identity i_{t+k} of the player to act at step t+k (k >= 1);
* the choice policy target (the search policy at choice steps, no-op elsewhere)
  and the chance policy target (the outcome probabilities at chance steps, no-op
  elsewhere) over the full action set;
* the value z_{t+k} (the final outcome for the player to move at a choice step,
  for the last choice player at chance and terminal steps) and the reward u_{t+k}
  received on entering step t+k.

Past the terminal step the game is absorbing: action end, identity terminal,
no-op targets, the terminal step's value, reward 0. Segments that end without a
terminal step (cut games) mask their losses past their end. Sampling is uniform
over the stored choice steps.
"""

from __future__ import annotations

import io

import numpy as np

from ..nets.ndmz import TERMINAL, ActionLayout

STEP_KEYS = ("obs", "action", "identity", "choice_target", "chance_target", "value", "reward", "sampleable")


class NDMZReplay:
    prioritized = False

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], layout: ActionLayout, unroll_steps: int):
        self.capacity = capacity
        self.layout = layout
        self.unroll_steps = unroll_steps
        c, a = capacity, layout.size
        self.data = {
            "obs": np.zeros((c, *obs_shape), np.float32),
            "action": np.zeros(c, np.int64),
            "identity": np.zeros(c, np.int64),
            "choice_target": np.zeros((c, a), np.float32),
            "chance_target": np.zeros((c, a), np.float32),
            "value": np.zeros(c, np.float32),
            "reward": np.zeros(c, np.float32),
            "sampleable": np.zeros(c, np.bool_),
            "position": np.zeros(c, np.int64),
            "seg_end": np.zeros(c, np.int64),
            "done": np.zeros(c, np.bool_),
        }
        self.next_abs = 0
        self.reanalyser = None

    def __len__(self) -> int:
        return min(self.next_abs, self.capacity)

    @property
    def total_added(self) -> int:
        return self.next_abs

    def add(self, segment: dict[str, np.ndarray]) -> int:
        """Store one game's steps; returns how many choice positions (samples) it added."""
        n = len(segment["action"])
        if n == 0:
            return 0
        if n > self.capacity:
            raise ValueError(f"a game of {n} steps does not fit a replay of {self.capacity}")
        absolute = self.next_abs + np.arange(n)
        slots = absolute % self.capacity
        d = self.data
        for key in STEP_KEYS:
            d[key][slots] = segment[key]
        d["position"][slots] = absolute
        d["seg_end"][slots] = self.next_abs + n
        d["done"][slots] = bool(np.asarray(segment["done"]).reshape(-1)[0])
        self.next_abs += n
        return int(np.count_nonzero(segment["sampleable"]))

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        valid = self.data["sampleable"].copy()
        valid[len(self):] = False
        if not valid.any():
            raise ValueError("cannot sample from an empty replay buffer")
        slots = rng.choice(np.flatnonzero(valid), size=n)
        batch = self.unroll_targets(slots)
        batch["weight"] = np.ones(n, np.float32)
        batch["index"] = slots
        return batch

    def unroll_targets(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        d, lay = self.data, self.layout
        k_steps, cap = self.unroll_steps, self.capacity
        ks = np.arange(k_steps + 1)
        pos = d["position"][slots][:, None] + ks
        end = d["seg_end"][slots][:, None]
        inside = pos < end
        at = (slots[:, None] + ks) % cap
        done = d["done"][slots][:, None]
        last = (slots[:, None] + (end - 1 - d["position"][slots][:, None])) % cap  # the terminal step
        noop = np.zeros(lay.size, np.float32)
        noop[lay.noop] = 1.0
        mask = inside | done
        actions = np.where(inside, d["action"][at], lay.end)[:, :-1]
        identity = np.where(inside, d["identity"][at], TERMINAL)
        choice = np.where(inside[..., None], d["choice_target"][at], noop)
        chance = np.where(inside[..., None], d["chance_target"][at], noop)
        value = np.where(inside, d["value"][at], np.where(done, d["value"][last], 0.0))
        reward = np.where(inside, d["reward"][at], 0.0)
        return {
            "obs": d["obs"][slots],
            "actions": actions.astype(np.int64),
            "target_identity": identity.astype(np.int64),
            "target_choice": choice.astype(np.float32),
            "target_chance": chance.astype(np.float32),
            "target_value": value.astype(np.float32),
            "target_reward": reward.astype(np.float32),
            "mask": mask.astype(np.float32),
        }

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        filled = len(self)
        np.savez(buf, _meta=np.array([self.next_abs], np.int64), **{k: v[:filled] for k, v in self.data.items()})
        return buf.getvalue()

    def load_bytes(self, raw: bytes) -> None:
        with np.load(io.BytesIO(raw), allow_pickle=False) as f:
            next_abs = int(f["_meta"][0])
            filled = min(next_abs, self.capacity)
            for k, arr in self.data.items():
                if f[k].shape[0] != filled or f[k].shape[1:] != arr.shape[1:]:
                    raise ValueError(f"checkpointed replay array {k!r} has shape {f[k].shape}")
                arr[:filled] = f[k]
        self.next_abs = next_abs
