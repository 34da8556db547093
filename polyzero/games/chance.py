"""Chance outcomes drawn by their known probabilities: the one place polyzero samples
a game's chance node (self-play, the simulator inside the search, matches, terminal
and web play, the conformance check, the model probe, GT-CFR's descents)."""

from __future__ import annotations

import numpy as np
import pyspiel


def sample_chance(state: pyspiel.State, rng: np.random.Generator, apply: bool = True) -> int:
    """An outcome of the chance node `state`, drawn with its probability (normalised, so
    OpenSpiel's rounding never trips `choice`); applied to `state` unless `apply` is False."""
    outcomes, probs = zip(*state.chance_outcomes())
    p = np.asarray(probs, dtype=np.float64)
    outcome = int(outcomes[rng.choice(len(outcomes), p=p / p.sum())])
    if apply:
        state.apply_action(outcome)
    return outcome
