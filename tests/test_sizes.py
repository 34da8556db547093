"""The project's size limits: no module over 500 lines, no function over 80, under
polyzero/ and benchmarks/ (scripts/check_sizes.py; tests are exempt)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "scripts" / "check_sizes.py")
check_sizes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_sizes)


def test_no_module_or_function_over_its_limit():
    assert check_sizes.violations() == []


def test_the_checker_finds_a_long_function_and_a_long_module(tmp_path):
    long = tmp_path / "long.py"
    long.write_text("def f():\n" + "    x = 1\n" * 80 + "\n" * 420)  # f: 81 lines; 501 in all
    found = check_sizes.violations([long])
    assert len(found) == 2
    assert "501 lines" in found[0] and "f is 81 lines" in found[1]
    long.write_text("def f():\n" + "    x = 1\n" * 79)
    assert check_sizes.violations([long]) == []


def test_allowed_files_exist():
    # An entry for a file that moved or was split is stale: the list names real files.
    assert all((ROOT / rel).is_file() for rel in check_sizes.ALLOWED)
