"""Committed harness configuration: the ``[tool.harness]`` table of the project's ``pyproject.toml``.

Only committed configuration can widen the allow-list of contexts; no environment variable can: an override
flag would exist only to be set by accident in CI, and point the cluster specs at a cluster nobody chose.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_ALLOWED_CONTEXTS = ("minikube",)
DEFAULT_NAMESPACE = "controller-agent"


@dataclass(frozen=True)
class HarnessConfig:
    """``allowed_contexts`` (glob patterns, ``fnmatch``), ``namespace``, the file they came from (or None), and
    ``twin``: the pytest plugin module that provides a stand-in target (:mod:`harness.targets`), or None for none."""

    allowed_contexts: tuple[str, ...] = DEFAULT_ALLOWED_CONTEXTS
    namespace: str = DEFAULT_NAMESPACE
    source: Path | None = None
    twin: str | None = None


def load_config(start: Path | None = None) -> HarnessConfig:
    """Read ``[tool.harness]`` from the nearest ``pyproject.toml`` at or above ``start`` (default: cwd).

    Missing file or table: the defaults (``minikube`` only, namespace ``controller-agent``). A malformed
    table raises ``ValueError`` naming the file and key.
    """
    for directory in [(start or Path.cwd()).resolve(), *(start or Path.cwd()).resolve().parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            with candidate.open("rb") as f:
                table = tomllib.load(f).get("tool", {}).get("harness")
            if table is not None:
                return _from_table(table, candidate)
    return HarnessConfig()


def _from_table(table: dict[str, Any], source: Path) -> HarnessConfig:
    allowed = table.get("allowed_contexts", list(DEFAULT_ALLOWED_CONTEXTS))
    if not isinstance(allowed, list) or not all(isinstance(p, str) and p for p in allowed):
        raise ValueError(
            f"{source}: [tool.harness] allowed_contexts must be a list of non-empty strings, got {allowed!r}"
        )
    namespace = table.get("namespace", DEFAULT_NAMESPACE)
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"{source}: [tool.harness] namespace must be a non-empty string, got {namespace!r}")
    twin = table.get("twin")
    if twin is not None and (not isinstance(twin, str) or not twin.strip()):
        raise ValueError(f"{source}: [tool.harness] twin must be a non-empty module name, got {twin!r}")
    return HarnessConfig(tuple(allowed), namespace, source, twin)
