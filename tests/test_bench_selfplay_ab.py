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
    [
        (["--baseline", "no-such-rev"], "is not a revision"),
        (["--rounds", "0"], "must be positive"),
        (["--refresh-every", "-1"], "not negative"),
    ],
)
def test_bad_arguments_are_usage_errors(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        bench.main(args + ["--out", str(tmp_path / "ab.json")])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_the_selfplay_profile_splits_every_move_into_its_stages(tmp_path):
    import json

    import profile_selfplay

    out = tmp_path / "profile.json"
    before = {key: getattr(*key) for key in profile_selfplay.TIMED}
    profile_selfplay.main(
        ["--variants", "eager+net.cache=0,eager", "--games", "3", "--ticks", "2", "--warmup", "1"]
        + ["--floor-repeats", "1", "--out", str(out)]
    )
    result = json.loads(out.read_text())
    for name, v in result["variants"].items():
        stages = v["stages_s"]
        assert sum(stages.values()) == pytest.approx(v["seconds"], rel=1e-6)
        assert min(stages.values()) > -1e-3 and stages["network call (ONNX Runtime or the path chosen)"] > 0
        assert v["rows_asked"] > 0 and (v["cache_hit_share"] is None) == name.endswith("cache=0")
    assert result["floor"]["macs_per_row"] > 0 and (out.with_suffix(".md")).read_text().count("|") > 20
    assert {key: getattr(*key) for key in profile_selfplay.TIMED} == before  # the timers are gone again


def test_the_selfplay_profile_times_weight_publications_as_their_own_stage(tmp_path):
    import json

    import profile_selfplay

    out = tmp_path / "profile.json"
    profile_selfplay.main(
        ["--variants", "eager", "--games", "2", "--ticks", "3", "--warmup", "1", "--refresh-every", "1"]
        + ["--floor-repeats", "1", "--out", str(out)]
    )
    v = json.loads(out.read_text())["variants"]["eager"]
    assert v["publications"] == 2 and v["stages_s"]["weight publications (load, filter transforms, new session)"] > 0
    assert sum(v["stages_s"].values()) == pytest.approx(v["seconds"], rel=1e-6)


def test_the_winograd_benchmark_compares_the_arms_on_the_same_network(tmp_path):
    pytest.importorskip("onnxruntime")
    import json

    import selfplay_winograd

    out = tmp_path / "w.json"
    selfplay_winograd.main(
        ["--tiles", "0,4", "--batches", "3", "--rounds", "2", "--publications", "1", "--out", str(out)]
    )
    r = json.loads(out.read_text())["result"]
    assert r["arms"] == ["direct", "F(3x4,3x3)"]  # m = 4 on the 6 x 7 board: 3 rows and 4 columns per tile
    assert r["max_abs_error_vs_eager"]["direct"] < 1e-4 and r["max_abs_error_vs_eager"]["F(3x4,3x3)"] < 1e-4
    assert all(r["cpu_ms_median"][a]["3"] > 0 for a in r["arms"])
