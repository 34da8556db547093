"""numpy's numbers on short lists without numpy's cost per call: GT-CFR's expansion
simulations draw and sum over a handful of entries tens of thousands of times per
solve, where numpy's checks and dispatch cost more than the arithmetic.

- `draw(rng, p)` is `rng.choice(len(p), p=p)` for normalised `p`, the same index from
  the same generator state: numpy's `Generator.choice` draws one `rng.random()` and
  returns the first index whose running sum, divided by the total, exceeds it
  (`cdf = p.cumsum(); cdf /= cdf[-1]; cdf.searchsorted(u, side="right")`). Its checks
  (non-negative entries summing to 1) are left out: the callers' weights pass them.
- `short_sum(xs)` is `np.sum(xs)` of float64 entries: numpy adds fewer than 8 entries
  one after the other from 0.0 and longer arrays pairwise, so those go to numpy.

tests/test_sog_draws.py holds both to numpy's on random inputs, bit for bit.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

SEQUENTIAL = 8  # numpy's pairwise summation adds shorter runs one after the other


def short_sum(xs: list[float]) -> float:
    if len(xs) >= SEQUENTIAL:
        return float(np.sum(np.asarray(xs, dtype=float)))
    total = 0.0
    for x in xs:
        total += x
    return total


def draw(rng: np.random.Generator, p: list[float]) -> int:
    cdf, running = [], 0.0
    for x in p:  # numpy's cumsum: one after the other
        running += x
        cdf.append(running)
    last = cdf[-1]
    return bisect_right([c / last for c in cdf], rng.random())
