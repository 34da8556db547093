"""Go and Hex as GTP sees them: vertices, colours, board sizes and the Tromp-Taylor score.

GTP names a move by colour and vertex (`play b D4`, `genmove w`); OpenSpiel by an action
id. The vertex tables are read off OpenSpiel's own action strings (Go's columns skip the
letter I, Hex's do not), so the two always agree. Black is OpenSpiel's player 0 in both
games (in Hex, `x`, who joins row 1 to the last row).
"""

from __future__ import annotations

import pyspiel

from ..errors import UsageError
from ..eval.records import board_rows, tromp_taylor_score
from ..games import game_spec_string

__all__ = ["GtpBoard", "COLOURS", "colour_name", "MAX_GTP_SIZE"]

# GTP's vertex letters stop at Z (minus I): 25 columns.
MAX_GTP_SIZE = 25
COLOURS = {"b": 0, "black": 0, "w": 1, "white": 1}


def colour_name(player: int) -> str:
    return "B" if player == 0 else "W"


class GtpBoard:
    """A Go or Hex game of one size, with GTP's vertex names for its actions."""

    def __init__(self, game: pyspiel.Game):
        self.kind = game.get_type().short_name
        if self.kind not in ("go", "hex"):
            raise UsageError(f"GTP plays Go and Hex; '{game_spec_string(game)}' is neither")
        params = game.get_parameters()
        if self.kind == "go" and params.get("handicap", 0):
            raise UsageError("GTP here plays games without handicap stones (set handicap=0)")
        if self.kind == "hex" and params.get("num_rows", params["board_size"]) != params.get(
            "num_cols", params["board_size"]
        ):
            raise UsageError("GTP plays square Hex boards only (num_rows = num_cols)")
        self.game = game
        self.size = int(params["board_size"] if self.kind == "go" else params.get("num_cols", params["board_size"]))
        self.komi = float(params.get("komi", 0.0))
        self.pass_action = self.size * self.size if self.kind == "go" else None
        try:
            start = game.new_initial_state()
        except pyspiel.SpielError as exc:  # OpenSpiel's Go stops at 19x19
            raise UsageError(f"OpenSpiel cannot play '{game_spec_string(game)}': {str(exc).splitlines()[0]}") from None
        self._vertex: dict[int, str] = {}
        for action in range(game.num_distinct_actions()):
            text = start.action_to_string(0, action)
            text = text.split()[-1]  # Go writes "B a1" / "B PASS"
            self._vertex[action] = "pass" if text.upper() == "PASS" else text.lower()
        self._action = {v: a for a, v in self._vertex.items()}

    def resized(self, size: int, komi: float | None = None) -> GtpBoard:
        """The same game at another size (and komi, for Go)."""
        params = dict(self.game.get_parameters())
        if self.kind == "go":
            params["board_size"] = size
            if komi is not None:
                params["komi"] = float(komi)
        else:
            params.update(board_size=size, num_rows=size, num_cols=size)
        return GtpBoard(pyspiel.load_game(self.kind, params))

    def vertex(self, action: int) -> str:
        """GTP's name of an action: `D4` for Go (upper case, as GUIs print it), `d4` for Hex."""
        text = self._vertex[int(action)]
        return text.upper() if self.kind == "go" and text != "pass" else text

    def action(self, vertex: str) -> int | None:
        """The action a vertex names (any case), None if it names none on this board."""
        return self._action.get(vertex.strip().lower())

    def score(self, state) -> float:
        """Black's Tromp-Taylor score minus komi (Go): OpenSpiel's scoring rule."""
        return tromp_taylor_score(board_rows(state, self.size), self.komi)
