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
    # Gumbel root: Gumbel-Top-k and Sequential Halving (Gumbel paper, Algorithm 2),
    # pUCT (`selection`) below the root; pi' (Eq. 11) is the target, A_{n+1} the move.
    "gumbel": 1,
    # As "gumbel", and the deterministic non-root selection of Eq. 14 below the root.
    "full_gumbel": 2,
}

# The selection-rule code of Eq. 14 (full_gumbel below the root); not a `selection` name.
GUMBEL_INTERIOR_RULE = 2

# How a Gumbel search maps completed Q-values into [0, 1] before sigma (Eq. 8).
GUMBEL_Q_NORMALISATIONS = {
    # Known value bounds (value_min, value_max): board games with returns in [-1, 1].
    "bounds": 0,
    # Per node, min-max over the visited children's Q and v_mix (Gumbel paper,
    # Section 7: the range includes the value estimate): unbounded values.
    "minmax": 1,
    # Per node, min-max over the completed Q of every action, illegal ones
    # included (they hold v_mix): mctx's qtransform_completed_by_mix_value.
    "completed_minmax": 2,
    # Min-max over the whole tree so far (MuZero's Eq. 5 statistics; Gumbel paper,
    # Appendix F: "Inside the tree search, the Q-values are normalized"), widened
    # by the node's Q and v_mix: a Q gap that is small next to the values the tree
    # has seen stays a small sigma gap, where per-node min-max makes any gap full.
    "tree": 3,
}

# The policy loss a Gumbel search's target gives the AlphaZero/MuZero cross-entropy.
GUMBEL_POLICY_LOSSES = {
    # KL(pi', pi) with pi' = softmax(logits + sigma(completed Q)) (Eq. 11-12).
    "kl": 0,
    # -log pi(A_{n+1}): a one-hot target on the action Sequential Halving chose (Eq. 9).
    "simple": 1,
}

# How a chance node's value is backed up (games with dice; AlphaZero's simulator).
CHANCE_BACKUPS = {
    # The sampled outcome's return, averaged like any node's (NMCTS / McGammon).
    "sample": 0,
    # The probability-weighted mean of the expanded outcomes' Q (expectimax).
    "expectation": 1,
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
    # Gumbel search (kind "gumbel"/"full_gumbel"); the Gumbel paper's defaults.
    max_considered_actions: int = 16  # m = min(n, this, #legal) (Section 3.4, Appendix F)
    c_visit: float = 50.0  # sigma, Eq. 8
    c_scale: float = 1.0  # sigma, Eq. 8 (0.1 on Atari, Section 7)
    gumbel_scale: float = 1.0  # Gumbel noise with add_noise (self-play)
    eval_gumbel_scale: float = 0.0  # without add_noise (evaluation: Appendix F, Fig. 8b)
    gumbel_q_normalisation: str = "bounds"
    policy_loss: str = "kl"
    chance_backup: str = "sample"

    def __post_init__(self):
        if self.num_simulations < 1:
            raise ValueError("num_simulations must be at least 1")
        for name, table in (
            ("kind", SEARCH_KINDS),
            ("selection", SELECTION_RULES),
            ("q_normalisation", Q_NORMALISATIONS),
            ("unvisited_q", UNVISITED_Q),
            ("gumbel_q_normalisation", GUMBEL_Q_NORMALISATIONS),
            ("policy_loss", GUMBEL_POLICY_LOSSES),
            ("chance_backup", CHANCE_BACKUPS),
        ):
            if getattr(self, name) not in table:
                raise ValueError(f"{name} must be one of {sorted(table)}, not {getattr(self, name)!r}")
        if not self.value_max > self.value_min:
            raise ValueError("value_max must exceed value_min")
        if not 0.0 <= self.dirichlet_fraction <= 1.0:
            raise ValueError("dirichlet_fraction must lie in [0, 1]")
        if self.dirichlet_alpha <= 0:
            raise ValueError("dirichlet_alpha must be positive")
        if self.max_considered_actions < 1:
            raise ValueError("max_considered_actions must be at least 1")
        for name in ("c_visit", "c_scale", "gumbel_scale", "eval_gumbel_scale"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative")

    @property
    def codes(self) -> tuple[int, int, int]:
        """(selection rule, Q normalisation, unvisited Q) codes for the kernels; below
        a full_gumbel root the rule is Eq. 14."""
        rule = GUMBEL_INTERIOR_RULE if self.kind == "full_gumbel" else SELECTION_RULES[self.selection]
        return (
            rule,
            Q_NORMALISATIONS[self.q_normalisation],
            UNVISITED_Q[self.unvisited_q],
        )

    @property
    def chance_code(self) -> int:
        return CHANCE_BACKUPS[self.chance_backup]

    @property
    def gumbel_norm(self) -> int:
        return GUMBEL_Q_NORMALISATIONS[self.gumbel_q_normalisation]
