"""Learning-curve summaries (Go-Exploit paper, Section 4).

The paper measures sample efficiency by the area under the curve (AUC) of win
rate against learning step: "After each learning step, the win rate against
each difficulty level of MCTS-Solver was computed by averaging the evaluation
match results over the previous 50 learning steps. [...] The average win
rates were summed over all learning steps to compute the AUC." Wins score 1,
draws 1/2, losses 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["windowed_win_rates", "learning_curve_auc", "bootstrap_mean_interval", "welch_one_sided"]


def windowed_win_rates(steps, scores, games=None, window: int = 50, at_steps=None) -> np.ndarray:
    """At each step s of `at_steps` (default: `steps`), the win rate over the evaluation
    results of learning steps in (s - window, s]: the games-weighted mean of `scores`
    (each evaluation's (W + D/2) / N, weighted by its `games`, default equal). NaN where
    no evaluation falls in the window."""
    steps = np.asarray(steps, np.float64)
    scores = np.asarray(scores, np.float64)
    games = np.ones_like(scores) if games is None else np.asarray(games, np.float64)
    at = steps if at_steps is None else np.asarray(at_steps, np.float64)
    out = np.full(len(at), np.nan)
    for k, s in enumerate(at):
        inside = (steps <= s) & (steps > s - window)
        if inside.any() and games[inside].sum() > 0:
            out[k] = float((scores[inside] * games[inside]).sum() / games[inside].sum())
    return out


def learning_curve_auc(steps, win_rates, total_steps: int | None = None, normalise: bool = False) -> float:
    """Sum over learning steps t = 1..T of the win rate at t (the paper's AUC).

    The curve is known at the evaluated `steps`; between two of them it is linearly
    interpolated, before the first it is held at the first value and after the last
    at the last one. T = `total_steps` (default: the last evaluated step). With
    `normalise`, the sum divided by T: the mean win rate over training, in [0, 1].
    """
    steps = np.asarray(steps, np.float64)
    rates = np.asarray(win_rates, np.float64)
    keep = np.isfinite(rates)
    steps, rates = steps[keep], rates[keep]
    if len(steps) == 0:
        raise ValueError("no evaluated learning step to take an area under")
    order = np.argsort(steps)
    steps, rates = steps[order], rates[order]
    total = int(steps[-1]) if total_steps is None else int(total_steps)
    t = np.arange(1, total + 1, dtype=np.float64)
    area = float(np.interp(t, steps, rates).sum())
    return area / total if normalise else area


def bootstrap_mean_interval(values, resamples: int = 10_000, level: float = 0.95, seed: int = 0):
    """(mean, low, high): the mean of `values` (e.g. per-run AUCs) with a percentile
    bootstrap interval."""
    x = np.asarray(values, np.float64)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(x.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def welch_one_sided(a, b) -> tuple[float, float]:
    """(t, p) of Welch's t-test of mean(a) > mean(b) (unequal variances)."""
    from scipy import stats

    res = stats.ttest_ind(np.asarray(a, np.float64), np.asarray(b, np.float64), equal_var=False, alternative="greater")
    return float(res.statistic), float(res.pvalue)
