"""Scotland Yard as an OpenSpiel Python game (short name ``scotland_yard``).

Rules: ``docs/scotland_yard.md`` (authoritative), the game of the Student
of Games paper ("Scotland Yard" results; the small "glasses" map of its
supplementary Fig. S3 is the default preset).

Two players, zero-sum, reward +-1: player 0 is Mr X, player 1 controls all the
detectives (the paper's two-player formulation). There is no chance: everyone's
start is a parameter. Mr X's position is hidden from the detectives except after
his move in a reveal round; they see every ticket he uses.

**Our choices where the spec leaves them open** (so results on the glasses map
are not directly comparable with the paper's Fig. 3B): each round Mr X moves
first, then detective 1, 2, ...; his position is revealed after his move in
round 3 (``reveal_rounds="3"``). Both are parameters (``detectives_first=true``
plays each round's detectives before Mr X). Beyond the spec: a
double-move card is played as a public ``double`` action before Mr X's two
moves, which fill two rounds of his log (as in the board game); if he then has
no legal second move he is caught. Detectives' used tickets are not passed to
Mr X (the spec does not give him them).

Actions: ``ticket * num_stations + (station - 1)`` moves to ``station`` with
``ticket`` in (taxi, bus, underground, black); ``4 * num_stations`` is the double
move and ``4 * num_stations + 1`` a detective's pass (only legal when that
detective has no move).

Parameters: ``map`` ("glasses" or an edge list ``"1-2:taxi;2-3:bus;..."`` with
transports taxi/bus/underground/ferry), ``num_detectives``, ``mrx_start``,
``detective_starts`` ("1;11"), ``rounds``, ``detectives_first``, ``reveal_rounds`` ("3;8"; "none" or "" for
none; lists use ";" since "," separates OpenSpiel parameters), ticket counts
``mrx_taxi``, ``mrx_bus``, ``mrx_underground``,
``black_tickets``, ``double_moves``, ``detective_taxi``, ``detective_bus``,
``detective_underground``.
"""

from __future__ import annotations

import numpy as np
import pyspiel

TRANSPORTS = ("taxi", "bus", "underground", "ferry")
TICKETS = ("taxi", "bus", "underground", "black")  # a move's ticket; black rides any edge
BLACK = 3

# Supplementary Fig. S3 of the Student of Games paper, as given by the spec:
# two 4-cycles joined by the bridge 5-6-7, with pendant stations 1 and 11.
GLASSES_EDGES = "1-2;2-3;2-4;3-5;4-5;5-6;6-7;7-8;7-9;8-10;9-10;10-11"

_DEFAULT_PARAMS = {
    "map": "glasses",
    "num_detectives": 2,
    "mrx_start": 6,
    "detective_starts": "1;11",
    "rounds": 5,
    "reveal_rounds": "3",
    "detectives_first": False,
    "mrx_taxi": 5,
    "mrx_bus": 0,
    "mrx_underground": 0,
    "black_tickets": 0,
    "double_moves": 0,
    "detective_taxi": 5,
    "detective_bus": 0,
    "detective_underground": 0,
}

_GAME_TYPE = pyspiel.GameType(
    short_name="scotland_yard",
    long_name="Scotland Yard",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_DEFAULT_PARAMS,
)

MRX, DETECTIVES = 0, 1


def _parse_ints(text: str, what: str) -> list[int]:
    text = text.strip()
    if text.lower() == "none":  # spec strings cannot carry an empty value
        return []
    try:
        return [int(x) for x in text.split(";")] if text else []
    except ValueError:
        raise ValueError(f"scotland_yard: {what} must be ;-separated integers, got {text!r}") from None


def parse_map(text: str) -> tuple[int, list[tuple[int, int, int]]]:
    """Parse a map spec into (number of stations, [(a, b, transport index)]).

    "glasses" is the preset; otherwise "a-b:transport;..." where a missing
    ":transport" means taxi. Items are separated by ";" because "," separates
    OpenSpiel game parameters. Stations are numbered 1..max.
    """
    if text.strip() == "glasses":
        text = GLASSES_EDGES
    edges = []
    for item in text.split(";"):
        ends, _, kind = item.strip().partition(":")
        kind = kind.strip() or "taxi"
        a, dash, b = ends.partition("-")
        if not dash or kind not in TRANSPORTS:
            raise ValueError(f"scotland_yard: bad map edge {item.strip()!r}; expected a-b:{'|'.join(TRANSPORTS)}")
        a, b = int(a), int(b)
        if a < 1 or b < 1 or a == b:
            raise ValueError(f"scotland_yard: bad map edge {item.strip()!r}; stations are 1.. and distinct")
        edges.append((a, b, TRANSPORTS.index(kind)))
    return max(max(a, b) for a, b, _ in edges), edges


class _Rules:
    """The validated, immutable parameters of one game (shared, never copied)."""

    def __init__(self, params: dict):
        p = {**_DEFAULT_PARAMS, **params}
        self.num_stations, self.edges = parse_map(p["map"])
        n = self.num_stations
        # neighbours[station] = [(other station, transport index)], station 1-based
        self.neighbours: list[list[tuple[int, int]]] = [[] for _ in range(n + 1)]
        for a, b, t in self.edges:
            self.neighbours[a].append((b, t))
            self.neighbours[b].append((a, t))
        self.num_detectives = int(p["num_detectives"])
        self.mrx_start = int(p["mrx_start"])
        self.detective_starts = _parse_ints(p["detective_starts"], "detective_starts")
        self.rounds = int(p["rounds"])
        self.reveal_rounds = frozenset(_parse_ints(p["reveal_rounds"], "reveal_rounds"))
        self.detectives_first = bool(p["detectives_first"])
        # Mr X: taxi, bus, underground, black, double; detectives: taxi, bus, underground.
        self.mrx_tickets = (p["mrx_taxi"], p["mrx_bus"], p["mrx_underground"], p["black_tickets"], p["double_moves"])
        self.detective_tickets = (p["detective_taxi"], p["detective_bus"], p["detective_underground"])
        self._validate()
        self.double_action = 4 * n
        self.pass_action = 4 * n + 1
        self.num_actions = 4 * n + 2

    def _validate(self) -> None:
        n, d = self.num_stations, self.num_detectives
        if d < 1:
            raise ValueError("scotland_yard: num_detectives must be at least 1")
        if len(self.detective_starts) != d:
            raise ValueError(f"scotland_yard: detective_starts has {len(self.detective_starts)} stations "
                             f"for {d} detectives")
        starts = [self.mrx_start, *self.detective_starts]
        if any(not 1 <= s <= n for s in starts):
            raise ValueError(f"scotland_yard: start stations must be in 1..{n}, got {starts}")
        if len(set(starts)) != len(starts):
            raise ValueError(f"scotland_yard: start stations must be distinct, got {starts}")
        if self.rounds < 1 or any(not 1 <= r <= self.rounds for r in self.reveal_rounds):
            raise ValueError(f"scotland_yard: need rounds >= 1 and reveal rounds in 1..{self.rounds}")
        if min(self.mrx_tickets + self.detective_tickets) < 0:
            raise ValueError("scotland_yard: ticket counts must be >= 0")

    def __deepcopy__(self, memo):
        return self  # immutable; states share it

    def game_info(self) -> pyspiel.GameInfo:
        # Each Mr X log entry costs at most one action (+1 per double card),
        # followed by at most one action per detective.
        length = self.rounds * (1 + self.num_detectives) + self.mrx_tickets[4]
        return pyspiel.GameInfo(
            num_distinct_actions=self.num_actions,
            max_chance_outcomes=0,
            num_players=2,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=length,
        )


class ScotlandYardGame(pyspiel.Game):
    """Scotland Yard with a parameterised map, detectives, tickets and rounds."""

    def __init__(self, params=None):
        rules = _Rules(params or {})
        super().__init__(_GAME_TYPE, rules.game_info(), params or {})
        self.rules = rules

    def new_initial_state(self):
        return ScotlandYardState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        iig_obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        return ScotlandYardObserver(self.rules, iig_obs_type, params)


class ScotlandYardState(pyspiel.State):
    """A position: everyone's station and tickets, Mr X's travel log, whose turn."""

    def __init__(self, game: ScotlandYardGame):
        super().__init__(game)
        r = game.rules
        self.rules = r
        self.mrx = r.mrx_start
        self.detectives = list(r.detective_starts)
        self.mrx_tickets = list(r.mrx_tickets)
        self.detective_tickets = [list(r.detective_tickets) for _ in range(r.num_detectives)]
        # Mr X's travel log, one entry per round: (ticket, true station, revealed?, first of a double?)
        self.log: list[tuple[int, int, bool, bool]] = []
        # Detectives' moves, one list per detectives' turn: (ticket or 3 for pass, station)
        self.det_moves: list[list[tuple[int, int] | None]] = []
        self.public_events: list[str] = []  # what everyone saw, in order
        self.turn = 1 if r.detectives_first else 0  # 0 = Mr X, k = detective k
        self.double_left = 0  # Mr X moves still owed by a double-move card
        self.winner: int | None = None
        self._check_mrx_can_move()

    # -- rules ---------------------------------------------------------------

    def _moves(self, station: int, tickets, allow_black: bool, blocked) -> list[int]:
        """Legal move actions from `station`: an edge, a ticket for it, destination free."""
        n = self.rules.num_stations
        actions = set()
        for dest, transport in self.rules.neighbours[station]:
            if dest in blocked:
                continue
            if transport < 3 and tickets[transport] > 0:
                actions.add(transport * n + dest - 1)
            if allow_black and tickets[BLACK] > 0:
                actions.add(BLACK * n + dest - 1)
        return sorted(actions)

    def _mrx_moves(self) -> list[int]:
        moves = self._moves(self.mrx, self.mrx_tickets, True, set(self.detectives))
        # A double-move card needs a move to follow it and two log entries left.
        if (moves and self.double_left == 0 and self.mrx_tickets[4] > 0
                and self.rules.rounds - len(self.log) >= 2):
            moves.append(self.rules.double_action)
        return moves

    def _detective_moves(self, k: int) -> list[int]:
        others = set(self.detectives[:k - 1] + self.detectives[k:])
        moves = self._moves(self.detectives[k - 1], self.detective_tickets[k - 1], False, others)
        return moves or [self.rules.pass_action]

    def _check_mrx_can_move(self) -> None:
        """Spec: the detectives win when Mr X has no legal move on his turn."""
        if self.turn == 0 and self.winner is None and not self._mrx_moves():
            self.winner = DETECTIVES

    # -- OpenSpiel API ---------------------------------------------------------

    def current_player(self):
        if self.winner is not None:
            return pyspiel.PlayerId.TERMINAL
        return MRX if self.turn == 0 else DETECTIVES

    def _legal_actions(self, player):
        if self.winner is not None:
            return []
        return self._mrx_moves() if self.turn == 0 else self._detective_moves(self.turn)

    def _apply_action(self, action):
        if self.turn == 0:
            self._apply_mrx_action(action)
        else:
            self._apply_detective_action(action)
        if self.winner is not None:
            self.public_events.append("end:" + ("mrx" if self.winner == MRX else "detectives"))

    def _apply_mrx_action(self, action: int) -> None:
        r = self.rules
        if action == r.double_action:
            self.mrx_tickets[4] -= 1
            self.double_left = 2
            self.public_events.append("X:double")
            return
        ticket, dest = divmod(action, r.num_stations)
        self.mrx_tickets[ticket] -= 1
        self.mrx = dest + 1
        revealed = len(self.log) + 1 in r.reveal_rounds
        self.log.append((ticket, self.mrx, revealed, self.double_left == 2))
        self.public_events.append(("X2:" if self.double_left == 2 else "X:") + TICKETS[ticket]
                                  + (f"@{self.mrx}" if revealed else ""))
        if self.double_left:
            self.double_left -= 1
        if self.double_left:
            self._check_mrx_can_move()  # the second move of a double
        elif r.detectives_first and len(self.log) >= r.rounds:
            self.winner = MRX  # not caught by the end of the last round
        else:
            self.turn = 1

    def _apply_detective_action(self, action: int) -> None:
        r = self.rules
        k = self.turn
        if k == 1:
            self.det_moves.append([None] * r.num_detectives)
        if action == r.pass_action:
            self.det_moves[-1][k - 1] = (3, self.detectives[k - 1])
            self.public_events.append(f"D{k}:pass")
        else:
            ticket, dest = divmod(action, r.num_stations)
            self.detective_tickets[k - 1][ticket] -= 1
            self.detectives[k - 1] = dest + 1
            self.det_moves[-1][k - 1] = (ticket, dest + 1)
            self.public_events.append(f"D{k}:{TICKETS[ticket]}->{dest + 1}")
            if dest + 1 == self.mrx:
                self.winner = DETECTIVES
                return
        if k < r.num_detectives:
            self.turn = k + 1
        elif not r.detectives_first and len(self.log) >= r.rounds:
            self.winner = MRX  # not caught by the end of the last round
        else:
            self.turn = 0
            self._check_mrx_can_move()

    def _action_to_string(self, player, action):
        r = self.rules
        if action == r.double_action:
            return "double"
        if action == r.pass_action:
            return "pass"
        ticket, dest = divmod(action, r.num_stations)
        return f"{TICKETS[ticket]}->{dest + 1}"

    def is_terminal(self):
        return self.winner is not None

    def returns(self):
        if self.winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.winner == MRX else [-1.0, 1.0]

    # -- helpers for observers and display --------------------------------------

    def round(self) -> int:
        """Rounds of Mr X's log filled so far (the round in play during detectives' turns)."""
        return len(self.log)

    def last_revealed(self) -> int | None:
        """Mr X's most recently revealed station, or None before the first reveal."""
        for _, station, revealed, _ in reversed(self.log):
            if revealed:
                return station
        return None

    def __str__(self):
        return board_string(self, show_mrx=True)


def board_string(state: ScotlandYardState, show_mrx: bool) -> str:
    """A readable board: the map (drawn for the glasses preset), tickets and Mr X's log."""
    r = state.rules
    marks = {d: f"D{k + 1}" for k, d in enumerate(state.detectives)}
    if show_mrx:
        marks[state.mrx] = "X" if state.mrx not in marks else "X" + marks[state.mrx]
    if state.winner is not None:
        status = "Mr X wins" if state.winner == MRX else "detectives win"
    else:
        status = "to move: " + ("Mr X" + (" (double move)" if state.double_left else "") if state.turn == 0
                                else f"detective {state.turn}")
    lines = [f"Round {state.round()}/{r.rounds}, {status}"]
    if r.edges == parse_map("glasses")[1]:
        lines += _glasses_picture({s: f"{s}:{m}" if (m := marks.get(s)) else str(s) for s in range(1, 12)})
    else:
        lines.append("stations: " + " ".join(f"{s}[{m}]" for s, m in sorted(marks.items())))
    t = state.mrx_tickets
    lines.append(f"Mr X{' at ' + str(state.mrx) if show_mrx else ''}: taxi {t[0]} bus {t[1]} "
                 f"underground {t[2]} black {t[3]} double {t[4]}")
    for k, (d, dt) in enumerate(zip(state.detectives, state.detective_tickets)):
        lines.append(f"D{k + 1} at {d}: taxi {dt[0]} bus {dt[1]} underground {dt[2]}")
    log = [f"{i + 1}:{TICKETS[tk]}" + (f"@{st}" if rev or show_mrx else "")
           for i, (tk, st, rev, _) in enumerate(state.log)]
    lines.append("log: " + (" ".join(log) if log else "-"))
    return "\n".join(lines)


# Column of each glasses station in the picture, and its row (0 top, 2 middle, 4 bottom).
_GLASSES_LAYOUT = {1: (0, 2), 2: (1, 2), 3: (2, 0), 4: (2, 4), 5: (3, 2), 6: (4, 2), 7: (5, 2),
                   8: (6, 0), 9: (6, 4), 10: (7, 2), 11: (8, 2)}
_CELL, _GAP = 6, 3


def _glasses_picture(labels: dict[int, str]) -> list[str]:
    """The glasses map drawn in five text rows, one fixed-width cell per station."""
    rows = [[" "] * (9 * (_CELL + _GAP)) for _ in range(5)]
    for station, (col, row) in _GLASSES_LAYOUT.items():
        x = col * (_CELL + _GAP)
        rows[row][x:x + _CELL] = f"{labels[station]:^{_CELL}}"
    for a, b, _ in parse_map("glasses")[1]:
        (ca, ra), (cb, rb) = _GLASSES_LAYOUT[a], _GLASSES_LAYOUT[b]
        gap = min(ca, cb) * (_CELL + _GAP) + _CELL + 1
        if ra == rb:
            rows[ra][gap] = "-"
        else:  # a diagonal between the middle row and the top or bottom row
            left_row = ra if ca < cb else rb
            right_row = rb if ca < cb else ra
            up = right_row < left_row  # rising to the right
            rows[(ra + rb) // 2][gap] = "/" if up else "\\"
    return ["".join(r).rstrip() for r in rows]


class ScotlandYardObserver:
    """Observation and information-state tensors and strings (PyObserver interface).

    Who sees Mr X: player 0 with private_info=SINGLE_PLAYER, and everyone with
    ALL_PLAYERS. The detectives have no private information, so their view is the
    public view (private_info=NONE). perfect_recall adds the whole history.
    """

    def __init__(self, rules: _Rules, iig_obs_type, params):
        if params:
            raise ValueError(f"scotland_yard: observation parameters not supported; passed {params}")
        self.rules = rules
        self.private = iig_obs_type.private_info
        self.public = iig_obs_type.public_info
        self.recall = iig_obs_type.perfect_recall
        n, d, rounds = rules.num_stations, rules.num_detectives, rules.rounds
        pieces = []
        if self.public:
            pieces += [("to_move", 2 + d, (2 + d,)),  # Mr X, detective 1..d, inside a double move
                       ("round", rounds + 1, (rounds + 1,)),
                       ("detective_positions", d * n, (d, n)),
                       ("detective_tickets", d * 3, (d, 3)),
                       ("mrx_tickets", 5, (5,)),
                       ("mrx_ticket_log", rounds * 5, (rounds, 5)),  # ticket one-hot, then "first of a double"
                       ("last_revealed", n, (n,))]
            if self.recall:
                pieces += [("revealed_log", rounds * n, (rounds, n)),
                           ("detective_move_log", rounds * d * (4 + n), (rounds, d, 4 + n))]
        if self.private != pyspiel.PrivateInfoType.NONE:
            pieces.append(("mrx_position", n, (n,)))
            if self.recall:
                pieces.append(("mrx_path", rounds * n, (rounds, n)))
        self.tensor = np.zeros(sum(size for _, size, _ in pieces), np.float32)
        self.dict = {}
        start = 0
        for name, size, shape in pieces:
            self.dict[name] = self.tensor[start:start + size].reshape(shape)
            start += size

    def _sees_mrx(self, player: int) -> bool:
        return (self.private == pyspiel.PrivateInfoType.ALL_PLAYERS
                or (self.private == pyspiel.PrivateInfoType.SINGLE_PLAYER and player == MRX))

    def set_from(self, state: ScotlandYardState, player: int):
        self.tensor.fill(0)
        t = self.dict
        if self.public:
            if state.winner is None:
                t["to_move"][state.turn] = 1
                t["to_move"][-1] = state.double_left > 0
            t["round"][state.round()] = 1
            for k, (dpos, dt) in enumerate(zip(state.detectives, state.detective_tickets)):
                t["detective_positions"][k, dpos - 1] = 1
                t["detective_tickets"][k] = dt
            t["mrx_tickets"][:] = state.mrx_tickets
            for i, (ticket, station, revealed, first) in enumerate(state.log):
                t["mrx_ticket_log"][i, ticket] = 1
                t["mrx_ticket_log"][i, 4] = first
                if revealed and self.recall:
                    t["revealed_log"][i, station - 1] = 1
            last = state.last_revealed()
            if last is not None:
                t["last_revealed"][last - 1] = 1
            if self.recall:
                for i, moves in enumerate(state.det_moves):
                    for k, move in enumerate(moves):
                        if move is not None:
                            t["detective_move_log"][i, k, move[0]] = 1
                            t["detective_move_log"][i, k, 4 + move[1] - 1] = 1
        if "mrx_position" in t and self._sees_mrx(player):
            t["mrx_position"][state.mrx - 1] = 1
            if self.recall:
                for i, (_, station, _, _) in enumerate(state.log):
                    t["mrx_path"][i, station - 1] = 1

    def string_from(self, state: ScotlandYardState, player: int) -> str:
        sees = self._sees_mrx(player) and self.private != pyspiel.PrivateInfoType.NONE
        parts = []
        if self.public:
            if self.recall:
                parts.append(public_history_string(state))
            else:
                last = state.last_revealed()
                log = "".join(TICKETS[tk][0] + ("2" if first else "") for tk, _, _, first in state.log)
                parts.append(
                    f"r{state.round()} t{state.turn if state.winner is None else '-'}"
                    f"{'d' if state.double_left else ''} D{state.detectives} "
                    f"dt{state.detective_tickets} xt{state.mrx_tickets} log:{log} seen:{last or '-'}")
        if sees:
            parts.append(f"X@{state.mrx}" if not self.recall else
                         "Xpath:" + ",".join(str(s) for _, s, _, _ in state.log))
        return " ".join(parts)


def public_history_string(state: ScotlandYardState) -> str:
    """Everything public so far, in order: Mr X's tickets (and reveals), detectives'
    moves, and the end of the game (a capture, or Mr X stuck, is seen by all)."""
    return " ".join(state.public_events) or "start"


pyspiel.register_game(_GAME_TYPE, ScotlandYardGame)
