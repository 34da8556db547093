"""`polyzero sog-probe` on a perfect-information game: the CVPN against minimax values."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polyzero.games import load_game
from polyzero.sog import minimax_probe
from polyzero.sog.minimax_probe import minimax_positions, network_vs_minimax
from polyzero.sog.values import Evaluation


@pytest.fixture(scope="module")
def positions():
    return minimax_positions(load_game("tic_tac_toe"))


def test_tic_tac_toe_minimax_table(positions):
    assert len(positions) == 4520  # 5,478 reachable positions, 958 of them over
    root = positions[0]
    assert root.depth == 0 and root.value == 0 and root.optimal == list(range(9))  # every opening draws
    # x: 0, 1; o: 3, 4 -> x completes the top row at 2 and wins; any other move loses to o's 5.
    after = {tuple(p.state.history()): p for p in positions}[(0, 3, 1, 4)]
    assert after.value == 1 and after.optimal == [2]
    counts = [sum(p.depth == d for p in positions) for d in range(9)]
    assert counts == [1, 9, 72, 252, 756, 1140, 1372, 696, 222]
    with pytest.raises(ValueError, match="deterministic two-player"):
        minimax_positions(load_game("kuhn_poker"))
    with pytest.raises(ValueError, match="more than 100"):
        minimax_positions(load_game("tic_tac_toe"), max_positions=100)


class _Oracle:
    """A value function answering with the minimax value (flipped by `wrong`) and a policy
    on the first optimal move."""

    def __init__(self, positions, wrong: bool):
        self.encoding = type("Encoding", (), {"game": load_game("tic_tac_toe")})()
        self.by_history = {tuple(p.state.history()): p for p in positions}
        self.wrong = wrong

    def evaluate(self, queries):
        out = []
        for q in queries:
            pos = self.by_history[tuple(q.public_state.worlds[0].state.history())]
            mover = -pos.value if self.wrong else pos.value
            values = [np.array([mover if p == q.public_state.player else -mover]) for p in range(2)]
            policy = np.zeros((1, 9))
            policy[0, pos.optimal[0] if not self.wrong else pos.state.legal_actions()[-1]] = 1.0
            out.append(Evaluation(values, policy))
        return out


def test_exact_answers_score_perfectly_and_wrong_ones_do_not(positions):
    deep = [p for p in positions if p.depth >= 7]
    right = network_vs_minimax(_Oracle(deep, wrong=False), deep)
    assert right["all"] == pytest.approx(
        {
            "positions": 918,
            "value_error": 0.0,
            "sign_agreement": 1.0,
            "policy_on_optimal": 1.0,
            "uniform_on_optimal": right["all"]["uniform_on_optimal"],
        }
    )
    assert 0 < right["all"]["uniform_on_optimal"] < 1
    assert set(right["by_depth"]) == {7, 8}
    wrong = network_vs_minimax(_Oracle(deep, wrong=True), deep)
    decided = np.mean([p.value != 0 for p in deep])  # flipping a draw changes nothing
    assert wrong["all"]["value_error"] == pytest.approx(2 * decided)
    assert wrong["all"]["sign_agreement"] == pytest.approx(1 - decided)
    assert wrong["all"]["policy_on_optimal"] < right["all"]["policy_on_optimal"]


def test_sog_probe_cli_on_tic_tac_toe(tmp_path, monkeypatch, positions, capsys):
    """The CLI takes the minimax path on a perfect-information run (here on the deepest
    positions only, to stay fast) and writes a row per checkpoint."""
    from polyzero.cli import main

    run = tmp_path / "ttt"
    sets = ["train.steps=1", "train.batch_size=8", "eval.every=0", "eval.final_games=0"]
    sets += ["sog.simulations=4", "sog.solve_simulations=4", "sog.solves_per_step=2", "sog.episodes_per_step=1"]
    argv = ["train", "tic_tac_toe", "--algo", "sog", "--run-dir", str(run), "--no-progress"]
    assert main(argv + [x for s in sets for x in ("--set", s)]) == 0
    deep = [p for p in positions if p.depth == 8]
    monkeypatch.setattr(minimax_probe, "minimax_positions", lambda game, limit: deep)
    out = tmp_path / "probe.json"
    assert main(["sog-probe", str(run), "--points", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["exact"] == "minimax" and [c["step"] for c in result["checkpoints"]] == [0, 1]
    assert all(c["all"]["positions"] == 222 and c["all"]["policy_on_optimal"] == 1.0 for c in result["checkpoints"])
    assert "policy on optimal moves" in capsys.readouterr().out
