"""Game records: SGF for Go (sgfmill), PGN for chess (python-chess), JSON lines of actions
for every other game; and reading them back (`polyzero replay`, GTP's `loadsgf`).

A record names the players by seat, the result, and why a game ended early (an engine
that forfeited). OpenSpiel's chess has Black as player 0 and White as player 1; Go has
Black as player 0.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyspiel

from ..errors import UsageError
from ..games import game_spec_string, load_game

__all__ = [
    "record_text",
    "record_suffix",
    "record_path",
    "match_recorder",
    "write_record",
    "read_record",
    "read_sgf_moves",
    "replay_lines",
    "chess_move",
    "chess_action",
    "tromp_taylor_score",
    "board_rows",
]


def chess_move(state, action: int) -> str:
    """A chess action as UCI text (`e2e4`, `e7e8q`, castling `e1g1`)."""
    return pyspiel.chess.action_to_move(int(action), state.board()).to_lan()


def chess_action(state, uci: str) -> int | None:
    """The action a UCI move names in `state`, None if it is not legal there (matched
    against the legal moves: OpenSpiel's own parser logs every move it refuses)."""
    if state.is_terminal():
        return None
    board = state.board()
    for action in state.legal_actions():
        if pyspiel.chess.action_to_move(action, board).to_lan() == uci:
            return action
    return None


def record_suffix(game) -> str:
    name = game.get_type().short_name
    return {"go": ".sgf", "chess": ".pgn"}.get(name, ".jsonl")


def _replayed(state):
    """(state before, player, action) for every move of `state`'s game, chance included."""
    s = state.get_game().new_initial_state()
    for pa in state.full_history():
        yield s, pa.player, pa.action
        s = s.child(pa.action)


def board_rows(state, size: int) -> list[str]:
    """Go's board as `size` strings of X (black), O (white) and + (empty), row 1 first."""
    lines = [ln for ln in str(state).splitlines() if ln[:3].strip().isdigit()]
    rows = {int(ln[:3]): ln[3 : 3 + size] for ln in lines}
    return [rows[r] for r in range(1, size + 1)]


def tromp_taylor_score(rows: list[str], komi: float) -> float:
    """Black's points minus White's minus komi: every stone counts for its colour, and an
    empty region counts for a colour when it reaches stones of that colour only
    (Tromp-Taylor rules; OpenSpiel's go.cc scores the same way)."""
    size = len(rows)
    seen = [[False] * size for _ in range(size)]
    delta = 0
    for r in range(size):
        for c in range(size):
            point = rows[r][c]
            if point != "+":
                delta += 1 if point == "X" else -1
                continue
            if seen[r][c]:
                continue
            region, reaches, stack = 0, set(), [(r, c)]
            seen[r][c] = True
            while stack:
                y, x = stack.pop()
                region += 1
                for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                    if 0 <= ny < size and 0 <= nx < size:
                        if rows[ny][nx] == "+":
                            if not seen[ny][nx]:
                                seen[ny][nx] = True
                                stack.append((ny, nx))
                        else:
                            reaches.add(rows[ny][nx])
            if reaches == {"X"}:
                delta += region
            elif reaches == {"O"}:
                delta -= region
    return delta - komi


def _go_result(state, returns, reason) -> str:
    if reason or not state.is_terminal():
        return ("B" if returns[0] > returns[1] else "W") + "+F" if returns[0] != returns[1] else "Void"
    if returns[0] == returns[1]:
        return "0"
    size = state.get_game().get_parameters()["board_size"]
    score = tromp_taylor_score(board_rows(state, size), state.get_game().get_parameters()["komi"])
    winner = "B" if returns[0] > 0 else "W"
    return f"{winner}+{abs(score):g}" if (score > 0) == (winner == "B") and score != 0 else f"{winner}+"


def _sgf(state, names, returns, reason) -> str:
    from sgfmill import sgf

    params = state.get_game().get_parameters()
    size = params["board_size"]
    record = sgf.Sgf_game(size=size)
    root = record.get_root()
    root.set("KM", float(params["komi"]))
    root.set("RU", "Tromp-Taylor (OpenSpiel)")
    root.set("PB", names[0])
    root.set("PW", names[1])
    root.set("RE", _go_result(state, returns, reason))
    for _, player, action in _replayed(state):
        point = None if action == size * size else divmod(action, size)
        record.extend_main_sequence().set_move("b" if player == 0 else "w", point)
    if reason:
        root.set("C", reason)
    return record.serialise().decode()


def _pgn(state, names, returns, reason) -> str:
    import chess.pgn

    record = chess.pgn.Game()
    record.headers.update(Event="polyzero", White=names[1], Black=names[0])
    node = record
    for before, _, action in _replayed(state):
        node = node.add_variation(chess.Move.from_uci(chess_move(before, action)))
    if returns[0] == returns[1]:
        result = "1/2-1/2" if state.is_terminal() else "*"
    else:
        result = "1-0" if returns[1] > returns[0] else "0-1"
    record.headers["Result"] = result
    if reason:
        record.headers["Termination"] = "rules infraction"
        record.comment = reason
    return str(record) + "\n"


def _jsonl(state, names, returns, reason) -> str:
    head = {
        "game": game_spec_string(state.get_game()),
        "players": list(names),
        "returns": [float(r) for r in returns],
        "reason": reason,
    }
    lines = [json.dumps(head)]
    for before, player, action in _replayed(state):
        lines.append(
            json.dumps({"player": int(player), "action": int(action), "move": before.action_to_string(player, action)})
        )
    return "\n".join(lines) + "\n"


def record_text(state, names, returns, reason: str | None = None) -> str:
    """The record of one game in its game's format; `names[p]` sits in seat p."""
    kind = state.get_game().get_type().short_name
    return {"go": _sgf, "chess": _pgn}.get(kind, _jsonl)(state, names, returns, reason)


def write_record(path, state, names, returns, reason: str | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(record_text(state, names, returns, reason))
    tmp.replace(path)  # a record is whole or absent
    return path


def record_path(out_dir, game, stem: str) -> Path:
    """DIR/STEM-N.EXT with the first N not taken (records are never overwritten)."""
    out, suffix, n = Path(out_dir), record_suffix(game), 0
    while (out / f"{stem}-{n:04d}{suffix}").exists():
        n += 1
    return out / f"{stem}-{n:04d}{suffix}"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@=-]+", "_", text).strip("_")[:80] or "player"


def match_recorder(out_dir, game, name_a: str, name_b: str, prefix: str = ""):
    """The arena's `on_game_end` for a match of A against B (A in seat i % 2 of game i):
    game i goes to DIR/[PREFIX]A-vs-B-i.EXT."""
    out = Path(out_dir)
    stem = f"{prefix}{_safe(name_a)}-vs-{_safe(name_b)}"
    suffix = record_suffix(game)

    def on_game_end(i, state, returns, reason=None):
        names = (name_a, name_b) if i % 2 == 0 else (name_b, name_a)
        write_record(out / f"{stem}-{i:04d}{suffix}", state, names, returns, reason)

    return on_game_end


# ---------------------------------------------------------------------- reading
MAX_RECORD_BYTES = 16 << 20


def _read_bytes(path) -> bytes:
    """A record file's bytes: a regular file of at most 16 MiB (never a device or a pipe)."""
    path = Path(path)
    try:
        if not path.is_file():
            raise UsageError(f"cannot read {path}: not a file")
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise UsageError(f"cannot read {path}: larger than {MAX_RECORD_BYTES >> 20} MiB")
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def read_sgf_moves(path):
    """(size, komi, setup, moves) of an SGF game's main line: setup stones and moves as
    (player, (row, col) or None for a pass), row 0 at the bottom (GTP's row 1)."""
    from sgfmill import sgf

    try:
        record = sgf.Sgf_game.from_bytes(_read_bytes(path))
        size, komi = record.get_size(), record.get_komi()
        setup, moves = [], []
        for node in record.get_main_sequence():
            black, white, empty = node.get_setup_stones()
            if empty:
                raise UsageError(f"{path}: SGF setup that removes stones (AE) is not supported")
            setup += [(0, p) for p in sorted(black)] + [(1, p) for p in sorted(white)]
            colour, point = node.get_move()
            if colour is not None:
                moves.append((0 if colour == "b" else 1, point))
    except ValueError as exc:
        raise UsageError(f"{path} is not a readable SGF game: {exc}") from None
    return size, komi, setup, moves


def _sgf_actions(path):
    size, komi, setup, moves = read_sgf_moves(path)
    game = load_game(f"go(board_size={size},komi={komi})")
    actions, to_move = [], 0
    for player, point in setup + moves:
        if player != to_move:  # the other colour passes (setup stones, handicap)
            actions.append(size * size)
        actions.append(size * size if point is None else point[0] * size + point[1])
        to_move = 1 - player
    return game, actions, {}


def _pgn_actions(path):
    import io

    import chess.pgn

    record = chess.pgn.read_game(io.StringIO(_read_bytes(path).decode("utf-8", "replace")))
    if record is None or record.errors:
        raise UsageError(f"{path} is not a readable PGN game")
    if record.headers.get("FEN"):
        raise UsageError(f"{path} starts from a FEN position; replay reads games from the start")
    game = load_game("chess")
    state, actions = game.new_initial_state(), []
    for move in record.mainline_moves():
        action = chess_action(state, move.uci())
        if action is None:
            raise UsageError(f"{path}: move {move.uci()} is not legal in OpenSpiel's chess")
        actions.append(action)
        state.apply_action(action)
    return game, actions, dict(record.headers)


def _jsonl_actions(path):
    try:
        lines = [json.loads(x) for x in _read_bytes(path).decode().splitlines() if x.strip()]
        head = lines[0]
        return load_game(head["game"]), [int(x["action"]) for x in lines[1:]], head
    except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError):
        raise UsageError(f"{path} is not a polyzero JSON-lines record") from None


def read_record(path):
    """(game, actions from the start, header) of a record file, by its suffix."""
    suffix = Path(path).suffix.lower()
    reader = {".sgf": _sgf_actions, ".pgn": _pgn_actions, ".jsonl": _jsonl_actions}.get(suffix)
    if reader is None:
        raise UsageError(f"{path}: a record is .sgf, .pgn or .jsonl")
    return reader(path)


def replay_lines(path, every: bool = False):
    """The lines `polyzero replay` prints: the header, each move (with the board after
    it when `every`), the final position and the result."""
    game, actions, header = read_record(path)
    state = game.new_initial_state()
    yield f"{path}: {game_spec_string(game)}, {len(actions)} actions"
    for key in ("players", "White", "Black", "returns", "Result", "reason", "Termination"):
        if header.get(key) not in (None, ""):
            yield f"  {key}: {header[key]}"
    for n, action in enumerate(actions, 1):
        if state.is_terminal():
            raise UsageError(f"{path}: the game is over before action {n}")
        legal = state.legal_actions() if not state.is_chance_node() else [a for a, _ in state.chance_outcomes()]
        if action not in legal:
            raise UsageError(f"{path}: action {n} ({action}) is not legal")
        player = state.current_player()
        yield f"{n:4d}. {state.action_to_string(player, action)}"
        state.apply_action(action)
        if every:
            yield str(state)
    if not every:
        yield str(state)
    yield f"returns: {list(state.returns())}" if state.is_terminal() else "(game not finished)"
