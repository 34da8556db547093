"""Search settings: the ``[search]`` section of a run's config, and the constants the
kernels read.

The selection rule and the Q normalisation are pluggable by name; the kernels
receive them as small integer codes in one :class:`Rules` tuple (Numba
dispatches on those without a Python call per node). :class:`SearchParams`
holds every key's default and validation, so that it can serve as the config
section itself.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import UsageError

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
# The selection-rule code of NDMZ's search (Appendix A): pUCT on raw Q at choice nodes,
# visit counts of backups only; chosen by a model whose tree is NDMZ's (`ndmz_tree`).
NDMZ_RULE = 3

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


class Rules(NamedTuple):
    """The constants of one search, as the kernels read them (see :meth:`SearchParams.rules`)."""

    rule: int  # SELECTION_RULES code, GUMBEL_INTERIOR_RULE or NDMZ_RULE
    norm: int  # Q_NORMALISATIONS code
    unvisited: int  # UNVISITED_Q code
    c_puct: float
    c1: float
    c2: float
    vmin: float
    vmax: float
    gumbel_norm: int  # GUMBEL_Q_NORMALISATIONS code
    c_visit: float
    c_scale: float
    chance_backup: int  # CHANCE_BACKUPS code


@dataclass(frozen=True)
class SearchParams:
    """Everything a search needs to know besides the model: the ``[search]`` section of a
    run's config (every key, its default and its validation live here). Defaults:
    Go-Exploit Table 6 (Connect Four) for AlphaZero; MuZero Appendix B for c1, c2; the
    Gumbel paper's for the Gumbel keys."""

    num_simulations: int = 100  # Go-Exploit Table 4
    kind: str = "puct"  # how the root is searched (SEARCH_KINDS)
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
    discount: float = 1.0  # the simulator's gamma on every edge (AlphaZero mode)
    # Gumbel search (kind "gumbel"/"full_gumbel"); the Gumbel paper's defaults. Gumbel
    # roots ignore the Dirichlet keys (Appendix F: no Dirichlet noise).
    max_considered_actions: int = 16  # m = min(n, this, #legal) (Section 3.4, Appendix F)
    c_visit: float = 50.0  # sigma, Eq. 8
    c_scale: float = 1.0  # sigma, Eq. 8 (0.1 on Atari, Section 7)
    gumbel_scale: float = 1.0  # Gumbel noise with add_noise (self-play)
    eval_gumbel_scale: float = 0.0  # without add_noise (evaluation: Appendix F, Fig. 8b)
    # Q normalisation before sigma (GUMBEL_Q_NORMALISATIONS).
    gumbel_q_normalisation: str = "bounds"
    policy_loss: str = "kl"  # "kl": pi' target (Eq. 12); "simple": one-hot A_{n+1} (Eq. 9)
    chance_backup: str = "sample"  # chance nodes: "sample" (sampled returns) or "expectation"
    # Leaves of one tree evaluated per network call, selected with virtual loss (KataGo,
    # lc0); 1 is the sequential search. Only kind "puct" (see docs/architecture.md).
    leaf_batch: int = 1

    def __post_init__(self):
        self.validate()

    def validate(self) -> SearchParams:
        """Raise UsageError naming the first bad key (`search.KEY ...`)."""
        _positive("num_simulations", self.num_simulations)
        _positive("leaf_batch", self.leaf_batch)
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
                raise UsageError(
                    f"search.{name} must be one of {', '.join(sorted(table))}, not {getattr(self, name)!r}"
                )
        for name in ("c_puct", "c1", "c2", "dirichlet_alpha", "max_considered_actions"):
            _positive(name, getattr(self, name))
        for name in ("c_visit", "c_scale", "gumbel_scale", "eval_gumbel_scale"):
            _positive(name, getattr(self, name), allow_zero=True)
        if not 0.0 <= self.dirichlet_fraction <= 1.0:
            raise UsageError(f"search.dirichlet_fraction must lie in [0, 1], not {self.dirichlet_fraction}")
        if not (math.isfinite(self.value_min) and math.isfinite(self.value_max)):
            raise UsageError("search.value_min and search.value_max must be finite")
        if not self.value_max > self.value_min:
            raise UsageError("search.value_max must be greater than search.value_min")
        if not (math.isfinite(self.discount) and 0.0 <= self.discount <= 1.0):
            raise UsageError(f"search.discount must lie in [0, 1], not {self.discount}")
        if self.leaf_batch > 1 and self.kind != "puct":
            raise UsageError(
                f'search.leaf_batch = {self.leaf_batch} needs search.kind "puct", not {self.kind!r}: '
                "Sequential Halving chooses each simulation's root action from the visits of "
                "the simulations before it"
            )
        return self

    def params(self, num_simulations: int | None = None, discount: float | None = None) -> SearchParams:
        """These settings with another simulation budget or discount (what a config
        section's `params()` gives the actors)."""
        changes: dict[str, Any] = {}
        if num_simulations is not None:
            changes["num_simulations"] = num_simulations
        if discount is not None:
            changes["discount"] = discount
        return dataclasses.replace(self, **changes) if changes else self

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

    def rules(self, ndmz_tree: bool = False) -> Rules:
        """The kernels' constants; `ndmz_tree`: the model's tree is NDMZ's (Appendix A)."""
        rule, norm, unvisited = self.codes
        return Rules(
            NDMZ_RULE if ndmz_tree else rule,
            norm,
            unvisited,
            float(self.c_puct),
            float(self.c1),
            float(self.c2),
            float(self.value_min),
            float(self.value_max),
            self.gumbel_norm,
            float(self.c_visit),
            float(self.c_scale),
            self.chance_code,
        )

    @property
    def chance_code(self) -> int:
        return CHANCE_BACKUPS[self.chance_backup]

    @property
    def gumbel_norm(self) -> int:
        return GUMBEL_Q_NORMALISATIONS[self.gumbel_q_normalisation]


def _positive(name: str, value, allow_zero: bool = False) -> None:
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"search.{name} must be {'non-negative' if allow_zero else 'positive'}, not {value}")
