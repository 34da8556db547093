"""benchmarks/ray_request_transport.py refuses a count below 1 on one line, exit 2, before
it starts a cluster (a round count of 0 ended in a traceback from an empty mean)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import ray_request_transport  # noqa: E402


@pytest.mark.parametrize("option", ["--rows", "--calls", "--rounds"])
def test_a_count_below_one_exits_2_before_any_cluster(option, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ray_request_transport.subprocess, "run", lambda *a, **k: pytest.fail("started a round"))
    with pytest.raises(SystemExit) as exit_:
        ray_request_transport.main([option, "0", "--out", str(tmp_path / "r.json")])
    assert exit_.value.code == 2
    assert f"{option} must be at least 1, not 0" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
