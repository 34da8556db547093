"""scripts/run_fingerprints.py refuses a command line it cannot run on one line, exit 2,
before it runs a scenario: an unknown option was taken for the output file (a run of
`--help` wrote every fingerprint to a file named `--help`, committed by accident on
2026-11-30)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import run_fingerprints  # noqa: E402


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give an output file"),
        (["-x"], "unknown option -x"),
        (["--compare", "a.json"], "--compare takes 2 argument(s), got 1"),
        (["--one", "ndmz", "sog"], "--one takes 1 argument(s), got 2"),
        (["--compare", "no-such.json", "no-such-either.json"], "no-such.json does not exist"),
        (["OUT", "alphazero", "no-such-scenario"], "unknown scenario no-such-scenario"),
        (["--one", "no-such-scenario"], "unknown scenario no-such-scenario"),
    ],
)
def test_a_bad_command_line_exits_2_on_one_line_and_runs_nothing(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_fingerprints, "scenario", lambda name: pytest.fail("ran a scenario"))
    monkeypatch.setattr(run_fingerprints.subprocess, "run", lambda *a, **k: pytest.fail("ran a scenario"))
    assert run_fingerprints.main([a.replace("OUT", str(tmp_path / "out.json")) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no output file, least of all one named like an option


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_and_writes_nothing(flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_fingerprints.main([flag]) == 0
    assert "--compare before.json after.json" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
