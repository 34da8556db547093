"""Hook where polyzero's own Python games, and the user's, get registered with pyspiel.

A game of your own (docs/adding_a_game.md) is an OpenSpiel Python game whose module
calls ``pyspiel.register_game`` when imported. polyzero imports it before loading
any game when it is named in the environment variable ``POLYZERO_GAMES`` (comma-
separated; each a module name or a ``.py`` file) or declared by an installed
package as an entry point in the group ``polyzero.games``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from ..errors import UsageError

GAMES_ENV = "POLYZERO_GAMES"
ENTRY_POINT_GROUP = "polyzero.games"

_registered = False
_user_imported: set[str] = set()
_named_done: dict[str, str] = {}  # env var -> the value already imported (after resolving)


def register_polyzero_games() -> None:
    """Register polyzero's Python games (Nannon, Scotland Yard, the environments) and
    the user's games with pyspiel.

    Idempotent: pyspiel refuses a second registration of the same name, so each
    module is imported once; repeated calls (every `load_game`) only look for
    modules newly named in POLYZERO_GAMES.
    """
    global _registered
    if not _registered:
        # Importing a game module calls pyspiel.register_game as a side effect.
        import polyzero.games.envs  # noqa: F401  (Gymnasium, MinAtar, Atari as one-player games)
        import polyzero.games.nannon  # noqa: F401  (Nannon, docs/nannon.md)
        import polyzero.games.scotland_yard  # noqa: F401

        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            _import_user_game(entry.value, f"entry point {entry.name!r}")
        _registered = True
    import_named_modules(GAMES_ENV, "game")


def import_named_modules(env_var: str, kind: str) -> None:
    """Import each module or .py file the environment variable `env_var` names (comma-
    separated), once; POLYZERO_GAMES for games, POLYZERO_ALGORITHMS (polyzero.plugins)
    for algorithms. `kind` words the errors."""
    named = os.environ.get(env_var, "")
    if named and named != _named_done.get(env_var):
        resolved = [_import_user_game(item.strip(), env_var, kind) for item in named.split(",") if item.strip()]
        # Absolute paths from here on: Ray workers inherit the environment, not the cwd.
        _named_done[env_var] = os.environ[env_var] = ",".join(resolved)


def _import_user_game(item: str, source: str, kind: str = "game") -> str:
    """Import a module name or a .py file once; returns how to name it from anywhere."""
    is_file = item.endswith(".py") or os.sep in item
    key = str(Path(item).resolve()) if is_file else item
    if key in _user_imported:
        return key
    try:
        if is_file:
            path = Path(key)
            if not path.is_file():
                raise UsageError(f"{source}: no such {kind} file {item!r}")
            name = f"polyzero_user_{kind}_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            importlib.import_module(item.split(":")[0])
    except UsageError:
        raise
    except Exception as e:  # the user's code: any error, named in one line
        msg = " ".join(str(e).split()) or type(e).__name__
        raise UsageError(f"{source}: cannot import {kind} module {item!r}: {msg}") from None
    _user_imported.add(key)
    return key
