"""A CVPN against exact minimax values on a small perfect-information game
(`polyzero sog-probe RUN` on tic-tac-toe).

On a perfect-information game every public state holds one world and one
information state per player, so the CVPN's normalised value at a position with
both ranges 1 is that position's expected return (paper, "Counterfactual
value-and-policy networks"), and the exact answer is the minimax value. Every
position reachable from the root (tic-tac-toe: 5,478, 4,520 of them not over) is
solved by depth-first search with a table of positions; the network is queried
at each one that is not over and compared:

- **value error**: |v_net - v_minimax| for the player to move (in the game's
  units, tic-tac-toe: -1..1), and the sign agreement (win/draw/loss read as the
  nearest of -1, 0, 1);
- **policy on optimal moves**: the policy head's probability on the moves that
  keep the minimax value (the head is trained towards the re-solved policy, which
  should put its mass there), beside the share of legal moves that are optimal
  (what a uniform policy puts there).

Both grouped by depth (moves played). Positions are keyed by the game's string
and the player to move; a game with chance events or more than `max_positions`
positions is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyspiel

from .values import Query


@dataclass
class Position:
    state: pyspiel.State
    depth: int
    value: float  # minimax return of the player to move
    optimal: list[int]  # the moves that keep it


def _key(state: pyspiel.State) -> str:
    return f"{state.current_player()}|{state}"


def minimax_positions(game: pyspiel.Game, max_positions: int = 100_000) -> list[Position]:
    """Every reachable position that is not over, with its minimax value and optimal
    moves; a ValueError for games with chance events or too many positions."""
    if game.get_type().chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC or game.num_players() != 2:
        raise ValueError(f"{game} is not a deterministic two-player game (minimax needs one)")
    values: dict[str, float] = {}
    positions: list[Position] = []

    def solve(state: pyspiel.State) -> float:
        """Minimax return of player 0 at `state`."""
        key = _key(state)
        if key in values:
            return values[key]
        if state.is_terminal():
            values[key] = state.returns()[0]
            return values[key]
        if len(values) >= max_positions:
            raise ValueError(f"{game} has more than {max_positions:,} positions")
        player = state.current_player()
        sign = 1.0 if player == 0 else -1.0
        child_values = {a: sign * solve(state.child(a)) for a in state.legal_actions()}
        best = max(child_values.values())
        optimal = [a for a, v in child_values.items() if v >= best - 1e-9]
        positions.append(Position(state.clone(), len(state.history()), best, optimal))
        values[key] = sign * best
        return values[key]

    solve(game.new_initial_state())
    positions.sort(key=lambda p: p.depth)
    return positions


def network_vs_minimax(value_fn, positions: list[Position], batch: int = 256) -> dict:
    """The network's value error, sign agreement and probability on optimal moves at
    every position, overall and by depth (`value_fn`: a `NetworkValueFunction`)."""
    from polyzero.games.public_states import public_state_at

    rows = []  # (depth, |error|, sign agrees, probability on optimal moves, uniform's)
    for start in range(0, len(positions), batch):
        chunk = positions[start : start + batch]
        queries = []
        for pos in chunk:
            node = public_state_at(value_fn.encoding.game, pos.state)
            queries.append(Query(node, [np.ones(len(node.info_states[p])) for p in range(2)]))
        for pos, query, answer in zip(chunk, queries, value_fn.evaluate(queries)):
            player = query.public_state.player
            predicted = float(answer.values[player][0])
            on_optimal = float(answer.policy[0, pos.optimal].sum()) if answer.policy is not None else float("nan")
            uniform = len(pos.optimal) / len(pos.state.legal_actions())
            rows.append((pos.depth, abs(predicted - pos.value), np.rint(predicted) == pos.value, on_optimal, uniform))
    return summarise(rows)


def summarise(rows: list[tuple]) -> dict:
    """Means of (depth, error, agrees, on_optimal, uniform) rows, overall and per depth."""
    table = np.array(rows, dtype=float).reshape(-1, 5)

    def means(part):
        return {
            "positions": len(part),
            "value_error": float(part[:, 1].mean()),
            "sign_agreement": float(part[:, 2].mean()),
            "policy_on_optimal": float(part[:, 3].mean()),
            "uniform_on_optimal": float(part[:, 4].mean()),
        }

    depths = sorted({int(d) for d in table[:, 0]})
    return {"all": means(table), "by_depth": {d: means(table[table[:, 0] == d]) for d in depths}}
