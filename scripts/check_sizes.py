"""Modules over 500 lines and functions over 80 lines (the project's size limits).

    python scripts/check_sizes.py             # polyzero/ and benchmarks/; exit 1 if any
    python scripts/check_sizes.py PATH ...    # these files or folders

Lines are physical lines of the file, and of a function from its `def` (or first
decorator) to its last line, docstring and comments included. The allow-list names
the files other work is changing now; each entry comes off once that work lands.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
CHECKED = ("polyzero", "benchmarks")
# Files being rewritten by other work in progress (issue 55: plug-ins own their
# config sections; one runtime replaces the Ray driver): exempt until that work is
# merged, then removed from this list.
ALLOWED = {
    "polyzero/config.py",
}


def _python_files(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node, node.end_lineno - start + 1


def violations(paths: list[Path] | None = None) -> list[str]:
    """One line per module over MAX_MODULE_LINES and per function over MAX_FUNCTION_LINES."""
    out = []
    for file in _python_files(paths or [ROOT / name for name in CHECKED]):
        file = file.resolve()
        rel = file.relative_to(ROOT).as_posix() if file.is_relative_to(ROOT) else str(file)
        if rel in ALLOWED:
            continue
        text = file.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{rel}: {lines} lines (module limit {MAX_MODULE_LINES})")
        for node, length in _functions(ast.parse(text, str(file))):
            if length > MAX_FUNCTION_LINES:
                out.append(f"{rel}:{node.lineno}: {node.name} is {length} lines (function limit {MAX_FUNCTION_LINES})")
    return out


def main(argv: list[str]) -> int:
    found = violations([Path(a).resolve() for a in argv] or None)
    print("\n".join(found) if found else "no module or function over its limit")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
