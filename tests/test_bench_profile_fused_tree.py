"""benchmarks/profile_fused_tree.py: its phase-by-phase replay builds the fused search's
trees (the same root visits), and every phase is timed."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import profile_fused_tree as bench  # noqa: E402
import tinynet  # noqa: E402
from polyzero.search import fused  # noqa: E402


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_replay_matches_the_fused_search(kind):
    row = bench.profile(tinynet.TinyNetNumpy("fused"), kind, batch=8, sims=6, rounds=1)
    assert row["root_visits_equal"]  # profile() exits if the replay's root visits differ
    assert set(row["us_per_simulation"]) == set(bench.PHASES)
    assert min(row["us_per_simulation"].values()) >= 0 < sum(row["us_per_simulation"].values())
    assert fused.simulate_fused is not None and not isinstance(fused.simulate_fused, bench.PhaseReplay)
