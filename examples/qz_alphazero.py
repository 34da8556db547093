"""Q+Z AlphaZero, an algorithm of your own for polyzero: the example of
docs/adding_an_algorithm.md.

AlphaZero trains its value head on the game's outcome z: every position of a game
gets the same target, however the game got there, so a blunder late in a won game
teaches the opening that it lost. Q+Z AlphaZero trains it on the average of z and the
search's root value q at that position (both from the mover's side): q is a
bootstrapped estimate of what the position is worth, with lower variance than one
game's result. Everything else -- network, search, policy target, replay, the
runtime -- is AlphaZero's.

Use it with polyzero by naming this file (or its module) in POLYZERO_ALGORITHMS:

    POLYZERO_ALGORITHMS=examples/qz_alphazero.py polyzero train --config examples/qz_alphazero.toml
"""

from __future__ import annotations

import numpy as np

from polyzero.algos.alphazero import AlphaZero
from polyzero.plugins import register_algorithm

Q_WEIGHT = 0.5  # the value target's share of the search's root value q (0: AlphaZero's z)


class QZAlphaZero(AlphaZero):
    name = "qz_alphazero"

    def trajectory_examples(self, traj):
        """AlphaZero's (s_t, pi_t, z_t), with the value target (1 - w) z_t + w q_t."""
        examples = super().trajectory_examples(traj)
        q = np.asarray(traj.root_values[: len(examples["outcome"])], np.float32)
        examples["outcome"] = (1 - Q_WEIGHT) * examples["outcome"] + Q_WEIGHT * q
        return examples


register_algorithm(QZAlphaZero.name, QZAlphaZero)
