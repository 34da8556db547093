"""Load OpenSpiel games from spec strings like "go(board_size=9,komi=7.5)"."""

from __future__ import annotations

import difflib
import re

import pyspiel

from polyzero.errors import UsageError
from polyzero.games.registry import register_polyzero_games
from polyzero.games.sanity import check_builds, check_parameters, quiet_native_stderr

_SPEC = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split a spec into its name and raw (unparsed) parameter strings."""
    if not isinstance(spec, str):
        raise UsageError(f"game spec must be a string, got {type(spec).__name__}")
    m = _SPEC.match(spec)
    if m is None:
        raise UsageError(f"malformed game spec {spec!r}; expected name or name(key=value,...)")
    name, body = m.group(1), m.group(2)
    params: dict[str, str] = {}
    if body is None or not body.strip():
        return name, params
    if "(" in body or ")" in body:
        # Nested game parameters are only taken by TURN_BASED (load_game handles it);
        # reject the others rather than half-parse them.
        raise UsageError(f"malformed game spec {spec!r}; nested game parameters are not supported")
    for item in body.split(","):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not _KEY.match(key) or not value:
            raise UsageError(f"malformed game spec {spec!r}; bad parameter {item.strip()!r}")
        if key in params:
            raise UsageError(f"malformed game spec {spec!r}; parameter {key!r} given twice")
        params[key] = value
    return name, params


def _parse_value(raw: str) -> int | float | bool | str:
    """int, then float, then bool (true/false), else the string itself."""
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return raw


def parse_game_spec(spec: str) -> tuple[str, dict]:
    """Parse "go(board_size=9,komi=7.5)" into ("go", {"board_size": 9, "komi": 7.5})."""
    name, raw = _split_spec(spec)
    return name, {k: _parse_value(v) for k, v in raw.items()}


def _coerce(game: str, key: str, raw: str, default) -> int | float | bool | str:
    """Convert a raw value to the type of the parameter's default.

    Typing by the default (not by the text) lets users write komi=7 for a float
    parameter or a numeric-looking string, where pyspiel would refuse the type.
    """
    if isinstance(default, bool):
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
    elif isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            pass
    elif isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            pass
    elif isinstance(default, str):
        return raw
    else:
        return _parse_value(raw)
    kind = type(default).__name__
    raise UsageError(f"game {game!r} parameter {key!r} must be {kind}, got {raw!r}")


def _game_type(name: str) -> pyspiel.GameType | None:
    for gt in pyspiel.registered_games():
        if gt.short_name == name:
            return gt
    return None


# Short names for single-agent environments (and the presets named after them).
GAME_ALIASES = {
    "cartpole": "gymnasium(env=CartPole-v1)",
    "acrobot": "gymnasium(env=Acrobot-v1)",
    "mountaincar": "gymnasium(env=MountainCar-v0)",
    **{f"minatar-{g}": f"minatar(game={g})" for g in ("asterix", "breakout", "freeway", "seaquest", "space_invaders")},
    "atari-breakout": "atari(game=Breakout,history=4)",  # the last 4 frames with their actions
    "atari-pong": "atari(game=Pong,history=4)",
}


# A simultaneous-move game made sequential (the second mover does not see the first's
# action), as OpenSpiel writes it: "turn_based_simultaneous_game(game=matrix_rps())".
TURN_BASED = re.compile(r"^\s*turn_based_simultaneous_game\s*\(\s*game\s*=(.*)\)\s*$", re.DOTALL)


def load_game(spec: str) -> pyspiel.Game:
    """Load a game by spec string (or one of GAME_ALIASES), validating name and parameters first."""
    register_polyzero_games()
    if isinstance(spec, str):
        spec = GAME_ALIASES.get(spec.strip(), spec)
        nested = TURN_BASED.match(spec)
        if nested:
            inner = load_game(nested.group(1))
            if inner.get_type().dynamics != pyspiel.GameType.Dynamics.SIMULTANEOUS:
                raise UsageError(f"cannot load game {spec.strip()!r}: {inner} is not a simultaneous-move game")
            return pyspiel.convert_to_turn_based(inner)
    name, raw = _split_spec(spec)
    names = list(pyspiel.registered_names())
    if name not in names:
        close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
        hint = f"did you mean: {', '.join(close)}" if close else f"no close match among {len(names)} games"
        raise UsageError(f"unknown game {name!r}; {hint}")
    gt = _game_type(name)
    spec_defaults = dict(gt.parameter_specification) if gt is not None else {}
    params = {}
    for key, value in raw.items():
        if gt is not None and key not in spec_defaults:
            valid = ", ".join(sorted(spec_defaults)) or "(none)"
            raise UsageError(f"game {name!r} has no parameter {key!r}; its parameters are: {valid}")
        params[key] = _coerce(name, key, value, spec_defaults.get(key))
    check_parameters(name, params, spec_defaults, gt)  # before pyspiel: some values crash it
    with quiet_native_stderr():  # OpenSpiel prints its errors (and warnings) before raising them
        try:
            game = pyspiel.load_game(name, params)
        except (pyspiel.SpielError, RuntimeError, ValueError, TypeError) as e:
            msg = " ".join(str(e).split()) or type(e).__name__
            raise UsageError(f"cannot load game {spec.strip()!r}: {msg}") from None
        check_builds(game, spec.strip())
    return game


def registered_type(spec: str) -> pyspiel.GameType | None:
    """The registered type of the game `spec` names (a simultaneous-move game made
    sequential: the inner game's), read without loading it; None for an unknown name."""
    register_polyzero_games()
    if not isinstance(spec, str):
        return None
    spec = GAME_ALIASES.get(spec.strip(), spec)
    nested = TURN_BASED.match(spec)
    m = _SPEC.match(nested.group(1) if nested else spec)
    return _game_type(m.group(1)) if m else None


def game_spec_string(game: pyspiel.Game) -> str:
    """Canonical spec that round-trips through load_game, e.g. "go(board_size=9,komi=7.5)"."""
    s = str(game)
    # pyspiel writes "connect_four()" for a game with no explicit parameters; drop the noise.
    return s[:-2] if s.endswith("()") else s
