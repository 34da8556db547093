"""Play against an agent in the terminal.

The human's seat is stated, boards are drawn with coordinates, a move is typed as
its text, a coordinate or (where no move text says otherwise) its id; `undo` takes
back the last own move, `moves` lists every legal move, Ctrl-D ends quietly. A seat
of an imperfect-information game is shown only its information state: no chance
outcome, hidden move or board that seat cannot observe.
"""

from __future__ import annotations

import numpy as np

from ..errors import UsageError
from ..games.chance import sample_chance
from .arena import Forfeit
from .boards import MoveNames, board_of, check_playable, describe, perfect_information, seat_text, side_name
from .players import Player

__all__ = ["play_in_terminal"]

HELP = (
    "type a move (its text, a board coordinate, or its id where that is unambiguous); "
    "'moves' lists them all, 'undo' takes back your last move, Ctrl-D quits"
)


class _Quit(Exception):
    """The input ended (Ctrl-D): stop without an error."""


class _Undo(Exception):
    """The human asked to take back their last move."""


def _ask(input_fn, prompt: str) -> str:
    try:
        return input_fn(prompt).strip()
    except EOFError:
        raise _Quit() from None
    except UnicodeDecodeError:
        raise UsageError("standard input is not UTF-8 text") from None


def _show(state, seat: int, output_fn) -> None:
    output_fn("")
    if perfect_information(state.get_game()):
        output_fn(describe(state))
        board = board_of(state)
        output_fn(board.render() if board is not None else str(state))
    else:
        output_fn(f"your view (seat {seat}): {seat_text(state, seat)}")


def _read_move(state, seat: int, input_fn, output_fn, can_undo: bool) -> int:
    names = MoveNames(state, board_of(state))
    output_fn(names.listing())
    while True:
        text = _ask(input_fn, f"your move ({side_name(state.get_game(), seat)}): ")
        if text in ("moves", "?"):
            output_fn(names.full_listing())
            continue
        if text in ("help", "h"):
            output_fn(HELP)
            continue
        if text == "undo":
            if can_undo:
                raise _Undo()
            output_fn("nothing to undo yet")
            continue
        action = names.parse(text)
        if action is not None:
            return action
        output_fn(f"'{text}' is not a legal move here; {HELP}")


def _show_analysis(agent, state, output_fn) -> None:
    """The agent's own search at the position it is about to move in: its value and top moves."""
    info = agent.analyse([state])[0]
    mover = state.current_player()
    top = sorted(info["moves"], key=lambda m: -m["visits"])[:3]
    moves = ", ".join(
        f"{state.action_to_string(mover, m['action'])} ({m['visits']} visits, Q {m['q']:+.2f})"
        if m["q"] is not None
        else state.action_to_string(mover, m["action"])
        for m in top
    )
    output_fn(
        f"{agent.name} thinks: value {info['value']:+.2f} for itself "
        f"(network {info['network_value']:+.2f}); top moves {moves}"
    )


def _agent_move(agent, state, analyse: bool, output_fn, open_view: bool) -> int:
    if analyse:
        _show_analysis(agent, state, output_fn)
    action = agent.act([state])[0]
    if open_view and not isinstance(action, Forfeit):  # imperfect information: the human's view shows it
        output_fn(f"{agent.name} plays {state.action_to_string(state.current_player(), action)}")
    return action


def _play_one(game, agent: Player, seat: int, input_fn, output_fn, rng, analyse: bool, on_end=None) -> list[float]:
    open_view = perfect_information(game)
    history: list[int] = []  # every action so far, chance outcomes included
    mine: list[int] = []  # where in `history` the human moved
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            action = sample_chance(state, rng, apply=False)
            if open_view:
                output_fn(f"chance: {state.action_to_string(state.current_player(), action)}")
        elif state.current_player() == seat:
            _show(state, seat, output_fn)
            try:
                action = _read_move(state, seat, input_fn, output_fn, can_undo=bool(mine))
            except _Undo:  # back to the position before the human's last move (same chance outcomes)
                history = history[: mine.pop()]
                state = _replay(game, history)
                output_fn("took back your last move")
                continue
            mine.append(len(history))
        else:
            action = _agent_move(agent, state, analyse, output_fn, open_view)
            if isinstance(action, Forfeit):  # an external engine that died, hung or moved illegally
                output_fn(f"{agent.name} forfeits: {action.reason}")
                break
        history.append(action)
        state.apply_action(action)
    _show(state, seat, output_fn)
    forfeit = not state.is_terminal()
    returns = [1.0 if p == seat else -1.0 for p in range(game.num_players())] if forfeit else list(state.returns())
    if on_end is not None:
        on_end(state, returns)
    mine = returns[seat]
    verdict = "you win" if mine > 0 else "you lose" if mine < 0 else "draw"
    output_fn(f"game over: {verdict} (returns: yours {mine:+g}, {agent.name}'s {returns[1 - seat]:+g})")
    return returns


def _replay(game, history: list[int]):
    state = game.new_initial_state()
    for a in history:
        state.apply_action(a)
    return state


def _order(game, seat: int) -> str:
    start = game.new_initial_state()
    if start.is_chance_node():
        return ", chance decides who moves first"
    return ", moving first" if start.current_player() == seat else ", moving second"


def play_in_terminal(
    game,
    agent: Player,
    human_seat: int,
    input_fn=input,
    output_fn=print,
    seed: int = 0,
    analyse: bool = False,
    game_spec: str | None = None,
    on_end=None,
) -> list[list[float]]:
    """Games of a human (at `human_seat`) against `agent` until the human declines another
    or the input ends; returns each finished game's `state.returns()`. `on_end(state,
    returns)` sees each finished game (game records)."""
    spec = game_spec or game.get_type().short_name
    check_playable(game, spec)
    if not 0 <= human_seat < game.num_players():
        raise UsageError(f"human seat must be 0..{game.num_players() - 1}, got {human_seat}")
    if analyse and not perfect_information(game):
        raise UsageError(
            f"--analyse shows a search of the true state, which a seat of '{spec}' (imperfect information) may not see"
        )
    if analyse and not hasattr(agent, "analyse"):
        raise UsageError(f"--analyse needs a learned agent (a run directory); '{agent.name}' has no search to show")
    rng = np.random.default_rng(seed)
    results = []
    output_fn(
        f"you play seat {human_seat}: {side_name(game, human_seat)}{_order(game, human_seat)}; "
        f"against {agent.name}. {HELP}"
    )
    try:
        while True:
            agent.reset(seed + len(results))
            results.append(_play_one(game, agent, human_seat, input_fn, output_fn, rng, analyse, on_end))
            if _ask(input_fn, "play again? [y/N] ").lower() not in ("y", "yes"):
                break
    except _Quit:
        output_fn("")
    return results
