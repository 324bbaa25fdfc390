"""The twin's services reach Kubernetes only through the API (``fakes.stack.cluster_api``), never the API double's
insides: no module of ``fakes.stack`` but the node (the twin's kubelet, runtime and kube-proxy) and the assemblies
(``fakes/stack/__init__.py`` and ``on_plane.py``, which start what the twin runs on) reads an attribute that leads
into the double. Imports are ``make lint``'s contract ``twin-through-the-api``; this catches the reach that needs no
import (``ctx.node.double``).
"""

from __future__ import annotations

import ast
from pathlib import Path

STACK = Path(__file__).resolve().parents[2] / "fakes" / "stack"
ALLOWED = {"node.py", "__init__.py", "on_plane.py"}
#: Attributes that lead into the double: the double itself, its store, its port table, its clock, its exec handlers
#: and log book, and the double's handle the assembly holds.
INTO_THE_DOUBLE = frozenset({"double", "kd", "exec_handlers", "logbook"})


def reaches(source: str) -> list[str]:
    """``line: expression`` for every attribute read of :data:`INTO_THE_DOUBLE` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in INTO_THE_DOUBLE:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_twin_service_reaches_into_the_double() -> None:
    offenders = {
        path.name: hits
        for path in sorted(STACK.glob("*.py"))
        if path.name not in ALLOWED and (hits := reaches(path.read_text()))
    }
    assert not offenders, f"twin modules reaching into the API double (use PodContext.api): {offenders}"


def test_the_check_sees_a_reach_through_the_node() -> None:
    planted = "def f(ctx):\n    return ctx.node.double.store.get('secrets', 'ns', 'x')\n"
    assert reaches(planted) == ["2: ctx.node.double"]
    assert reaches("def f(ctx):\n    return ctx.api.get('secrets', 'x')\n") == []
