"""Replay of self-play positions in trajectory order, for algorithms that unroll a
learned model (MuZero paper, Appendices D and G).

Positions are stored in a ring, each segment (a finished episode, or a chunk of
a long one) contiguous, so the K steps that follow a sampled position are found
by index. Targets are built at sample time, vectorised over the batch, so that
a refreshed search policy or value (Reanalyze, Appendix H) is used at once:

* value z_{t+k}: for board games the final outcome for the player to move at
  t+k; for single-agent environments the n-step return
  u_{t+k+1} + ... + gamma^(n-1) u_{t+k+n} + gamma^n v_{t+k+n}, bootstrapping
  from the search value stored at t+k+n (none past the episode's end); with
  `horizon_decay_positions`, n shrinks with the sample's age (`bootstrap_steps`);
* reward u_{t+k}: the reward received after the action at t+k-1 (with
  `value_prefix_horizon` H, EfficientZero's value prefix instead: the discounted
  sum of the rewards since the last multiple of H steps, nets/value_prefix.py);
* policy pi_{t+k}: the search policy stored at t+k; for the first
  round(f * B) samples of a minibatch of B, with Reanalyze's fraction f, the
  fresh policy re-searched there where there is one (Appendix H: "this fresh
  policy is used as the policy target for 80% of updates"). Fresh policies are
  kept beside the self-play ones, never over them, so the other samples still
  learn from the search that acted.

With `next_observations`, each sample also carries the stored observations
o_{t+1} .. o_{t+K} and a mask of those inside the episode: the targets of a
temporal consistency loss (EfficientZero, `muzero.consistency_weight`). With
`final_observations` as well, a finished game's segment keeps the position its
last move made (`final_obs` and `has_final`, at its last slot), and the step right after
that move gets it as its target (`muzero.consistency_terminal`). With `final_values`,
each sample also carries its game's final position and the value past the end for the
side that would move there (`muzero.terminal_value`).

Unrolled steps past the end of an episode are absorbing: reward 0, policy loss
masked, value 0 -- except in board games, where the side to move after the
last move is taken to have the final outcome of alternating play (it lost if
the last mover won): with the reward loss omitted in board games (Appendix G),
this is what lets the learned model's search see a winning move as one.
With `terminal_reward` board games keep the final outcome as the last move's
reward instead (the published pseudocode), and their absorbing value is 0.

Sampling is uniform (board games) or prioritized (single-agent, Appendix G):
P(i) = p_i^alpha / sum_k p_k^alpha with p_i = |nu_i - z_i|, corrected by
importance weights w_i = (N P(i))^-beta, divided by the largest weight in the
minibatch so that they lie in (0, 1] (Schaul et al. 2016, Algorithm 1; dividing
by the largest weight the buffer could give instead lets one near-zero priority
shrink every update to nothing). New positions enter with the largest priority
seen so far.
"""

from __future__ import annotations

import numpy as np

from ..nets.value_prefix import value_prefix_targets
from .segment_ring import SegmentRing

_PRIORITY_EPS = 1e-6


class SequenceReplay(SegmentRing):
    STEP_KEYS: tuple[str, ...] = ("obs", "action", "reward", "root_value", "policy", "legal", "outcome")
    OPTIONAL_KEYS: tuple[str, ...] = ("fresh_policy", "fresh")  # added with Reanalyze's separate fresh policies

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        num_actions: int,
        *,
        unroll_steps: int,
        td_steps: int,
        discount: float,
        board_game: bool,
        prioritized: bool,
        alpha: float = 1.0,
        beta: float = 1.0,
        reanalyse_fraction: float = 0.0,
        transform=None,
        next_observations: bool = False,
        terminal_reward: bool = False,
        final_observations: bool = False,
        final_values: bool = False,
        value_prefix_horizon: int = 0,
        horizon_decay_positions: float = 0.0,
    ):
        """`transform(batch, rng)`, when given, changes each sampled batch of unroll
        targets (augmentation: polyzero.games.symmetry)."""
        c = capacity
        super().__init__(
            capacity,
            {
                "obs": np.zeros((c, *obs_shape), np.float32),
                "action": np.zeros(c, np.int64),  # a_t, taken at t
                "reward": np.zeros(c, np.float32),  # u_{t+1}, received after a_t
                "root_value": np.zeros(c, np.float32),  # search value nu_t for the mover at t
                "policy": np.zeros((c, num_actions), np.float32),
                "legal": np.zeros((c, num_actions), np.bool_),  # legal actions at t (root masks for Reanalyze)
                "outcome": np.zeros(c, np.float32),  # board games: final outcome for the mover at t
                "priority": np.zeros(c, np.float64),
                "fresh_policy": np.zeros((c, num_actions), np.float32),  # Reanalyze's latest search policy
                "fresh": np.zeros(c, np.bool_),  # fresh_policy holds one for this position
                # a finished game's final position, at its last slot (final_observations)
                **(
                    {"final_obs": np.zeros((c, *obs_shape), np.float32), "has_final": np.zeros(c, np.bool_)}
                    if final_observations
                    else {}
                ),
            },
        )
        if final_observations:  # a checkpoint from before the option loads them as zeros
            self.STEP_KEYS = self.STEP_KEYS + ("final_obs", "has_final")
            self.OPTIONAL_KEYS = self.OPTIONAL_KEYS + ("final_obs", "has_final")
        self.num_actions = num_actions
        self.unroll_steps = unroll_steps
        self.td_steps = td_steps
        self.discount = discount
        self.board_game = board_game
        self.prioritized = prioritized
        self.alpha = alpha
        self.beta = beta
        self.max_priority = 1.0
        self.reanalyse_fraction = reanalyse_fraction
        self.reanalyser = None  # set to refresh sampled positions before targets are built
        self.transform = transform
        self.next_observations = next_observations
        self.terminal_reward = terminal_reward
        self.final_values = final_values and final_observations
        self.value_prefix_horizon = value_prefix_horizon  # > 0: reward targets are value prefixes
        # > 0: EfficientZero's off-policy correction, the n-step horizon one step shorter
        # per this many positions stored after a sample's (`bootstrap_steps`)
        self.horizon_decay_positions = horizon_decay_positions

    # ------------------------------------------------------------ writing
    def _stored(self, slots: np.ndarray) -> None:
        self.data["priority"][slots] = self.max_priority
        self.data["fresh"][slots] = False

    def update_priorities(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """p_i = |nu_i - z_i| after a learner update (Appendix G)."""
        p = np.abs(np.asarray(priorities, np.float64)) + _PRIORITY_EPS
        self.data["priority"][slots] = p
        self.max_priority = max(self.max_priority, float(p.max()))

    def refresh(
        self, slots: np.ndarray, policy: np.ndarray | None = None, root_value: np.ndarray | None = None
    ) -> None:
        """Reanalyze (Appendix H): store fresh search policies (beside the self-play
        ones) and replace bootstrap values."""
        if policy is not None:
            self.data["fresh_policy"][slots] = policy
            self.data["fresh"][slots] = True
        if root_value is not None:
            self.data["root_value"][slots] = root_value

    # ------------------------------------------------------------ sampling
    def sampling_probabilities(self) -> np.ndarray:
        """P(i) over the ring's slots: 0 for context and empty slots."""
        valid = self.data["sampleable"].copy()
        valid[len(self) :] = False
        if not valid.any():
            raise ValueError("cannot sample from an empty replay buffer")
        if self.prioritized:
            p = np.where(valid, self.data["priority"] ** self.alpha, 0.0)
        else:
            p = valid.astype(np.float64)
        return p / p.sum()

    def sample_slots(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n slots drawn by P(i), and their importance weights (N P(i))^-beta / max over the batch."""
        probs = self.sampling_probabilities()
        slots = rng.choice(self.capacity, size=n, p=probs)
        if not self.prioritized:
            return slots, np.ones(n, np.float32)
        weights = (np.count_nonzero(probs) * probs[slots]) ** -self.beta
        return slots, (weights / weights.max()).astype(np.float32)

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        slots, weights = self.sample_slots(n, rng)
        fresh_rows = int(round(self.reanalyse_fraction * n))  # slots are i.i.d.: any rows will do
        if self.reanalyser is not None and fresh_rows:
            self.reanalyser.refresh(self, slots[:fresh_rows])
        batch = self.unroll_targets(slots, rng, fresh_rows)
        if self.transform is not None:
            batch = self.transform(batch, rng)
        batch["weight"] = weights
        batch["index"] = slots
        return batch

    def unroll_targets(self, slots: np.ndarray, rng: np.random.Generator, fresh_rows: int = 0) -> dict[str, np.ndarray]:
        """Observations at t and the K-step unroll targets of each sampled slot (Appendix G);
        the first `fresh_rows` samples take Reanalyze's fresh policies where there are some."""
        d = self.data
        k_steps = self.unroll_steps
        pos, end, inside, at = self.unroll_index(slots, k_steps)  # t+k: positions, slots

        actions = np.where(
            inside[:, :-1], d["action"][at[:, :-1]], rng.integers(0, self.num_actions, size=(len(slots), k_steps))
        )
        rewards = np.zeros((len(slots), k_steps + 1), np.float32)
        rewards[:, 1:] = np.where(inside[:, :-1], d["reward"][at[:, :-1]], 0.0)
        if self.value_prefix_horizon:  # EfficientZero's value prefix P_k (nets/value_prefix.py)
            rewards[:, 1:] = value_prefix_targets(rewards[:, 1:], self.value_prefix_horizon, self.discount)
        use_fresh = d["fresh"][at]
        use_fresh[fresh_rows:] = False
        policy = np.where(use_fresh[..., None], d["fresh_policy"][at], d["policy"][at])
        policy = np.where(inside[..., None], policy, 0.0).astype(np.float32)
        # each slot's segment's last slot: board games' past-the-end values, final positions
        last = self.last_slot(slots)[:, 0] if self.board_game or "final_obs" in d else None
        out = {
            "obs": d["obs"][slots],
            "actions": actions.astype(np.int64),
            "target_value": self._value_targets(slots, pos, end, inside, at, last),
            "target_reward": rewards,
            "target_policy": policy,
            "policy_mask": inside.astype(np.float32),
            "search_value": d["root_value"][slots].astype(np.float32),  # nu_t, for the priority
        }
        if self.next_observations:
            stored = inside[:, 1:]
            shape = stored.shape + (1,) * (d["obs"].ndim - 1)
            next_obs = np.where(stored.reshape(shape), d["obs"][at[:, 1:]], 0.0)
            if "final_obs" in d:  # the step right after a finished game's last move
                final = (pos[:, 1:] == end) & d["has_final"][last][:, None]
                next_obs = np.where(final.reshape(shape), d["final_obs"][last][:, None], next_obs)
                stored = stored | final
            out["next_obs"] = next_obs.astype(np.float32)
            out["next_obs_mask"] = stored.astype(np.float32)
        if self.final_values:  # each sample's game's final position and the value past its end
            assert last is not None  # final values come with final observations
            out["final_obs"] = d["final_obs"][last].astype(np.float32)
            out["final_value"] = self._after_end(last, 1).astype(np.float32)
            out["final_mask"] = d["has_final"][last].astype(np.float32)  # kept for finished games only
        return out

    def _after_end(self, last: np.ndarray, past: np.ndarray | int) -> np.ndarray:
        """Board games: the value for the side to move `past` plies after a finished game's
        last position (the outcome of alternating play; 0 with `terminal_reward`)."""
        if self.terminal_reward:
            return np.zeros(np.broadcast(last, past).shape, np.float32)
        return self.data["outcome"][last] * np.where(np.asarray(past) % 2 == 0, 1.0, -1.0)

    def bootstrap_steps(self, slots: np.ndarray) -> np.ndarray:
        """The n-step horizon l of each slot's value targets: n, or with the off-policy
        correction (EfficientZero, Ye et al. 2021, Section 4.3, Eq. 4 as the authors' code
        computes it) l = clip(n - floor(age / D), 1, n), the age the positions stored since
        the slot's and D = `horizon_decay_positions`: older trajectories, whose actions
        today's policy would less often take, lean sooner on a fresh value estimate."""
        n = np.full(len(slots), self.td_steps, np.int64)
        if not self.horizon_decay_positions:
            return n
        age = self.next_abs - self.data["position"][slots]
        return np.clip(n - np.floor(age / self.horizon_decay_positions).astype(np.int64), 1, n)

    def _value_targets(self, slots, pos, end, inside, at, last) -> np.ndarray:
        d = self.data
        if self.board_game:
            past = pos - (end - 1)  # plies after the last position
            after_end = np.where(d["done"][slots][:, None], self._after_end(last[:, None], past), 0.0)
            return np.where(inside, d["outcome"][at], after_end).astype(np.float32)
        gamma, cap = self.discount, self.capacity
        n = self.bootstrap_steps(slots)[:, None]  # [B, 1]: l of each sample
        steps = np.arange(self.td_steps)
        rpos = pos[..., None] + steps  # [B, K+1, n] positions whose rewards count
        rslot = (at[..., None] + steps) % cap
        counted = (rpos < end[..., None]) & (steps < n[..., None])
        rewards = np.where(counted, d["reward"][rslot], 0.0)
        value = (rewards * gamma**steps).sum(-1)
        boot_ok = pos + n < end
        value += np.where(boot_ok, gamma**n * d["root_value"][(at + n) % cap], 0.0)
        return np.where(inside, value, 0.0).astype(np.float32)

    # ------------------------------------------------------------ persistence
    def _extra_state(self) -> dict[str, np.ndarray]:
        return {"_max_priority": np.array([self.max_priority])}

    def _load_extra_state(self, arrays) -> None:
        self.max_priority = float(arrays["_max_priority"][0])
