"""benchmarks/ndmz_nannon_parts.py: the one-move look-ahead on the true successors picks
optimal moves when the value it reads is the exact one (its signs and the won-game
values are right), so its score against the optimal player is exactly 0.5."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import ndmz_nannon_parts as parts  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.games.nannon_policies import evaluate_policy  # noqa: E402
from polyzero.games.nannon_solver import moves, shared_solution  # noqa: E402


def test_one_ply_on_the_true_successors_with_exact_values_is_optimal(monkeypatch):
    sol = shared_solution(load_game("nannon"))
    rows = np.flatnonzero(sol.positions.decision)

    class ExactValues:  # f(h(o)) -> the mover's exact value with its roll (rolls asked 1..D in turn)
        def __init__(self, net, ndmz):
            self.roll = 0

        def initial(self, obs):
            self.roll += 1
            v = [max(-sol.value[t] for _, t in moves(sol.positions, s, self.roll)) for s in rows]
            return torch.zeros(len(rows), 1), None, None, np.array(v)

    monkeypatch.setattr(parts, "LearnedModel", ExactValues)
    monkeypatch.setattr(parts, "lookahead_values", lambda model, layout, s, acts: (np.zeros(len(acts)),) * 2)
    tables = parts.one_ply_tables(sol, None, None)
    assert evaluate_policy(sol, tables["one_ply_true"], "optimal").score == pytest.approx(0.5, abs=1e-12)
    # the model's look-ahead, all values equal here, picks the first legal move: not optimal
    assert evaluate_policy(sol, tables["one_ply_model"], "optimal").score < 0.45
