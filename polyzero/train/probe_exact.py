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
* NDMZ only, a one-step look-ahead with the learned model: from s^k, each legal move
  m is stepped by g and valued by f, v(g(s^k, m)) (after a move the model's value is
  the mover's), against Q*(m) (``move_value_vs_exact``), and the move it ranks first
  is scored as above (``greedy_agree_exact``, ``greedy_regret_exact``): whether the
  value the search would back up ranks the moves as the exact values do.
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


def exact_views(steps, width: int) -> dict | None:
    """The recorded exact values as arrays: "value" [n] (nan where none) and "q" [n, width]
    (each decision's legal moves' exact values, nan elsewhere); None without any."""
    value = np.asarray(steps.exact_value, np.float64)
    if not np.isfinite(value).any():
        return None
    q = np.full((len(value), width), np.nan)
    for i, moves in enumerate(steps.move_values):
        if moves:
            q[i, list(moves)] = list(moves.values())
    return {"value": value, "q": q}


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


def score_greedy(acc, k: int, model, s: torch.Tensor, u, exact: dict) -> None:
    """NDMZ's one-step look-ahead from hidden states s (one per decision step u): every
    legal move through g, valued by f, against its exact value."""
    q = exact["q"][u]
    rows, acts = np.nonzero(~np.isnan(q))
    s2, _, _ = model.step(s[torch.from_numpy(rows)], acts)
    v = model.predict(s2)[2]
    acc.add("move_value_vs_exact", k, np.abs(v - q[rows, acts]))
    guess = np.full(q.shape, -np.inf)
    guess[rows, acts] = v
    real, agree, regret = _scored(q, guess.argmax(1))
    if real.any():
        acc.add("greedy_agree_exact", k, agree)
        acc.add("greedy_regret_exact", k, regret)
