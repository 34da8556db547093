"""Exact solution of Nannon by value iteration, and exact scores of any policy.

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
and tests check the two against each other position by position. One module (~590
lines) on purpose: positions, tables, value iteration and policy evaluation share the
same position index and move slots, and splitting them would expose those internals.
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
    def from_game(cls, game) -> "NannonParams":
        if game.get_type().short_name != "nannon":
            raise UsageError(f"the Nannon solver needs a nannon game, got {game.get_type().short_name!r}")
        p = game.get_parameters()
        return cls(int(p["points"]), int(p["checkers"]), int(p["die_sides"]), str(p["scoring"]),
                   str(p["opening"]))

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


def successors(pos: Positions, s: int, d: int) -> list[int]:
    """Successor positions of one position's legal moves with roll d (its pass if
    none): the rows of `Tables` for one position, without building all of them."""
    one = np.array([s])
    mh, mm = pos.home[pos.mover[one]], pos.mask[pos.mover[one]]
    oh, om = pos.home[pos.other[one]], pos.mask[pos.other[one]]
    orev = _reverse_bits(om, pos.params.points)
    out = []
    for k in range(pos.params.points + 1):
        legal, nxt = _moves_from(k, d, pos.params.points, mh, mm, oh, om, orev, pos)
        if legal[0]:
            out.append(int(nxt[0]))
    return out or [int(pos.swapped[s])]


def _bar(enabled: bool, total, desc: str, unit: str):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, mininterval=0.5)


def _chunks(size: int):
    return [(a, min(a + _CHUNK, size)) for a in range(0, size, _CHUNK)]


def bellman_residual(value: np.ndarray, pos: Positions, tables: Tables) -> np.ndarray:
    """|T V - V| per position (one Jacobi application of the optimality operator)."""
    terminal, term_value = pos.terminal_values()
    ext = np.append(value, np.inf)
    out = np.empty(pos.size)
    for a, b in _chunks(pos.size):
        new = (-ext[tables.succ[a:b]]).max(axis=2).mean(axis=1)
        out[a:b] = np.abs(np.where(terminal[a:b], term_value[a:b], new) - value[a:b])
    return out


def value_iteration(pos: Positions, tables: Tables, tol: float = 1e-13, max_sweeps: int = 100_000,
                    progress: bool = False) -> tuple[np.ndarray, int]:
    """Optimal values for the side to move (spec "Exact solution"), by block
    Gauss-Seidel sweeps until no value moves by more than `tol`. Returns (V, sweeps)."""
    terminal, term_value = pos.terminal_values()
    ext = np.append(term_value, np.inf)  # padding slots read -inf after the sign flip
    bar = _bar(progress, None, f"Nannon {pos.params.tag} value iteration", "sweep")
    for sweep in range(1, max_sweeps + 1):
        delta = 0.0
        for a, b in _chunks(pos.size):
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
    for a, b in _chunks(len(value)):
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

    def __init__(self, params: NannonParams, positions: Positions, value: np.ndarray,
                 policy: np.ndarray, tables: Tables | None = None, info: dict | None = None):
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

    def opening_values(self) -> dict:
        """Optimal expected points: `first_mover` for the side to move first before its
        roll (single_die opening, player 0), `rolloff_winner` for the winner of the
        difference roll-off (rule 3), and the game's value for player 0 under the opening."""
        p = self.params
        s0, D = self.positions.initial, p.die_sides
        per_roll = np.array([max(-self.value[t] for t in successors(self.positions, s0, d))
                             for d in range(1, D + 1)])
        rolloff = sum(2 * (D - d) / (D * (D - 1)) * per_roll[d - 1] for d in range(1, D))
        player0 = 0.0 if p.opening == "difference" else float(self.value[s0])
        return {"first_mover": float(self.value[s0]), "rolloff_winner": float(rolloff),
                "player0": player0}


def _save(path: Path, sol: Solution) -> None:
    """Write atomically: a temporary file in the same folder, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    p = sol.params
    meta = np.array([FORMAT, p.points, p.checkers, p.die_sides, int(p.double)], np.int64)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, meta=meta, value=sol.value, policy=sol.policy,
                     sweeps=np.int64(sol.info.get("sweeps", 0)),
                     residual=np.float64(sol.info.get("residual", np.nan)))
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
    if (meta.tolist() != want or value.shape != (S,) or value.dtype != np.float64
            or policy.shape != (S, D) or policy.dtype != np.int8 or not np.isfinite(value).all()):
        return None
    return Solution(params, positions, value, policy, info=info | {"cached": True})


def solve(params: NannonParams, progress: bool = False, use_cache: bool = True,
          force: bool = False, tol: float = 1e-13) -> Solution:
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
        raise UsageError(f"nannon {params.tag} has {positions.size:,} positions; the solver handles "
                         "at most 50,000,000")
    start = time.perf_counter()
    tables = Tables(positions, progress=progress)
    value, sweeps = value_iteration(positions, tables, tol=tol, progress=progress)
    residual = float(bellman_residual(value, positions, tables).max())
    sol = Solution(params, positions, value, greedy_policy(value, tables), tables,
                   info={"sweeps": sweeps, "residual": residual, "seconds": time.perf_counter() - start,
                         "cached": False})
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


# --- Exact scores of any policy --------------------------------------------------------
# A policy is "optimal", "random", an int array [S, D] of action ids, or a float array
# [S, D, N+2] of action probabilities (rows of terminal positions are ignored).

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
            raise ValueError(f"policy must be int [{S}, {D}] action ids or float [{S}, {D}, "
                             f"{sol.params.points + 2}] probabilities, got {arr.dtype} {arr.shape}")

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
        return (np.where(tb.legal[a:b], vals, 0.0) * self.probs[a:b]).sum(axis=2)

    def sample(self, rows: np.ndarray, rolls: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A move slot for each (row, roll) game."""
        tb = self.tables
        if self.slots is not None:
            return self.slots[rows, rolls - 1].astype(np.int64)
        if self.kind == "random":
            return (rng.random(len(rows)) * tb.num_legal[rows, rolls - 1]).astype(np.int64)
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


def _policy_values(sol: Solution, pi: _Policy, sigma: _Policy, payoff: str, tol: float = 1e-13,
                   max_sweeps: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): value for the side to move when pi / sigma is to move, pi facing sigma
    (policy evaluation, block Gauss-Seidel like value_iteration)."""
    pos = sol.positions
    terminal, term_value = pos.terminal_values(payoff)
    A, B = np.append(term_value, 0.0), np.append(term_value, 0.0)
    for _ in range(max_sweeps):
        delta = 0.0
        for a, b in _chunks(pos.size):
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
    return PolicyScore(label, float(np.mean(seat_points)), float(np.mean(seat_scores)),
                       seat_points, seat_scores)  # type: ignore[arg-type]


def sample_games(sol: Solution, policy, opponent, games: int, seed: int = 0,
                 max_plies: int = 100_000) -> np.ndarray:
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
        outcome = rng.choice(2 * (D - 1), size=games,
                             p=[(D - d) / (D * (D - 1)) for _ in range(2) for d in range(1, D)])
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
        for s, d in todo[i:i + batch]:
            st = game.new_initial_state()
            st.set_position(0, int(d) + 1, (int(pos.home[pos.mover[s]]), int(pos.mask[pos.mover[s]])),
                            (int(pos.home[pos.other[s]]), int(pos.mask[pos.other[s]])))
            states.append(st)
        for (s, d), action in zip(todo[i:i + batch], player.act(states)):
            table[s, d] = action
    return table


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
    out[:, n:2 * n] = (_reverse_bits(pos.mask[opp], n)[:, None] >> bits) & 1
    r = np.arange(len(rows))
    for j, counts in enumerate((pos.home[me], pos.safe[me], pos.home[opp], pos.safe[opp])):
        out[r, 2 * n + j * c1 + counts] = 1.0
    out[:, 2 * n + 4 * c1 + roll - 1] = 1.0
    out[:, -1] = 1.0
    return out
