"""What an algorithm or plug-in declares to the training runtime, asked here so that
`polyzero.train` names no algorithm (docs/adding_an_algorithm.md, "Declarations"):

* `data_sources(cfg)` (a static method of the algorithm's class, optional): the data
  sources beyond self-play its config asks for, by name; "reanalyse" is MuZero
  Reanalyze (Appendix H): stored positions re-searched with the latest weights.
* `extra_actors(cfg)` (of a runtime of its own, `polyzero.plugins.RUNTIMES`): its Ray
  actors beside the self-play workers, config key -> count.
"""

from __future__ import annotations

from ..plugins import algorithm_class, own_runtime

REANALYSE = "reanalyse"


def declared_sources(cfg) -> tuple[str, ...]:
    """The data sources beyond self-play that `cfg`'s algorithm declares for this config."""
    declare = getattr(algorithm_class(cfg.algo), "data_sources", None)
    return tuple(declare(cfg)) if declare is not None else ()


def extra_actors(cfg) -> dict[str, int]:
    """The run's Ray actors beside the self-play workers, by the config key that sets
    their number: evaluation and reanalyse actors (the common runtime), or what a runtime
    of its own declares."""
    runtime = own_runtime(cfg.algo)
    if runtime is not None:
        return runtime.extra_actors(cfg)
    return {
        "ray.evaluators": cfg.ray.evaluators if cfg.eval.every else 0,
        "ray.reanalysers": cfg.ray.reanalysers if REANALYSE in declared_sources(cfg) else 0,
    }
