"""Which game classes an algorithm supports, and a one-line refusal when not."""

from __future__ import annotations

from dataclasses import dataclass

import pyspiel

from polyzero.errors import UsageError
from polyzero.games.loader import game_spec_string

_GT = pyspiel.GameType


@dataclass(frozen=True)
class GameRequirements:
    """What an algorithm can cope with. Defaults: deterministic, perfect-information,
    sequential, one or two players, zero-sum when two-player."""

    chance_nodes: bool = False  # explicit chance nodes in the game tree
    sampled_stochastic: bool = False  # randomness inside the environment, no chance nodes (gymnasium, minatar)
    imperfect_information: bool = False
    simultaneous_moves: bool = False
    max_players: int = 2
    single_player: bool = True  # single-player games allowed
    zero_sum_required: bool = True  # two-player games must be zero- (or constant-) sum
    terminal_rewards_only: bool = False  # refuse games with intermediate rewards
    observation_tensor: bool = True  # the game must provide an observation tensor (networks read it)


def _missing(game: pyspiel.Game, req: GameRequirements) -> list[str]:
    """Clauses (after "it ...") naming each capability the game needs but req lacks."""
    gt = game.get_type()
    n = game.num_players()
    out = []
    if gt.dynamics == _GT.Dynamics.SIMULTANEOUS and not req.simultaneous_moves:
        out.append("has simultaneous moves")
    if gt.information != _GT.Information.PERFECT_INFORMATION and not req.imperfect_information:
        out.append("has imperfect information")
    if gt.chance_mode == _GT.ChanceMode.SAMPLED_STOCHASTIC:
        if not req.sampled_stochastic:
            out.append("is a stochastic environment that cannot be stepped inside a search")
    elif gt.chance_mode != _GT.ChanceMode.DETERMINISTIC and not req.chance_nodes:
        out.append("has chance nodes")
    if n > req.max_players:
        out.append(f"has {n} players (at most {req.max_players} supported)")
    if n == 1 and not req.single_player:
        out.append("is single-player")
    zero_sum = gt.utility in (_GT.Utility.ZERO_SUM, _GT.Utility.CONSTANT_SUM)
    if n == 2 and req.zero_sum_required and not zero_sum:
        out.append(f"is not zero-sum ({gt.utility.name.lower()})")
    if req.terminal_rewards_only and gt.reward_model != _GT.RewardModel.TERMINAL:
        out.append("has intermediate rewards")
    if req.observation_tensor and not gt.provides_observation_tensor:
        out.append("provides no observation tensor")
    return out


def check_supported(game: pyspiel.Game, req: GameRequirements, algo_name: str, why: str = "") -> None:
    """Raise UsageError, one line, naming what `game` needs that `algo_name` lacks
    (`why`, if given, is appended: what the command assumes)."""
    from .sanity import over_before_anyone_moves

    # Two-player games only: an environment's new state would draw from its episode seeds.
    if game.num_players() > 1 and over_before_anyone_moves(game):
        raise UsageError(f"{algo_name} cannot use {game_spec_string(game)!r}: the game is over before anyone moves")
    missing = _missing(game, req)
    if not missing:
        return
    first, rest = missing[0], missing[1:]
    # "it has X (and Y, Z)": drop the repeated verb in the parenthesis to read naturally.
    rest = [r.removeprefix("has ") for r in rest]
    extra = f" (and {', '.join(rest)})" if rest else ""
    raise UsageError(f"{algo_name} does not support {game_spec_string(game)!r}: it {first}{extra}{why}")


# What a match scores: one seat's win, draw or loss against the other, so the game must be
# two-player, zero-sum (what one wins the other loses) and sequential (one seat moves at a
# time: a joint action of a simultaneous-move game would have to be picked for someone).
# Chance and hidden information are fine; players that would read what their seat cannot
# observe are refused by `check_player_view`.
MATCH = GameRequirements(chance_nodes=True, imperfect_information=True, single_player=False, observation_tensor=False)


def check_match_game(game: pyspiel.Game, command: str) -> None:
    """Refuse, in one line, a game that is not two-player zero-sum sequential: every command
    that plays one seat against another (arena, ladder, tournament, play, serve,
    exploitability, a run's evaluation) calls this."""
    n = game.num_players()
    if n == 1:  # _missing says "is single-player" only where single players are refused
        raise UsageError(
            f"{command} does not support {game_spec_string(game)!r}: it is single-player (a match needs two seats)"
        )
    check_supported(
        game, MATCH, command, why=f"; {command} needs a two-player zero-sum game where one player moves at a time"
    )


def perfect_information(game: pyspiel.Game) -> bool:
    return game.get_type().information == _GT.Information.PERFECT_INFORMATION


# Players that act on the information state only; anything else (OpenSpiel's MCTS, a learned
# AlphaZero/MuZero agent, an external engine, a plug-in that does not say) is given the true
# state and may read what its seat cannot observe.
INFORMATION_STATE_PLAYERS = "random, cfr:ITERS, ismcts:SIMS, sog:S,C or a Student of Games run"


def check_player_view(game: pyspiel.Game, player) -> None:
    """Refuse a player that reads the full state on a game with hidden information: on
    kuhn_poker `mcts:` would see the opponent's card. Players declare
    `reads_hidden_state = False` when they act on the information state alone (polyzero
    refuses rather than determinizes: a determinized MCTS is another player, not `mcts:`)."""
    if perfect_information(game) or not getattr(player, "reads_hidden_state", True):
        return
    raise UsageError(
        f"player {player.name!r} searches the true state, which on {game_spec_string(game)!r} "
        f"(imperfect information) holds what its seat cannot observe; use a player that acts on "
        f"the information state: {INFORMATION_STATE_PLAYERS}"
    )


def describe_game(game: pyspiel.Game) -> dict:
    """A plain dict summary of a game, for logs and checkpoints."""
    gt = game.get_type()
    shape = list(game.observation_tensor_shape()) if gt.provides_observation_tensor else None
    return {
        "name": game_spec_string(game),
        "players": game.num_players(),
        "num_distinct_actions": game.num_distinct_actions(),
        "max_game_length": game.max_game_length(),
        "observation_shape": shape,
        "chance": gt.chance_mode.name.lower(),
        "information": gt.information.name.lower(),
        "dynamics": gt.dynamics.name.lower(),
        "utility": gt.utility.name.lower(),
    }
