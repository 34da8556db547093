"""Exact minimax values of tic-tac-toe positions, for learning tests."""

from functools import cache

import numpy as np
import pyspiel

GAME = pyspiel.load_game("tic_tac_toe")


@cache
def _value(history: tuple) -> float:
    """Game value for the player to move (+1 win, 0 draw, -1 loss) under perfect play."""
    state = GAME.new_initial_state()
    for a in history:
        state.apply_action(a)
    if state.is_terminal():
        # The player who just moved can only have won or drawn.
        return -abs(state.returns()[0])
    return max(-_value(history + (a,)) for a in state.legal_actions())


def optimal_actions(state) -> set[int]:
    h = tuple(state.history())
    values = {a: -_value(h + (a,)) for a in state.legal_actions()}
    best = max(values.values())
    return {a for a, v in values.items() if v == best}


def solved_positions(count: int, seed: int = 0) -> list:
    """Distinct positions from random play where some legal move is not optimal."""
    rng = np.random.default_rng(seed)
    seen, out = set(), []
    while len(out) < count:
        state = GAME.new_initial_state()
        while not state.is_terminal():
            h = tuple(state.history())
            if h not in seen and len(optimal_actions(state)) < len(state.legal_actions()):
                seen.add(h)
                out.append(state.clone())
                if len(out) == count:
                    break
            state.apply_action(int(rng.choice(state.legal_actions())))
    return out
