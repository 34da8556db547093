"""The layer contract (pyproject.toml's [tool.importlinter], docs/architecture.md):
an import that points up, even one inside a function, fails the suite."""

import os
import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The linter in a process of its own: in the suite's process, streams earlier tests
# captured and closed broke its output (and pytest with it).
LINT = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
)


def _lint(config: pathlib.Path, path: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run(
        [sys.executable, "-c", LINT, str(config)], cwd=path, env=env, capture_output=True, text=True, timeout=600
    )


def test_every_import_of_polyzero_points_down():
    res = _lint(ROOT / "pyproject.toml", ROOT)
    assert res.returncode == 0, res.stdout[res.stdout.find("Broken contracts") :] + res.stderr
    assert "KEPT" in res.stdout


def test_the_linter_sees_an_upward_import_inside_a_function(tmp_path):
    """What the contract rests on: imports in function bodies are in the graph."""
    pkg = tmp_path / "layered_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "high.py").write_text("from . import low\n")
    (pkg / "low.py").write_text("def late():\n    from . import high  # up, but only when called\n")
    (tmp_path / "contract.toml").write_text(
        '[tool.importlinter]\nroot_package = "layered_pkg"\n\n[[tool.importlinter.contracts]]\n'
        'name = "down"\ntype = "layers"\ncontainers = ["layered_pkg"]\nlayers = ["high", "low"]\n'
    )
    res = _lint(tmp_path / "contract.toml", tmp_path)
    assert res.returncode == 1
    assert "layered_pkg.low -> layered_pkg.high (l.2)" in res.stdout


def test_the_architecture_page_names_every_layer_of_the_contract():
    """docs/architecture.md's layers table keeps up with the contract."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = [
        name.strip()
        for layer in contract["layers"]
        for name in layer.split("|")
        if f"| `polyzero.{name.strip()}`" not in page
    ]
    assert not missing, f"layers missing from docs/architecture.md's table: {missing}"
