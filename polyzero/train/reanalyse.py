"""MuZero Reanalyze (MuZero paper, Appendix H).

Before a minibatch's targets are built, a fraction of its samples (0.8 in the
paper) has the search re-run with the latest parameters on every stored
position of its unroll, so the fresh search policy is their policy target, and
the n-step bootstrap values v^-_{t+k+n} are recomputed by a target network, a
copy of recent parameters refreshed every N training steps. Both are written
back into the replay, so later samples of the same positions profit too.
"""

from __future__ import annotations

import numpy as np

from ..search.policy import policy_targets
from .sequence_replay import SequenceReplay


class Reanalyser:
    def __init__(self, algo, cfg, device, seed: int):
        self.algo = algo
        self.fraction = cfg.muzero.reanalyse_fraction
        self.target_every = cfg.muzero.target_update_every
        self.params = cfg.search.params()
        self.latest = algo.make_evaluator(algo.build_network(), device)
        self.target = algo.make_evaluator(algo.build_network(), device)
        self.rng = np.random.default_rng([seed, 7])
        self.searches = 0

    def set_weights(self, weights: dict, step: int) -> None:
        """The latest parameters every step; the target network every `target_every` steps
        (step -1: the latest only, as after a resume that restored the target)."""
        self.latest.load_state_dict(weights)
        if step >= 0 and step % self.target_every == 0:
            self.target.load_state_dict(weights)

    def state_dict(self) -> dict:
        weights = {k: v.detach().cpu() for k, v in self.target.net.state_dict().items()}
        rng = self.rng.bit_generator.state
        return {"target": weights, "rng_state": str(rng["state"]["state"]), "rng_inc": str(rng["state"]["inc"]),
                "searches": self.searches}

    def load_state_dict(self, state: dict) -> None:
        self.target.load_state_dict(state["target"])
        rng = self.rng.bit_generator.state
        rng["state"] = {"state": int(state["rng_state"]), "inc": int(state["rng_inc"])}
        self.rng.bit_generator.state = rng
        self.searches = int(state["searches"])

    def refresh(self, replay: SequenceReplay, slots: np.ndarray) -> None:
        count = int(round(self.fraction * len(slots)))
        if count == 0:
            return
        d, cap = replay.data, replay.capacity
        chosen = slots[:count]  # slots are drawn at random: the first ones are a random subset
        ks = np.arange(replay.unroll_steps + 1)
        pos = d["position"][chosen][:, None] + ks
        inside = pos < d["seg_end"][chosen][:, None]
        unroll = np.unique(((chosen[:, None] + ks) % cap)[inside])
        result = self.algo.search_observations(self.latest, d["obs"][unroll], d["legal"][unroll],
                                               self.params, self.rng, add_noise=False)
        replay.refresh(unroll, policy=policy_targets(result, 1.0))
        self.searches += len(unroll)
        if not replay.board_game:
            boot_pos = pos + replay.td_steps
            ok = boot_pos < d["seg_end"][chosen][:, None]
            boot = np.unique(((chosen[:, None] + ks + replay.td_steps) % cap)[ok])
            if boot.size:
                _, _, value = self.target.initial(d["obs"][boot])
                replay.refresh(boot, root_value=value)
