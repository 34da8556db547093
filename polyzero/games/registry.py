"""Hook where polyzero's own Python games get registered with pyspiel."""

_registered = False


def register_polyzero_games() -> None:
    """Register polyzero's Python games (Nannon, Scotland Yard) with pyspiel.

    Idempotent: pyspiel refuses a second registration of the same name, so a
    module-level flag makes repeated calls (every `load_game`) free and safe.
    """
    global _registered
    if _registered:
        return
    # Python game modules are imported here as they are written; importing
    # one calls pyspiel.register_game as a side effect.
    import polyzero.games.scotland_yard  # noqa: F401
    import polyzero.games.nannon  # noqa: F401  (Nannon, shared/specs/nannon.md)
    import polyzero.games.envs  # noqa: F401  (Gymnasium, MinAtar, Atari as one-player games)
    _registered = True
