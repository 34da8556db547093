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
"""

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
