"""The session's test order (conftest.background_last): the files that wait on a
background job after those that wait on none, in the queue's order (the longest job
first) of the last job each waits on, the Ray files last, no file split."""

from pathlib import Path
from types import SimpleNamespace

from conftest import KUHN, background_jobs, background_last


def _item(file: str, name: str, fixtures=()):
    path = Path("tests") / file
    return SimpleNamespace(
        path=path, nodeid=f"tests/{file}::{name}", name=name, originalname=name, fixturenames=list(fixtures)
    )


def test_waiting_files_follow_the_free_ones_in_the_queues_order_and_ray_comes_last():
    items = [
        _item("test_a.py", "test_free"),
        _item("test_lint.py", "test_ruff"),
        _item("test_lint.py", "test_mypy_finds_nothing"),
        _item("test_m.py", "test_one", ["trained_muzero"]),
        _item("test_m.py", "test_two"),
        _item("test_ray.py", "test_cluster", ["trained"]),
        _item("test_s.py", KUHN),
        _item("test_t.py", "test_score", ["trained_score", "trained"]),
        _item("test_z.py", "test_free"),
    ]
    # The queue: the longest first (conftest.JOB_SECONDS).
    assert list(background_jobs(items)) == [KUHN, "trained_muzero", "trained", "mypy"]
    order = [(i.path.name, i.name) for i in background_last(items)]
    assert order == [
        ("test_a.py", "test_free"),
        ("test_z.py", "test_free"),
        ("test_s.py", KUHN),  # waits on the first job in the queue
        ("test_m.py", "test_one"),
        ("test_m.py", "test_two"),  # a file's tests stay together
        ("test_t.py", "test_score"),
        ("test_lint.py", "test_ruff"),  # its file waits on mypy, the last job
        ("test_lint.py", "test_mypy_finds_nothing"),
        ("test_ray.py", "test_cluster"),
    ]
