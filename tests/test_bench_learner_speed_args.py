"""benchmarks/learner_speed.py refuses a bad A/B revision or round count before it
times anything (the A/B's run last: a bad REV there used to lose the whole run)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import learner_speed  # noqa: E402


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sog-step-ab", "no-such-revision"], "no git revision 'no-such-revision'"),
        (["--update-ab-before", "no-such-revision"], "no git revision 'no-such-revision'"),
        (["--sog-step-ab", "HEAD", "--sog-step-ab-rounds", "0"], "--sog-step-ab-rounds must be at least 1"),
        (["--phases", "sog_cvpn,no_arm:torch"], "--phases: no arm 'no_arm:torch'"),
        (["--drift", "nope"], "--drift: no arm 'nope'"),
        (["--phases", "sog_cvpn", "--phases-rounds", "0"], "--phases-rounds must be at least 1, not 0"),
        (["--drift", "sog_cvpn", "--drift-steps", "-3"], "--drift-steps must be at least 1, not -3"),
    ],
)
def test_bad_ab_arguments_exit_2_before_timing(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(learner_speed, "setup", lambda *a, **k: pytest.fail("set up an arm before checking"))
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exit_:
        learner_speed.main(["--arms", "sog_cvpn", "--devices", "cpu", "--out", str(out), *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_known_revision_passes_the_check():
    ap = learner_speed.argparse.ArgumentParser()
    args = learner_speed.argparse.Namespace(
        update_ab_before="HEAD",
        sog_step_ab="HEAD",
        sog_step_ab_rounds=1,
        phases="sog_cvpn:torch",
        drift="ndmz",
        phases_rounds=1,
        drift_steps=1,
    )
    learner_speed.check_ab_args(ap, args)  # no SystemExit


@pytest.mark.parametrize(
    "args",
    [["--before", "no-such-revision"], ["--before", "HEAD", "--rounds", "0"], ["--before", "HEAD", "--steps", "0"]],
)
def test_the_tree_ab_refuses_a_bad_revision_or_count_before_any_run(args, tmp_path, capsys, monkeypatch):
    import learner_speed_trees

    monkeypatch.setattr(learner_speed_trees, "extract", lambda *a: pytest.fail("extracted a tree before checking"))
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exit_:
        learner_speed_trees.main([*args, "--out", str(out)])
    assert exit_.value.code == 2 and "need a git revision" in capsys.readouterr().err
    assert not out.exists()
