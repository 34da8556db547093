"""Match scores and their confidence intervals."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

__all__ = ["wilson_interval", "MatchResult"]

Z95 = 1.959963984540054


def wilson_interval(score: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a fraction `score` observed over `n` games.

    Chosen over the normal interval because it stays inside [0, 1] and is sensible
    at scores of 0 or 1, which short evaluations against weak opponents often give.
    """
    if n <= 0:
        return (0.0, 1.0)
    z2 = z * z
    denom = 1 + z2 / n
    centre = (score + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(score * (1 - score) / n + z2 / (4 * n * n), 0.0)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class MatchResult:
    """Outcome counts from player A's view; score = (W + D/2) / N with a Wilson 95% CI."""

    wins: int
    draws: int
    losses: int
    games: int | None = None  # derived from the counts; checked if given
    name_a: str = "A"
    name_b: str = "B"
    score: float = field(init=False)
    ci_low: float = field(init=False)
    ci_high: float = field(init=False)

    def __post_init__(self):
        total = self.wins + self.draws + self.losses
        if self.games is not None and self.games != total:
            raise ValueError(f"games={self.games} but W + D + L = {total}")
        self.games = total
        self.score = (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0
        self.ci_low, self.ci_high = wilson_interval(self.score, self.games)

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"{self.name_a} vs {self.name_b}: {self.score:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] "
            f"(W {self.wins} D {self.draws} L {self.losses}, {self.games} games)"
        )
