"""One module per algorithm; each wires a network, a search and a target recipe."""

from __future__ import annotations

from ..errors import UsageError
from ..games import check_supported
from ..nets.inference import default_threads
from ..plugins import algorithm_class, unknown_algorithm
from .base import Algorithm, Trajectory


def make_algorithm(cfg, game) -> Algorithm:
    """The configured algorithm for `game`, refused up front if the game is outside its
    class; the process takes the config's ``threads`` unless it chose some already."""
    cls = algorithm_class(cfg.algo)  # the registry of polyzero.plugins (docs/adding_an_algorithm.md)
    if cls is None:
        raise UsageError(unknown_algorithm(cfg.algo))
    check_supported(game, cls.requirements, cls.name)
    default_threads(cfg.threads)
    return cls(cfg, game)


__all__ = ["Algorithm", "Trajectory", "make_algorithm"]
