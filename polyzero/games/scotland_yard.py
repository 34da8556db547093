"""Scotland Yard as an OpenSpiel Python game (short name ``scotland_yard``): the rules.

Rules: ``docs/scotland_yard.md`` (authoritative), the game of the Student of Games
paper ("Scotland Yard" results; the small "glasses" map of its supplementary Fig.
S3), and on ``map=london`` the box's rules (the page names the edition). Maps and each map's rules:
`polyzero.games.scotland_yard_maps`; observations: `scotland_yard_observer`;
drawing: `scotland_yard_render`.

Two players, zero-sum, reward +-1: player 0 is Mr X, player 1 controls all the
detectives (the paper's two-player formulation). Mr X's position is hidden from
the detectives except after his move in a reveal round; they see every ticket he
uses. Starts are parameters, or dealt from start cards by chance (London): the
detectives' cards face up, one after another, then Mr X's in secret.

**Choices where the paper leaves them open**: each round Mr X moves first, then
detective 1, 2, ... (``detectives_first=true`` plays the detectives first). A
double-move card is a public ``double`` action before Mr X's two moves, which fill
two rounds of his log (as in the board game); if he then has no legal second move
he is caught. ``box_rules=1`` (London's default) adds the box's rules the glasses
game omits: Mr X receives the tickets the detectives use, and wins as soon as no
detective holds a ticket. ``mrx_recall=station`` (London's default) gives Mr X
the information state (public history, his station) instead of his whole path:
the game's future depends on his station only, so this loses him nothing and
keeps a public state's worlds to one per station (`public_states.public_state_at`).

Actions: ``ticket * num_stations + (station - 1)`` moves to ``station`` with
``ticket`` in (taxi, bus, underground, black); ``4 * num_stations`` is the double
move and ``4 * num_stations + 1`` a detective's pass (only legal when that
detective has no move). Chance deals a start card as the action ``station - 1``.

Parameters (lists use ";" since "," separates OpenSpiel parameters; -1 or "" means
the map's value, `scotland_yard_maps.MAP_RULES`): ``map``, ``num_detectives``,
``mrx_start`` (0: dealt), ``detective_starts`` ("1;11", or "deal"),
``start_cards``, ``rounds``, ``reveal_rounds`` ("3;8"; "none" for none),
``detectives_first``, ticket counts ``mrx_taxi``, ``mrx_bus``, ``mrx_underground``,
``black_tickets``, ``double_moves``, ``detective_taxi``, ``detective_bus``,
``detective_underground``, ``box_rules`` (0/1), ``mrx_recall`` (path/station).
The game's string (``str(game)``) spells every resolved value out.
"""

from __future__ import annotations

import pyspiel

from .scotland_yard_maps import BLACK, DETECTIVES, MAP_RULES, MRX, TICKETS, map_name, parse_map
from .scotland_yard_observer import ScotlandYardObserver, public_history_string  # noqa: F401 (re-exported)
from .scotland_yard_render import board_string

_DEFAULT_PARAMS = {
    "map": "glasses",
    "num_detectives": -1,
    "mrx_start": -1,
    "detective_starts": "",
    "start_cards": "",
    "rounds": -1,
    "reveal_rounds": "",
    "detectives_first": False,
    "mrx_taxi": -1,
    "mrx_bus": -1,
    "mrx_underground": -1,
    "black_tickets": -1,
    "double_moves": -1,
    "detective_taxi": -1,
    "detective_bus": -1,
    "detective_underground": -1,
    "box_rules": -1,
    "mrx_recall": "",
}

_GAME_TYPE = pyspiel.GameType(
    short_name="scotland_yard",
    long_name="Scotland Yard",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,  # dealt starts (none with fixed starts)
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


def resolve_params(params: dict) -> dict:
    """Every parameter's value: the user's, else the map's (`MAP_RULES`) where the
    parameter's default says "the map's" (-1 or "")."""
    p = {**_DEFAULT_PARAMS, **params}
    rules = MAP_RULES[map_name(p["map"])]
    return {k: (rules[k] if k in rules and v in (-1, "") else v) for k, v in p.items()}


class _Shared(tuple):
    """An immutable piece of history that states share: deep copies (pyspiel's clone)
    keep it as it is, so cloning a state costs its few mutable fields only."""

    def __deepcopy__(self, memo):
        return self


def _appended(items: tuple, item) -> _Shared:
    return _Shared((*items, item))


def _parse_ints(text: str, what: str) -> list[int]:
    text = text.strip()
    if text.lower() == "none":  # spec strings cannot carry an empty value
        return []
    try:
        return [int(x) for x in text.split(";")] if text else []
    except ValueError:
        raise ValueError(f"scotland_yard: {what} must be ;-separated integers, got {text!r}") from None


class _Rules:
    """The validated, immutable parameters of one game (shared, never copied)."""

    def __init__(self, params: dict):
        p = self.params = resolve_params(params)
        self.num_stations, self.edges = parse_map(p["map"])
        n = self.num_stations
        # neighbours[station] = [(other station, transport index)], station 1-based
        self.neighbours: list[list[tuple[int, int]]] = [[] for _ in range(n + 1)]
        for a, b, t in self.edges:
            self.neighbours[a].append((b, t))
            self.neighbours[b].append((a, t))
        self.num_detectives = int(p["num_detectives"])
        self.mrx_start = int(p["mrx_start"])
        self.deal_detectives = str(p["detective_starts"]).strip() == "deal"
        self.detective_starts = (
            [] if self.deal_detectives else _parse_ints(str(p["detective_starts"]), "detective_starts")
        )
        self.start_cards = _parse_ints(str(p["start_cards"]), "start_cards")
        self.rounds = int(p["rounds"])
        self.reveal_rounds = frozenset(_parse_ints(str(p["reveal_rounds"]), "reveal_rounds"))
        self.detectives_first = bool(p["detectives_first"])
        # Mr X: taxi, bus, underground, black, double; detectives: taxi, bus, underground.
        self.mrx_tickets = tuple(
            int(p[k]) for k in ("mrx_taxi", "mrx_bus", "mrx_underground", "black_tickets", "double_moves")
        )
        self.detective_tickets = tuple(int(p[k]) for k in ("detective_taxi", "detective_bus", "detective_underground"))
        self.box_rules = bool(int(p["box_rules"]))
        self.station_recall = p["mrx_recall"] == "station"
        self._validate(p)
        self.double_action = 4 * n
        self.pass_action = 4 * n + 1
        self.num_actions = 4 * n + 2

    @property
    def deals(self) -> int:
        """Chance deals before the first move: one per dealt detective, then Mr X's."""
        return (self.num_detectives if self.deal_detectives else 0) + (self.mrx_start == 0)

    def _validate(self, p: dict) -> None:
        n, d = self.num_stations, self.num_detectives
        if d < 1:
            raise ValueError("scotland_yard: num_detectives must be at least 1")
        if p["mrx_recall"] not in ("path", "station"):
            raise ValueError(f"scotland_yard: mrx_recall must be path or station, got {p['mrx_recall']!r}")
        if int(p["box_rules"]) not in (0, 1):
            raise ValueError(f"scotland_yard: box_rules must be 0 or 1, got {p['box_rules']}")
        if not self.deal_detectives and len(self.detective_starts) != d:
            raise ValueError(
                f"scotland_yard: detective_starts has {len(self.detective_starts)} stations for {d} detectives"
            )
        starts = ([self.mrx_start] if self.mrx_start else []) + self.detective_starts
        if any(not 1 <= s <= n for s in starts + self.start_cards):
            raise ValueError(
                f"scotland_yard: stations must be in 1..{n}, got starts {starts} and start cards {self.start_cards}"
            )
        if len(set(starts)) != len(starts) or len(set(self.start_cards)) != len(self.start_cards):
            raise ValueError(f"scotland_yard: start stations must be distinct, got {starts}")
        if self.deals and len(set(self.start_cards) - set(starts)) < self.deals:
            raise ValueError(
                f"scotland_yard: {self.deals} starts to deal need as many start cards "
                f"(besides the fixed starts), got {self.start_cards}"
            )
        if self.mrx_start < 0:
            raise ValueError("scotland_yard: mrx_start must be a station (or 0: dealt)")
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
            max_chance_outcomes=self.num_stations if self.deals else 0,
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
        super().__init__(_GAME_TYPE, rules.game_info(), rules.params)  # str(game) spells the map's values out
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
        self.mrx = self.mrx_first = r.mrx_start  # 0 until dealt
        self.detectives = list(r.detective_starts)  # filled by the deal when dealt
        self.start_detectives = tuple(self.detectives)
        self.dealing = r.deals > 0  # chance deals the start cards first
        self.mrx_tickets = list(r.mrx_tickets)
        self.detective_tickets = [list(r.detective_tickets) for _ in range(r.num_detectives)]
        # Mr X's travel log, one entry per round: (ticket, true station, revealed?, first of a double?)
        self.log: tuple[tuple[int, int, bool, bool], ...] = _Shared()
        # Detectives' moves, one row per detectives' turn: (ticket or 3 for pass, station)
        self.det_moves: tuple[tuple[tuple[int, int] | None, ...], ...] = _Shared()
        self.public_events: tuple[str, ...] = _Shared()  # what everyone saw, in order
        self.turn = 1 if r.detectives_first else 0  # 0 = Mr X, k = detective k
        self.double_left = 0  # Mr X moves still owed by a double-move card
        self.winner: int | None = None
        if not self.dealing:
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
        if moves and self.double_left == 0 and self.mrx_tickets[4] > 0 and self.rules.rounds - len(self.log) >= 2:
            moves.append(self.rules.double_action)
        return moves

    def _detective_moves(self, k: int) -> list[int]:
        others = set(self.detectives[: k - 1] + self.detectives[k:])
        moves = self._moves(self.detectives[k - 1], self.detective_tickets[k - 1], False, others)
        return moves or [self.rules.pass_action]

    def _check_mrx_can_move(self) -> None:
        """Spec: the detectives win when Mr X has no legal move on his turn."""
        if self.turn == 0 and self.winner is None and not self._mrx_moves():
            self.winner = DETECTIVES

    def _cards_left(self) -> list[int]:
        taken = set(self.detectives) | {self.mrx}
        return [c for c in self.rules.start_cards if c not in taken]

    # -- OpenSpiel API ---------------------------------------------------------

    def current_player(self):
        if self.winner is not None:
            return pyspiel.PlayerId.TERMINAL
        if self.dealing:
            return pyspiel.PlayerId.CHANCE
        return MRX if self.turn == 0 else DETECTIVES

    def chance_outcomes(self):
        cards = self._cards_left()
        return [(c - 1, 1.0 / len(cards)) for c in cards]

    def _legal_actions(self, player):
        if self.winner is not None:
            return []
        return self._mrx_moves() if self.turn == 0 else self._detective_moves(self.turn)

    def _apply_action(self, action):
        if self.dealing:
            self._deal(action + 1)
        elif self.turn == 0:
            self._apply_mrx_action(action)
        else:
            self._apply_detective_action(action)
        if self.winner is not None:
            self._event("end:" + ("mrx" if self.winner == MRX else "detectives"))

    def _deal(self, station: int) -> None:
        """The next start card: the detectives' face up in turn, then Mr X's in secret."""
        if len(self.detectives) < self.rules.num_detectives:
            self.detectives.append(station)
            self._event(f"D{len(self.detectives)}@{station}")
        else:
            self.mrx = self.mrx_first = station
            self._event("X:dealt")
        if len(self.detectives) == self.rules.num_detectives and self.mrx:
            self.dealing = False
            self.start_detectives = tuple(self.detectives)
            self._check_mrx_can_move()

    def _apply_mrx_action(self, action: int) -> None:
        r = self.rules
        if action == r.double_action:
            self.mrx_tickets[4] -= 1
            self.double_left = 2
            self._event("X:double")
            return
        ticket, dest = divmod(action, r.num_stations)
        self.mrx_tickets[ticket] -= 1
        self.mrx = dest + 1
        revealed = len(self.log) + 1 in r.reveal_rounds
        self.log = _appended(self.log, (ticket, self.mrx, revealed, self.double_left == 2))
        self._event(("X2:" if self.double_left == 2 else "X:") + TICKETS[ticket] + (f"@{self.mrx}" if revealed else ""))
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
            self.det_moves = _appended(self.det_moves, _Shared((None,) * r.num_detectives))
        if action == r.pass_action:
            self._detective_moved(k, 3, self.detectives[k - 1])
            self._event(f"D{k}:pass")
        else:
            ticket, dest = divmod(action, r.num_stations)
            self.detective_tickets[k - 1][ticket] -= 1
            if r.box_rules:
                self.mrx_tickets[ticket] += 1  # the used ticket goes to Mr X
            self.detectives[k - 1] = dest + 1
            self._detective_moved(k, ticket, dest + 1)
            self._event(f"D{k}:{TICKETS[ticket]}->{dest + 1}")
            if dest + 1 == self.mrx:
                self.winner = DETECTIVES
                return
        if k < r.num_detectives:
            self.turn = k + 1
        elif not r.detectives_first and len(self.log) >= r.rounds:
            self.winner = MRX  # not caught by the end of the last round
        elif r.box_rules and not any(map(sum, self.detective_tickets)):
            self.winner = MRX  # the box: the detectives can no longer move
        else:
            self.turn = 0
            self._check_mrx_can_move()

    def _event(self, text: str) -> None:
        self.public_events = _appended(self.public_events, text)

    def _detective_moved(self, k: int, ticket: int, station: int) -> None:
        row = list(self.det_moves[-1])
        row[k - 1] = (ticket, station)
        self.det_moves = _Shared((*self.det_moves[:-1], _Shared(row)))

    def _action_to_string(self, player, action):
        r = self.rules
        if player == pyspiel.PlayerId.CHANCE:
            return f"start {action + 1}"
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


pyspiel.register_game(_GAME_TYPE, ScotlandYardGame)
