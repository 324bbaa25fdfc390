"""The fake GitHub's modules import each other without a cycle (type-checking-only imports included), so each one can
be read and tested on top of the ones it imports."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fakes" / "github"


def _imports(path: Path) -> set[str]:
    """Modules of ``fakes.github`` that ``path`` imports anywhere (``from fakes.github import x`` counts as ``x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "fakes.github":
            found |= {alias.name for alias in node.names if (PACKAGE / f"{alias.name}.py").exists()}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fakes.github."):
            found.add((node.module or "").split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("fakes.github.")}
    return found - {path.stem}


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, trail = stack.pop()
        for dep in graph.get(module, set()):
            if dep == start:
                return [*trail, dep]
            if dep not in seen:
                seen.add(dep)
                stack.append((dep, [*trail, dep]))
    return None


def test_fakes_github_has_no_import_cycle() -> None:
    graph = {p.stem: _imports(p) for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert "routes" in graph["app"]  # the walk sees the package
    cycles = [cycle for module in sorted(graph) if (cycle := _cycle_from(module, graph)) is not None]
    assert cycles == []


def test_the_route_table_module_is_a_leaf() -> None:
    assert _imports(PACKAGE / "wire.py") <= {"errors", "state"}
