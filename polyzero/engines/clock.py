"""Time controls: how many seconds a move may take, from GTP's or UCI's clock.

GTP (version 2, section 4.2): main time, then Canadian byo-yomi (`byo_yomi_stones` moves
in each `byo_yomi_time` period); byo_yomi_time 0 is absolute time, and
byo_yomi_time > 0 with byo_yomi_stones = 0 means no time limit. `time_left` reports the
time left and, in byo-yomi, the stones left in the period (0 while in main time).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GtpClock", "uci_move_seconds", "MOVE_OVERHEAD"]

MOVE_OVERHEAD = 0.1  # seconds kept back for the protocol and the operating system
MOVES_AHEAD = 20  # main time is spread over at least this many more own moves


@dataclass
class GtpClock:
    main: float | None = None  # None: no time limit
    byo_time: float = 0.0
    byo_stones: int = 0
    left: dict | None = None  # colour -> (seconds left, stones left in the period)

    def settings(self, main: float, byo_time: float, byo_stones: int) -> None:
        self.left = None
        if byo_time > 0 and byo_stones == 0:
            self.main = None  # GTP: no time limit
        else:
            self.main, self.byo_time, self.byo_stones = main, byo_time, byo_stones

    def time_left(self, player: int, seconds: float, stones: int) -> None:
        self.left = dict(self.left or {})
        self.left[player] = (seconds, stones)

    def move_seconds(self, player: int, moves_ahead: int) -> float | None:
        """Seconds for this move, None without a time limit."""
        if self.main is None:
            return None
        seconds, stones = (self.left or {}).get(player, (self.main, 0))
        if self.main == 0 and not (self.left and player in self.left):
            seconds, stones = self.byo_time, self.byo_stones  # byo-yomi from the start
        if stones > 0:  # in a byo-yomi period: share it evenly
            budget = seconds / stones
        else:
            budget = seconds / max(MOVES_AHEAD, moves_ahead)
            if self.byo_stones > 0:
                budget += self.byo_time / self.byo_stones
        return max(0.0, min(budget, seconds) - MOVE_OVERHEAD)


def uci_move_seconds(
    time_left: float, increment: float, moves_to_go: int | None, overhead: float = MOVE_OVERHEAD
) -> float:
    """A move's share of a UCI clock: time left over the moves to the next control
    (MOVES_AHEAD when the GUI does not say) plus most of the increment, never more
    than half the time left."""
    budget = time_left / max(1, moves_to_go or MOVES_AHEAD) + 0.8 * increment
    return max(0.0, min(budget, time_left / 2) - overhead)
