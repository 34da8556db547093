"""Matches between players: many games at once, seats alternated, batched moves."""

from __future__ import annotations

import math
import sys

import numpy as np
import pyspiel

from ..errors import UsageError
from ..games.capabilities import check_match_game
from ..games.chance import sample_chance
from .players import Player
from .stats import MatchResult

__all__ = ["play_match", "play_single_agent", "Forfeit"]


class Forfeit:
    """What a player returns for a game instead of an action when it cannot move (an
    external engine died, hung or answered illegally): it loses that game, the reason
    goes to the log in one line, and the match goes on."""

    def __init__(self, reason: str):
        self.reason = reason


def _forfeit_returns(state: pyspiel.State, seat: int) -> list[float]:
    return [-1.0 if p == seat else 1.0 for p in range(state.num_players())]


def _progress_bar(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="game", file=sys.stderr, leave=False)


def _run_games(
    game, seats_of, players: list[Player], num_games: int, seed: int, max_concurrent: int, bar, on_game_end=None
) -> list[list[float]]:
    """Play `num_games` games; `seats_of(i)` maps seat -> index into `players` for game i.

    Each tick, every player gets one `act` call holding all live games where it is
    to move, so a batched searcher sees as many states as possible at once.
    Games start in order as slots free up, which keeps the run deterministic.
    `on_game_end(i, state, returns, reason)` sees each game as it ends (records).
    """
    rng = np.random.default_rng(seed)
    returns: list[list[float] | None] = [None] * num_games
    live: dict[int, pyspiel.State] = {}
    next_game = 0

    def finish(i: int, result: list[float], reason: str | None) -> None:
        returns[i] = result
        if on_game_end is not None:
            on_game_end(i, live[i], result, reason)
        del live[i]
        if bar is not None:
            bar.update(1)

    max_concurrent = max(1, max_concurrent)
    while live or next_game < num_games:
        while next_game < num_games and len(live) < max_concurrent:
            live[next_game] = game.new_initial_state()
            next_game += 1
        groups: dict[int, list[int]] = {}
        for i, state in list(live.items()):
            while state.is_chance_node():  # chance is the match's, not a player's, randomness
                sample_chance(state, rng)
            if state.is_terminal():
                finish(i, list(state.returns()), None)
                continue
            if state.is_simultaneous_node():  # no seat's player may pick the joint action
                raise UsageError(f"{game} reached a simultaneous-move node; matches need one mover at a time")
            groups.setdefault(seats_of(i)[state.current_player()], []).append(i)
        for p, ids in sorted(groups.items()):
            actions = players[p].act([live[i] for i in ids])
            if len(actions) != len(ids):
                raise RuntimeError(f"player {players[p].name} returned {len(actions)} actions for {len(ids)} states")
            for i, action in zip(ids, actions):
                if isinstance(action, Forfeit):
                    reason = f"{players[p].name} forfeits: {action.reason}"
                    print(f"game {i}: {reason}", file=sys.stderr)
                    finish(i, _forfeit_returns(live[i], live[i].current_player()), reason)
                    continue
                live[i].apply_action(int(action))
    return returns  # type: ignore[return-value]


def play_match(
    game,
    player_a: Player,
    player_b: Player,
    num_games: int,
    seed: int = 0,
    max_concurrent: int = 256,
    progress: bool = False,
    on_game_end=None,
) -> MatchResult:
    """A two-player match; A takes seat `i % 2` in game i. Scored from A's view.
    `on_game_end(i, state, returns, reason)` sees each finished game (game records)."""
    check_match_game(game, "a match")
    # Players are indexed by role, not identity, so a player may face itself.
    players = [player_a, player_b]
    player_a.reset(seed)
    player_b.reset(seed + 1)
    seats = ([0, 1], [1, 0])  # seat -> role index, for A in seat 0 / seat 1
    bar = _progress_bar(num_games, progress, f"{player_a.name} vs {player_b.name}")
    try:
        returns = _run_games(game, lambda i: seats[i % 2], players, num_games, seed, max_concurrent, bar, on_game_end)
    finally:
        if bar is not None:
            bar.close()
    wins = draws = losses = 0
    for i, r in enumerate(returns):
        a = r[i % 2]
        if a > 0:
            wins += 1
        elif a < 0:
            losses += 1
        else:
            draws += 1
    return MatchResult(wins, draws, losses, name_a=player_a.name, name_b=player_b.name)


def play_single_agent(
    game,
    player: Player,
    num_episodes: int,
    seed: int = 0,
    max_concurrent: int = 256,
    progress: bool = False,
    on_game_end=None,
) -> dict:
    """Mean return of a one-player game with a normal 95% interval. `on_game_end(i,
    state, returns, reason)` sees each finished episode (its length, for one)."""
    if game.num_players() != 1:
        raise ValueError(f"play_single_agent needs a one-player game, got {game.num_players()} players")
    player.reset(seed)
    bar = _progress_bar(num_episodes, progress, player.name)
    try:
        games = _run_games(game, lambda i: [0], [player], num_episodes, seed, max_concurrent, bar, on_game_end)
        returns = [r[0] for r in games]
    finally:
        if bar is not None:
            bar.close()
    n = len(returns)
    mean = float(np.mean(returns)) if n else 0.0
    half = 1.959963984540054 * float(np.std(returns, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    return {"mean_return": mean, "ci_low": mean - half, "ci_high": mean + half, "returns": [float(r) for r in returns]}
