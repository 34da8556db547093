"""The layer contract (pyproject.toml's [tool.importlinter], docs/architecture.md):
an import that points up, even one inside a function, fails the suite."""

import pathlib
import tomllib

from importlinter.cli import lint_imports

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_import_of_polyzero_points_down(capsys):
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert code == 0, report[report.find("Broken contracts"):]
    assert "KEPT" in report


def test_the_linter_sees_an_upward_import_inside_a_function(tmp_path, monkeypatch, capsys):
    """What the contract rests on: imports in function bodies are in the graph."""
    pkg = tmp_path / "layered_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "high.py").write_text("from . import low\n")
    (pkg / "low.py").write_text("def late():\n    from . import high  # up, but only when called\n")
    (tmp_path / "contract.toml").write_text(
        '[tool.importlinter]\nroot_package = "layered_pkg"\n\n[[tool.importlinter.contracts]]\n'
        'name = "down"\ntype = "layers"\ncontainers = ["layered_pkg"]\nlayers = ["high", "low"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    code = lint_imports(config_filename=str(tmp_path / "contract.toml"), no_cache=True, no_logo=True)
    assert code == 1
    assert "layered_pkg.low -> layered_pkg.high (l.2)" in capsys.readouterr().out


def test_the_architecture_page_names_every_layer_of_the_contract():
    """docs/architecture.md's layers table keeps up with the contract."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = [name.strip() for layer in contract["layers"] for name in layer.split("|")
               if f"| `polyzero.{name.strip()}`" not in page]
    assert not missing, f"layers missing from docs/architecture.md's table: {missing}"
