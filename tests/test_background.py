"""The background jobs' scheduler (tests/background.py) with trivial jobs: the queue's
order, one job at a time while the tests run (2 cores), the core of a waiting test lent
to the next job, a job asked for before its turn, failures and timeouts reported to the
test that asks; and conftest's plan of the jobs for the collected tests (`-k`)."""

import subprocess
import sys
import time

import pytest

import background
from background import Background
from conftest import JOB_SECONDS, KUHN, background_jobs, finished

# A job that logs "start NAME", sleeps SECONDS, logs "end NAME" (argv: LOG SECONDS NAME).
LOGGED = """
import sys, time
log = open(sys.argv[1], "a")
log.write("start " + sys.argv[3] + "\\n")
log.flush()
time.sleep(float(sys.argv[2]))
log.write("end " + sys.argv[3] + "\\n")
"""
# A job that waits up to SECONDS for FILE to exist; exit 0 if it did, 1 if not (argv: FILE SECONDS).
AWAIT = """
import os, sys, time
end = time.monotonic() + float(sys.argv[2])
while not os.path.exists(sys.argv[1]) and time.monotonic() < end:
    time.sleep(0.02)
sys.exit(0 if os.path.exists(sys.argv[1]) else 1)
"""
# A job that creates FILE, sleeps SECONDS, creates FILE-ended (argv: FILE SECONDS).
TOUCH = """
import sys, time
open(sys.argv[1], "w").close()
time.sleep(float(sys.argv[2]))
open(sys.argv[1] + "-ended", "w").close()
"""
# A job that creates MINE, then waits as AWAIT (argv: MINE FILE SECONDS).
MEET = "import sys\nopen(sys.argv.pop(1), 'w').close()\n" + AWAIT


@pytest.fixture
def jobs():
    bg = Background(cores=2)
    yield bg
    bg.stop()


def _ended(bg, *names, timeout=60.0):
    """Wait, as no test would (not through `result`), for jobs `names` to end."""
    for name in names:
        assert bg.jobs[name].done.wait(timeout), f"{name} did not end"


def test_the_queue_runs_one_job_at_a_time_in_its_order_on_two_cores(jobs, tmp_path):
    log = tmp_path / "log"
    jobs.start({name: ("-c", LOGGED, str(log), "0.3", name) for name in "abc"})
    _ended(jobs, "a", "b", "c")
    assert log.read_text().split("\n")[:-1] == ["start a", "end a", "start b", "end b", "start c", "end c"]
    assert [jobs.jobs[n].proc.returncode for n in "abc"] == [0, 0, 0]


def test_more_cores_run_more_jobs_at_once(tmp_path):
    # 3 cores: the tests leave 2, so a and b run together (each ends once it saw the other).
    bg = Background(cores=3)
    try:
        a, b = str(tmp_path / "a"), str(tmp_path / "b")
        bg.start({"a": ("-c", MEET, a, b, "15"), "b": ("-c", MEET, b, a, "15")})
        _ended(bg, "a", "b")
        assert [bg.jobs[n].proc.returncode for n in "ab"] == [0, 0]
    finally:
        bg.stop()


def test_a_waiting_test_lends_its_core_to_the_next_job_and_takes_it_back(jobs, tmp_path):
    """`first` ends only once `second` has run: it ends only because the test, waiting on
    it, lets the queue start `second` beside it. Once `first` has ended, `third` waits
    for `second` to end (one job at a time again): it finds `second` ended."""
    ran = str(tmp_path / "second-ran")
    jobs.start(
        {
            "first": ("-c", AWAIT, ran, "30"),
            "second": ("-c", TOUCH, ran, "1.0"),
            "third": ("-c", AWAIT, ran + "-ended", "0"),
        }
    )
    deadline = time.monotonic() + 10  # a loaded machine may take more than a moment to start it
    while not jobs.jobs["first"].running and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert jobs.jobs["first"].running and jobs.jobs["second"].proc is None  # one at a time while nobody waits
    began = time.monotonic()
    assert jobs.result("first", (), timeout=60).returncode == 0
    assert time.monotonic() - began < 30
    _ended(jobs, "second", "third")
    assert jobs.jobs["third"].proc.returncode == 0, "third started beside second after the wait"


def test_a_job_asked_for_before_its_turn_starts_at_once(jobs, tmp_path):
    release = tmp_path / "release"
    jobs.start({"long": ("-c", AWAIT, str(release), "60"), "short": ("-c", "pass")})
    assert jobs.result("short", (), timeout=30).returncode == 0
    assert jobs.jobs["long"].running
    release.touch()
    assert jobs.result("long", (), timeout=30).returncode == 0
    assert jobs.jobs["short"].waited < 30 and "tests waited" in jobs.report()[0]


def test_a_job_the_session_did_not_plan_runs_when_asked_for(jobs):
    res = jobs.result("extra", ("-c", "print('made now')"), timeout=30)
    assert res.returncode == 0 and res.stdout == "made now\n"


def test_asking_for_a_job_makes_no_scratch_folder_but_its_own(jobs, tmp_path, monkeypatch):
    """Each test that asks for a planned job finds it; none leaves an empty folder behind."""
    monkeypatch.setattr(background.tempfile, "tempdir", str(tmp_path))
    jobs.start({"a": ("-c", "pass")})
    for _ in range(3):
        assert jobs.result("a", (), timeout=30).returncode == 0
    assert list(tmp_path.iterdir()) == [jobs.jobs["a"].scratch]
    jobs.stop()
    assert not list(tmp_path.iterdir())


def test_a_failed_job_fails_the_test_that_asks_with_its_output(jobs):
    jobs.start({"fails": ("-c", "import sys; print('fine so far'); sys.exit('boom: the training diverged')")})
    res = jobs.result("fails", (), timeout=30)
    assert res.returncode == 1 and res.stdout == "fine so far\n" and "boom" in res.stderr
    with pytest.raises(AssertionError, match=r"(?s)fails failed \(exit 1\).*boom: the training diverged"):
        finished(jobs, "fails", ())


def test_a_job_that_cannot_start_says_why_and_the_queue_goes_on(jobs):
    jobs.start({"never": ("-c", "pass", "a\0b"), "after": ("-c", "pass")})
    with pytest.raises(RuntimeError, match="could not start.*null byte"):
        jobs.result("never", (), timeout=30)
    _ended(jobs, "after")
    assert jobs.jobs["after"].proc.returncode == 0


def test_a_job_past_its_timeout_is_killed(jobs):
    jobs.start({"slow": ("-c", "import time; time.sleep(60)")})
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        jobs.result("slow", (), timeout=0.5)
    assert time.monotonic() - began < 30 and jobs.jobs["slow"].proc.returncode == -9


def test_stop_kills_the_running_jobs_and_starts_no_more(tmp_path):
    bg = Background(cores=2)
    bg.start({"slow": ("-c", "import time; time.sleep(60)"), "next": ("-c", "pass")})
    time.sleep(0.3)
    scratch = bg.jobs["slow"].scratch
    began = time.monotonic()
    bg.stop()
    assert time.monotonic() - began < 30
    assert bg.jobs["slow"].proc.returncode == -9 and bg.jobs["next"].proc is None and not scratch.exists()


def _item(file, name, fixtures=()):
    from pathlib import Path
    from types import SimpleNamespace

    return SimpleNamespace(
        path=Path("tests") / file,
        nodeid=f"tests/{file}::{name}",
        name=name,
        originalname=name,
        fixturenames=list(fixtures),
    )


def test_the_plan_holds_the_collected_tests_jobs_the_longest_first():
    items = [
        _item("test_lint.py", "test_mypy_finds_nothing"),
        _item("test_probe.py", "test_probe", ["trained", "trained_muzero"]),
        _item("test_sog_training.py", KUHN),
        _item("test_muzero.py", "test_free"),
    ]
    plan = list(background_jobs(items))
    assert sorted(plan) == sorted(["mypy", "trained", "trained_muzero", KUHN])
    assert plan == sorted(plan, key=lambda job: -JOB_SECONDS[job]) and plan[0] == KUHN
    assert list(background_jobs(items[:1])) == ["mypy"] and background_jobs(items[3:]) == {}


def test_a_k_selection_plans_only_the_selected_tests_jobs():
    """The plan pytest shows (and, outside --collect-only, starts) for two files and a -k
    selection: only what the selected tests need (mypy, and `trained` for the probe's
    refusal, not `trained_muzero`, which another test of test_probe.py needs), the
    longest first."""
    args = ["tests/test_lint.py", "tests/test_probe.py", "-k", "mypy or refuses"]
    plan = ", ".join(sorted(["mypy", "trained"], key=lambda job: -JOB_SECONDS[job]))
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=background.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [line for line in res.stdout.splitlines() if line.startswith("background jobs")]
    assert lines == [f"background jobs in their order (cores: {background._cores()}): {plan}"]
