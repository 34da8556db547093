"""benchmarks/step_split_ab.py: a step's phases summed per step, and bad arguments are
usage errors that write nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import step_split_ab as bench  # noqa: E402


def test_the_summary_leaves_out_the_first_steps_and_counts_every_update():
    rec = {"collect": [9.0, 1.0, 3.0], "update": [5.0] * 4 + [0.5, 1.5] * 4, "loadavg": (1.0, 1.0, 1.0), "code": "x"}
    s = bench.summary(rec, skip=1)
    assert s["updates_per_step"] == 4
    assert s["selfplay_s"] == 2.0 and s["update_s"] == 1.0
    assert s["learner_s"] == 4.0 and s["step_s"] == 6.0


def test_an_arm_is_a_name_an_algorithm_and_settings():
    assert bench.parse_arm("muzero_k1=muzero:muzero.unroll_steps=1,muzero.dynamics_blocks=1") == (
        "muzero_k1",
        "muzero",
        ["muzero.unroll_steps=1", "muzero.dynamics_blocks=1"],
    )
    assert bench.parse_arm("alphazero") == ("alphazero", "alphazero", [])
    rec = {"collect": [9.0, 1.0, 3.0], "update": [0.5] * 6, "loadavg": (1.0, 1.0, 1.0), "code": "x"}
    s = bench.summary(rec, skip=1, positions_per_step=4)
    assert s["selfplay_ms_per_position"] == 500.0 and s["update_ms"] == 500.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "no-such-rev"], "is not a revision"),
        (["--baseline", "HEAD", "--steps", "2", "--skip", "2"], "--skip < --steps"),
        (["--baseline", "HEAD", "--algos", "muzero,no_such_algo"], "unknown algorithm 'no_such_algo'"),
        (["--baseline", "HEAD", "--algos", ","], "names no algorithm"),
        (["--baseline", "HEAD", "--game", "no_such_game"], "unknown game 'no_such_game'"),
        (["--arm", "k1=muzero:muzero.no_such_key=1"], "no_such_key"),
        (["--arm", "a=muzero", "--arm", "a=alphazero"], "same name"),
        (["--arm", "a=muzero", "--algos", "alphazero"], "give one"),
    ],
)
def test_bad_arguments_are_usage_errors(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        bench.main(args + ["--out", str(tmp_path / "ab.json")])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_worker_imports_its_own_trees_polyzero():
    """The module imports no polyzero at its top: a baseline worker's `import polyzero`
    must find the baseline tree it put first on the path, not this one."""
    code = "import sys; sys.path.insert(0, 'benchmarks'); import step_split_ab; print('polyzero' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_paired_rounds_pair_each_abba_rounds_baseline_with_its_new_processes():
    arm = {
        "baseline": {"runs": [{"step_s": s} for s in (2.0, 4.0, 3.0, 3.0)]},
        "now": {"runs": [{"step_s": s} for s in (1.0, 2.0, 2.0, 1.0)]},
    }
    assert bench.paired_rounds(arm) == [2.0, 2.0]
    lines = bench.paired_lines({"algos": {"sog": arm}})
    assert lines[-1] == "- sog: 2.00, 2.00; 2.00x [2.00, 2.00]"


@pytest.mark.parametrize(("text", "message"), [("{", "cannot read"), ('{"x": 1}', "not a step_split_ab results file")])
def test_render_of_a_bad_file_is_a_usage_error(tmp_path, capsys, text, message):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(SystemExit) as stop:
        bench.main(["--render", "--out", str(path)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and "Traceback" not in err
