"""Nannon{N, C, D}: Jordan Pollack's miniature backgammon as an OpenSpiel Python game.

Rules: `docs/nannon.md` (authoritative), the benchmark of the Nondeterministic
MuZero paper (Section 4.1). Registered with pyspiel under the short name ``nannon`` with
parameters ``points`` (N, default 6), ``checkers`` (C, 3), ``die_sides`` (D, 6),
``opening`` ("difference" | "single_die") and ``scoring`` ("single" | "nannon_double").

Coordinates: each player numbers the points 1..N from their own side; player 0's point k
is board square k, player 1's point k is board square N+1-k (spec rule 1).

Player actions (``num_distinct_actions`` = N + 2), by the source of the checker moved:
  0        enter a checker from HOME onto point d (HOME checkers are interchangeable)
  k=1..N   move the checker on own point k to k + d (SAFETY when k + d >= N + 1)
  N + 1    pass: the only legal action when no move is legal (spec rule 9)
The die roll d is part of the state, so a source fixes the move.

Chance outcomes: ``d - 1`` is an ordinary roll d in 1..D for the player whose turn it is.
With ``opening="difference"`` the first node is the opening roll-off (spec rule 3):
outcome ``D + p*(D-1) + (d-1)`` means player p moves first with roll d in 1..D-1, with
probability (D-d)/(D(D-1)) (each player; 2(D-d)/(D(D-1)) for d overall). With
``"single_die"`` the first node is player 0's ordinary roll.

Observation tensor (flat, from the observing player's view, "me" = that player):
  [0, N)          my checkers on my points 1..N
  [N, 2N)         opponent checkers on my points 1..N (my coordinates)
  then 4 one-hots of size C+1: my HOME count, my SAFETY count, opponent HOME, SAFETY
  then D          one-hot die roll of the current decision (zeros at chance/terminal)
  then 1          1 when the observer is the player to move
"""

from __future__ import annotations

from math import comb

import numpy as np
import pyspiel
from open_spiel.python.observation import IIGObserverForPublicInfoGame

DEFAULTS = {"points": 6, "checkers": 3, "die_sides": 6, "opening": "difference", "scoring": "single"}
OPENINGS = ("difference", "single_die")
SCORINGS = ("single", "nannon_double")
HOME = 0  # action id of entering from HOME
MARKS = "xo"  # board characters of players 0 and 1

_GAME_TYPE = pyspiel.GameType(
    short_name="nannon",
    long_name="Nannon (miniature backgammon)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
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


def count_positions(points: int, checkers: int) -> int:
    """Positions as pairs of both players' checker placements (spec "State counts";
    the NDMZ paper's Eq. 2): i and j checkers on disjoint board points, the rest split
    between HOME and SAFETY in (C+1-i)(C+1-j) ways. 2,530 for 6-3-6, 1,780,776 for 12-5-6."""
    n, c = points, checkers
    return sum(
        comb(n, i) * comb(n - i, j) * (c + 1 - i) * (c + 1 - j)
        for i in range(c + 1)
        for j in range(c + 1)
        if i + j <= n
    )


def max_game_length(points: int, checkers: int, die_sides: int) -> int:
    """A safe bound on player decisions (passes included); the game is not truncated.

    Nannon has no hard bound (hits send checkers back), so this is a bound that play
    exceeds with negligible probability (docs/nannon.md measures the tail under random
    play): 20 times the pips both players must travel."""
    del die_sides
    return 20 * 2 * checkers * (points + 1)


def _check_params(n: int, c: int, d: int, opening: str, scoring: str) -> None:
    if n < 4:
        raise ValueError(f"nannon needs points >= 4 (the setup uses each side's points 1 and 2), got {n}")
    if c < 2:
        raise ValueError(f"nannon needs checkers >= 2 (the setup places two), got {c}")
    if d < 2:
        raise ValueError(f"nannon needs die_sides >= 2, got {d}")
    if opening not in OPENINGS:
        raise ValueError(f"nannon opening must be one of {', '.join(OPENINGS)}, got {opening!r}")
    if scoring not in SCORINGS:
        raise ValueError(f"nannon scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")


class NannonGame(pyspiel.Game):
    """Nannon{points, checkers, die_sides}; see the module docstring for the layouts."""

    def __init__(self, params=None):
        p = {**DEFAULTS, **(params or {})}
        self.points, self.checkers, self.die_sides = int(p["points"]), int(p["checkers"]), int(p["die_sides"])
        self.opening, self.scoring = str(p["opening"]), str(p["scoring"])
        _check_params(self.points, self.checkers, self.die_sides, self.opening, self.scoring)
        n, d = self.points, self.die_sides
        top = 2.0 if self.scoring == "nannon_double" else 1.0
        info = pyspiel.GameInfo(
            num_distinct_actions=n + 2,
            max_chance_outcomes=d + 2 * (d - 1) if self.opening == "difference" else d,
            num_players=2,
            min_utility=-top,
            max_utility=top,
            utility_sum=0.0,
            max_game_length=max_game_length(n, self.checkers, d),
        )
        super().__init__(_GAME_TYPE, info, p)
        self.pass_action = n + 1
        self.observation_size = 2 * n + 4 * (self.checkers + 1) + d + 1

    def new_initial_state(self):
        return NannonState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return NannonObserver(self, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class NannonState(pyspiel.State):
    """Board squares 1..N hold -1 (empty) or the owner 0/1; squares 0 and N+1 are
    always empty sentinels so the protection test needs no bounds checks."""

    def __init__(self, game: NannonGame):
        super().__init__(game)
        self._n, self._c, self._d = game.points, game.checkers, game.die_sides
        self._opening = game.opening
        self._double = game.scoring == "nannon_double"
        n = self._n
        self.board = [-1] * (n + 2)
        for p in (0, 1):  # spec rule 2: own points 1 and 2, the rest at HOME
            for k in (1, 2):
                self.board[self.square(p, k)] = p
        self.home = [self._c - 2, self._c - 2]
        self.safe = [0, 0]
        # Whose turn it is (to roll, then to move); None before the opening roll-off.
        self.turn: int | None = 0 if self._opening == "single_die" else None
        self.roll = 0  # 0 at chance nodes; the die of the current decision otherwise
        self.winner: int | None = None

    # --- geometry and rules -------------------------------------------------------
    def square(self, player: int, point: int) -> int:
        """Board square of `player`'s own point (spec rule 1)."""
        return point if player == 0 else self._n + 1 - point

    def move_outcome(self, player: int, source: int, roll: int):
        """None if illegal, else (target own point or None for SAFETY, hits: bool)."""
        n, board, opp = self._n, self.board, 1 - player
        if source == HOME:
            if self.home[player] == 0 or roll > n:  # HOME never goes straight to SAFETY
                return None
            target = roll
        else:
            if board[self.square(player, source)] != player:
                return None
            target = source + roll
            if target > n:  # spec rule 6: leaving needs no exact roll
                return None, False
        sq = self.square(player, target)
        if board[sq] == player:  # rule 7: one checker per point
            return None
        if board[sq] == opp:
            if board[sq - 1] == opp or board[sq + 1] == opp:  # rule 8: protected
                return None
            return target, True
        return target, False

    def legal_moves(self, player: int, roll: int) -> list[int]:
        """Sources (action ids) of the legal moves, without the pass action."""
        return [k for k in range(self._n + 1) if self.move_outcome(player, k, roll) is not None]

    def own_view(self, player: int) -> tuple[int, int]:
        """(HOME count, bitmask of own points: bit k-1 set when own point k is occupied)."""
        mask = 0
        for k in range(1, self._n + 1):
            if self.board[self.square(player, k)] == player:
                mask |= 1 << (k - 1)
        return self.home[player], mask

    def set_position(self, player: int, roll: int, mine: tuple[int, int], theirs: tuple[int, int]) -> None:
        """Put `player` to move with `roll` (0: before the roll) at a position given as
        own_view() pairs of the mover (`mine`) and the opponent (`theirs`). History is
        not rewritten: this is for tabulating policies over positions."""
        n, c, opp = self._n, self._c, 1 - player
        self.board = [-1] * (n + 2)
        for p, (h, mask) in ((player, mine), (opp, theirs)):
            on_board = bin(mask).count("1")
            if not 0 <= h <= c - on_board or mask >> n:
                raise ValueError(f"bad placement (home {h}, mask {mask:b}) for {n} points, {c} checkers")
            for k in range(1, n + 1):
                if mask >> (k - 1) & 1:
                    if self.board[self.square(p, k)] != -1:
                        raise ValueError("two checkers on one point")
                    self.board[self.square(p, k)] = p
            self.home[p], self.safe[p] = h, c - h - on_board
        self.turn, self.roll = player, roll
        self.winner = None
        for p in (0, 1):
            if self.safe[p] == c:
                self.winner, self.turn, self.roll = p, None, 0

    def points_won(self) -> float:
        """Spec rule 10: 1, or 2 under nannon_double when the loser has nothing in SAFETY."""
        return 2.0 if self._double and self.safe[1 - self.winner] == 0 else 1.0

    # --- OpenSpiel API --------------------------------------------------------------
    def current_player(self):
        if self.winner is not None:
            return pyspiel.PlayerId.TERMINAL
        if self.roll == 0:
            return pyspiel.PlayerId.CHANCE
        return self.turn

    def _legal_actions(self, player):
        moves = self.legal_moves(player, self.roll)
        return moves if moves else [self._n + 1]

    def chance_outcomes(self):
        d = self._d
        if self.turn is None:  # the roll-off: P(p first, roll r) = (D - r) / (D (D - 1))
            return [(d + p * (d - 1) + r - 1, (d - r) / (d * (d - 1))) for p in (0, 1) for r in range(1, d)]
        return [(r - 1, 1.0 / d) for r in range(1, d + 1)]

    def _apply_action(self, action):
        if self.is_chance_node():
            d = self._d
            if self.turn is None:
                self.turn, self.roll = divmod(action - d, d - 1)
                self.roll += 1
            else:
                self.roll = action + 1
            return
        player, roll, n = self.turn, self.roll, self._n
        if action != n + 1:
            outcome = self.move_outcome(player, action, roll)
            if outcome is None:
                raise ValueError(f"illegal nannon move {action} with roll {roll}")
            target, hits = outcome
            if action == HOME:
                self.home[player] -= 1
            else:
                self.board[self.square(player, action)] = -1
            if target is None:
                self.safe[player] += 1
            else:
                sq = self.square(player, target)
                if hits:
                    self.home[1 - player] += 1
                self.board[sq] = player
            if self.safe[player] == self._c:
                self.winner, self.turn, self.roll = player, None, 0
                return
        elif self.legal_moves(player, roll):
            raise ValueError("pass is illegal when a move is legal")
        self.turn, self.roll = 1 - player, 0

    def _action_to_string(self, player, action):
        d, n = self._d, self._n
        if player == pyspiel.PlayerId.CHANCE:
            if self.turn is None and action >= d:
                p, r = divmod(action - d, d - 1)
                return f"{MARKS[p]} first, roll {r + 1}"
            return f"roll {action + 1}"
        if action == n + 1:
            return "pass"
        src = "H" if action == HOME else str(action)
        if not self.roll:
            return f"{src}-?"
        dst = self.roll if action == HOME else action + self.roll
        return f"{src}-{dst if dst <= n else 'off'}"

    def is_terminal(self):
        return self.winner is not None

    def returns(self):
        if self.winner is None:
            return [0.0, 0.0]
        u = self.points_won()
        return [u, -u] if self.winner == 0 else [-u, u]

    def __str__(self):
        n = self._n
        width = len(str(n))
        cells = ["." if v < 0 else MARKS[v] for v in self.board[1 : n + 1]]
        # Both numberings: move strings use the mover's own points.
        lines = [
            "x: " + " ".join(str(k).rjust(width) for k in range(1, n + 1)),
            "   " + " ".join(c.rjust(width) for c in cells),
            "o: " + " ".join(str(n + 1 - k).rjust(width) for k in range(1, n + 1)),
        ]
        for p, way in ((0, f"1 -> {n}"), (1, f"{n} -> 1")):
            lines.append(f"{MARKS[p]}: home {self.home[p]}  safety {self.safe[p]}  (moves {way})")
        if self.winner is not None:
            lines.append(f"{MARKS[self.winner]} wins {self.points_won():g}")
        elif self.turn is None:
            lines.append("opening roll-off")
        elif self.roll == 0:
            lines.append(f"{MARKS[self.turn]} to roll")
        else:
            lines.append(f"{MARKS[self.turn]} to move, roll {self.roll}")
        return "\n".join(lines)


class NannonObserver:
    """Observation tensor and string (PyObserver interface); layout in the module docstring."""

    def __init__(self, game: NannonGame, params):
        if params:
            raise ValueError(f"observation parameters not supported; passed {params}")
        self._n, self._c, self._d = game.points, game.checkers, game.die_sides
        self.tensor = np.zeros(game.observation_size, np.float32)
        n, c1 = self._n, self._c + 1
        t, o = self.tensor, 2 * n
        self.dict = {
            "my_points": t[:n],
            "opponent_points": t[n:o],
            "my_home": t[o : o + c1],
            "my_safety": t[o + c1 : o + 2 * c1],
            "opponent_home": t[o + 2 * c1 : o + 3 * c1],
            "opponent_safety": t[o + 3 * c1 : o + 4 * c1],
            "roll": t[o + 4 * c1 : o + 4 * c1 + self._d],
            "to_move": t[-1:],
        }

    def set_from(self, state: NannonState, player: int) -> None:
        t, dic, n = self.tensor, self.dict, self._n
        t.fill(0.0)
        me, opp = player, 1 - player
        for k in range(1, n + 1):  # k: the observer's own point
            v = state.board[state.square(me, k)]
            if v == me:
                t[k - 1] = 1.0
            elif v == opp:
                t[n + k - 1] = 1.0
        dic["my_home"][state.home[me]] = 1.0
        dic["my_safety"][state.safe[me]] = 1.0
        dic["opponent_home"][state.home[opp]] = 1.0
        dic["opponent_safety"][state.safe[opp]] = 1.0
        if state.roll:
            dic["roll"][state.roll - 1] = 1.0
            dic["to_move"][0] = float(state.turn == me)

    def string_from(self, state: NannonState, player: int) -> str:
        del player  # perfect information: everyone sees the whole board
        return str(state)


pyspiel.register_game(_GAME_TYPE, NannonGame)
