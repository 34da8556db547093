"""polyzero.sog.draws: numpy's draws and sums on short lists, bit for bit."""

import numpy as np

from polyzero.sog.draws import draw, short_sum


def test_draw_is_generator_choice_from_the_same_state():
    source = np.random.default_rng(0)
    for trial in range(3000):
        n = int(source.integers(1, 12))
        w = source.random(n) * (source.random(n) < 0.8)
        if trial % 5 == 0:
            w = np.round(w, 1)  # ties and exact zeros
        if w.sum() <= 0:
            continue
        p = w / w.sum()
        a, b = np.random.default_rng(trial), np.random.default_rng(trial)
        assert [int(a.choice(n, p=p)) for _ in range(3)] == [draw(b, p.tolist()) for _ in range(3)]
        assert a.random() == b.random()  # the same numbers consumed


def test_short_sum_is_numpys_sum():
    source = np.random.default_rng(1)
    for _ in range(5000):
        n = int(source.integers(0, 20))
        x = source.random(n) * 10.0 ** source.integers(-8, 8, n)
        assert short_sum(x.tolist()) == float(x.sum())
