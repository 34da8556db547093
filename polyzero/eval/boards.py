"""What a person sees of a game and how they name a move: the board as a grid with
coordinates, the text one seat may see, and move input by coordinates or text.

Used by terminal play (`polyzero.eval.play`) and the web page (`polyzero.web`).
Boards are drawn only for perfect-information games (they are read off the full
state's text); a seat of an imperfect-information game sees its information-state
string and nothing else.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

import pyspiel

__all__ = [
    "Board",
    "board_of",
    "seat_text",
    "side_name",
    "describe",
    "MoveNames",
    "perfect_information",
    "check_playable",
]

# Seat names of the games whose boards are drawn (seat -> name); others say "player N".
SIDES = {
    "tic_tac_toe": ("x", "o"),
    "connect_four": ("x", "o"),
    "hex": ("x (joins top and bottom)", "o (joins left and right)"),
    "othello": ("black (x)", "white (o)"),
    "breakthrough": ("black (b, moving down)", "white (w, moving up)"),
    "chess": ("black", "white"),
    "go": ("black (X)", "white (O)"),
    "nannon": ("x", "o"),
}


def perfect_information(game) -> bool:
    return game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION


def check_playable(game, spec: str) -> None:
    """Refuse, with the reason, games a person cannot play against an agent here."""
    from ..errors import UsageError
    from ..games.capabilities import check_match_game

    check_match_game(game, "play")
    if not perfect_information(game) and not (
        game.get_type().provides_information_state_string or game.get_type().provides_observation_string
    ):
        raise UsageError(
            f"'{spec}' gives no per-seat view (information state or observation string), "
            "so a human seat cannot be shown only what it may observe"
        )


def side_name(game, seat: int) -> str:
    names = SIDES.get(game.get_type().short_name)
    return names[seat] if names else f"player {seat}"


def describe(state) -> str:
    """A one-line header: game, whose turn, move number (Go's own `GoState(...)` header
    made readable)."""
    game = state.get_game()
    name = game.get_type().short_name
    params = game.get_parameters()
    what = name
    if name == "go":
        what = f"Go {params.get('board_size', 19)}x{params.get('board_size', 19)}, komi {params.get('komi', 7.5)}"
    if state.is_terminal():
        return f"{what}: game over after {len(state.history())} moves"
    if state.is_chance_node():
        return f"{what}: chance to move"
    player = state.current_player()
    return f"{what}: {side_name(game, player)} (seat {player}) to move, move {len(state.history()) + 1}"


@dataclass
class Board:
    """A rectangular board: `cells[r][c]` a one-character piece ('.' empty), row 0 on
    top; `targets` maps a cell (r, c) to the action that plays there; `moves` holds
    (from cell, to cell, action) for games that move pieces."""

    kind: str
    cells: list[list[str]]
    row_labels: list[str]
    col_labels: list[str]
    targets: dict = field(default_factory=dict)
    moves: list = field(default_factory=list)

    def name(self, r: int, c: int) -> str:
        return f"{self.col_labels[c]}{self.row_labels[r]}"

    def render(self) -> str:
        """The board with coordinates on every side, for a terminal."""
        width = max(len(x) for x in self.row_labels)
        sep = "" if self.kind == "breakthrough" else " "
        head = " " * (width + 1) + sep.join(self.col_labels)
        lines = [head]
        for r, row in enumerate(self.cells):
            indent = " " * r if self.kind == "hex" else ""
            lines.append(f"{indent}{self.row_labels[r]:>{width}} {sep.join(row)} {self.row_labels[r]}")
        lines.append((" " * (len(self.cells) - 1) if self.kind == "hex" else "") + head)
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "cells": ["".join(row) for row in self.cells],
            "rows": self.row_labels,
            "cols": self.col_labels,
            "targets": [[r, c, a] for (r, c), a in self.targets.items()],
            "moves": [[list(f), list(t), a] for f, t, a in self.moves],
        }


def _grid(lines: list[str]) -> list[list[str]]:
    return [list(line) for line in lines]


def _placement_targets(state, cols: int, action_of) -> dict:
    legal = set(state.legal_actions()) if not state.is_terminal() else set()
    out = {}
    for a in legal:
        cell = action_of(a)
        if cell is not None:
            out[cell] = a
    return out


def board_of(state) -> Board | None:
    """The board of a perfect-information game this module knows, else None."""
    game = state.get_game()
    if not perfect_information(game):
        return None
    reader = _READERS.get(game.get_type().short_name)
    return reader(state) if reader else None


def _tic_tac_toe(state) -> Board:
    lines = str(state).split("\n")[:3]
    return Board(
        "tic_tac_toe",
        _grid(lines),
        ["0", "1", "2"],
        ["0", "1", "2"],
        _placement_targets(state, 3, lambda a: (a // 3, a % 3)),
    )


def _connect_four(state) -> Board:
    lines = [line for line in str(state).split("\n") if line]
    rows, cols = len(lines), len(lines[0])
    legal = set(state.legal_actions()) if not state.is_terminal() else set()
    targets = {}
    for c in legal:  # a click anywhere in a column drops there; the target is its top empty cell
        r = max(r for r in range(rows) if lines[r][c] == ".")
        targets[(r, c)] = c
    return Board(
        "connect_four", _grid(lines), [str(rows - r) for r in range(rows)], [str(c) for c in range(cols)], targets
    )


def _hex(state) -> Board:
    lines = [line.strip().split() for line in str(state).split("\n") if line.strip()]
    n = len(lines)
    cells = [["." if ch == "." else ch[0].lower() if ch[0].lower() in "xo" else ch for ch in row] for row in lines]
    return Board(
        "hex",
        cells,
        [str(r + 1) for r in range(n)],
        list(string.ascii_lowercase[:n]),
        _placement_targets(state, n, lambda a: (a // n, a % n)),
    )


def _othello(state) -> Board:
    rows = [line for line in str(state).split("\n") if line[:1].isdigit()]
    cells = [[{"-": "."}.get(ch, ch) for ch in line.split()[1:-1]] for line in rows]
    n = len(cells)
    return Board(
        "othello",
        cells,
        [str(r + 1) for r in range(n)],
        list(string.ascii_lowercase[:n]),
        _placement_targets(state, n, lambda a: (a // n, a % n) if a < n * n else None),
    )


def _from_to(state, board: Board, pattern: str) -> list:
    """(from, to, action) of each legal move whose text is like 'c3b4' (Breakthrough) or
    whose long algebraic notation is (chess)."""
    if state.is_terminal():
        return []
    index = {board.name(r, c): (r, c) for r in range(len(board.cells)) for c in range(len(board.cells[0]))}
    out = []
    for a in state.legal_actions():
        m = re.match(pattern, _long_move(state, a))
        if m and m.group(1) in index and m.group(2) in index:
            out.append((index[m.group(1)], index[m.group(2)], a))
    return out


def _long_move(state, action: int) -> str:
    if state.get_game().get_type().short_name == "chess":
        return pyspiel.chess.action_to_move(action, state.board()).to_lan()
    return state.action_to_string(state.current_player(), action)


def _breakthrough(state) -> Board:
    lines = [line for line in str(state).split("\n") if line[:1].isdigit()]
    cells = _grid([re.sub(r"^\d+", "", line) for line in lines])
    cols = len(cells[0])
    board = Board(
        "breakthrough", cells, [re.match(r"\d+", line).group(0) for line in lines], list(string.ascii_lowercase[:cols])
    )
    board.moves = _from_to(state, board, r"([a-z]\d+)([a-z]\d+)")
    return board


def _chess(state) -> Board:
    placement = str(state).split()[0]
    cells = []
    for rank in placement.split("/"):
        row = []
        for ch in rank:
            row.extend("." * int(ch) if ch.isdigit() else ch)
        cells.append(row)
    board = Board("chess", cells, [str(8 - r) for r in range(8)], list("abcdefgh"))
    board.moves = _from_to(state, board, r"([a-h][1-8])([a-h][1-8])")
    return board


def _go(state) -> Board:
    rows = [line for line in str(state).split("\n") if re.match(r"^\s*\d+ ", line)]
    cells = [[{"+": "."}.get(ch, ch) for ch in line.split()[1]] for line in rows]
    n = len(cells)
    cols = list("abcdefghjklmnopqrst"[:n])  # Go skips i
    return Board(
        "go",
        cells,
        [str(n - r) for r in range(n)],
        cols,
        _placement_targets(state, n, lambda a: ((n - 1 - a // n), a % n) if a < n * n else None),
    )


_READERS = {
    "tic_tac_toe": _tic_tac_toe,
    "connect_four": _connect_four,
    "hex": _hex,
    "othello": _othello,
    "breakthrough": _breakthrough,
    "chess": _chess,
    "go": _go,
}


def seat_text(state, seat: int | None) -> str:
    """What `seat` may see of `state` as text: the whole state in a perfect-information
    game (or for a spectator, seat None), else the seat's information state (or its
    observation, where the game gives no information state)."""
    game = state.get_game()
    if seat is None or perfect_information(game):
        return str(state)
    if game.get_type().provides_information_state_string:
        return state.information_state_string(seat)
    return state.observation_string(seat)


class MoveNames:
    """Every name a person may type for each legal move: its text, the text without
    the mover's mark (Go's `e5` for `B e5`, `(1,1)` and `1,1` for `x(1,1)`, `3` for
    Connect Four's `x3`, `a2a3` for `a2a3*`), the board coordinate it plays at, and the
    action id only where no other move is named by the same text (in take-away, `1`
    is "take 1", never the action with id 1)."""

    def __init__(self, state, board: Board | None = None):
        player = state.current_player()
        self.legal = list(state.legal_actions(player))
        self.text = {a: state.action_to_string(player, a) for a in self.legal}
        names: dict[str, set[int]] = {}
        chess = state.get_game().get_type().short_name == "chess"

        def add(name: str, action: int) -> None:
            if name:
                names.setdefault(name, set()).add(action)

        for a, text in self.text.items():
            add(text, a)
            if " " in text:
                add(text.split()[-1], a)
            m = re.match(r"^[A-Za-z]\((.*)\)$", text)
            if m:
                add(f"({m.group(1)})", a)
                add(m.group(1), a)
                add(m.group(1).replace(",", " "), a)
            if re.match(r"^[xo]\d+$", text):
                add(text[1:], a)
            add(text.rstrip("*"), a)
            if chess:
                add(_long_move(state, a), a)  # e2e4 as well as e4
        if board is not None and board.col_labels[0].isalpha():  # a point like e5 (Go, Hex, Othello)
            for (r, c), a in board.targets.items():
                add(board.name(r, c), a)
        self.names = {n: next(iter(acts)) for n, acts in names.items() if len(acts) == 1}
        lower: dict[str, set[int]] = {}
        for n, acts in names.items():
            lower.setdefault(n.lower(), set()).update(acts)
        self.lower = {n: next(iter(acts)) for n, acts in lower.items() if len(acts) == 1}
        self.taken = set(names) | set(lower)

    def parse(self, typed: str) -> int | None:
        """The action `typed` names, or None."""
        typed = " ".join(typed.split())
        if typed in self.names:
            return self.names[typed]
        if typed.lower() in self.lower:
            return self.lower[typed.lower()]
        if typed.isdigit() and int(typed) in self.legal and typed not in self.taken:
            return int(typed)
        return None

    def listing(self, limit: int = 24) -> str:
        """The legal moves as text, compact: a count and examples past `limit`."""
        texts = [self.text[a] for a in self.legal]
        if len(texts) > limit:
            shown = ", ".join(t.split()[-1] for t in texts[:8])
            return f"{len(texts)} legal moves, e.g. {shown}, ... (type one; 'moves' lists them all)"
        return "legal moves: " + ", ".join(texts)

    def full_listing(self, width: int = 78) -> str:
        import textwrap

        return textwrap.fill(
            ", ".join(self.text[a] for a in self.legal), width=width, break_long_words=False, break_on_hyphens=False
        )
