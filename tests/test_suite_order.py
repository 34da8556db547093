"""The session's test order (conftest.background_last): the files that wait on a
background job after those that wait on none, the Ray files last, no file split."""

from pathlib import Path
from types import SimpleNamespace

from conftest import BACKGROUND_RUNS, background_last


def _item(file: str, name: str, fixtures=()):
    path = Path("tests") / file
    return SimpleNamespace(
        path=path, nodeid=f"tests/{file}::{name}", name=name, originalname=name, fixturenames=list(fixtures)
    )


def test_waiting_files_follow_the_free_ones_and_ray_comes_last():
    kuhn = next(t for t in BACKGROUND_RUNS if "kuhn" in t)
    items = [
        _item("test_a.py", "test_free"),
        _item("test_lint.py", "test_ruff"),
        _item("test_lint.py", "test_mypy_finds_nothing"),
        _item("test_m.py", "test_one", ["trained_muzero"]),
        _item("test_m.py", "test_two"),
        _item("test_ray.py", "test_cluster", ["trained"]),
        _item("test_s.py", kuhn),
        _item("test_t.py", "test_score", ["trained_score", "trained"]),
        _item("test_z.py", "test_free"),
    ]
    order = [(i.path.name, i.name) for i in background_last(items)]
    assert order == [
        ("test_a.py", "test_free"),
        ("test_z.py", "test_free"),
        ("test_lint.py", "test_ruff"),  # its file waits on mypy, the first job
        ("test_lint.py", "test_mypy_finds_nothing"),
        ("test_m.py", "test_one"),
        ("test_m.py", "test_two"),  # a file's tests stay together
        ("test_t.py", "test_score"),  # `trained` is asked for before the Kuhn run
        ("test_s.py", kuhn),
        ("test_ray.py", "test_cluster"),
    ]
