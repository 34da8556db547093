"""One module per algorithm; each wires a network, a search and a target recipe."""

from __future__ import annotations

from ..errors import UsageError
from ..games import check_supported
from ..nets.inference import default_threads
from .alphazero import AlphaZero
from .base import Algorithm, Trajectory
from .muzero import MuZero
from .ndmz import NDMZ

ALGORITHMS = {"alphazero": AlphaZero, "muzero": MuZero, "ndmz": NDMZ}
TRAINABLE = (*ALGORITHMS, "sog")  # Student of Games trains by its own loop (polyzero/sog/trainer.py)


def make_algorithm(cfg, game) -> Algorithm:
    """The configured algorithm for `game`, refused up front if the game is outside its
    class; the process takes the config's ``threads`` unless it chose some already."""
    try:
        cls = ALGORITHMS[cfg.algo]
    except KeyError:
        raise UsageError(f"unknown algorithm '{cfg.algo}'; available: {', '.join(TRAINABLE)}") from None
    check_supported(game, cls.requirements, cls.name)
    default_threads(cfg.threads)
    return cls(cfg, game)


__all__ = ["ALGORITHMS", "Algorithm", "Trajectory", "make_algorithm"]
