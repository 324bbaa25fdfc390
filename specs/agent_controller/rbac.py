"""RBAC as flat ``group/resource:verb`` triples: from kubebuilder markers in Go sources and from a (Cluster)Role.

The stack's controller declares what it needs in ``// +kubebuilder:rbac:groups=...,resources=...,verbs=...``
markers; the chart's ClusterRole must grant at least that, or the controller crash-loops and AgentRuns stay
phaseless (failure mode 36 in specs/cluster/README.md). Comparing flat triples makes the difference readable:
``core.controller-agent.dev/agentruns/status:patch`` is either granted or listed as missing. ``groups=""`` (and
``core``) is the core group, written ``""``; a ``*`` in a granted rule covers anything in its place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

Triple = tuple[str, str, str]
_MARKER = re.compile(r"^\s*//\s*\+kubebuilder:rbac:(?P<body>.+?)\s*$")


def parse_marker(line: str) -> set[Triple]:
    """The triples one marker line grants (empty for a line that is not an RBAC marker, or a URL-only one).

    Raises ``ValueError`` naming the line when a marker lacks ``resources`` or ``verbs``.
    """
    match = _MARKER.match(line)
    if match is None:
        return set()
    fields: dict[str, list[str]] = {}
    for part in match.group("body").split(","):
        key, _, value = part.partition("=")
        fields[key.strip()] = [v.strip().strip('"') for v in value.split(";")]
    if "nonResourceURLs" in fields or "urls" in fields:
        return set()
    if "resources" not in fields or "verbs" not in fields:
        raise ValueError(f"RBAC marker without resources or verbs: {line.strip()!r}")
    groups = ["" if g in ("", "core") else g for g in fields.get("groups", [""])]
    return {(g, r, v) for g in groups for r in fields["resources"] for v in fields["verbs"]}


def markers_in(source: Path, *, subdir: str = "controllers/core-controller") -> set[Triple]:
    """Every marker triple in ``*.go`` files under ``source/subdir`` (or all of ``source`` when that is absent)."""
    root = source / subdir if (source / subdir).is_dir() else source
    found: set[Triple] = set()
    for path in sorted(root.rglob("*.go")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            found |= parse_marker(line)
    return found


def role_triples(role: dict[str, Any]) -> set[Triple]:
    """The triples a Role or ClusterRole object grants (``resourceNames`` narrowing is ignored: it only narrows)."""
    found: set[Triple] = set()
    for rule in role.get("rules") or []:
        for group in rule.get("apiGroups") or [""]:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    found.add((group, resource, verb))
    return found


def missing(needed: Iterable[Triple], granted: Iterable[Triple]) -> list[str]:
    """Needed triples no granted one covers, as sorted ``group/resource:verb`` strings (``*`` covers anything)."""
    grants = list(granted)

    def covered(triple: Triple) -> bool:
        return any(all(g in ("*", n) for g, n in zip(grant, triple, strict=True)) for grant in grants)

    return sorted(f"{g}/{r}:{v}" for g, r, v in needed if not covered((g, r, v)))
