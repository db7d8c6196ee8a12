"""The shape of the package (docs/architecture.md): no import cycle between chatparse's modules, counting
imports at module level and inside functions (an import deferred into a function still closes a circle),
and no source file past the size one reader can hold."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "chatparse"
MAX_LINES = 800


def _modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``src/chatparse`` (a package by its __init__)."""
    modules = {}
    for path in sorted((src / "chatparse").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except under ``if TYPE_CHECKING:`` (never executed)."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                stack.extend(child.orelse)
            else:
                stack.append(child)
    return found


def _nearest_module(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> list[str]:
    """The dotted names an import statement loads (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = importer if is_package else importer.rpartition(".")[0]
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}. Importing ``a.b.c`` also runs the
    packages ``a`` and ``a.b``: those count too, except the importer's own parents (already running)."""
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: dict[str, int] = {}
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets = _targets(node, name, is_package)
            if isinstance(node, ast.ImportFrom):
                # ``from p import m`` of a submodule m loads m (p only as m's parent); a name loads p itself.
                names = targets[:-1]
                if any(t not in modules for t in names):
                    names.append(targets[-1])
                targets = names
            for target in targets:
                found = _nearest_module(target, modules)
                if found is None or found == name:
                    continue
                parts = found.split(".")
                for i in range(1, len(parts) + 1):
                    loaded = ".".join(parts[:i])
                    implicit_parent = i < len(parts) and name.startswith(loaded + ".")
                    if loaded in modules and loaded != name and not implicit_parent:
                        edges.setdefault(loaded, node.lineno)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_no_import_cycle_in_the_package() -> None:
    graph = import_graph(_modules(SRC))
    cycle = find_cycle(graph)
    if cycle is not None:
        steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in itertools.pairwise(cycle)]
        pytest.fail("expected no import cycle in chatparse, found one:\n  " + "\n  ".join(steps)
                    + "\nMove what both sides need into a lower module (docs/architecture.md), or pass it in.")


def test_the_checker_sees_cycles_at_any_depth(tmp_path: Path) -> None:
    root = tmp_path / "chatparse"
    (root / "low").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "low" / "__init__.py").write_text("from chatparse.low.leaf import VALUE\n")
    (root / "low" / "leaf.py").write_text("VALUE = 1\n")
    (root / "high.py").write_text("from chatparse.low import VALUE\n")
    modules = _modules(tmp_path)
    assert find_cycle(import_graph(modules)) is None
    # A function-level import back up closes a circle; so does reaching a sibling package's module.
    (root / "low" / "leaf.py").write_text("VALUE = 1\n\ndef later():\n    from chatparse.high import X\n")
    assert find_cycle(import_graph(modules)) == [
        "chatparse.high", "chatparse.low", "chatparse.low.leaf", "chatparse.high"]
    # An import only for type checking runs never.
    (root / "low" / "leaf.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from chatparse.high import X\nVALUE = 1\n")
    assert find_cycle(import_graph(modules)) is None
    # A submodule importing names from its own package closes a circle with the package's imports.
    (root / "low" / "leaf.py").write_text("from chatparse.low import OTHER\nVALUE = 1\n")
    assert find_cycle(import_graph(modules)) == ["chatparse.low", "chatparse.low.leaf", "chatparse.low"]


def test_no_source_file_over_the_line_limit() -> None:
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in sorted(PACKAGE.rglob("*.py"))}
    over = [f"{path.relative_to(SRC)} ({lines})" for path, lines in sizes.items() if lines > MAX_LINES]
    assert not over, (f"expected at most {MAX_LINES} lines per source file, found {', '.join(over)}. Split each "
                      "along its responsibilities into modules named for them (docs/architecture.md).")
