"""List polyzero's imports between layers, including those inside functions.

    python scripts/import_layers.py            # every upward import, one a line
    python scripts/import_layers.py --png docs/layers.png   # the layer picture

Reads every `import` statement in polyzero/ with `ast` (module level, inside
functions, under `if TYPE_CHECKING`), maps each module to its layer and prints the
imports that point from a lower layer to a higher one. The layer order is
the one `[tool.importlinter]` in pyproject.toml enforces (read from there);
packages of one layer are siblings (independent of each other). Unlike
`lint-imports`, this lists the ignored imports too: what is left to remove.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys
import tomllib
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent / "polyzero"


def contract_layers() -> list[list[str]]:
    """The layers of pyproject.toml's import contract, lowest first; each a list of
    sibling packages (neither may import the other)."""
    with open(ROOT.parent / "pyproject.toml", "rb") as f:
        contract = tomllib.load(f)["tool"]["importlinter"]["contracts"][0]
    return [[name.strip() for name in layer.split("|")] for layer in reversed(contract["layers"])]


LAYERS = contract_layers()


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "polyzero" or len(parts) < 2:
        return None
    return parts[1]


def rank() -> dict[str, int]:
    return {pkg: i for i, group in enumerate(LAYERS) for pkg in group}


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: pathlib.Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, inside a function) for every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package[: len(package) - child.level + 1] + ([base] if base else []))
                found.append((child.lineno, base, in_function))
            visit(child, nested)

    visit(tree, False)
    return found


def upward_imports() -> list[tuple[str, int, str, bool]]:
    order = rank()
    rows = []
    for path in sorted(ROOT.rglob("*.py")):
        importer = module_name(path)
        src = layer_of(importer)
        for line, target, in_function in imports_of(path):
            dst = layer_of(target)
            if src is None or dst is None or src == dst:
                continue
            if src in order and dst in order and order[dst] >= order[src]:
                rows.append((f"{path.relative_to(ROOT.parent)}:{line}", line, target, in_function))
    return rows


def upward_pairs(rows) -> Counter:
    """How many upward imports go from each layer to each other."""
    return Counter((layer_of(module_name(ROOT.parent / w.split(":")[0])), layer_of(t)) for w, _l, t, _f in rows)


def draw(png: str) -> None:
    """The layers as boxes, lowest at the bottom, and the upward imports still left (the
    contract's ignore_imports) under them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(LAYERS) + 0.8))
    centre = {}
    for i, group in enumerate(LAYERS):
        width = 5.6 / len(group)
        for j, pkg in enumerate(group):
            x = 0.5 + j * width
            ax.add_patch(plt.Rectangle((x + 0.05, i + 0.12), width - 0.1, 0.76, fc="#dde8f5", ec="#2b5d8c"))
            ax.text(x + width / 2, i + 0.5, f"polyzero.{pkg}", ha="center", va="center", fontsize=9)
            centre[pkg] = (x + width / 2, i + 0.5)
    ax.annotate(
        "",
        xy=(6.45, 0.3),
        xytext=(6.45, len(LAYERS) - 0.3),
        arrowprops={"arrowstyle": "->", "color": "#2b5d8c", "lw": 1.5},
    )
    ax.text(6.6, len(LAYERS) / 2, "imports point down", rotation=90, va="center", fontsize=9, color="#2b5d8c")
    left = ", ".join(f"{a} -> {b} ({n})" for (a, b), n in sorted(upward_pairs(upward_imports()).items()))
    ax.text(
        0.5,
        -0.25,
        f"upward imports left (ignore_imports): {left or 'none'}",
        fontsize=8,
        color="#c0392b",
        va="top",
        wrap=True,
    )
    ax.set_xlim(0.4, 6.9)
    ax.set_ylim(-0.8, len(LAYERS))
    ax.axis("off")
    ax.set_title("polyzero's layers (pyproject.toml [tool.importlinter])", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png", help="draw the layers to this PNG instead of listing")
    args = parser.parse_args(argv)
    if args.png:
        draw(args.png)
        return 0
    rows = upward_imports()
    for where, _line, target, in_function in rows:
        print(f"{where:45s} -> {target}{'   (in a function)' if in_function else ''}")
    pairs = upward_pairs(rows)
    print(f"\n{len(rows)} upward imports; by layer pair:")
    for (a, b), n in sorted(pairs.items()):
        print(f"  {a} -> {b}: {n}")
    return 0  # a listing: lint-imports enforces the contract


if __name__ == "__main__":
    sys.exit(main())
