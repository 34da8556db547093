"""External engines as players in the arena, ladder, tournament and training evaluation:

* `gtp:'CMD ...'`: any GTP engine, for Go and Hex;
* `uci:'CMD ...'`: any UCI engine, for chess;
* `gnugo:LEVEL` (GNU Go 0-10, Chinese rules, capturing dead stones before it passes, as
  Tromp-Taylor scoring needs), `pachi:PLAYOUTS` (Pachi, that many playouts a move, one
  thread), `stockfish:SKILL[:NODES]` (Stockfish's Skill Level 0-20, NODES a move,
  default 1000).

The engine is told the whole game before each of its moves (only the new moves while it
follows one game), answers with its move, and that move is checked legal in OpenSpiel's
game. An engine that dies, hangs past `POLYZERO_ENGINE_TIMEOUT` seconds (default 60) a
move, resigns, or answers illegally forfeits that game (`polyzero.eval.arena.Forfeit`,
with the reason); the engine is restarted for the next game.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from ..errors import UsageError
from ..eval.arena import Forfeit
from ..eval.records import chess_action, chess_move
from ..games import game_spec_string
from ..games.public_states import state_after
from .boards import GtpBoard, colour_name
from .process import EngineFailure, EngineProcess, find_binary

__all__ = ["external_player", "GtpPlayer", "UciPlayer", "EXTERNAL_KINDS", "missing_engine_hint"]

EXTERNAL_KINDS = ("gtp", "uci", "gnugo", "pachi", "stockfish")
START_TIMEOUT = 120.0  # a first answer: engines that load a network (polyzero itself) take a while
_PACKAGES = {
    "gnugo": "apt-get install gnugo",
    "stockfish": "apt-get install stockfish",
    "pachi": "the Pachi Go engine on PATH (Debian's package named `pachi` is a platform "
    "game, not this engine; build Pachi from its sources)",
}


def move_timeout() -> float:
    raw = os.environ.get("POLYZERO_ENGINE_TIMEOUT", "60")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise UsageError(f"POLYZERO_ENGINE_TIMEOUT must be a positive number of seconds, not {raw!r}")
    return value


def missing_engine_hint(binary: str) -> str:
    return f"{binary} is not installed: {_PACKAGES.get(binary, 'install it and put it on PATH')}"


class _External:
    """The lifecycle shared by GTP and UCI engines: start on first use, forfeit and
    restart on a failure, close (and reap) when done."""

    protocol = ""

    def __init__(self, argv: list[str], name: str, game, timeout: float | None = None):
        self.argv = argv
        self.name = name
        self.game = game
        self.timeout = move_timeout() if timeout is None else timeout
        self.proc: EngineProcess | None = None
        self.history: list[int] | None = None  # the game the engine holds now

    def reset(self, seed: int) -> None:
        self.history = None

    def act(self, states: Sequence) -> list:
        out = []
        for state in states:
            try:
                out.append(self._move(state))
            except EngineFailure as exc:
                self.close(grace=0.2)  # a fresh process for the next game
                out.append(Forfeit(f"{self.protocol} engine {exc}"))
        return out

    def close(self, grace: float = 1.0) -> None:
        if self.proc is not None:
            self.proc.close(grace)
        self.proc, self.history = None, None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _started(self) -> EngineProcess:
        if self.proc is None or not self.proc.alive:
            self.proc = EngineProcess(self.argv)
            self.history = None
            self._handshake()
        return self.proc

    def _new_moves(self, state) -> tuple[bool, list[int]]:
        """(fresh game?, moves the engine has not seen) for `state`'s game."""
        history = list(state.history())
        if self.history is not None and history[: len(self.history)] == self.history:
            return False, history[len(self.history) :]
        return True, history

    def _handshake(self) -> None: ...

    def _move(self, state): ...


class GtpPlayer(_External):
    """A GTP engine playing Go or Hex (black = player 0)."""

    protocol = "GTP"

    def __init__(self, argv, name, game, timeout=None):
        super().__init__(argv, name, game, timeout)
        self.board = GtpBoard(game)
        if game.get_parameters().get("swap", False):
            raise UsageError("GTP engines here play Hex without the swap rule (swap=false)")
        self.known: set[str] = set()  # the commands the engine lists

    def command(self, text: str, timeout: float | None = None) -> str:
        return self.commands([text], timeout)[0]

    def commands(self, texts: list[str], timeout: float | None = None) -> list[str]:
        """The answers to `texts`, sent at once (GTP answers in order: one round trip, not
        one per command); EngineFailure on `? ...`, a malformed answer or no answer."""
        if texts:
            self.proc.send("\n".join(texts))
        return [self._answer(text, self.timeout if timeout is None else timeout) for text in texts]

    def _answer(self, text: str, timeout: float) -> str:
        first = self.proc.read_line(timeout)
        while not first.strip():  # stray blank lines before an answer
            first = self.proc.read_line(timeout)
        lines = [first]
        while True:
            line = self.proc.read_line(timeout)
            if not line.strip():
                break
            lines.append(line)
        if first[:1] not in ("=", "?"):
            raise EngineFailure(f"answered {first[:60]!r} to {text!r}, not a GTP response")
        body = "\n".join([first[1:].lstrip("0123456789").strip()] + lines[1:]).strip()
        if first[0] == "?":
            raise EngineFailure(f"refused {text!r}: {body[:80]}")
        return body

    def _handshake(self) -> None:
        version = self.command("protocol_version", START_TIMEOUT)
        if version.strip() != "2":
            raise EngineFailure(f"speaks GTP version {version!r}, not 2")
        self.known = set(self.command("list_commands").split())

    def _move(self, state):
        self._started()
        fresh, moves = self._new_moves(state)
        setup = []
        if fresh:
            setup = [f"boardsize {self.board.size}", "clear_board"]
            setup += [f"komi {self.board.komi:g}"] if self.board.kind == "go" else []
            self.history = []
        n = len(self.history)  # strict alternation from black (no handicap)
        setup += [f"play {colour_name((n + k) % 2)} {self.board.vertex(a)}" for k, a in enumerate(moves)]
        self.commands(setup)
        self.history += moves
        player = state.current_player()
        # Under Tromp-Taylor a pass after the opponent's pass ends the game with every stone
        # alive: an engine that can, removes dead stones first (KGS's cleanup phase).
        cleanup = (
            self.board.kind == "go"
            and self.history
            and self.history[-1] == self.board.pass_action
            and "kgs-genmove_cleanup" in self.known
        )
        answer = self.command(f"{'kgs-genmove_cleanup' if cleanup else 'genmove'} {colour_name(player)}")
        if answer.lower() == "resign":
            self.history = None
            return Forfeit("resigned")
        action = self.board.action(answer)
        if action is None or action not in state.legal_actions():
            self.history = None
            return Forfeit(f"illegal move {answer[:20]!r}")
        self.history.append(action)
        return action


class UciPlayer(_External):
    """A UCI engine playing OpenSpiel's chess: `go nodes N` (or `go movetime MS`)."""

    protocol = "UCI"

    def __init__(
        self,
        argv,
        name,
        game,
        options: dict | None = None,
        nodes: int | None = None,
        movetime_ms: int | None = None,
        timeout=None,
    ):
        super().__init__(argv, name, game, timeout)
        if game.get_type().short_name != "chess" or game.get_parameters().get("chess960"):
            raise UsageError(f"UCI engines play chess; '{game_spec_string(game)}' is not standard chess")
        self.options = dict(options or {})
        self.go = f"go nodes {nodes}" if nodes else f"go movetime {movetime_ms or 100}"
        self.uci_moves: list[str] = []

    def _until(self, prefix: str, timeout: float) -> str:
        while True:
            line = self.proc.read_line(timeout)
            if line.split()[:1] == [prefix]:
                return line

    def _handshake(self) -> None:
        self.proc.send("uci")
        self._until("uciok", START_TIMEOUT)
        for key, value in self.options.items():
            self.proc.send(f"setoption name {key} value {value}")
        self.proc.send("isready")
        self._until("readyok", START_TIMEOUT)

    def _move(self, state):
        self._started()
        fresh, moves = self._new_moves(state)
        if fresh:
            self.proc.send("ucinewgame")
            self.history, self.uci_moves = [], []
            replay = state.get_game().new_initial_state()
        else:
            replay = _replay(state, len(self.history))
        for action in moves:
            self.uci_moves.append(chess_move(replay, action))
            replay.apply_action(action)
            self.history.append(action)
        self.proc.send("position startpos" + (" moves " + " ".join(self.uci_moves) if self.uci_moves else ""))
        self.proc.send(self.go)
        words = self._until("bestmove", self.timeout).split()
        answer = words[1] if len(words) > 1 else ""
        action = chess_action(state, answer)
        if action is None:
            self.history = None
            return Forfeit(f"illegal move {answer[:20]!r}")
        self.history.append(action)
        self.uci_moves.append(answer)
        return action


def _replay(state, n: int):
    return state_after(state.get_game(), state.history()[:n])


# ---------------------------------------------------------------------- specs
def _number(spec: str, text: str, what: str, low: int, high: int) -> int:
    if not (text.isdigit() and low <= int(text) <= high):
        raise UsageError(f"bad player '{spec}': {what} must be a whole number from {low} to {high}")
    return int(text)


def _binary(spec: str, name: str) -> str:
    path = find_binary(name)
    if path is None:
        raise UsageError(f"player '{spec}' needs {missing_engine_hint(name)}")
    return path


def _command(spec: str, text: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"bad player '{spec}': {exc}") from None
    if not argv:
        raise UsageError(f"bad player '{spec}': name the engine's command, e.g. gtp:'gnugo --mode gtp'")
    if find_binary(argv[0]) is None and not os.access(argv[0], os.X_OK):
        raise UsageError(f"player '{spec}': cannot find the program {argv[0]!r}")
    argv[0] = find_binary(argv[0]) or argv[0]
    return argv


def external_player(spec: str, game, seed: int = 0):
    """The player a `gtp:`, `uci:`, `gnugo:`, `pachi:` or `stockfish:` spec names; None
    for any other spec."""
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in EXTERNAL_KINDS:
        return None
    if kind == "gtp":
        return GtpPlayer(_command(spec, rest), spec, game)
    if kind == "uci":
        return UciPlayer(_command(spec, rest), spec, game)
    if kind == "gnugo":
        level = _number(spec, rest, "the level", 0, 10)
        argv = [
            _binary(spec, "gnugo"),
            "--mode",
            "gtp",
            "--level",
            str(level),
            "--chinese-rules",
            "--capture-all-dead",
            "--seed",
            str(seed % 2**31),
        ]
        return GtpPlayer(argv, spec, game)
    if kind == "pachi":
        playouts = _number(spec, rest, "the playouts", 1, 10**7)
        return GtpPlayer([_binary(spec, "pachi"), "-t", f"={playouts}", "threads=1,pass_all_alive"], spec, game)
    skill, _, nodes = rest.partition(":")
    options = {"Skill Level": _number(spec, skill, "the skill level", 0, 20), "Threads": 1}
    nodes = _number(spec, nodes, "the nodes", 1, 10**9) if nodes else 1000
    return UciPlayer([_binary(spec, "stockfish")], spec, game, options=options, nodes=nodes)
