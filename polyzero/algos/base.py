"""What the training runtime and the evaluators ask of an algorithm.

An algorithm wires a network, a search and a target recipe. The runtime
(in-process or Ray) only talks to this interface, never to a specific
algorithm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from ..search.mcts import SearchHooks, SearchResult
from ..search.params import SearchParams


@dataclass
class Trajectory:
    """One finished self-play game, as recorded by an actor."""

    observations: list = field(default_factory=list)  # encoded obs, one per decision
    policies: list = field(default_factory=list)  # search policy targets pi_t
    players: list = field(default_factory=list)  # who moved at t
    actions: list = field(default_factory=list)
    legal: list = field(default_factory=list)  # bool [A] legal-action masks at t
    root_values: list = field(default_factory=list)
    returns_before: list = field(default_factory=list)  # mover's return so far at t
    returns: np.ndarray | None = None  # final returns, one per player (None: unfinished)
    ended: bool = False  # the game reached a terminal state (False: cut at selfplay.max_moves)
    samples: int | None = None  # an unfinished chunk: only its first `samples` positions are samples
    # KataGo's playout cap randomization: False where position t had a cheap search
    # (empty: every search was full).
    full_search: list = field(default_factory=list)
    # The chance events played after the move at t, in order, each (outcome, ((outcome,
    # probability), ...)) as the game gave them (NDMZ's targets read these; others ignore them).
    chance: list = field(default_factory=list)
    # The encoded final position of a finished game, where the algorithm asks for it
    # (`records_final_observation`; MuZero's muzero.consistency_terminal).
    final_observation: np.ndarray | None = None

    _FIELDS = ("observations", "policies", "players", "actions", "legal", "root_values", "returns_before")

    def split_chunk(self, length: int, overlap: int) -> Trajectory:
        """An unfinished episode's first `length` positions as a chunk (MuZero Appendix D),
        with `overlap` more positions of look-ahead for its targets; the chunk's
        positions are then dropped from this trajectory."""
        chunk = Trajectory(samples=length)
        for name in self._FIELDS:
            values = getattr(self, name)
            setattr(chunk, name, values[: length + overlap])
            setattr(self, name, values[length:])
        return chunk


class Algorithm(Protocol):
    """Besides these methods, an algorithm may declare what the runtime reads when present
    (`polyzero.train.sources`; docs/adding_an_algorithm.md): `data_sources(cfg)`, a static
    method naming the data sources beyond self-play its config asks for (MuZero's
    "reanalyse"); `acting_temperature(step)`, self-play's temperature schedule; and
    `unroll_steps`, the steps its learned model unrolls (`polyzero probe` reads it)."""

    name: str

    def build_network(self) -> torch.nn.Module: ...

    def make_evaluator(self, net: torch.nn.Module, device, selfplay: bool = False):
        """What searches call the network through; `selfplay`: for self-play's batched
        searches (an algorithm may run those differently, e.g. AlphaZero's
        `net.winograd = "auto"`), else for evaluation, play and engines."""

    def search(
        self,
        evaluate,
        states: Sequence,
        params: SearchParams,
        rng: np.random.Generator,
        add_noise: bool,
        hooks: SearchHooks | None = None,
    ) -> SearchResult:
        """One batched search from `states` (root noise with `add_noise`); `hooks` adds
        root actions (KataGo's forced playouts) and an engine's clock
        (:class:`~polyzero.search.mcts.SearchHooks`)."""

    def encode(self, states: Sequence) -> np.ndarray: ...

    def example_specs(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]: ...

    def make_replay(self): ...

    def trajectory_examples(self, trajectory: Trajectory) -> dict[str, np.ndarray]: ...

    def loss(self, net: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict]: ...
