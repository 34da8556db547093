"""Game parameters checked before OpenSpiel sees them, and a built game checked by
building one state and its tensors, so degenerate parameters fail in one line at the
door instead of segfaulting (`connect_four(rows=0)`: exit 139), aborting (`hanabi(colors=0)`)
or hanging (`hex(board_size=100000)`) later. No subprocess: the ranges below come from
a probe of every registered game's integer parameters at 0, 1, -1 and 100000 in
subprocesses (docs/input_validation.md), and the rules that cover them.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys

import pyspiel

from polyzero.errors import UsageError

# (game, parameter) -> (lowest, highest) where the general rules below are not enough:
# values that crash or hang OpenSpiel inside them.
RANGES = {
    ("hanabi", "colors"): (1, 5),
    ("hanabi", "ranks"): (1, 5),
    ("hanabi", "players"): (2, 5),
    ("hanabi", "hand_size"): (1, 5),
    ("negotiation", "num_items"): (1, 10),
    ("go_fish", "initial_cards"): (1, 64),
    ("blotto", "fields"): (1, 8),
    ("blotto", "coins"): (1, 100),
    ("sheriff", "max_items"): (1, 64),
    ("sheriff", "max_bribe"): (0, 64),
    ("go", "board_size"): (2, 19),
    ("hex", "board_size"): (1, 26),
    ("dark_hex", "board_size"): (2, 26),  # 1: OpenSpiel's tabular policy misses a state (KeyError in CFR)
    ("connect_four", "rows"): (1, 64),
    ("connect_four", "columns"): (1, 64),
    ("connect_four", "x_in_row"): (1, 64),
}

# Parameters that count things a game cannot have none of (board sides, players, cards).
_SIZE = re.compile(r"(size|rows|columns|players|items|cards|colors|ranks|dice|in_row|connect|sides|^[mnk]$)")
# Above max(4 x the default, 64) an integer parameter is refused: large boards and decks
# hang OpenSpiel while it builds the game (hex, gomoku, mnk, dark_hex at 100000).
_GROWTH, _FLOOR = 4, 64


# polyzero's own Python games check their parameters themselves (a bad value is a Python
# error the loader reports in one line), and their numbers are station ids and ticket
# counts the rules below do not fit (a London station is up to 199).
SELF_CHECKING = frozenset({"scotland_yard", "nannon", "gymnasium", "minatar", "atari"})


def check_parameters(name: str, params: dict, defaults: dict, game_type=None) -> None:
    """Refuse integer parameters outside the game's range (RANGES; `players` in the game
    type's min..max; else the rules: not negative unless the default is, at least 1 for
    counts, at most max(4 x default, 64)). Finite floats everywhere; the integer rules
    are for games written in C++, where a bad value crashes or hangs."""
    ranges = dict(RANGES)
    if game_type is not None:
        ranges[(name, "players")] = (game_type.min_num_players, game_type.max_num_players)
    for key, value in params.items():
        default = defaults.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"game {name!r} parameter {key!r} must be a finite number, not {value}")
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not isinstance(default, int)
            or "seed" in key
            or name in SELF_CHECKING
        ):
            continue
        lo, hi = ranges.get((name, key), (None, None))
        if lo is None:
            lo = default if default < 0 else (1 if _SIZE.search(key) and default >= 1 else 0)
            lo = min(lo, default)
            hi = max(_GROWTH * abs(default), _FLOOR)
        if not lo <= value <= hi:
            raise UsageError(
                f"game {name!r} parameter {key!r} must be in {lo}..{hi}, not {value} (its default is {default})"
            )


@contextlib.contextmanager
def quiet_native_stderr():
    """Silence what C++ writes to file descriptor 2 while OpenSpiel builds a game: it prints
    "OpenSpiel exception: ..." before raising (the exception carries the message, which the
    caller reports in one line) and warnings such as "implementation has known issues"."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (embedded): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as sink:
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _first_decision(state: pyspiel.State, steps: int = 8) -> pyspiel.State:
    """The state after resolving the first chance outcomes (their first outcome each)."""
    for _ in range(steps):
        if not state.is_chance_node():
            break
        outcomes = state.chance_outcomes()
        if not outcomes:
            raise ValueError("a chance node with no outcomes")
        state.apply_action(outcomes[0][0])
    return state


def over_before_anyone_moves(game: pyspiel.Game) -> bool:
    """Whether the game ends at its start (after its first chance outcomes)."""
    return _first_decision(game.new_initial_state()).is_terminal()


def check_builds(game: pyspiel.Game, spec: str) -> None:
    """Build the initial state, its first decision point and that point's tensors once."""
    try:
        state = _first_decision(game.new_initial_state())
        if state.is_terminal():  # a game over before anyone moves loads; commands refuse it
            return
        gt = game.get_type()
        player = state.current_player()
        if state.is_simultaneous_node():
            if not all(state.legal_actions(p) for p in range(game.num_players())):
                raise ValueError("a player has no legal action at the start")
        elif not state.legal_actions():
            raise ValueError("the first player to move has no legal action")
        if player >= 0 and gt.provides_observation_tensor:
            state.observation_tensor(player)
        if player >= 0 and gt.provides_information_state_tensor:
            state.information_state_tensor(player)
    except (pyspiel.SpielError, RuntimeError, ValueError, IndexError, TypeError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(f"cannot play game {spec!r}: {msg}") from None


COUNT_SECONDS = 15.0  # a game written in Python (nannon) steps ~2,000 histories a second


def count_histories(game, limit: int, seconds: float | None = COUNT_SECONDS) -> int | None:
    """The number of histories (nodes of the game tree, chance included), or None once it
    passes `limit` or takes longer than `seconds`: a size check that stops early instead
    of enumerating a big game."""
    import time

    deadline = None if seconds is None else time.monotonic() + seconds
    count, stack = 0, [game.new_initial_state()]
    while stack:
        state = stack.pop()
        count += 1
        if count > limit or (deadline is not None and count % 1024 == 0 and time.monotonic() > deadline):
            return None
        if state.is_terminal():
            continue
        actions = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        stack.extend(state.child(a) for a in actions)
    return count
