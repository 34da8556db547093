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
