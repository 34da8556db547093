"""Evaluation: reference players, batched arena, scores with confidence intervals, plots, play."""

from .arena import play_match, play_single_agent
from .auc import learning_curve_auc, windowed_win_rates
from .elo import EloFit, fit_elo, ratings_table
from .ladder import LADDER_MULTIPLIERS, ladder_specs
from .play import play_in_terminal
from .players import MCTSPlayer, Player, RandomPlayer, make_player, reference_player, register_player_loader
from .plot import plot_run, plot_runs
from .stats import MatchResult, wilson_interval

__all__ = [
    "Player",
    "RandomPlayer",
    "MCTSPlayer",
    "reference_player",
    "register_player_loader",
    "make_player",
    "wilson_interval",
    "MatchResult",
    "play_match",
    "play_single_agent",
    "LADDER_MULTIPLIERS",
    "ladder_specs",
    "plot_run",
    "plot_runs",
    "play_in_terminal",
    "learning_curve_auc",
    "windowed_win_rates",
    "EloFit",
    "fit_elo",
    "ratings_table",
]
