"""A GTP version 2 engine for Go and Hex: `polyzero gtp --agent PLAYER`.

Every command answers `= result` or `? error` followed by an empty line (GTP 2, section
2.6), never a traceback; unknown commands answer `? unknown command`. The analysis
commands stream Leela Zero's format, which Sabaki and Lizzie read:
`info move D4 visits 120 winrate 5312 prior 1840 lcb 5312 order 0 pv D4 E5 ...`
(winrate and prior in units of 1/10000), until the next command arrives.

OpenSpiel's Go alternates strictly; a `play` or `genmove` for the colour not to move
first passes for the other colour (GUIs set up handicap stones this way). A game
OpenSpiel has ended (two passes in a row, or its move limit) takes no further moves.
"""

from __future__ import annotations

import math
import re
import sys
import threading
import time
from collections.abc import Callable

import pyspiel

from .. import __version__
from ..errors import UsageError
from .agent import Analysis, EngineAgent
from .boards import COLOURS, MAX_GTP_SIZE, GtpBoard
from .clock import GtpClock

__all__ = ["GtpEngine", "GtpError", "serve_gtp", "parse_line"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class GtpError(Exception):
    """A command's failure: its message is the `? ...` answer."""


def parse_line(line: str) -> tuple[str, str, list[str]] | None:
    """(id, command, arguments) of one input line, None for an empty line or a comment
    (GTP 2, section 3.1: control characters removed, tabs as spaces, `#` starts a comment)."""
    line = _CONTROL.sub("", line.replace("\t", " ")).split("#", 1)[0].strip()
    if not line:
        return None
    words = line.split()
    ident = ""
    if words[0].isdigit():
        ident, words = words[0], words[1:]
        if not words:
            return ident, "", []
    return ident, words[0], words[1:]


def _colour(word: str) -> int:
    player = COLOURS.get(word.lower())
    if player is None:
        raise GtpError("invalid color")
    return player


def _number(word: str, kind=float, low: float = 0.0, high: float = math.inf):
    try:
        value = kind(word)
    except (ValueError, OverflowError):
        raise GtpError("syntax error") from None
    if not (math.isfinite(value) and low <= value <= high):
        raise GtpError("syntax error")
    return value


def _args(args: list[str], n: int) -> list[str]:
    if len(args) < n:
        raise GtpError("syntax error")
    return args


class GtpEngine:
    """One GTP session: a board, the moves played on it, a clock and an agent.

    `fixed_size` (a learned agent's board) makes `boardsize` refuse other sizes.
    """

    def __init__(self, agent: EngineAgent, game: pyspiel.Game, fixed_size: bool = False):
        self.agent = agent
        self.board = GtpBoard(game)
        self.fixed_size = self.board.size if fixed_size else None
        self.clock = GtpClock()
        self.moves: list[int] = []  # actions from the empty board, implicit passes included
        self.implicit: list[bool] = []  # moves[i] is a pass this engine inserted
        self.state = self.board.game.new_initial_state()
        self.done = False
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: "2",
            "name": lambda a: "polyzero",
            "version": lambda a: f"{__version__} ({self.agent.name})",
            "known_command": lambda a: str(bool(a) and a[0] in self.commands).lower(),
            "list_commands": lambda a: "\n".join(self.commands),
            "quit": self._quit,
            "boardsize": self._boardsize,
            "clear_board": lambda a: self._reset(),
            "komi": self._komi,
            "play": self._play,
            "genmove": lambda a: self._genmove(a, cleanup=False),
            "kgs-genmove_cleanup": lambda a: self._genmove(a, cleanup=True),
            "undo": self._undo,
            "showboard": lambda a: "\n" + str(self.state).rstrip(),
            "final_score": self._final_score,
            "time_settings": self._time_settings,
            "time_left": self._time_left,
            "loadsgf": self._loadsgf,
            "lz-analyze": None,  # streamed: see `handle`
            "lz-genmove_analyze": None,
        }

    # ------------------------------------------------------------------ dispatch
    def handle(self, line: str, write: Callable[[str], None], interrupted: Callable[[], bool] = lambda: True) -> None:
        """Answer one input line through `write`; the analysis commands stream until
        `interrupted()` (the next command has arrived)."""
        parsed = parse_line(line)
        if parsed is None:
            return
        ident, name, args = parsed
        if name in ("lz-analyze", "lz-genmove_analyze"):
            self._analyze(ident, args, name == "lz-genmove_analyze", write, interrupted)
            return
        try:
            if name not in self.commands:
                raise GtpError("unknown command")
            write(f"={ident} {self.commands[name](args)}".rstrip(" ") + "\n\n")
        except GtpError as exc:
            write(f"?{ident} {exc}\n\n")
        except (UsageError, pyspiel.SpielError, ValueError, OSError) as exc:
            write(f"?{ident} {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}\n\n")
        except Exception as exc:  # noqa: BLE001 - a failing command must not end the session
            print(f"polyzero gtp: {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            write(f"?{ident} internal error ({type(exc).__name__})\n\n")

    # ------------------------------------------------------------------ the board
    def _quit(self, args) -> str:
        self.done = True
        return ""

    def _reset(self, moves: list[int] | None = None, implicit: list[bool] | None = None) -> str:
        state = self.board.game.new_initial_state()
        for a in moves or []:
            state.apply_action(a)
        self.moves, self.state = list(moves or []), state
        self.implicit = list(implicit) if implicit is not None else [False] * len(self.moves)
        return ""

    def _boardsize(self, args) -> str:
        size = _number(_args(args, 1)[0], int, -math.inf)
        if not 1 <= size <= MAX_GTP_SIZE or (self.fixed_size is not None and size != self.fixed_size):
            raise GtpError("unacceptable size")
        try:
            self.board = self.board.resized(size)
        except UsageError:  # beyond what OpenSpiel plays (Go: 19x19)
            raise GtpError("unacceptable size") from None
        return self._reset()

    def _komi(self, args) -> str:
        komi = _number(_args(args, 1)[0], float, -1000, 1000)
        if self.board.kind == "go":  # Hex has no komi: accepted and ignored
            self.board = self.board.resized(self.board.size, komi)
            self._reset(self.moves, self.implicit)
        return ""

    def _to_move(self, player: int) -> None:
        """Make `player` the one to move, passing for the other colour if need be."""
        if self.state.is_terminal():
            raise GtpError("illegal move (the game is over)")
        if self.state.current_player() == player:
            return
        if self.board.pass_action is None:
            raise GtpError(f"illegal move ({'black' if player == 0 else 'white'} is not to move)")
        if self.moves and self.moves[-1] == self.board.pass_action:
            raise GtpError("illegal move (a pass here would end the game)")
        self._apply(self.board.pass_action, implicit=True)

    def _apply(self, action: int, implicit: bool = False) -> None:
        self.state.apply_action(action)
        self.moves.append(action)
        self.implicit.append(implicit)

    def _play(self, args) -> str:
        colour, vertex = _args(args, 2)[:2]
        player = _colour(colour)
        self._play_action(player, self._vertex_action(vertex))
        return ""

    def _vertex_action(self, vertex: str) -> int:
        action = self.board.action(vertex)
        if action is None:
            well_formed = vertex.lower() == "pass" or re.fullmatch(r"[a-zA-Z]\d{1,2}", vertex)
            raise GtpError("illegal move" if well_formed else "syntax error")
        return action

    def _play_action(self, player: int, action: int) -> None:
        if self.state.is_terminal():
            raise GtpError("illegal move (the game is over)")
        before = (list(self.moves), list(self.implicit))
        self._to_move(player)
        if action not in self.state.legal_actions():
            self._reset(*before)
            raise GtpError("illegal move")
        self._apply(action)

    def _undo(self, args) -> str:
        """Take back the last move, and the pass this engine inserted before it."""
        if not self.moves:
            raise GtpError("cannot undo")
        n = len(self.moves) - 1
        while n > 0 and self.implicit[n - 1]:
            n -= 1
        return self._reset(self.moves[:n], self.implicit[:n])

    def _final_score(self, args) -> str:
        if self.board.kind == "hex":
            if not self.state.is_terminal():
                raise GtpError("the game is not over")
            return "B+" if self.state.returns()[0] > 0 else "W+"
        score = self.board.score(self.state)
        return "0" if score == 0 else f"{'B' if score > 0 else 'W'}+{abs(score):g}"

    def _time_settings(self, args) -> str:
        main, byo, stones = _args(args, 3)[:3]
        self.clock.settings(_number(main), _number(byo), _number(stones, int))
        return ""

    def _time_left(self, args) -> str:
        colour, seconds, stones = _args(args, 3)[:3]
        self.clock.time_left(_colour(colour), _number(seconds), _number(stones, int))
        return ""

    def _loadsgf(self, args) -> str:
        from ..eval.records import read_sgf_moves

        path = _args(args, 1)[0]
        upto = _number(args[1], int, 1) if len(args) > 1 else None
        if self.board.kind != "go":
            raise GtpError("loadsgf reads Go games")
        try:
            size, komi, setup, moves = read_sgf_moves(path)
        except UsageError as exc:
            raise GtpError(f"cannot load file ({exc})") from None
        if size > MAX_GTP_SIZE or (self.fixed_size is not None and size != self.fixed_size):
            raise GtpError("unacceptable size")
        before = (self.board, list(self.moves), list(self.implicit))
        try:
            self.board = self.board.resized(size, komi)
        except UsageError:
            raise GtpError("unacceptable size") from None
        self._reset()
        try:  # setup stones and moves alike: the other colour passes in between
            for player, point in setup + moves[: None if upto is None else upto - 1]:
                row_col = self.board.pass_action if point is None else point[0] * size + point[1]
                self._play_action(player, row_col)
        except GtpError:
            self.board = before[0]
            self._reset(*before[1:])
            raise GtpError("cannot load file (an illegal move under OpenSpiel's rules)") from None
        return ""

    # ------------------------------------------------------------------ moves
    def _think(self, player: int) -> Analysis:
        moves_ahead = max(1, (self.board.size**2 - len(self.moves)) // 2)
        seconds = self.clock.move_seconds(player, moves_ahead)
        return self.agent.analyse(self.state, seconds=seconds)

    def _genmove(self, args, cleanup: bool) -> str:
        player = _colour(_args(args, 1)[0])
        if self.state.is_terminal():
            return "pass" if self.board.kind == "go" else "resign"
        self._to_move(player)
        analysis = self._think(player)
        action = analysis.action
        if cleanup:  # KGS's cleanup phase: capture dead stones rather than pass
            action = analysis.best_except(self.board.pass_action, self.state.legal_actions())
        self._apply(action)
        return self.board.vertex(action)

    # ------------------------------------------------------------------ analysis
    def analysis_line(self, analysis: Analysis) -> str:
        """Leela Zero's `info move ...` line, one entry per searched candidate."""
        parts = []
        for order, cand in enumerate(c for c in analysis.candidates if c.visits > 0):
            winrate = 0.5 if math.isnan(cand.value) else (cand.value + 1) / 2
            prior = 0.0 if math.isnan(cand.prior) else cand.prior
            pv = " ".join(self.board.vertex(a) for a in cand.pv)
            w = int(round(10000 * winrate))
            parts.append(
                f"info move {self.board.vertex(cand.action)} visits {cand.visits} winrate {w} "
                f"prior {int(round(10000 * prior))} lcb {w} order {order} pv {pv}"
            )
        return " ".join(parts)

    def _analyze(self, ident: str, args: list[str], genmove: bool, write, interrupted) -> None:
        try:
            player, interval = self._analyze_args(args)
            if self.state.is_terminal():
                raise GtpError("the game is over")
            if genmove and player is not None:
                self._to_move(player)
            state = self._position_for(player)
        except GtpError as exc:
            write(f"?{ident} {exc}\n\n")
            return
        write(f"={ident}\n")
        try:
            if genmove:
                analysis = self._think(state.current_player())
                write(self.analysis_line(analysis) + "\n")
                self._apply(analysis.action)
                write(f"play {self.board.vertex(analysis.action)}\n")
            else:
                last = self.agent.analyse_until(state, interrupted, lambda a: write(self.analysis_line(a) + "\n"))
                while not _wait(interval, interrupted):  # the search has reached its size: repeat it
                    write(self.analysis_line(last) + "\n")
        except Exception as exc:  # noqa: BLE001 - the stream still ends, the session goes on
            print(f"polyzero gtp: analysis failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        write("\n")

    def _position_for(self, player: int | None):
        """The position to analyse for `player` to move: the game's own, or a copy in which
        the other colour has passed (the game itself is left as it is)."""
        if player is None or self.state.current_player() == player:
            return self.state
        if self.board.pass_action is None or (self.moves and self.moves[-1] == self.board.pass_action):
            raise GtpError(f"{'black' if player == 0 else 'white'} is not to move")
        return self.state.child(self.board.pass_action)

    @staticmethod
    def _analyze_args(args: list[str]) -> tuple[int | None, float]:
        """[colour] [interval] or `interval N` (centiseconds); other tags are refused."""
        player, interval, i = None, 1.0, 0
        while i < len(args):
            word = args[i].lower()
            if word in COLOURS:
                player = COLOURS[word]
            elif word == "interval" and i + 1 < len(args):
                interval, i = _number(args[i + 1], float, 0, 1e6) / 100, i + 1
            elif re.fullmatch(r"\d+(\.\d+)?", word):
                interval = float(word) / 100
            else:
                raise GtpError("cannot parse analyze tags")
            i += 1
        return player, max(0.05, interval)


def _wait(seconds: float, interrupted: Callable[[], bool]) -> bool:
    """Sleep up to `seconds`; True as soon as `interrupted()`."""
    end = time.monotonic() + seconds
    while not interrupted():
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


def serve_gtp(engine: GtpEngine, stdin=None, stdout=None) -> None:
    """Read commands until `quit` or end of input. A reader thread fills a queue, so an
    analysis can watch for the next command while it streams."""
    import queue

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    lines: queue.Queue = queue.Queue()

    def read():
        for line in stdin:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()

    def write(text: str) -> None:
        stdout.write(text)
        stdout.flush()

    while not engine.done:
        line = lines.get()
        if line is None:
            break
        engine.handle(line, write, interrupted=lambda: not lines.empty())
