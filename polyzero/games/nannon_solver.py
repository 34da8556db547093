"""Exact solution of Nannon by value iteration.

Rules: `docs/nannon.md` ("Exact solution"); the NDMZ paper (Section 4.1) solves
6-3-6 and 12-5-6 this way and scores agents against the optimal player.

Positions are pairs (mover placement, other placement), every one of the spec's
2,530 / 1,780,776, indexed from the mover's view and sorted by the pips both sides
still have to travel (so block Gauss-Seidel sweeps run from the end of the game back).
`Tables` holds, per (position, roll), the successors of the legal moves as positions
seen by the opponent; a position with no legal move has one successor, itself with
the sides swapped (a pass). Values are zero-sum utilities for the side to move, so
`nannon_double` (2 points for a win where the loser has nothing in SAFETY) is the same
code with other terminal values:

    V(s) = 1/D sum_d max_m -V(succ(s, d, m))          (terminal s: -points lost)

NumPy only (no torch): the games layer's rules are re-implemented here as array code,
and tests check the two against each other position by position. Exact scores of any
policy against the solution are `polyzero.games.nannon_policies` (they read the same
position index and move slots). Part of the games layer: the exact solution is
knowledge of the game, used by the evaluation (the `optimal` player), NDMZ's analysis
and the TD(lambda) baseline above it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UsageError

FORMAT = 1  # bump when the position order or the file layout changes
_CHUNK = 1 << 15  # positions per Gauss-Seidel block (bounds the gather's memory)


@dataclass(frozen=True)
class NannonParams:
    points: int = 6
    checkers: int = 3
    die_sides: int = 6
    scoring: str = "single"
    opening: str = "difference"  # changes only the opening, not the tables

    @classmethod
    def from_game(cls, game) -> NannonParams:
        if game.get_type().short_name != "nannon":
            raise UsageError(f"the Nannon solver needs a nannon game, got {game.get_type().short_name!r}")
        p = game.get_parameters()
        return cls(int(p["points"]), int(p["checkers"]), int(p["die_sides"]), str(p["scoring"]), str(p["opening"]))

    @property
    def tag(self) -> str:
        return f"{self.points}-{self.checkers}-{self.die_sides}"

    @property
    def double(self) -> bool:
        return self.scoring == "nannon_double"


def _reverse_bits(mask: np.ndarray, n: int) -> np.ndarray:
    """Own point k of one player is point n+1-k of the other: bit k-1 -> bit n-k."""
    out = np.zeros_like(mask)
    for k in range(n):
        out |= ((mask >> k) & 1) << (n - 1 - k)
    return out


class Positions:
    """Every position, and the maps between (placement, placement) pairs and indices."""

    def __init__(self, params: NannonParams):
        n, c = params.points, params.checkers
        self.params = params
        masks = np.arange(1 << n, dtype=np.int64)
        masks = masks[np.bitwise_count(masks) <= c]
        on = np.bitwise_count(masks).astype(np.int64)
        reps = c + 1 - on  # HOME counts 0..c-on for each mask
        self.mask = np.repeat(masks, reps)
        self.home = np.concatenate([np.arange(r) for r in reps]).astype(np.int64)
        self.safe = c - self.home - np.bitwise_count(self.mask).astype(np.int64)
        self.placement_id = np.full((c + 1, 1 << n), -1, np.int64)
        self.placement_id[self.home, self.mask] = np.arange(len(self.mask))
        pips = self.home * (n + 1)
        for k in range(1, n + 1):
            pips += ((self.mask >> (k - 1)) & 1) * (n + 1 - k)
        # Positions: boards disjoint once the other's points are turned into mover coordinates.
        disjoint = (self.mask[:, None] & _reverse_bits(self.mask, n)[None, :]) == 0
        mover, other = np.nonzero(disjoint)
        order = np.argsort(pips[mover] + pips[other], kind="stable")
        self.mover, self.other = mover[order], other[order]
        self.size = len(self.mover)
        self.pair_index = np.full(disjoint.shape, -1, np.int64)
        self.pair_index[self.mover, self.other] = np.arange(self.size)
        self.swapped = self.pair_index[self.other, self.mover]  # same board, other side to move
        # Positions where the game is on (the rest are over, or unreachable: the mover won).
        self.decision = (self.safe[self.mover] < c) & (self.safe[self.other] < c)
        self.initial = int(self.pair_index[self.placement_id[c - 2, 3], self.placement_id[c - 2, 3]])

    def index(self, mover_view: tuple[int, int], other_view: tuple[int, int]) -> int:
        """Index of a position from the mover's and the other's (HOME, own-point mask)."""
        return int(self.pair_index[self.placement_id[mover_view], self.placement_id[other_view]])

    def index_of_state(self, state) -> int:
        """Index of a pyspiel Nannon state's position, seen by the player to move."""
        p = state.current_player()
        return self.index(state.own_view(p), state.own_view(1 - p))

    def terminal_values(self, payoff: str = "points") -> tuple[np.ndarray, np.ndarray]:
        """(terminal mask, value for the side to move): the other side has all in SAFETY.
        payoff "points" counts the scoring rule; "wins" counts every loss as -1."""
        c = self.params.checkers
        terminal = self.safe[self.other] == c
        lost = np.ones(self.size)
        if payoff == "points" and self.params.double:
            lost[self.safe[self.mover] == 0] = 2.0
        return terminal, np.where(terminal, -lost, 0.0)


class Tables:
    """succ[s, d-1, m]: successor position of the m-th legal move (S = padding);
    source[s, d-1, m]: its action id (the source; N+1 = pass; -1 = padding)."""

    def __init__(self, pos: Positions, progress: bool = False):
        prm = pos.params
        n, c, dice = prm.points, prm.checkers, prm.die_sides
        S, M = pos.size, max(c, 1)
        mh, mm = pos.home[pos.mover], pos.mask[pos.mover]
        oh, om = pos.home[pos.other], pos.mask[pos.other]
        orev = _reverse_bits(om, n)  # the other's checkers on the mover's points
        self.succ = np.full((S, dice, M), S, np.int32)
        self.source = np.full((S, dice, M), -1, np.int8)
        bar = _bar(progress, dice * (n + 1), f"Nannon {prm.tag} move tables", "move")
        for d in range(1, dice + 1):
            count = np.zeros(S, np.int64)
            for k in range(n + 1):
                legal, nxt = _moves_from(k, d, n, mh, mm, oh, om, orev, pos)
                rows = np.flatnonzero(legal)
                if len(rows):
                    if count[rows].max() >= M:
                        raise AssertionError("more legal moves than checkers")
                    self.succ[rows, d - 1, count[rows]] = nxt[rows]
                    self.source[rows, d - 1, count[rows]] = k
                    count[rows] += 1
                if bar is not None:
                    bar.update(1)
            stuck = count == 0  # spec rule 9: no legal move, the turn passes
            self.succ[stuck, d - 1, 0] = pos.swapped[stuck]
            self.source[stuck, d - 1, 0] = n + 1
        if bar is not None:
            bar.close()
        self.legal = self.source >= 0
        self.num_legal = self.legal.sum(axis=2)


def _moves_from(k, d, n, mh, mm, oh, om, orev, pos: Positions):
    """Legality and successor index of moving from source k (0 = HOME) with roll d,
    for every position at once (spec rules 5-8)."""
    S = len(mh)
    bit = lambda p: np.int64(1) << (p - 1)  # noqa: E731 - own point p -> mask bit
    if k == 0:
        has = mh > 0
        new_mh, new_mm = mh - 1, mm
        if d > n:  # a HOME checker never goes straight to SAFETY
            return np.zeros(S, bool), None
    else:
        has = ((mm >> (k - 1)) & 1).astype(bool)
        new_mh, new_mm = mh, mm & ~bit(k)
    t = k + d
    new_oh, new_om = oh, om
    if t > n:  # leaving: no exact roll needed
        legal = has
    else:
        own = ((mm >> (t - 1)) & 1).astype(bool)
        opp = ((orev >> (t - 1)) & 1).astype(bool)
        neighbour = np.zeros(S, bool)
        if t > 1:
            neighbour |= ((orev >> (t - 2)) & 1).astype(bool)
        if t < n:
            neighbour |= ((orev >> t) & 1).astype(bool)
        legal = has & ~own & ~(opp & neighbour)  # protected checkers cannot be hit
        new_mm = new_mm | bit(t)
        new_oh = oh + opp  # a hit sends it HOME; its own point is n+1-t
        new_om = np.where(opp, om & ~bit(n + 1 - t), om)
    nxt = np.full(S, -1, np.int64)
    rows = np.flatnonzero(legal)
    other_id = pos.placement_id[new_oh[rows], new_om[rows]]
    mover_id = pos.placement_id[new_mh[rows], new_mm[rows]]
    nxt[rows] = pos.pair_index[other_id, mover_id]  # the opponent moves next
    return legal, nxt


def moves(pos: Positions, s: int, d: int) -> list[tuple[int, int]]:
    """(action id, successor position seen by the opponent) of each legal move of one
    position with roll d (its pass, action N+1, if none): the rows of `Tables` for one
    position, without building all of them."""
    one = np.array([s])
    mh, mm = pos.home[pos.mover[one]], pos.mask[pos.mover[one]]
    oh, om = pos.home[pos.other[one]], pos.mask[pos.other[one]]
    orev = _reverse_bits(om, pos.params.points)
    out = []
    for k in range(pos.params.points + 1):
        legal, nxt = _moves_from(k, d, pos.params.points, mh, mm, oh, om, orev, pos)
        if legal[0]:
            out.append((k, int(nxt[0])))
    return out or [(pos.params.points + 1, int(pos.swapped[s]))]


def successors(pos: Positions, s: int, d: int) -> list[int]:
    """Successor positions of one position's legal moves with roll d (its pass if none)."""
    return [t for _, t in moves(pos, s, d)]


def _bar(enabled: bool, total, desc: str, unit: str):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, mininterval=0.5)


def position_chunks(size: int):
    return [(a, min(a + _CHUNK, size)) for a in range(0, size, _CHUNK)]


def bellman_residual(value: np.ndarray, pos: Positions, tables: Tables) -> np.ndarray:
    """|T V - V| per position (one Jacobi application of the optimality operator)."""
    terminal, term_value = pos.terminal_values()
    ext = np.append(value, np.inf)
    out = np.empty(pos.size)
    for a, b in position_chunks(pos.size):
        new = (-ext[tables.succ[a:b]]).max(axis=2).mean(axis=1)
        out[a:b] = np.abs(np.where(terminal[a:b], term_value[a:b], new) - value[a:b])
    return out


def value_iteration(
    pos: Positions, tables: Tables, tol: float = 1e-13, max_sweeps: int = 100_000, progress: bool = False
) -> tuple[np.ndarray, int]:
    """Optimal values for the side to move (spec "Exact solution"), by block
    Gauss-Seidel sweeps until no value moves by more than `tol`. Returns (V, sweeps)."""
    terminal, term_value = pos.terminal_values()
    ext = np.append(term_value, np.inf)  # padding slots read -inf after the sign flip
    bar = _bar(progress, None, f"Nannon {pos.params.tag} value iteration", "sweep")
    for sweep in range(1, max_sweeps + 1):  # noqa: B007 - the count is returned
        delta = 0.0
        for a, b in position_chunks(pos.size):
            new = (-ext[tables.succ[a:b]]).max(axis=2).mean(axis=1)
            new = np.where(terminal[a:b], term_value[a:b], new)
            delta = max(delta, float(np.abs(new - ext[a:b]).max()))
            ext[a:b] = new
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"change {delta:.1e}")
        if delta < tol:
            break
    if bar is not None:
        bar.close()
    return ext[:-1].copy(), sweep


def greedy_policy(value: np.ndarray, tables: Tables) -> np.ndarray:
    """Optimal action id per (position, roll): the best move, the lowest source on ties."""
    ext = np.append(value, np.inf)
    policy = np.empty(tables.succ.shape[:2], np.int8)
    for a, b in position_chunks(len(value)):
        best = np.argmax(-ext[tables.succ[a:b]], axis=2)
        policy[a:b] = np.take_along_axis(tables.source[a:b], best[..., None], axis=2)[..., 0]
    return policy


def cache_dir() -> Path:
    """$POLYZERO_CACHE, else $XDG_CACHE_HOME/polyzero, else ~/.cache/polyzero."""
    if os.environ.get("POLYZERO_CACHE"):
        return Path(os.environ["POLYZERO_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "polyzero"


def cache_path(params: NannonParams) -> Path:
    return cache_dir() / f"nannon-{params.tag}-{params.scoring}-v{FORMAT}.npz"


class Solution:
    """The optimal value and policy of one Nannon game, with lazily built move tables."""

    def __init__(
        self,
        params: NannonParams,
        positions: Positions,
        value: np.ndarray,
        policy: np.ndarray,
        tables: Tables | None = None,
        info: dict | None = None,
    ):
        self.params, self.positions, self.value, self.policy = params, positions, value, policy
        self._tables = tables
        self.info = info or {}

    @property
    def tables(self) -> Tables:
        if self._tables is None:
            self._tables = Tables(self.positions)
        return self._tables

    def action(self, state) -> int:
        """The optimal action at a pyspiel Nannon decision state."""
        return int(self.policy[self.positions.index_of_state(state), state.roll - 1])

    def move_values(self, state) -> dict[int, float]:
        """{legal action: its exact value for the player to move} at a pyspiel Nannon
        decision state (the roll known): -V of the position the move leads to, seen by
        the opponent (a won game: the points won)."""
        s = self.positions.index_of_state(state)
        return {a: -float(self.value[t]) for a, t in moves(self.positions, s, state.roll)}

    def state_value(self, state, player: int) -> float:
        """Exact expected points of `player` at any pyspiel Nannon state under optimal play
        by both: at a decision, the mover's best move value (its roll known); at a roll,
        V of the position seen by the player to roll; at the opening roll-off, the
        game's value; at the end, the returns."""
        if state.is_terminal():
            return float(state.returns()[player])
        if state.turn is None:  # the difference roll-off: player 0's value under the opening
            v = self.opening_values()["player0"]
            return v if player == 0 else -v
        p = state.turn
        if state.is_chance_node():
            v = float(self.value[self.positions.index(state.own_view(p), state.own_view(1 - p))])
        else:
            v = max(self.move_values(state).values())
        return v if player == p else -v

    def opening_values(self) -> dict:
        """Optimal expected points: `first_mover` for the side to move first before its
        roll (single_die opening, player 0), `rolloff_winner` for the winner of the
        difference roll-off (rule 3), and the game's value for player 0 under the opening."""
        p = self.params
        s0, D = self.positions.initial, p.die_sides
        per_roll = np.array([max(-self.value[t] for t in successors(self.positions, s0, d)) for d in range(1, D + 1)])
        rolloff = sum(2 * (D - d) / (D * (D - 1)) * per_roll[d - 1] for d in range(1, D))
        player0 = 0.0 if p.opening == "difference" else float(self.value[s0])
        return {"first_mover": float(self.value[s0]), "rolloff_winner": float(rolloff), "player0": player0}


def _save(path: Path, sol: Solution) -> None:
    """Write atomically: a temporary file in the same folder, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    p = sol.params
    meta = np.array([FORMAT, p.points, p.checkers, p.die_sides, int(p.double)], np.int64)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(
                f,
                meta=meta,
                value=sol.value,
                policy=sol.policy,
                sweeps=np.int64(sol.info.get("sweeps", 0)),
                residual=np.float64(sol.info.get("residual", np.nan)),
            )
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load(path: Path, params: NannonParams, positions: Positions) -> Solution | None:
    """The cached solution, or None when missing, corrupt or for other parameters."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta, value, policy = z["meta"], z["value"], z["policy"]
            info = {"sweeps": int(z["sweeps"]), "residual": float(z["residual"])}
    except (OSError, ValueError, KeyError, EOFError):
        return None
    want = [FORMAT, params.points, params.checkers, params.die_sides, int(params.double)]
    S, D = positions.size, params.die_sides
    if (
        meta.tolist() != want
        or value.shape != (S,)
        or value.dtype != np.float64
        or policy.shape != (S, D)
        or policy.dtype != np.int8
        or not np.isfinite(value).all()
    ):
        return None
    return Solution(params, positions, value, policy, info=info | {"cached": True})


def solve(
    params: NannonParams, progress: bool = False, use_cache: bool = True, force: bool = False, tol: float = 1e-13
) -> Solution:
    """The optimal solution, from the cache when present (unless `force`), else
    computed and, with `use_cache`, written to the cache."""
    positions = Positions(params)
    path = cache_path(params)
    if use_cache and not force:
        cached = _load(path, params, positions)
        if cached is not None:
            cached.info["path"] = str(path)
            return cached
    if positions.size > 50_000_000:
        raise UsageError(f"nannon {params.tag} has {positions.size:,} positions; the solver handles at most 50,000,000")
    start = time.perf_counter()
    tables = Tables(positions, progress=progress)
    value, sweeps = value_iteration(positions, tables, tol=tol, progress=progress)
    residual = float(bellman_residual(value, positions, tables).max())
    sol = Solution(
        params,
        positions,
        value,
        greedy_policy(value, tables),
        tables,
        info={"sweeps": sweeps, "residual": residual, "seconds": time.perf_counter() - start, "cached": False},
    )
    if use_cache:
        _save(path, sol)
        sol.info["path"] = str(path)
    return sol


def solve_game(game, progress: bool = False, use_cache: bool = True) -> Solution:
    return solve(NannonParams.from_game(game), progress=progress, use_cache=use_cache)


_LOADED: dict[NannonParams, Solution] = {}


def shared_solution(game, progress: bool = False) -> Solution:
    """One solution per parameter set and process (players are made per match)."""
    params = NannonParams.from_game(game)
    if params not in _LOADED:
        _LOADED[params] = solve(params, progress=progress)
    return _LOADED[params]


def observations(sol: Solution, rows: np.ndarray, roll: int) -> np.ndarray:
    """float32 [len(rows), obs]: the game's observation tensor of each position with the
    mover to move and `roll` (polyzero.games.nannon layout), for batched networks."""
    pos, prm = sol.positions, sol.params
    n, c1, D = prm.points, prm.checkers + 1, prm.die_sides
    rows = np.asarray(rows, np.int64)
    me, opp = pos.mover[rows], pos.other[rows]
    out = np.zeros((len(rows), 2 * n + 4 * c1 + D + 1), np.float32)
    bits = np.arange(n)
    out[:, :n] = (pos.mask[me][:, None] >> bits) & 1
    out[:, n : 2 * n] = (_reverse_bits(pos.mask[opp], n)[:, None] >> bits) & 1
    r = np.arange(len(rows))
    for j, counts in enumerate((pos.home[me], pos.safe[me], pos.home[opp], pos.safe[opp])):
        out[r, 2 * n + j * c1 + counts] = 1.0
    out[:, 2 * n + 4 * c1 + roll - 1] = 1.0
    out[:, -1] = 1.0
    return out
