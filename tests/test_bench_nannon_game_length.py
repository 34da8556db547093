"""benchmarks/nannon_game_length.py: the fraction of decisions whose n-step target
bootstraps, on hand-counted game lengths, and a bad game name's one-line error."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import nannon_game_length as gl  # noqa: E402


def test_bootstrapped_fraction_counts_the_decisions_with_an_nth_after_them():
    # games of 3 and 5 decisions: n = 1 -> 2 + 4 of 8; n = 3 -> 0 + 2; n = 5 -> none
    assert gl.bootstrapped_fraction([3, 5], 1) == pytest.approx(6 / 8)
    assert gl.bootstrapped_fraction([3, 5], 3) == pytest.approx(2 / 8)
    assert gl.bootstrapped_fraction([3, 5], 5) == 0.0


def test_optimal_games_end_and_a_bad_game_exits_2(capsys):
    from polyzero.games import load_game

    lengths = gl.optimal_game_lengths(load_game("nannon"), 5, seed=0)
    assert len(lengths) == 5 and lengths.min() >= 2
    with pytest.raises(SystemExit) as exc:
        gl.main(["--game", "no_such_game", "--games", "1"])
    assert exc.value.code == 2 and "error" in capsys.readouterr().err
