"""polyzero.games: load OpenSpiel games, check what an algorithm supports, encode states.

The bottom layer: it depends on pyspiel and numpy only.
"""

from polyzero.games.capabilities import GameRequirements, check_supported, describe_game
from polyzero.games.chance import sample_chance
from polyzero.games.conformance import ConformanceReport, check_game
from polyzero.games.encoders import ObservationEncoder, legal_action_mask
from polyzero.games.loader import game_spec_string, load_game, parse_game_spec
from polyzero.games.registry import register_polyzero_games

__all__ = [
    "ConformanceReport",
    "GameRequirements",
    "ObservationEncoder",
    "check_game",
    "check_supported",
    "describe_game",
    "game_spec_string",
    "legal_action_mask",
    "load_game",
    "parse_game_spec",
    "register_polyzero_games",
    "sample_chance",
]
