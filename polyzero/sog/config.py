"""Student of Games' config section `[sog]` (registered on the run config through
`polyzero.plugins.CONFIG_SECTIONS`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyspiel

from ..config import ConfigSection
from ..games.loader import registered_type
from ..validation import fraction as _fraction, positive as _positive


@dataclass
class SoGConfig:
    """Student of Games training (docs/student_of_games.md, part 2). The paper's
    Scotland Yard settings where they fit (the learning rate, the loss weights); the
    per-step work is the in-process round-robin of actors, solvers and learner."""

    simulations: int = 20  # s of the self-play searches, SoG(s, c)
    expansions_per_update: float = 1.0  # c
    max_depth: int = 0  # depth limit of every search (0: none)
    solve_simulations: int = 20  # s_solve of the query solver
    solve_expansions_per_update: float = 1.0  # c_solve
    q_search: float = 0.3  # probability a search's network query enters the query buffer
    q_recursive: float = 0.1  # the same for the solver's own queries
    p_td: float = 0.5  # probability a main-line state's value target is the outcome (else solved)
    episodes_per_step: int = 2  # self-play games per learning step (round-robin)
    solves_per_step: int = 8  # queries solved per learning step
    # The step's solves advanced together, each CFR iteration's leaves of all of them in
    # one network call (polyzero/sog/lockstep.py); false: one solve after another.
    # Under Ray each solver actor advances its share of the step's queries the same way.
    solve_together: bool = True
    query_buffer: int = 10_000  # queries waiting; the oldest are dropped beyond it
    max_updates: int = 5  # minibatches an example may be used in
    value_weight: float = 1.0
    policy_weight: float = 0.05  # the paper's policy loss weight
    lr_halve_every: int = 0  # learning steps between halvings of the learning rate (0: never)
    eval_simulations: int = 100  # s_eval of SoG(s_eval, 1) in periodic evaluation
    eval_seeds: int = 3  # seeds of the exploitability evaluation

    def validate(self):
        for k in (
            "simulations",
            "solve_simulations",
            "max_depth",
            "episodes_per_step",
            "solves_per_step",
            "lr_halve_every",
            "eval_simulations",
        ):
            _positive(f"sog.{k}", getattr(self, k), allow_zero=True)
        for k in (
            "expansions_per_update",
            "solve_expansions_per_update",
            "query_buffer",
            "max_updates",
            "eval_seeds",
            "value_weight",
        ):
            _positive(f"sog.{k}", getattr(self, k))
        _positive("sog.policy_weight", self.policy_weight, allow_zero=True)
        for k in ("q_search", "q_recursive", "p_td"):
            _fraction(f"sog.{k}", getattr(self, k))

    def search_settings(self, solver: bool = False):
        from .gtcfr import SoGSettings

        return SoGSettings(
            simulations=self.solve_simulations if solver else self.simulations,
            expansions_per_update=(self.solve_expansions_per_update if solver else self.expansions_per_update),
            max_depth=self.max_depth or None,
        )


def unread(cfg) -> dict[str, str]:
    """The common keys Student of Games' runtime does not read, the halving a
    learning-rate schedule would overwrite at every update, and on imperfect-information
    games the arena's evaluation keys (its evaluation there is exploitability)."""
    unread = {
        "train.positions_per_step": "a Student of Games learning step plays sog.episodes_per_step games",
        "net.inference": "the CVPN runs in eager PyTorch",
    }
    if cfg.train.lr_schedule != "constant":
        unread["sog.lr_halve_every"] = f"train.lr_schedule = {cfg.train.lr_schedule!r} sets the rate at every update"
    unread["eval.sample_moves"] = "the SoG agent plays its re-solved policy at every move"
    game_type = registered_type(cfg.game)
    if game_type is not None and game_type.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        why = f"on {cfg.game} Student of Games is evaluated by exploitability (sog.eval_seeds), not by games"
        keys = ("games", "opponents", "simulations", "high_opponents", "high_every")  # final_games = 0: none
        unread.update({f"eval.{key}": why for key in keys})
    return unread


SECTION = ConfigSection("sog", SoGConfig, algos=("sog",), unread=unread)
