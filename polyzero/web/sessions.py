"""Games in progress on the web page: seats held by people or players, the moves so
far, and what each viewer may see of them.

A request never names a file: learned agents are `run:NAME[@SIMS]`, NAME one of the
run directories given to `polyzero serve`; reference players are parsed by their own
spec grammar, with every count capped so that one request cannot tie the machine up.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..eval.boards import board_of, check_playable, describe, perfect_information, seat_text, side_name
from ..games.chance import sample_chance

__all__ = ["RequestError", "Session", "SessionStore", "RunIndex", "MAX_COUNT"]

MAX_COUNT = 20_000  # simulations or iterations one player may ask for
MAX_SESSIONS = 32
REFERENCE_KINDS = ("random", "optimal", "mcts", "mcts-solver", "cfr", "ismcts", "sog")


class RequestError(Exception):
    """A bad request: its message is the one-line JSON error, `status` the HTTP code."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class RunIndex:
    """The run directories `polyzero serve` was given, by name; nothing else is read."""

    def __init__(self, run_dirs=()):
        self.runs: dict[str, Path] = {}
        for d in run_dirs:
            d = Path(d).resolve()
            name = (d.name or "run").replace("@", "_")  # run:NAME@SIMS: a name holds no @
            while name in self.runs:
                name += "_"
            self.runs[name] = d

    def path(self, name: str) -> Path:
        if name not in self.runs:
            raise RequestError(f"unknown run '{name}'", 404)
        return self.runs[name]

    def describe(self) -> list[dict]:
        out = []
        for name, path in self.runs.items():
            info = {"name": name, "game": None, "algo": None, "ladder": (path / "ladder.json").is_file()}
            try:
                from ..config import read_toml

                cfg = read_toml(path / "config.toml")
                info.update(game=cfg.get("game"), algo=cfg.get("algo"))
            except (UsageError, OSError):
                pass
            out.append(info)
        return out


def _counts_ok(spec: str) -> None:
    """The spec's counts (after `@` of a run, after `:` of a reference player; not the digits
    of a run's name, such as the date of a default one) are at most MAX_COUNT."""
    counts = spec[len("run:") :].partition("@")[2] if spec.startswith("run:") else spec.partition(":")[2]
    for number in re.findall(r"\d+", counts):
        if int(number) > MAX_COUNT:
            raise RequestError(f"player '{spec}': counts above {MAX_COUNT} are refused by this server")


def make_seat_player(spec, game, runs: RunIndex, seed: int):
    """None for "human", else the player `spec` names (RequestError otherwise)."""
    if not isinstance(spec, str) or not spec or len(spec) > 200:
        raise RequestError("a player is a non-empty string: human, random, mcts:SIMS, run:NAME[@SIMS], ...")
    if spec == "human":
        return None
    _counts_ok(spec)
    try:
        if spec.startswith("run:"):
            name, _, sims = spec[len("run:") :].partition("@")
            if sims and not (sims.isdigit() and int(sims) > 0):
                raise RequestError(f"player '{spec}': the part after @ must be a positive number of simulations")
            from ..eval import make_player

            path = str(runs.path(name))
            try:
                player = make_player(path + (f"@{sims}" if sims else ""), game, seed=seed)
            except UsageError as exc:  # never a server path in what the page shows
                raise RequestError(str(exc).replace(path, f"run:{name}")) from None
            player.name = spec
            return player
        if spec.partition(":")[0] not in REFERENCE_KINDS or "net=" in spec:
            raise RequestError(
                f"unknown player '{spec}': expected human, random, mcts:SIMS, mcts-solver:SIMS, "
                "optimal, cfr:ITERS, ismcts:SIMS, sog:S,C or run:NAME[@SIMS] for a run given to serve"
            )
        from ..eval import reference_player
        from ..games.capabilities import check_player_view

        player = reference_player(spec, game, seed)
        if player is None:
            raise RequestError(f"unknown player '{spec}'")
        check_player_view(game, player)  # MCTS reads the true state: not on a hidden-information game
        return player
    except UsageError as exc:
        raise RequestError(str(exc)) from None


class Session:
    """One game on the page. Every change bumps `version`; `listeners` (asyncio queues
    of the open WebSockets) hear of it."""

    def __init__(self, sid: str, game, game_spec: str, specs: list[str], players: list, seed: int, delay: float = 0.5):
        self.id, self.game, self.game_spec = sid, game, game_spec
        self.delay = delay  # seconds between moves of a game with no human (to watch it)
        self.advancing, self.task = False, None
        self.specs, self.players = specs, players
        self.rng = np.random.default_rng(seed)
        self.history: list[int] = []
        self.log: list[dict] = []  # {seat, text, chance}
        self.analysis: dict | None = None
        self.thinking = False
        self.version = 0
        self.lock = threading.Lock()
        self.listeners: set = set()
        self.state = game.new_initial_state()
        self._resolve_chance()

    # ------------------------------------------------------------ who sees what
    @property
    def humans(self) -> list[int]:
        return [s for s, p in enumerate(self.players) if p is None]

    def viewer(self) -> int | None:
        """The seat whose eyes the page shows: the one human, the human to move when two
        share the screen, None (everything) when only players play."""
        humans = self.humans
        if not humans:
            return None
        if len(humans) == 1:
            return humans[0]
        player = self.state.current_player()
        return player if player in humans else humans[0]

    def view(self) -> dict:
        with self.lock:  # a player's move may be applied in a worker thread meanwhile
            return self._view()

    def _view(self) -> dict:
        state, viewer = self.state, self.viewer()
        open_view = viewer is None or perfect_information(self.game)
        to_move = None if state.is_terminal() or state.is_chance_node() else state.current_player()
        legal = []
        if to_move is not None and self.players[to_move] is None and to_move == viewer and not self.thinking:
            legal = [
                {"action": int(a), "text": state.action_to_string(to_move, a)} for a in state.legal_actions(to_move)
            ]
        board = board_of(state) if open_view else None
        graph = _map_of(state, show_hidden=open_view or viewer == 0)
        return {
            "id": self.id,
            "game": self.game_spec,
            "version": self.version,
            "viewer": viewer,
            "seats": [
                {"player": "human" if p is None else p.name, "side": side_name(self.game, s), "human": p is None}
                for s, p in enumerate(self.players)
            ],
            "header": describe(state) if open_view else f"{self.game_spec}: seat {viewer}'s view",
            "text": seat_text(state, None if open_view else viewer),
            "board": board.to_json() if board is not None else None,
            "map": graph,
            "to_move": to_move,
            "terminal": state.is_terminal(),
            "returns": [float(r) for r in state.returns()] if state.is_terminal() else None,
            "legal": legal,
            "thinking": self.thinking,
            "log": [e for e in self.log if open_view or e["seat"] == viewer],
            "analysis": self.analysis if open_view else None,
            "can_undo": bool(self._last_human_move() is not None),
        }

    # ------------------------------------------------------------ moves
    def _resolve_chance(self) -> None:
        while self.state.is_chance_node():
            self._apply(sample_chance(self.state, self.rng, apply=False), seat=None, chance=True)

    def _apply(self, action: int, seat, chance: bool = False) -> None:
        text = self.state.action_to_string(self.state.current_player(), action)
        self.log.append({"seat": seat, "text": text, "chance": chance, "ply": len(self.history)})
        self.history.append(action)
        self.state.apply_action(action)
        self.version += 1

    def human_move(self, action) -> None:
        with self.lock:
            state = self.state
            if state.is_terminal():
                raise RequestError("the game is over", 409)
            seat = state.current_player()
            if self.players[seat] is not None or self.thinking:
                raise RequestError(
                    f"it is not a human's turn (seat {seat}, {self.players[seat].name} is to move)"
                    if self.players[seat] is not None
                    else "a player is thinking",
                    409,
                )
            if not isinstance(action, int) or isinstance(action, bool) or action not in state.legal_actions():
                raise RequestError(f"illegal move {action!r}: not one of the legal actions of seat {seat}")
            self._apply(action, seat)
            self._resolve_chance()

    def agent_to_move(self) -> bool:
        state = self.state
        return not state.is_terminal() and self.players[state.current_player()] is not None

    def agent_step(self) -> None:
        """One player's move (slow: a search), in a worker thread."""
        with self.lock:
            if not self.agent_to_move():
                return
            self.thinking = True
            state, seat = self.state.clone(), self.state.current_player()
            player = self.players[seat]
            version = self.version
        try:
            if hasattr(player, "analyse"):
                info = player.analyse([state])[0]
                action = info["action"]
                self.analysis = _analysis_json(state, seat, info, player.name)
            else:
                action = int(player.act([state])[0])
        finally:
            with self.lock:
                self.thinking = False
        with self.lock:
            if self.version == version:  # nobody undid meanwhile
                self._apply(action, seat)
                self._resolve_chance()
            self.version += 1

    def analyse_position(self, spec, runs: RunIndex) -> dict:
        """A search's view of the current position for the person at the board: the
        session's first learned player, or the learned player `spec` names (perfect
        information only: a search reads the true state)."""
        if not perfect_information(self.game):
            raise RequestError(
                "no analysis in a game of imperfect information: a search reads the true "
                "state, which a seat may not see",
                409,
            )
        if spec is None:
            player = next((p for p in self.players if hasattr(p, "analyse")), None)
            if player is None:
                raise RequestError('no learned player in this game: name one, e.g. {"player": "run:NAME"}')
        else:
            player = make_seat_player(spec, self.game, runs, seed=0)
            if not hasattr(player, "analyse"):
                raise RequestError(f"player '{spec}' has no search to show (a learned agent, run:NAME, has)")
        with self.lock:
            if self.state.is_terminal() or self.state.is_chance_node():
                raise RequestError("nothing to analyse: no player is to move", 409)
            state = self.state.clone()
        info = player.analyse([state])[0]
        return _analysis_json(state, state.current_player(), info, player.name)

    def _last_human_move(self) -> int | None:
        for entry in reversed(self.log):
            if not entry["chance"] and entry["seat"] is not None and self.players[entry["seat"]] is None:
                return entry["ply"]
        return None

    def undo(self) -> None:
        with self.lock:
            ply = self._last_human_move()
            if ply is None or self.thinking:
                raise RequestError("nothing to undo" if ply is None else "a player is thinking", 409)
            self.history = self.history[:ply]
            self.log = [e for e in self.log if e["ply"] < ply]
            self.state = self.game.new_initial_state()
            for a in self.history:
                self.state.apply_action(a)
            self.analysis = None
            self.version += 1


def _map_of(state, show_hidden: bool) -> dict | None:
    """A graph game's map as the viewer sees it (Scotland Yard: Mr X's station only to
    Mr X or to someone watching players; the detectives see where he may be)."""
    if state.get_game().get_type().short_name != "scotland_yard":
        return None
    from ..games.scotland_yard_render import map_json

    return map_json(state, show_mrx=show_hidden)


def _analysis_json(state, seat: int, info: dict, name: str) -> dict:
    from ..api import pv_text

    moves = sorted(info["moves"], key=lambda m: -m["visits"])
    for m in moves:
        m["text"] = state.action_to_string(seat, m["action"])
    return {
        "seat": seat,
        "player": name,
        "ply": len(state.history()),
        "value": info["value"],
        "network_value": info["network_value"],
        "simulations": info["simulations"],
        "moves": moves,
        "pv": pv_text(state, info["pv"]),
        "action": info["action"],
    }


class SessionStore:
    """The games in progress, oldest dropped past MAX_SESSIONS."""

    def __init__(self, runs: RunIndex):
        self.runs = runs
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.lock = threading.Lock()  # create runs in a worker thread (players take time to build)

    def create(self, body) -> Session:
        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        spec, specs = body.get("game"), body.get("players")
        seed, delay = body.get("seed", 0), body.get("delay", 0.5)
        if not isinstance(spec, str) or not spec or len(spec) > 200:
            raise RequestError("'game' must be a game name such as connect_four or 'go(board_size=9)'")
        if not (isinstance(specs, list) and len(specs) == 2):
            raise RequestError("'players' must be a list of two player specs, one per seat")
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
            raise RequestError("'seed' must be a whole number in [0, 2^31)")
        if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not 0 <= delay <= 10:
            raise RequestError("'delay' must be a number of seconds in [0, 10]")
        from ..games import load_game

        try:
            game = load_game(spec)
            check_playable(game, spec)
        except UsageError as exc:
            raise RequestError(str(exc)) from None
        players = [make_seat_player(s, game, self.runs, seed + k) for k, s in enumerate(specs)]
        sid = secrets.token_hex(8)
        session = Session(sid, game, spec, list(specs), players, seed, float(delay))
        with self.lock:
            self.sessions[sid] = session
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        return session

    def get(self, sid) -> Session:
        with self.lock:
            session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            raise RequestError(f"unknown game session '{sid}'", 404)
        return session
