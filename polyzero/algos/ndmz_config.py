"""Nondeterministic MuZero's config section `[ndmz]` (registered on the run config through
`polyzero.plugins.CONFIG_SECTIONS`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..config import ConfigSection
from ..validation import positive as _positive


@dataclass
class NDMZConfig:
    """Nondeterministic MuZero (docs/ndmz.md): defaults from the NDMZ paper, Section 4.2."""

    unroll_steps: int = 6  # K
    hidden_size: int = 128  # size of the hidden state (MLP towers take net.width and net.layers)
    c_puct: float = 1.25  # the constant of pUCT among result nodes (Appendix A)
    # n > 0: value targets bootstrap from the search value n choice steps on (MuZero's
    # n-step z_t; polyzero/replay/ndmz.py, NDMZReplay.bootstrapped); 0: the final outcome
    td_steps: int = 0

    def validate(self):
        _positive("ndmz.unroll_steps", self.unroll_steps)
        _positive("ndmz.hidden_size", self.hidden_size)
        _positive("ndmz.c_puct", self.c_puct)
        _positive("ndmz.td_steps", self.td_steps, allow_zero=True)


# The [search] keys Appendix A's search reads (leaf_batch only as 1: NDMZ refuses more).
SEARCH_KEYS_READ = ("num_simulations", "dirichlet_alpha", "dirichlet_fraction", "leaf_batch")


def unread(cfg) -> dict[str, str]:
    """The keys an NDMZ run accepts but does not read: its search has one root (pUCT among
    result nodes) and its own constant, and its replay no board symmetries."""
    why = (
        "Appendix A's search reads only search.num_simulations and search.dirichlet_* "
        "(its pUCT constant is ndmz.c_puct)"
    )
    keys = {f"search.{f.name}": why for f in dataclasses.fields(cfg.search) if f.name not in SEARCH_KEYS_READ}
    return {**keys, "train.symmetries": "NDMZ's replay stores no board symmetries"}


SECTION = ConfigSection("ndmz", NDMZConfig, algos=("ndmz",), unread=unread)
