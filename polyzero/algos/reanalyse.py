"""MuZero Reanalyze (MuZero paper, Appendix H).

Before a minibatch's targets are built, a fraction of its samples (0.8 in the
paper) has the search re-run with the latest parameters on every stored
position of its unroll, so the fresh search policy is their policy target, and
the n-step bootstrap values v^-_{t+k+n} are recomputed by a target network, a
copy of recent parameters refreshed every N training steps. The values replace
the stored ones; the fresh policies are stored beside the self-play search's,
which the other 20% of samples keep learning from ("this fresh policy is used
as the policy target for 80% of updates"). `muzero.reanalyse_targets` refreshes
only the policies or only the values instead, to tell their effects apart;
`muzero.reanalyse_bootstrap = "search"` bootstraps from the root value of a
search with the target network rather than from its prediction; with
`muzero.off_policy_correction` that search values the state where the shortened
horizon ends (EfficientZero's model-based off-policy correction, Section 4.3).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..replay import SequenceReplay
from ..search.policy import policy_targets


class Reanalyser:
    def __init__(self, algo, cfg, device, seed: int):
        self.algo = algo
        self.target_every = cfg.muzero.target_update_every
        self.params = cfg.search.params()
        if cfg.muzero.reanalyse_c_scale > 0:
            self.params = dataclasses.replace(self.params, c_scale=cfg.muzero.reanalyse_c_scale)
        self.latest = algo.make_evaluator(algo.build_network(), device)
        self.target = algo.make_evaluator(algo.build_network(), device)
        # Appendix H searches with the latest parameters; searching with the target
        # network instead changes a position's policy target once per refresh, not at
        # every gradient step (docs/muzero.md, "Why Reanalyze collapses").
        self.searcher = self.target if cfg.muzero.reanalyse_network == "target" else self.latest
        self.rng = np.random.default_rng([seed, 7])
        self.searches = 0
        self.targets = cfg.muzero.reanalyse_targets
        self.fraction = cfg.muzero.reanalyse_fraction  # of a learning step's samples
        self.bootstrap = cfg.muzero.reanalyse_bootstrap

    def set_weights(self, weights: dict, step: int) -> None:
        """The latest parameters every step; the target network every `target_every` steps
        (step -1: the latest only, as after a resume that restored the target)."""
        self.latest.load_state_dict(weights)
        if step >= 0 and step % self.target_every == 0:
            self.target.load_state_dict(weights)

    def state_dict(self) -> dict:
        weights = {k: v.detach().cpu() for k, v in self.target.net.state_dict().items()}
        rng = self.rng.bit_generator.state
        return {
            "target": weights,
            "rng_state": str(rng["state"]["state"]),
            "rng_inc": str(rng["state"]["inc"]),
            "searches": self.searches,
        }

    def load_state_dict(self, state: dict) -> None:
        self.target.load_state_dict(state["target"])
        rng = self.rng.bit_generator.state
        rng["state"] = {"state": int(state["rng_state"]), "inc": int(state["rng_inc"])}
        self.rng.bit_generator.state = rng
        self.searches = int(state["searches"])

    def refresh(self, replay: SequenceReplay, slots: np.ndarray) -> None:
        """Re-search the unrolls of `slots` (the replay picks the fraction) and store the results."""
        work = plan(replay, slots, self.targets)
        if work is not None:
            apply(replay, work, *self.compute(work["obs"], work["legal"], work["boot_obs"], work["boot_legal"]))

    def compute(self, obs: np.ndarray, legal: np.ndarray, boot_obs: np.ndarray, boot_legal: np.ndarray):
        """Fresh search policies at `obs` (latest parameters, or the target network's with
        `muzero.reanalyse_network = "target"`) and target-network values at `boot_obs`
        (its prediction, or its search's root value): what a reanalyse actor computes."""
        policies = np.zeros((0, legal.shape[-1]), np.float32)
        if len(obs):
            policies = policy_targets(self._search(self.searcher, obs, legal), 1.0)
        values = np.zeros(0, np.float32)
        if len(boot_obs):
            values = (
                self._search(self.target, boot_obs, boot_legal).root_value.astype(np.float32)
                if self.bootstrap == "search"
                else self.target.initial(boot_obs)[2]
            )
        return policies, values

    def _search(self, network, obs: np.ndarray, legal: np.ndarray):
        self.searches += len(obs)
        return self.algo.search_observations(network, obs, legal, self.params, self.rng, add_noise=False)


def plan(replay: SequenceReplay, chosen: np.ndarray, targets: str = "both") -> dict | None:
    """The stored positions the unrolls of `chosen` read: where policies are refreshed
    (t..t+K) and where bootstrap values are (t+l..t+K+l, single-agent; l = n, or the
    off-policy correction's shorter horizon, `SequenceReplay.bootstrap_steps`), with their
    absolute positions so that results arriving later are written only if the ring
    still holds the same positions; `targets` ("policy" or "value") keeps one kind."""
    if len(chosen) == 0:
        return None
    d, cap = replay.data, replay.capacity
    ks = np.arange(replay.unroll_steps + 1)
    pos = d["position"][chosen][:, None] + ks
    end = d["seg_end"][chosen][:, None]
    unroll = np.zeros(0, np.int64)
    if targets != "value":
        unroll = np.unique(((chosen[:, None] + ks) % cap)[pos < end])
    boot = np.zeros(0, np.int64)
    if not replay.board_game and targets != "policy":
        n = replay.bootstrap_steps(chosen)[:, None]  # td_steps, or shorter for old samples
        boot = np.unique(((chosen[:, None] + ks + n) % cap)[pos + n < end])
    return {
        "unroll": unroll,
        "unroll_position": d["position"][unroll].copy(),
        "obs": d["obs"][unroll],
        "legal": d["legal"][unroll],
        "boot": boot,
        "boot_position": d["position"][boot].copy(),
        "boot_obs": d["obs"][boot],
        "boot_legal": d["legal"][boot],
    }


def apply(replay: SequenceReplay, work: dict, policy: np.ndarray, values: np.ndarray) -> int:
    """Store fresh policies and bootstrap values where the positions are still stored;
    returns how many policies were stored."""
    keep = replay.data["position"][work["unroll"]] == work["unroll_position"]
    replay.refresh(work["unroll"][keep], policy=policy[keep])
    if len(work["boot"]):
        ok = replay.data["position"][work["boot"]] == work["boot_position"]
        replay.refresh(work["boot"][ok], root_value=values[ok])
    return int(keep.sum())
