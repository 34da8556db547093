"""Exact scores of any Nannon policy against the solved game (`nannon_solver`): the
expected points and win probability of a policy against the optimal player, random
play or another policy, by policy evaluation on the solver's move tables; a Monte
Carlo check that shares none of that arithmetic; and the table of a `Player`'s moves.

A policy is "optimal", "random", an int array [S, D] of action ids, or a float array
[S, D, N+2] of action probabilities (rows of terminal positions are ignored).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .nannon_solver import Positions, Solution, Tables, position_chunks


class _Policy:
    """A policy as weights over the move slots of `Tables`, one chunk at a time."""

    def __init__(self, sol: Solution, policy):
        tb, S, D = sol.tables, sol.positions.size, sol.params.die_sides
        self.tables, self.slots, self.probs = tb, None, None
        if isinstance(policy, str):
            if policy not in ("optimal", "random"):
                raise ValueError(f"unknown policy {policy!r}: expected optimal, random or an array")
            self.kind = policy
            if policy == "optimal":
                self.slots = _slots_of_actions(tb, sol.policy, sol.positions)
            return
        arr = np.asarray(policy)
        if arr.shape == (S, D) and np.issubdtype(arr.dtype, np.integer):
            self.kind, self.slots = "table", _slots_of_actions(tb, arr, sol.positions)
        elif arr.shape == (S, D, sol.params.points + 2):
            srcs = tb.source.astype(np.int64)
            probs = np.take_along_axis(arr.astype(np.float64), np.maximum(srcs, 0), axis=2)
            probs[~tb.legal] = 0.0
            self.kind, self.probs = "mixed", probs / np.maximum(probs.sum(axis=2, keepdims=True), 1e-300)
        else:
            raise ValueError(
                f"policy must be int [{S}, {D}] action ids or float [{S}, {D}, "
                f"{sol.params.points + 2}] probabilities, got {arr.dtype} {arr.shape}"
            )

    def expected(self, ext: np.ndarray, a: int, b: int) -> np.ndarray:
        """[b-a, D]: the mover's expected value after its move, given the value `ext` of
        successors for the side moving next (padding slot included, any finite value)."""
        tb = self.tables
        if self.slots is not None:
            succ = np.take_along_axis(tb.succ[a:b], self.slots[a:b, :, None].astype(np.int64), axis=2)
            return -ext[succ[..., 0]]
        vals = -ext[tb.succ[a:b]]
        if self.kind == "random":
            return np.where(tb.legal[a:b], vals, 0.0).sum(axis=2) / tb.num_legal[a:b]
        assert self.probs is not None  # a mixed policy
        return (np.where(tb.legal[a:b], vals, 0.0) * self.probs[a:b]).sum(axis=2)

    def sample(self, rows: np.ndarray, rolls: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A move slot for each (row, roll) game."""
        tb = self.tables
        if self.slots is not None:
            return self.slots[rows, rolls - 1].astype(np.int64)
        if self.kind == "random":
            return (rng.random(len(rows)) * tb.num_legal[rows, rolls - 1]).astype(np.int64)
        assert self.probs is not None  # a mixed policy
        cdf = np.cumsum(self.probs[rows, rolls - 1], axis=1)
        u = rng.random(len(rows))[:, None] * cdf[:, -1:]
        return np.minimum((u >= cdf).sum(axis=1), tb.num_legal[rows, rolls - 1] - 1)


def _slots_of_actions(tb: Tables, actions: np.ndarray, pos: Positions) -> np.ndarray:
    """Slot of each (position, roll)'s action id; ValueError naming an illegal one."""
    match = tb.source == np.asarray(actions, np.int64)[..., None]
    ok = match.any(axis=2)
    terminal = pos.terminal_values()[0]
    bad = ~ok & ~terminal[:, None]
    if bad.any():
        s, d = map(int, np.argwhere(bad)[0])
        raise ValueError(f"policy plays illegal action {int(actions[s, d])} at position {s}, roll {d + 1}")
    return np.where(ok, match.argmax(axis=2), 0).astype(np.int8)


@dataclass(frozen=True)
class PolicyScore:
    """Exact expected result of a policy against an opponent, both seats averaged.
    `score` is the win probability, the arena's (W + D/2)/N (Nannon has no draws)."""

    opponent: str
    points: float  # expected points per game (+-1, or +-2 under nannon_double)
    score: float
    seat_points: tuple[float, float]  # as player 0, as player 1
    seat_scores: tuple[float, float]


def _policy_values(
    sol: Solution, pi: _Policy, sigma: _Policy, payoff: str, tol: float = 1e-13, max_sweeps: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): value for the side to move when pi / sigma is to move, pi facing sigma
    (policy evaluation, block Gauss-Seidel like value_iteration)."""
    pos = sol.positions
    terminal, term_value = pos.terminal_values(payoff)
    A, B = np.append(term_value, 0.0), np.append(term_value, 0.0)
    for _ in range(max_sweeps):
        delta = 0.0
        for a, b in position_chunks(pos.size):
            for mine, theirs, pol in ((A, B, pi), (B, A, sigma)):
                new = np.where(terminal[a:b], term_value[a:b], pol.expected(theirs, a, b).mean(axis=1))
                delta = max(delta, float(np.abs(new - mine[a:b]).max()))
                mine[a:b] = new
        if delta < tol:
            return A, B
    raise RuntimeError(f"policy evaluation did not converge in {max_sweeps} sweeps (change {delta:.1e})")


def _opening(sol: Solution, pi: _Policy, sigma: _Policy, A: np.ndarray, B: np.ndarray) -> tuple[float, float]:
    """pi's expected result as player 0 and as player 1, the opening chance exact."""
    s0, D = sol.positions.initial, sol.params.die_sides
    a_roll = pi.expected(B, s0, s0 + 1)[0]  # pi moves first with roll d
    b_roll = sigma.expected(A, s0, s0 + 1)[0]  # sigma moves first with roll d
    if sol.params.opening == "difference":  # symmetric roll-off: both seats alike
        v = sum((D - d) / (D * (D - 1)) * (a_roll[d - 1] - b_roll[d - 1]) for d in range(1, D))
        return float(v), float(v)
    return float(a_roll.mean()), float(-b_roll.mean())  # player 0 moves first


def evaluate_policy(sol: Solution, policy, opponent="optimal", name: str | None = None) -> PolicyScore:
    """Exact expected points and score of `policy` against `opponent` ("optimal",
    "random" or another policy), over the opening chance and both seats."""
    pi, sigma = _Policy(sol, policy), _Policy(sol, opponent)
    seat_points = _opening(sol, pi, sigma, *_policy_values(sol, pi, sigma, "points"))
    if sol.params.double:
        seat_wins = _opening(sol, pi, sigma, *_policy_values(sol, pi, sigma, "wins"))
    else:
        seat_wins = seat_points
    seat_scores = tuple((1.0 + w) / 2.0 for w in seat_wins)
    label = name or (opponent if isinstance(opponent, str) else "policy")
    return PolicyScore(label, float(np.mean(seat_points)), float(np.mean(seat_scores)), seat_points, seat_scores)  # type: ignore[arg-type]


def sample_games(sol: Solution, policy, opponent, games: int, seed: int = 0, max_plies: int = 100_000) -> np.ndarray:
    """Points of `policy` in `games` sampled games against `opponent` (seat i % 2 in
    game i), all played at once on the move tables: a Monte Carlo check of
    `evaluate_policy` that shares none of its arithmetic."""
    rng = np.random.default_rng(seed)
    pols = (_Policy(sol, policy), _Policy(sol, opponent))
    tb, pos, prm = sol.tables, sol.positions, sol.params
    terminal, term_value = pos.terminal_values()
    D = prm.die_sides
    seat = np.arange(games) % 2  # pi's seat
    rows = np.full(games, pos.initial)
    if prm.opening == "difference":
        outcome = rng.choice(
            2 * (D - 1), size=games, p=[(D - d) / (D * (D - 1)) for _ in range(2) for d in range(1, D)]
        )
        first, rolls = outcome // (D - 1), outcome % (D - 1) + 1
    else:
        first, rolls = np.zeros(games, np.int64), rng.integers(1, D + 1, games)
    mover = (first != seat).astype(np.int64)  # 0: pi to move, 1: the opponent
    result = np.zeros(games)
    live = np.arange(games)
    for _ in range(max_plies):
        nxt = np.empty(len(live), np.int64)
        for who in (0, 1):
            sel = np.flatnonzero(mover[live] == who)
            g = live[sel]
            slot = pols[who].sample(rows[g], rolls[g], rng)
            nxt[sel] = tb.succ[rows[g], rolls[g] - 1, slot]
        over = terminal[nxt]
        g = live[over]  # the mover just won what the loser's terminal value says
        result[g] = np.where(mover[g] == 0, -term_value[nxt[over]], term_value[nxt[over]])
        keep = ~over
        live, nxt = live[keep], nxt[keep]
        if not len(live):
            return result
        rows[live], mover[live] = nxt, 1 - mover[live]
        rolls[live] = rng.integers(1, D + 1, len(live))
    raise RuntimeError(f"{len(live)} games still running after {max_plies} plies")


def tabulate_player(sol: Solution, game, player, batch: int = 256) -> np.ndarray:
    """Action ids [S, D] of a `Player` (polyzero.eval.players) at every decision: one
    `act` call per batch of states built with `NannonState.set_position`; forced
    moves and passes are filled in without asking."""
    pos, tb = sol.positions, sol.tables
    table = tb.source[:, :, 0].astype(np.int8).copy()  # the move when it is the only one
    todo = np.argwhere((tb.num_legal >= 2) & pos.decision[:, None])
    for i in range(0, len(todo), batch):
        states = []
        for s, d in todo[i : i + batch]:
            st = game.new_initial_state()
            st.set_position(
                0,
                int(d) + 1,
                (int(pos.home[pos.mover[s]]), int(pos.mask[pos.mover[s]])),
                (int(pos.home[pos.other[s]]), int(pos.mask[pos.other[s]])),
            )
            states.append(st)
        for (s, d), action in zip(todo[i : i + batch], player.act(states)):
            table[s, d] = action
    return table
