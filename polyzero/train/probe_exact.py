"""The probe's metrics against a game's exact solution (`polyzero probe` on Nannon).

Where the game offers exact values -- Nannon, solved by value iteration
(`polyzero.games.nannon_solver`; the NDMZ paper, Section 4.1, scores agents against
that optimal player) -- the model's predictions along the probed games are compared
with the truth itself, not only with the model's own view of the true position:

* ``value_vs_exact``: |v^k - V*(s_(t+k))| at decision steps, V* the exact expected
  points of the player to move there, its roll known (max over its moves m of
  Q*(m) = -V of the position m leads to): the target the value head is trained
  towards, from the same player's view (the mover's; ``state_value``);
* ``chance_value_vs_exact``: the same at chance steps, for the last player to move,
  whose view the model's value takes there (polyzero.replay.ndmz); the search does not
  read it;
* ``agree_exact``, ``regret_exact``: whether the top legal move of f(s^k) is an
  optimal move at the true position t+k, and the exact value it gives up
  (max_m Q*(m) - Q*(top)), at decisions with at least two legal moves;
* NDMZ only, look-ahead with the learned model from s^k, each legal move m against
  its exact value Q*(m), and the move ranked first scored as above: one step,
  v(g(s^k, m)) (after a move the model's value is the mover's; ``move_value_vs_exact``,
  ``greedy_agree_exact``, ``greedy_regret_exact``); and through the roll, as the search
  backs up values (Appendix A: from choice leaves only), the expectimax
  -sum_o c(o) v(g(g(s^k, m), o)) over the model's chance policy c at g(s^k, m), or
  v(g(s^k, m)) where g's identity says the game is over (``roll_value_vs_exact``,
  ``roll_agree_exact``, ``roll_regret_exact``). Beside ``regret_exact`` (the prior's
  top move) they say whether the values the search plans with rank the moves better
  or worse than the policy it starts from;
* at k = 0 only, the same expectimax on the true positions after each legal move and
  roll, valued by f(h(o)) there (no g; a won game counts its true points): what the
  value head alone knows of the moves, as a search given the rules would read it
  (``real_roll_value_vs_exact``, ``real_roll_agree_exact``, ``real_roll_regret_exact``).
  Against the ``roll_*`` figures at k = 0 it separates h and f from g.
"""

from __future__ import annotations

import numpy as np
import torch

#: metric -> what it measures (appended to the probe's table)
EXACT_METRICS = {
    "value_vs_exact": "|v^k - V*| at decisions, V* the exact value for the player to move",
    "chance_value_vs_exact": "|v^k - V*| at chance steps, for the last player to move",
    "agree_exact": "top move is an optimal move (decisions with >= 2 moves)",
    "regret_exact": "exact value the top move gives up (decisions with >= 2 moves)",
    "move_value_vs_exact": "NDMZ: |v(g(s^k, m)) - Q*(m)| over the legal moves m",
    "greedy_agree_exact": "NDMZ: the move maximising v(g(s^k, m)) is optimal",
    "greedy_regret_exact": "NDMZ: exact value that move gives up",
    "roll_value_vs_exact": "NDMZ: |E_c[-v(g(g(s^k, m), o))] - Q*(m)|, through the model's roll",
    "roll_agree_exact": "NDMZ: the move maximising that expectimax is optimal",
    "roll_regret_exact": "NDMZ: exact value that move gives up",
    "real_roll_value_vs_exact": "k=0: |E[v(h(o)) of the true position after m and the roll] - Q*(m)|",
    "real_roll_agree_exact": "k=0: the move maximising that is optimal",
    "real_roll_regret_exact": "k=0: exact value that move gives up",
}

_TIE = 1e-9  # moves within this of the best value are optimal too (the solver's ties)


def exact_solution(game):
    """The game's exact solution, if it offers one, else None: an object with
    `state_value(state, player)` and `move_values(state)` (Nannon's, from the solver's
    on-disk cache or solved once: seconds for 6-3-6)."""
    if game.get_type().short_name != "nannon":
        return None
    import sys

    from ..games.nannon_solver import shared_solution

    return shared_solution(game, progress=sys.stderr.isatty())


def after_moves(state, player: int, encode) -> list[tuple]:
    """Each legal move's true successors: [(action, probability, sign, observation or
    None, value)] per outcome of the chance event after the move (one outcome, probability
    1, where none follows); sign +1 where `player` moves next, -1 where the other does;
    at a finished game no observation and its true returns for `player` as the value."""
    out = []
    for a in state.legal_actions():
        child = state.clone()
        child.apply_action(a)
        for o, prob in child.chance_outcomes() if child.is_chance_node() else [(None, 1.0)]:
            after = child.clone()
            if o is not None:
                after.apply_action(o)
            if after.is_terminal():
                out.append((a, prob, 1.0, None, float(after.returns()[player])))
            else:
                out.append((a, prob, 1.0 if after.current_player() == player else -1.0, encode([after])[0], 0.0))
    return out


def score_real_roll(acc, model, u, exact: dict) -> None:
    """At k = 0: each legal move of decision steps u valued by the expectimax of f(h(o))
    over the true positions after it and the roll, against its exact value."""
    entries = [(row, *e) for row, i in enumerate(u) for e in exact["after"][i]]
    rows, acts = np.array([e[0] for e in entries]), np.array([e[1] for e in entries])
    prob, sign, value = (np.array([e[j] for e in entries], np.float64) for j in (2, 3, 5))
    live = np.flatnonzero([e[4] is not None for e in entries])
    if len(live):
        value[live] = model.initial(np.stack([entries[j][4] for j in live]))[3]
    q = exact["q"][u]
    pair = rows * q.shape[1] + acts
    keys, at = np.unique(pair, return_inverse=True)
    moved = np.bincount(at, prob * sign * value)
    _score_moves(acc, 0, "real_roll", q, keys // q.shape[1], keys % q.shape[1], moved)


def exact_views(steps, width: int) -> dict | None:
    """The recorded exact values as arrays: "value" [n] (nan where none), "q" [n, width]
    (each decision's legal moves' exact values, nan elsewhere) and "after" (each
    decision's `after_moves`); None without any."""
    value = np.asarray(steps.exact_value, np.float64)
    if not np.isfinite(value).any():
        return None
    q = np.full((len(value), width), np.nan)
    for i, moves in enumerate(steps.move_values):
        if moves:
            q[i, list(moves)] = list(moves.values())
    return {"value": value, "q": q, "after": steps.after}


def _scored(q: np.ndarray, pick: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows with >= 2 legal moves, whether `pick` is optimal there, the value it gives up)."""
    real = (~np.isnan(q)).sum(1) >= 2
    q, pick = q[real], pick[real]
    best = np.nanmax(q, 1)
    got = q[np.arange(len(q)), pick]
    return real, got >= best - _TIE, best - got


def score_exact_choice(acc, k: int, value, top, u, exact: dict) -> None:
    """Decision steps u (value and top legal move of f(s^k) per row) against the exact values."""
    acc.add("value_vs_exact", k, np.abs(value - exact["value"][u]))
    real, agree, regret = _scored(exact["q"][u], top)
    if real.any():
        acc.add("agree_exact", k, agree)
        acc.add("regret_exact", k, regret)


def score_exact_chance(acc, k: int, value, u, exact: dict) -> None:
    """Chance steps u: the model's value (the last mover's) against the exact one."""
    truth = exact["value"][u]
    ok = np.isfinite(truth)  # the opening roll-off has no last mover
    if ok.any():
        acc.add("chance_value_vs_exact", k, np.abs(value[ok] - truth[ok]))


def _score_moves(acc, k: int, name: str, q: np.ndarray, rows, acts, value: np.ndarray) -> None:
    """The model's value of each legal move (rows, acts of q) against its exact value,
    and the move it ranks first per decision."""
    acc.add(f"{name}_value_vs_exact" if name != "greedy" else "move_value_vs_exact", k, np.abs(value - q[rows, acts]))
    guess = np.full(q.shape, -np.inf)
    guess[rows, acts] = value
    real, agree, regret = _scored(q, guess.argmax(1))
    if real.any():
        acc.add(f"{name}_agree_exact", k, agree)
        acc.add(f"{name}_regret_exact", k, regret)


def lookahead_values(model, layout, s: torch.Tensor, acts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NDMZ's values of moves `acts` from hidden states s (one row each), for the mover:
    (one step, v(g(s, m)); through the model's roll, -sum_o c(o) v(g(g(s, m), o)) with c
    the chance policy at g(s, m), or v(g(s, m)) where g's identity says the game is over)."""
    from ..nets.ndmz import TERMINAL

    s2, _, ident = model.step(s, acts)
    _, chance, after = model.predict(s2)
    outcomes = layout.choice + np.arange(layout.chance)
    c = torch.softmax(torch.from_numpy(chance[:, outcomes]).double(), -1).numpy()
    s3, _, _ = model.step(s2.repeat_interleave(len(outcomes), 0), np.tile(outcomes, len(acts)))
    deep = -(c * model.predict(s3)[2].reshape(len(acts), len(outcomes))).sum(1)
    return after, np.where(ident.argmax(1) == TERMINAL, after, deep)


def score_lookahead(acc, k: int, model, layout, s: torch.Tensor, u, exact: dict) -> None:
    """NDMZ's look-ahead from hidden states s (one per decision step u): every legal move
    through g, valued by f one step on and through the model's roll."""
    q = exact["q"][u]
    rows, acts = np.nonzero(~np.isnan(q))
    after, deep = lookahead_values(model, layout, s[torch.from_numpy(rows)], acts)
    _score_moves(acc, k, "greedy", q, rows, acts, after)
    _score_moves(acc, k, "roll", q, rows, acts, deep)
