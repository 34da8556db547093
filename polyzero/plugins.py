"""Where `polyzero.eval.make_player` finds players beyond the reference ones.

Learned agents are loaded by code above the evaluation layer (a run directory needs
the training code's checkpoint reader), and `eval` must not import `train`. So the
loaders are named here, at the package's root, as "module:function" strings that
`make_player` imports the first time a spec is not a reference player: a user gets
run directories and checkpoints as players without registering anything, and `eval`
holds no import of `train`. Other packages add loaders the same way through the
entry-point group `polyzero.player_loaders` (in their pyproject.toml:
`[project.entry-points."polyzero.player_loaders"] name = "pkg.module:loader"`), or at
run time with `polyzero.eval.register_player_loader`.

A loader is `fn(spec, game, seed) -> Player | None`; None means "not mine".

Reference players that need no run come the same way from the packages above `eval`
(Student of Games' solvers, external engines): `REFERENCE_PLAYER_LOADERS`, which
`polyzero.eval.reference_player` tries after its own (random, optimal, mcts), so `eval`
imports neither `sog` nor `engines`.
"""

REFERENCE_PLAYER_LOADERS = (
    "polyzero.sog.players:sog_reference_player",  # cfr:ITERS, ismcts:SIMS, sog:S,C
    "polyzero.engines.players:external_player",  # gtp:, uci:, gnugo:, pachi:, stockfish:
)

# Algorithms that train through a runtime of their own rather than `train.driver.Trainer`:
# algo name -> a module with `trainer_classes()` (in-process, Ray), `run_player(ckpt, cfg,
# game, simulations, seed, path)` (a run directory as a player) and
# `final_evaluation_lines(trainer, results)` (the report's lines from the trainer's `evaluate`
# results). `polyzero.train` finds them here and imports no algorithm's package.
RUNTIMES = {
    "sog": "polyzero.sog.runtime",  # Student of Games
}


# Plug-ins of the common runtime's self-play, as modules ("module" strings), asked in order;
# the first whose `wanted(cfg)` is true serves the run: `search_control(cfg, game, algo,
# evaluator, seed)` builds the driver's part (`make_actor`, `end_step`, `to_bytes` /
# `load_bytes` into the checkpoint part `CHECKPOINT_FILE`), `worker_actor(algo, game, cfg,
# evaluator, seed, archive_actor)` a Ray worker's actor. `polyzero.train` finds them here
# and imports no plug-in's package.
SELFPLAY_PLUGINS = (
    "polyzero.goexploit.runtime",  # Go-Exploit's start states and KataGo's techniques
)


def selfplay_plugin(cfg):
    """The module of `SELFPLAY_PLUGINS` that serves `cfg`, imported; None for plain self-play."""
    import importlib

    for name in SELFPLAY_PLUGINS:
        module = importlib.import_module(name)
        if module.wanted(cfg):
            return module
    return None


def own_runtime(algo: str):
    """The runtime module `RUNTIMES` names for `algo`, imported; None for the common one."""
    if algo not in RUNTIMES:
        return None
    import importlib

    return importlib.import_module(RUNTIMES[algo])


PLAYER_LOADERS = (
    "polyzero.train.agents:load_search_player",  # a run directory, checkpoint, PATH@SIMS
)

ENTRY_POINT_GROUP = "polyzero.player_loaders"

# Config sections owned by plug-ins (polyzero.config.ConfigSection), "module:NAME", in the
# order a saved config.toml lists them.
CONFIG_SECTIONS = (
    "polyzero.algos.muzero_config:SECTION",
    "polyzero.goexploit.config:START_SECTION",
    "polyzero.goexploit.config:KATAGO_SECTION",
    "polyzero.algos.ndmz_config:SECTION",
    "polyzero.sog.config:SECTION",
)

# Algorithms that train through the common runtime (`train.driver.Trainer`), name ->
# "module:Class" (an `polyzero.algos.base.Algorithm`), imported by `algorithm_class` on first
# use. The names are the `algo` a config and `polyzero train --algo` accept, together with
# those of `RUNTIMES`; config validation, presets, the CLI and `polyzero.algos.make_algorithm`
# all read them here (docs/adding_an_algorithm.md). Other packages add theirs through the
# entry-point group `polyzero.algorithms` (`[project.entry-points."polyzero.algorithms"]
# name = "pkg.module:Class"`); a module or .py file named in the environment variable
# POLYZERO_ALGORITHMS (comma-separated) is imported first and may call
# `register_algorithm`, which a notebook or test may also call itself.
ALGORITHMS: dict[str, object] = {
    "alphazero": "polyzero.algos.alphazero:AlphaZero",
    "muzero": "polyzero.algos.muzero:MuZero",
    "ndmz": "polyzero.algos.ndmz:NDMZ",
}
ALGORITHMS_ENV = "POLYZERO_ALGORITHMS"
ALGORITHMS_ENTRY_POINT_GROUP = "polyzero.algorithms"
_ALGORITHMS_DISCOVERED = False


def register_algorithm(name: str, target) -> None:
    """Add (or replace) algorithm `name`: its class, or a "module:Class" string."""
    ALGORITHMS[name] = target


def _discover_algorithms() -> None:
    """Installed packages' entry points (once), then the modules POLYZERO_ALGORITHMS names
    (again whenever it changes; `polyzero.games.registry` imports them)."""
    global _ALGORITHMS_DISCOVERED
    if not _ALGORITHMS_DISCOVERED:
        from importlib.metadata import entry_points

        _ALGORITHMS_DISCOVERED = True
        for ep in entry_points(group=ALGORITHMS_ENTRY_POINT_GROUP):
            ALGORITHMS.setdefault(ep.name, ep.value)
    import os

    if os.environ.get(ALGORITHMS_ENV):
        from .games.registry import import_named_modules

        import_named_modules(ALGORITHMS_ENV, "algorithm")


def algorithm_names(discover: bool = True) -> list[str]:
    """Every algorithm a run may name, sorted: those of the common runtime and of `RUNTIMES`
    (`discover=False`: without looking for plug-ins, e.g. for the CLI's help)."""
    if discover:
        _discover_algorithms()
    return sorted({*ALGORITHMS, *RUNTIMES})


def algorithm_class(name: str):
    """The class registered as `name` (imported if named by a string); None if there is none
    (an unknown name, or one of `RUNTIMES`, which trains through its own runtime)."""
    _discover_algorithms()
    target = ALGORITHMS.get(name)
    if isinstance(target, str):
        import importlib

        module, _, attr = target.partition(":")
        target = ALGORITHMS[name] = getattr(importlib.import_module(module), attr)
    return target


def unknown_algorithm(name: str) -> str:
    """The one line for an algorithm name nothing registered."""
    return (
        f"unknown algorithm '{name}'; available: {', '.join(algorithm_names())} (one of your own "
        f"is named in {ALGORITHMS_ENV}: docs/adding_an_algorithm.md)"
    )
