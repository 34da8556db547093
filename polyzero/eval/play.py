"""Play against an agent in the terminal."""

from __future__ import annotations

import numpy as np

from ..errors import UsageError
from .arena import Forfeit
from .players import Player

__all__ = ["play_in_terminal"]


def _read_move(state, player: int, input_fn, output_fn) -> int:
    legal = state.legal_actions(player)
    by_text = {state.action_to_string(player, a): a for a in legal}
    output_fn(str(state))
    output_fn("legal moves: " + "  ".join(f"{a}:{state.action_to_string(player, a)}" for a in legal))
    while True:
        try:
            text = input_fn(f"your move (player {player}): ").strip()
        except EOFError:
            raise UsageError("input closed") from None
        if text in by_text:
            return by_text[text]
        if text.lstrip("-").isdigit() and int(text) in legal:
            return int(text)
        output_fn(f"'{text}' is not a legal move; enter an id or a move from the list above")


def play_in_terminal(game, agent: Player, human_seat: int, input_fn=input, output_fn=print,
                     seed: int = 0, on_end=None) -> list[float]:
    """One game of a human (at `human_seat`) against `agent`; returns `state.returns()`.
    `on_end(state, returns)` sees the finished game (a game record)."""
    if not 0 <= human_seat < game.num_players():
        raise UsageError(f"human seat must be 0..{game.num_players() - 1}, got {human_seat}")
    rng = np.random.default_rng(seed)
    agent.reset(seed)
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes())
            probs = np.asarray(probs, dtype=float)
            action = int(actions[rng.choice(len(actions), p=probs / probs.sum())])
            output_fn(f"chance: {state.action_to_string(state.current_player(), action)}")
            state.apply_action(action)
            continue
        player = state.current_player()
        if player == human_seat:
            state.apply_action(_read_move(state, player, input_fn, output_fn))
        else:
            action = agent.act([state])[0]
            if isinstance(action, Forfeit):  # an external engine that died, hung or moved illegally
                output_fn(f"{agent.name} forfeits: {action.reason}")
                break
            output_fn(f"{agent.name} plays {action}:{state.action_to_string(player, action)}")
            state.apply_action(action)
    output_fn(str(state))
    forfeit = not state.is_terminal()
    returns = [1.0 if p == human_seat else -1.0 for p in range(game.num_players())] if forfeit else list(state.returns())
    if on_end is not None:
        on_end(state, returns)
    mine = returns[human_seat]
    verdict = "you win" if mine > 0 else "you lose" if mine < 0 else "draw"
    output_fn(f"game over: {verdict} (returns {returns})")
    return returns
