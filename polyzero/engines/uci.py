"""A UCI engine for OpenSpiel's chess: `polyzero uci --agent PLAYER`.

Positions are read with python-chess (FEN and move checking) and played in OpenSpiel's
chess, where the agent searches. `go` searches in a thread, so `stop`, `isready` and
`quit` are answered while it thinks; every `go` ends in exactly one `bestmove`. Input the
protocol does not know is ignored, as UCI asks; a bad FEN, an illegal move or an
out-of-range option is reported as `info string error: ...` and changes nothing.

The score comes from the agent's value v in [-1, 1] for the side to move: centipawns
`cp = 111.71 tan(1.5621 v)` (lc0's mapping), and with `UCI_ShowWDL` win/draw/loss per
mille from v alone (the value head has no draw output: draws are reported as 0).
"""

from __future__ import annotations

import math
import sys
import threading
import time

import pyspiel

from .. import __version__
from ..eval.records import chess_action, chess_move
from .agent import Analysis, EngineAgent
from .clock import MOVE_OVERHEAD, uci_move_seconds

__all__ = ["UciEngine", "serve_uci", "centipawns"]

MAX_THREADS = 64


def centipawns(value: float) -> int:
    """lc0's value-to-centipawn mapping, clipped to +-12800 (v = +-1 is a won position)."""
    v = max(-0.9999, min(0.9999, value))
    return int(round(max(-12800.0, min(12800.0, 111.714640912 * math.tan(1.5620688421 * v)))))


class UciEngine:
    def __init__(self, agent: EngineAgent, game: pyspiel.Game, write=None):
        import chess

        if game.get_type().short_name != "chess":
            raise ValueError("the UCI engine plays chess")
        self.agent = agent
        self.game = game
        self._write = write or _stdout_write
        self._lock = threading.Lock()  # the search thread writes too
        self.board = chess.Board()
        self.state = game.new_initial_state()
        self.show_wdl = False
        self.overhead = MOVE_OVERHEAD
        self.done = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.options = {  # name -> (type, default, min, max)
            "Simulations": ("spin", agent.simulations, 1, agent.max_simulations),
            "Threads": ("spin", 1, 1, MAX_THREADS),
            "Move Overhead": ("spin", int(MOVE_OVERHEAD * 1000), 0, 10000),
            "UCI_ShowWDL": ("check", "false", None, None),
        }

    def write(self, text: str) -> None:
        with self._lock:
            self._write(text)

    # ------------------------------------------------------------------ dispatch
    def handle(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        command, args = words[0], words[1:]
        handler = {
            "uci": self._uci,
            "isready": lambda a: self.write("readyok"),
            "ucinewgame": self._newgame,
            "position": self._position,
            "go": self._go,
            "stop": lambda a: self.wait(),
            "ponderhit": lambda a: self.wait(),
            "quit": self._quit,
            "setoption": self._setoption,
        }.get(command)
        if handler is None:  # anything else is ignored, as UCI asks
            return
        try:
            handler(args)
        except Exception as exc:  # noqa: BLE001 - a failing command must not end the session
            self._error(f"{command} failed ({type(exc).__name__}: {str(exc)[:100]})")

    def _error(self, text: str) -> None:
        self.write(f"info string error: {text}")

    def _uci(self, args) -> None:
        self.write("id name polyzero")
        self.write(f"id author polyzero {__version__} ({self.agent.name})")
        for name, (kind, default, low, high) in self.options.items():
            bounds = f" min {low} max {high}" if kind == "spin" else ""
            self.write(f"option name {name} type {kind} default {default}{bounds}")
        self.write("uciok")

    def _quit(self, args) -> None:
        self.wait()
        self.done = True

    def _newgame(self, args) -> None:
        self.wait()
        self.agent.reset(0)
        self._set_position("startpos", [])

    def _setoption(self, args) -> None:
        text = " ".join(args)
        if not text.startswith("name ") or " value " not in text + " ":
            return self._error("setoption needs: setoption name NAME value VALUE")
        name, _, value = text[5:].partition(" value ")
        name, value = name.strip(), value.strip()
        option = next((o for o in self.options if o.lower() == name.lower()), None)
        if option is None:
            return self._error(f"no option named {name!r}")
        kind, _, low, high = self.options[option]
        if kind == "check":
            if value.lower() not in ("true", "false"):
                return self._error(f"{option} is true or false, not {value!r}")
            self.show_wdl = value.lower() == "true"
            return
        if not (value.lstrip("-").isdigit() and low <= int(value) <= high):
            return self._error(f"{option} must be a whole number from {low} to {high}, not {value!r}")
        self.wait()
        if option == "Simulations":
            self.agent.simulations = int(value)
        elif option == "Threads":
            from ..nets.inference import set_threads

            set_threads(int(value))
        else:
            self.overhead = int(value) / 1000

    # ------------------------------------------------------------------ positions
    def _position(self, args) -> None:
        self.wait()
        if not args or args[0] not in ("startpos", "fen"):
            return self._error("position needs startpos or fen")
        rest = args[1:]
        moves_at = rest.index("moves") if "moves" in rest else len(rest)
        fen = "startpos" if args[0] == "startpos" else " ".join(rest[:moves_at])
        self._set_position(fen, rest[moves_at + 1 :])

    def _set_position(self, fen: str, moves: list[str]) -> None:
        """Set the position, or leave the old one and report why not."""
        import chess

        try:
            board = chess.Board() if fen == "startpos" else chess.Board(fen)
        except ValueError as exc:
            return self._error(f"bad FEN {fen!r}: {exc}")
        if not board.is_valid():
            return self._error(f"FEN {fen!r} is not a legal position")
        try:
            state = self.game.new_initial_state() if fen == "startpos" else self.game.new_initial_state(board.fen())
        except pyspiel.SpielError:
            return self._error(f"OpenSpiel's chess cannot start from FEN {fen!r}")
        for text in moves:
            try:
                move = chess.Move.from_uci(text)
            except ValueError:
                move = None
            action = chess_action(state, text) if move is not None and move in board.legal_moves else None
            if action is None:
                return self._error(f"illegal move {text!r} in this position")
            board.push(move)
            state.apply_action(action)
        self.board, self.state = board, state

    # ------------------------------------------------------------------ search
    def _go(self, args) -> None:
        self.wait()
        limits = _go_limits(args)
        if limits is None:
            return self._error(
                "go takes nodes N, movetime MS, wtime/btime/winc/binc/movestogo MS, "
                "depth N or infinite, with whole numbers"
            )
        self._stop.clear()
        self._thread = threading.Thread(target=self._search, args=(limits,), daemon=True)
        self._thread.start()

    def wait(self) -> None:
        """Stop a running search and wait for its `bestmove`."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def _budget(self, limits: dict) -> tuple[int | None, float | None]:
        white = self.board.turn
        if "nodes" in limits:
            return limits["nodes"], None
        if "movetime" in limits:
            return None, max(0.0, limits["movetime"] / 1000 - self.overhead)
        mine = limits.get("wtime" if white else "btime")
        if mine is not None:
            inc = limits.get("winc" if white else "binc", 0)
            return None, uci_move_seconds(mine / 1000, inc / 1000, limits.get("movestogo"), self.overhead)
        return None, None

    def _search(self, limits: dict) -> None:
        state = self.state.clone()
        legal = list(self.board.legal_moves)
        if state.is_terminal() or not legal:  # mate, stalemate, or OpenSpiel's draw rules
            self.write("info string the game is over under OpenSpiel's rules")
            self.write(f"bestmove {legal[0].uci() if legal else '(none)'}")
            return
        try:
            move = self._think(state, limits)
        except Exception as exc:  # noqa: BLE001 - the protocol still owes a bestmove
            self._error(f"search failed ({type(exc).__name__}: {str(exc)[:100]}); playing a legal move")
            move = legal[0].uci()
        self.write(f"bestmove {move}")

    def _think(self, state, limits: dict) -> str:
        t0 = time.perf_counter()
        if limits.get("infinite"):
            result = self.agent.analyse_until(state, self._stop.is_set, lambda a: self._info(a, state, t0))
            while not self._stop.wait(0.05):  # UCI: no bestmove before `stop`
                pass
        else:
            simulations, seconds = self._budget(limits)
            result = self.agent.analyse(state, simulations=simulations, seconds=seconds)
            self._info(result, state, t0)
        return chess_move(state, result.action)

    def _info(self, analysis: Analysis, state, t0: float) -> None:
        best = next((c for c in analysis.candidates if c.action == analysis.action), None)
        pv = best.pv if best is not None and best.pv else [analysis.action]
        moves, s = [], state.clone()
        for action in pv:
            moves.append(chess_move(s, action))
            s.apply_action(action)
        elapsed = max(1e-6, time.perf_counter() - t0)
        line = (
            f"info depth {len(pv)} nodes {analysis.nodes} nps {int(analysis.nodes / elapsed)} "
            f"time {int(elapsed * 1000)}"
        )
        if analysis.value is not None and math.isfinite(analysis.value):
            line += f" score cp {centipawns(analysis.value)}"
            if self.show_wdl:
                win = int(round(500 * (1 + analysis.value)))
                line += f" wdl {win} 0 {1000 - win}"
        self.write(line + " pv " + " ".join(moves))


def _go_limits(args: list[str]) -> dict | None:
    """The `go` command's limits; None if a number is malformed."""
    limits: dict = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("infinite", "ponder"):
            limits["infinite"] = True
        elif word in ("nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo", "depth", "mate"):
            if i + 1 >= len(args) or not args[i + 1].lstrip("-").isdigit():
                return None
            limits[word] = max(0, int(args[i + 1]))
            i += 1
        elif word == "searchmoves":
            break  # restricting the root is not supported; the rest of the line is its moves
        i += 1
    if limits.get("nodes") == 0:
        limits["nodes"] = 1
    return limits


def _stdout_write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def serve_uci(engine: UciEngine, stdin=None) -> None:
    """Read commands until `quit` or end of input (which stops a search first)."""
    for line in stdin or sys.stdin:
        engine.handle(line.strip())
        if engine.done:
            break
    engine.wait()
