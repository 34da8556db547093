"""Elo ratings from game results: a logistic (Bradley-Terry) model with a weak prior.

P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400)). A draw counts as half a win and
half a loss. As BayesElo does, a prior of `prior_draws` virtual draws between
every pair of players who met keeps the maximum a posteriori ratings finite
when a player won (or lost) every game. Ratings are anchored so that a named
player is 0; 95% intervals come from the curvature of the log posterior at its
maximum (Laplace approximation), with the anchor held fixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["EloFit", "fit_elo", "ratings_table", "expected_score", "plot_ratings"]

SCALE = math.log(10.0) / 400.0  # Elo points -> natural logistic units
Z95 = 1.959963984540054


def expected_score(r_i: float, r_j: float) -> float:
    """The logistic model's expected score of i against j."""
    return 1.0 / (1.0 + 10.0 ** ((r_j - r_i) / 400.0))


@dataclass
class EloFit:
    names: list[str]
    ratings: np.ndarray  # Elo, anchor = 0
    stderr: np.ndarray  # standard errors (0 at the anchor)
    anchor: str
    games: np.ndarray  # games played by each player
    scores: np.ndarray  # (W + D/2) / games of each player

    @property
    def low(self) -> np.ndarray:
        return self.ratings - Z95 * self.stderr

    @property
    def high(self) -> np.ndarray:
        return self.ratings + Z95 * self.stderr

    def rating(self, name: str) -> float:
        return float(self.ratings[self.names.index(name)])

    def to_dict(self) -> dict:
        return {
            "anchor": self.anchor,
            "players": [
                {
                    "name": n,
                    "elo": float(r),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "games": int(g),
                    "score": float(s),
                }
                for n, r, lo, hi, g, s in zip(self.names, self.ratings, self.low, self.high, self.games, self.scores)
            ],
        }


def fit_elo(
    names: list[str], results, anchor: str | None = None, prior_draws: float = 2.0, iterations: int = 100
) -> EloFit:
    """MAP Elo ratings from `results`: (i, j, wins_i, draws, wins_j) tuples of player
    indices (or names) and counts. `anchor` (default the first name) is rated 0."""
    n = len(names)
    index = {name: k for k, name in enumerate(names)}
    w = np.zeros((n, n))  # w[i, j]: i's points against j (wins + draws / 2)
    met = np.zeros((n, n), bool)
    for i, j, wi, d, wj in results:
        i, j = index.get(i, i), index.get(j, j)
        if i == j:
            continue
        w[i, j] += wi + 0.5 * d
        w[j, i] += wj + 0.5 * d
        if wi + d + wj > 0:
            met[i, j] = met[j, i] = True
    played = w + w.T  # games between i and j
    games = played.sum(axis=1)
    points = w.sum(axis=1)
    scores = np.divide(points, games, out=np.zeros(n), where=games > 0)
    # The prior: virtual draws between every pair that met (half a point each way).
    w_post = w + 0.5 * prior_draws * met
    n_post = w_post + w_post.T
    a = names.index(anchor) if anchor is not None else 0
    free = [k for k in range(n) if k != a]
    r = np.zeros(n)  # natural units
    for _ in range(iterations):
        diff = r[:, None] - r[None, :]
        p = 1.0 / (1.0 + np.exp(-diff))  # P(i beats j)
        grad = (w_post - n_post * p).sum(axis=1)
        h = n_post * p * (1.0 - p)
        hess = np.diag(h.sum(axis=1)) - h  # minus the Hessian of the log posterior
        g, H = grad[free], hess[np.ix_(free, free)]
        if not free:
            break
        step = np.linalg.solve(H + 1e-12 * np.eye(len(free)), g)
        big = np.max(np.abs(step))
        if big > 2.0:  # damped Newton: at most ~350 Elo per iteration
            step *= 2.0 / big
        r[free] += step
        if np.max(np.abs(step)) < 1e-10:
            break
    diff = r[:, None] - r[None, :]
    p = 1.0 / (1.0 + np.exp(-diff))
    h = n_post * p * (1.0 - p)
    hess = np.diag(h.sum(axis=1)) - h
    stderr = np.zeros(n)
    if free:
        cov = np.linalg.pinv(hess[np.ix_(free, free)])
        stderr[free] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    ratings = (r - r[a]) / SCALE
    return EloFit(list(names), ratings, stderr / SCALE, names[a], games, scores)


def ratings_table(fit: EloFit) -> str:
    """A plain-text table, strongest first."""
    order = np.argsort(-fit.ratings)
    width = max(8, *(len(n) for n in fit.names))
    lines = [f"{'player':<{width}}  {'Elo':>7}  {'95% interval':>17}  {'games':>6}  {'score':>6}"]
    for k in order:
        mark = "  (anchor)" if fit.names[k] == fit.anchor else ""
        lines.append(
            f"{fit.names[k]:<{width}}  {fit.ratings[k]:7.0f}  "
            f"[{fit.low[k]:7.0f}, {fit.high[k]:7.0f}]  {int(fit.games[k]):6d}  {fit.scores[k]:6.3f}{mark}"
        )
    return "\n".join(lines)


def plot_ratings(fit: EloFit, path) -> str:
    """Horizontal error bars: each player's Elo with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = np.argsort(fit.ratings)
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(order) + 1.5))
    y = np.arange(len(order))
    ax.errorbar(fit.ratings[order], y, xerr=Z95 * fit.stderr[order], fmt="o", capsize=3)
    ax.set_yticks(y)
    ax.set_yticklabels([fit.names[k] for k in order], fontsize="small")
    ax.axvline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel(f"Elo (anchor {fit.anchor} = 0), 95% interval")
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
