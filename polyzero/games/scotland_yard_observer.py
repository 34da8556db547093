"""What each side of Scotland Yard sees: observation and information-state tensors
and strings (OpenSpiel's PyObserver interface) for `polyzero.games.scotland_yard`.

The detectives hold no private information: their view is the public view. Mr X
sees everything: his station, and with ``mrx_recall=path`` his whole path (his
start too when it was dealt); with ``mrx_recall=station`` his information state
is the public history and his station.
"""

from __future__ import annotations

import numpy as np
import pyspiel

from .scotland_yard_maps import MRX
from .scotland_yard_render import board_string


def public_history_string(state) -> str:
    """Everything public so far, in order: the start cards dealt face up, Mr X's
    tickets (and reveals), detectives' moves, and the end of the game (a capture,
    or Mr X stuck, is seen by all)."""
    return " ".join(state.public_events) or "start"


class ScotlandYardObserver:
    """Observation and information-state tensors and strings (PyObserver interface).

    Who sees Mr X: player 0 with private_info=SINGLE_PLAYER, and everyone with
    ALL_PLAYERS. The detectives have no private information, so their view is the
    public view (private_info=NONE). perfect_recall adds the whole history.
    """

    def __init__(self, rules, iig_obs_type, params):
        if params:
            raise ValueError(f"scotland_yard: observation parameters not supported; passed {params}")
        self.rules = rules
        self.private = iig_obs_type.private_info
        self.public = iig_obs_type.public_info
        self.recall = iig_obs_type.perfect_recall
        n, d, rounds = rules.num_stations, rules.num_detectives, rules.rounds
        dealt_mrx = rules.mrx_start == 0
        pieces = []
        if self.public:
            pieces += [
                ("to_move", 2 + d, (2 + d,)),  # Mr X, detective 1..d, inside a double move
                ("round", rounds + 1, (rounds + 1,)),
                ("detective_positions", d * n, (d, n)),
                ("detective_tickets", d * 3, (d, 3)),
                ("mrx_tickets", 5, (5,)),
                ("mrx_ticket_log", rounds * 5, (rounds, 5)),  # ticket one-hot, then "first of a double"
                ("last_revealed", n, (n,)),
            ]
            if self.recall:
                if rules.deal_detectives:
                    pieces.append(("detective_starts", d * n, (d, n)))
                pieces += [
                    ("revealed_log", rounds * n, (rounds, n)),
                    ("detective_move_log", rounds * d * (4 + n), (rounds, d, 4 + n)),
                ]
        if self.private != pyspiel.PrivateInfoType.NONE:
            pieces.append(("mrx_position", n, (n,)))
            if self.recall and not rules.station_recall:
                if dealt_mrx:
                    pieces.append(("mrx_start", n, (n,)))
                pieces.append(("mrx_path", rounds * n, (rounds, n)))
        self.tensor = np.zeros(sum(size for _, size, _ in pieces), np.float32)
        self.dict = {}
        start = 0
        for name, size, shape in pieces:
            self.dict[name] = self.tensor[start : start + size].reshape(shape)
            start += size

    def _sees_mrx(self, player: int) -> bool:
        return self.private == pyspiel.PrivateInfoType.ALL_PLAYERS or (
            self.private == pyspiel.PrivateInfoType.SINGLE_PLAYER and player == MRX
        )

    def set_from(self, state, player: int):
        self.tensor.fill(0)
        t = self.dict
        if self.public:
            self._set_public(state, t)
        if "mrx_position" in t and self._sees_mrx(player) and state.mrx:
            t["mrx_position"][state.mrx - 1] = 1
            if "mrx_start" in t:
                t["mrx_start"][state.mrx_first - 1] = 1
            if "mrx_path" in t:
                for i, (_, station, _, _) in enumerate(state.log):
                    t["mrx_path"][i, station - 1] = 1

    def _set_public(self, state, t) -> None:
        if state.winner is None and not state.dealing:
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
            if "detective_starts" in t:
                for k, station in enumerate(state.start_detectives):
                    t["detective_starts"][k, station - 1] = 1
            for i, moves in enumerate(state.det_moves):
                for k, move in enumerate(moves):
                    if move is not None:
                        t["detective_move_log"][i, k, move[0]] = 1
                        t["detective_move_log"][i, k, 4 + move[1] - 1] = 1

    def string_from(self, state, player: int) -> str:
        sees = self._sees_mrx(player) and self.private != pyspiel.PrivateInfoType.NONE
        parts = []
        if self.public:
            if self.recall:
                parts.append(public_history_string(state))
            else:  # the board drawn from this view (what `polyzero play` shows a player)
                return board_string(state, show_mrx=sees)
        if sees and state.mrx:
            if not self.recall or self.rules.station_recall:
                parts.append(f"X@{state.mrx}")
            else:
                start = f"{state.mrx_first}:" if self.rules.mrx_start == 0 else ""
                parts.append("Xpath:" + start + ",".join(str(s) for _, s, _, _ in state.log))
        return " ".join(parts)
