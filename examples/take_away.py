"""Take-away, a game of your own for polyzero: the example of docs/adding_a_game.md.

A pile of `stones` (21); the players take turns removing 1 to `max_take` (3)
stones; whoever takes the last stone wins. The player to move loses exactly when
the pile is a multiple of max_take + 1, and the winning move leaves such a
multiple -- so a trained agent can be checked against the solution.

Use it with polyzero by naming this file (or its module) in POLYZERO_GAMES:

    POLYZERO_GAMES=examples/take_away.py polyzero train take_away --set train.steps=30
"""

from __future__ import annotations

import numpy as np
import pyspiel

DEFAULTS = {"stones": 21, "max_take": 3}

_GAME_TYPE = pyspiel.GameType(
    short_name="take_away",
    long_name="Take-away (a one-pile subtraction game)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=dict(DEFAULTS),
)


class TakeAwayGame(pyspiel.Game):
    def __init__(self, params=None):
        p = {**DEFAULTS, **(params or {})}
        self.stones, self.max_take = int(p["stones"]), int(p["max_take"])
        if self.stones < 1 or self.max_take < 1:
            raise ValueError(f"take_away needs stones >= 1 and max_take >= 1, got {p}")
        info = pyspiel.GameInfo(
            num_distinct_actions=self.max_take,  # action a takes a + 1 stones
            max_chance_outcomes=0,
            num_players=2,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=self.stones,
        )
        super().__init__(_GAME_TYPE, info, p)

    def new_initial_state(self):
        return TakeAwayState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        return TakeAwayObserver(self)


class TakeAwayState(pyspiel.State):
    def __init__(self, game: TakeAwayGame):
        super().__init__(game)
        self.left = game.stones
        self.max_take = game.max_take
        self.mover = 0
        self.winner: int | None = None

    def current_player(self):
        return pyspiel.PlayerId.TERMINAL if self.winner is not None else self.mover

    def _legal_actions(self, player):
        return list(range(min(self.max_take, self.left)))

    def _apply_action(self, action):
        self.left -= action + 1
        if self.left == 0:
            self.winner = self.mover
        self.mover = 1 - self.mover

    def _action_to_string(self, player, action):
        return f"take {action + 1}"

    def is_terminal(self):
        return self.winner is not None

    def returns(self):
        if self.winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.winner == 0 else [-1.0, 1.0]

    def __str__(self):
        return f"{self.left} stones left" + ("" if self.winner is None else f", player {self.winner} won")


class TakeAwayObserver:
    """The observation both players see: a one-hot of the stones left (0..stones)."""

    def __init__(self, game: TakeAwayGame):
        self.tensor = np.zeros(game.stones + 1, np.float32)
        self.dict = {"stones_left": self.tensor}

    def set_from(self, state: TakeAwayState, player: int) -> None:
        self.tensor.fill(0.0)
        self.tensor[state.left] = 1.0

    def string_from(self, state: TakeAwayState, player: int) -> str:
        return str(state)


def winning_takes(left: int, max_take: int) -> list[int]:
    """The solution: the actions that win from a pile of `left` (none when the pile loses)."""
    r = left % (max_take + 1)
    return [r - 1] if r else []


pyspiel.register_game(_GAME_TYPE, TakeAwayGame)
