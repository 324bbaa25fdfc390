"""Which distributions a package of this repository needs at run time, read from its source.

An import counts when it can run: at module level or inside a function, but not under ``if TYPE_CHECKING:``. A
first-party import is followed to the module it names (and each package above it, whose ``__init__`` runs first), so
a fake's closure includes the harness modules it uses; a third-party import is mapped to the distribution that
provides it (``importlib.metadata.packages_distributions``).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("harness", "fakes", "specs")


def normal(name: str) -> str:
    """A distribution name in its PEP 503 normal form (``PyYAML`` -> ``pyyaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def module_file(module: str) -> Path | None:
    """The source file of a first-party module (a package's ``__init__.py``), or None when there is none."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_imports(node: ast.AST, module: str) -> Iterator[str]:
    """Dotted names of what ``node`` imports when it runs; relative imports resolved against ``module``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _run_time_imports(other, module)
            continue
        if isinstance(child, ast.Import):
            yield from (alias.name for alias in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:  # relative: from the package this module is in, `level - 1` packages up
                package = module if _is_package(module) else module.rpartition(".")[0]
                above = package.split(".")[: len(package.split(".")) - child.level + 1]
                base = ".".join([*above, base] if base else above)
            yield base
            # `from fakes.kube import tls` imports the submodule fakes.kube.tls when there is one
            yield from (f"{base}.{alias.name}" for alias in child.names if module_file(f"{base}.{alias.name}"))
        yield from _run_time_imports(child, module)


def _is_package(module: str) -> bool:
    found = module_file(module)
    return found is not None and found.name == "__init__.py"


@cache
def direct_imports(module: str) -> frozenset[str]:
    found = module_file(module)
    if found is None:
        return frozenset()
    return frozenset(_run_time_imports(ast.parse(found.read_text(), str(found)), module))


def modules_under(package: str) -> list[str]:
    """Every module of a first-party package, the package itself included."""
    folder = ROOT.joinpath(*package.split("."))
    found = []
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return found


def closure(start: Iterable[str], *, stop: tuple[str, ...] = ()) -> tuple[set[str], set[str]]:
    """First-party modules reachable from ``start`` at run time, and the third-party top-level names they import.

    Modules under a prefix in ``stop`` are neither followed nor counted."""
    seen: set[str] = set()
    third: set[str] = set()
    todo = list(start)
    while todo:
        module = todo.pop()
        if module in seen or module.startswith(stop):
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # the packages above run first
        for name in direct_imports(module):
            top = name.partition(".")[0]
            if top in FIRST_PARTY:
                todo.append(name if module_file(name) else name.rpartition(".")[0])
            elif top not in sys.stdlib_module_names and top != "__future__":
                third.add(top)
    return seen, third


def distributions(tops: Iterable[str]) -> set[str]:
    """The installed distributions (normal names) that provide these top-level import names; KeyError names one
    that no installed distribution provides."""
    provided = metadata.packages_distributions()
    return {normal(provided[top][0]) for top in tops}


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_names(lines: Iterable[str]) -> set[str]:
    return {normal(Requirement(line).name) for line in lines}
