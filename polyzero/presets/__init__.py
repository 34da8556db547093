"""Shipped presets: {algo}_{game}.toml, each citing the source of its values.

A preset is picked by name (`polyzero train --preset muzero_connect_four`,
`polyzero presets` lists them); the one named `{algo}_{game}` is also applied by
itself when that algorithm trains that game.
"""

from __future__ import annotations

import difflib
import tomllib
from importlib import resources

from ..errors import UsageError
from ..plugins import algorithm_names


def load_preset(algo: str, game: str) -> dict | None:
    """The shipped preset `{algo}_{game}` (the game's name without parameters), if any:
    applied by itself when that algorithm trains that game."""
    res = resources.files(__name__).joinpath(f"{algo}_{game.split('(')[0]}.toml")
    return tomllib.loads(res.read_text()) if res.is_file() else None


def list_presets() -> list[str]:
    """The names of the shipped presets, sorted."""
    return sorted(p.name[: -len(".toml")] for p in resources.files(__name__).iterdir() if p.name.endswith(".toml"))


def preset_text(name: str) -> str:
    """The TOML text of the preset `name` (a usage error naming close matches if none)."""
    names = list_presets()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `polyzero presets` lists them"
        raise UsageError(f"unknown preset '{name}'{hint}")
    return resources.files(__name__).joinpath(f"{name}.toml").read_text()


def preset_file(name: str):
    """A path to the preset's file (inside the installed package)."""
    preset_text(name)  # the error for an unknown name
    return resources.files(__name__).joinpath(f"{name}.toml")


def preset_summary(name: str) -> dict:
    """{'name', 'algo', 'game', 'about'}: the algorithm and game the preset trains (its
    own keys, else read from its name `{algo}_{game}`) and its first comment line."""
    text = preset_text(name)
    data = tomllib.loads(text)
    algo, _, game = name.partition("_")
    comments = [line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")]
    return {
        "name": name,
        "algo": data.get("algo", algo if algo in algorithm_names() else "alphazero"),
        "game": data.get("game", game),
        "about": comments[0] if comments else "",
    }
