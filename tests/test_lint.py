"""The linter, the formatter and the type checker, as configured in pyproject.toml, pass.

ruff checks the whole repository and finds it formatted as `ruff format` writes it;
mypy checks the whole package (modules with errors from before it was brought in are
listed in pyproject's [[tool.mypy.overrides]])."""

import subprocess

from background import Job
from conftest import BACKGROUND, MYPY


def check_result(*args: str) -> subprocess.CompletedProcess:
    """`python -m ARGS` at the repository's root, this checkout first on the path."""
    job = Job(("-m", *args))
    try:
        job.start()
        return job.result(timeout=900)
    finally:
        job.stop()


def test_ruff_finds_nothing():
    res = check_result("ruff", "check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_would_catch_an_undefined_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    return undefined_name\n")
    res = check_result("ruff", "check", "--no-cache", str(bad))
    assert res.returncode == 1 and "F821" in res.stdout


def test_ruff_format_would_change_nothing():
    res = check_result("ruff", "format", "--check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_format_would_catch_a_hand_wrapped_call(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("f(1,\n  2)\n")
    res = check_result("ruff", "format", "--check", "--no-cache", str(bad))
    assert res.returncode == 1 and "bad.py" in res.stdout


def test_mypy_finds_nothing():
    res = BACKGROUND.result("mypy", MYPY, timeout=900)  # started with the session (conftest)
    assert res.returncode == 0, res.stdout + res.stderr
