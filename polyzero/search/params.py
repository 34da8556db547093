"""Search settings, as plain data the kernels can read.

The selection rule and the Q normalisation are pluggable by name; the kernels
receive them as small integer codes (Numba dispatches on those without a
Python call per node).
"""

from __future__ import annotations

from dataclasses import dataclass

# Search kinds: how the root is searched and what the search returns.
SEARCH_KINDS = {
    # pUCT at every node; visit counts give the policy target and the move.
    "puct": 0,
}

# Selection rules.
SELECTION_RULES = {
    # MuZero Eq. 2: Q + P * sqrt(N) / (1 + N(a)) * (c1 + log((N + c2 + 1) / c2)).
    "muzero": 0,
    # AlphaZero (Go-Exploit paper, Section 2): Q + c_puct * P * sqrt(N) / (1 + N(a)).
    "alphazero": 1,
}

# Q normalisation before the rule is applied.
Q_NORMALISATIONS = {
    # Known value bounds, e.g. [-1, 1] for board games, mapped to [0, 1].
    "bounds": 0,
    # Min-max over every Q backed up in this tree so far (MuZero Eq. 5).
    "minmax": 1,
    # Min-max over the parent's value and its visited children's Q (as mctx's
    # qtransform_by_parent_and_siblings does).
    "parent_siblings": 2,
}

# The Q an unvisited child is given before normalisation (a stated choice).
UNVISITED_Q = {
    # The lowest value: normalised Q = 0 (MuZero's pseudocode and mctx).
    "min": 0,
    # A raw Q of 0, i.e. a draw in a [-1, 1] game (AlphaZero's initial Q(s, a) = 0).
    "zero": 1,
    # The parent's current mean value ("first-play urgency" = parent value).
    "parent": 2,
}


@dataclass(frozen=True)
class SearchParams:
    """Everything the batched search needs to know besides the model."""

    num_simulations: int = 100
    kind: str = "puct"
    selection: str = "alphazero"
    c_puct: float = 1.0  # alphazero rule (Go-Exploit Table 6: 1.0 on Connect Four)
    c1: float = 1.25  # muzero rule (MuZero Appendix B)
    c2: float = 19652.0
    q_normalisation: str = "bounds"
    value_min: float = -1.0
    value_max: float = 1.0
    unvisited_q: str = "zero"
    dirichlet_alpha: float = 1.0  # Go-Exploit Table 6 (Connect Four)
    dirichlet_fraction: float = 0.25  # epsilon
    discount: float = 1.0

    def __post_init__(self):
        if self.num_simulations < 1:
            raise ValueError("num_simulations must be at least 1")
        for name, table in (
            ("kind", SEARCH_KINDS),
            ("selection", SELECTION_RULES),
            ("q_normalisation", Q_NORMALISATIONS),
            ("unvisited_q", UNVISITED_Q),
        ):
            if getattr(self, name) not in table:
                raise ValueError(f"{name} must be one of {sorted(table)}, not {getattr(self, name)!r}")
        if not self.value_max > self.value_min:
            raise ValueError("value_max must exceed value_min")
        if not 0.0 <= self.dirichlet_fraction <= 1.0:
            raise ValueError("dirichlet_fraction must lie in [0, 1]")
        if self.dirichlet_alpha <= 0:
            raise ValueError("dirichlet_alpha must be positive")

    @property
    def codes(self) -> tuple[int, int, int]:
        return (
            SELECTION_RULES[self.selection],
            Q_NORMALISATIONS[self.q_normalisation],
            UNVISITED_Q[self.unvisited_q],
        )
