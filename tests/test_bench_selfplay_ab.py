"""benchmarks/selfplay_ab.py: the baseline is the named commit's own tree, and a bad
revision or setting is a usage error that writes nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import selfplay_ab as bench  # noqa: E402


def test_the_baseline_is_the_revisions_tree(tmp_path):
    commit = bench.unpack("HEAD", tmp_path)
    assert commit == bench.git("rev-parse", "HEAD")
    want = subprocess.run(
        ["git", "show", "HEAD:benchmarks/selfplay_throughput.py"], cwd=bench.ROOT, capture_output=True, check=True
    ).stdout
    assert (tmp_path / "benchmarks" / "selfplay_throughput.py").read_bytes() == want
    assert (tmp_path / "polyzero" / "__init__.py").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--baseline", "no-such-rev"], "is not a revision"), (["--rounds", "0"], "must be positive")],
)
def test_bad_arguments_are_usage_errors(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        bench.main(args + ["--out", str(tmp_path / "ab.json")])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
