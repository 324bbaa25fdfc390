"""Write the two differences files from a comparison's findings (``python -m specs.parity.check ... --propose``).

Each unexplained difference becomes one entry. :data:`KNOWN` lists the only differences that may be known for good:
what a kubelet, a node, a container runtime or the cluster's timing decides (kwok is the real side's kubelet, the
double simulates its own). Every other difference is an API-server difference of the double and goes to the open
file, with the reason :data:`OPEN` gives or, when none does, the two values side by side. Entries already in a file
keep their reason. Review the result before committing it: a known entry is a claim that the API server is not
involved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from specs.parity import compare


@dataclass(frozen=True)
class Rule:
    case: str  # regex on the case id
    path: str  # regex on the path pattern
    reason: str
    kind: str = ""  # a known class; empty for an open difference
    obj: str = ""  # regex on the kind of the object holding the path (empty: any, or none)


#: Groups whose watches wait for a controller's writes (list_watch's watches test the API's own semantics instead).
WATCHING_CONTROLLERS = r"^(lifecycles|crds|kinds|apply|patch|subresources)/"
_POD_STATUS = r"status\.(conditions|containerStatuses|initContainerStatuses|hostIPs?|podIPs?|startTime|phase)"
KNOWN = (
    Rule(
        r".",
        _POD_STATUS,
        "a pod's status is its kubelet's: kwok's stages on the real side, the double's own kubelet",
        "kubelet",
        obj=r"^Pod$",
    ),
    Rule(
        r".",
        r"\.status$",
        "a pod's status is its kubelet's (kwok's stages, the double's own kubelet)",
        "kubelet",
        obj=r"^Pod$",
    ),
    Rule(r"^kubectl/k-pods", r"^(logs|exec)\.", "logs and exec are served by the pod's kubelet", "kubelet"),
    Rule(
        WATCHING_CONTROLLERS,
        r"\.seen\[\*\]",
        "which states a watch sees on the way depends on when the controllers and the kubelet act",
        "cluster-wide timing",
    ),
)
OPEN = (Rule(r".", r"managedFields", "managedFields: the double's field sets differ from structured-merge-diff's"),)


def propose(
    unexplained: Sequence[compare.Difference], existing: Sequence[compare.Entry], *, sometimes: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """The entries to add, by file name (``known-differences.yaml``, ``open-differences.yaml``); ``sometimes``:
    mark them as seen in some runs only (a later run's new findings, after a first run wrote the rest)."""
    out: dict[str, list[dict[str, Any]]] = {"known-differences.yaml": [], "open-differences.yaml": []}
    seen = {(e.case, e.path) for e in existing}
    for difference in unexplained:
        case = difference.case.split("@")[0]
        if (case, difference.pattern) in seen:
            continue
        seen.add((case, difference.pattern))
        known = _first(KNOWN, case, difference.pattern, difference.kind)
        if known is not None:
            row: dict[str, Any] = {"case": case, "path": difference.pattern, "class": known.kind}
            out["known-differences.yaml"].append(row | _flag(sometimes) | {"reason": known.reason})
            continue
        rule = _first(OPEN, case, difference.pattern, difference.kind)
        reason = rule.reason if rule else _values(difference)
        out["open-differences.yaml"].append(
            {"case": case, "path": difference.pattern} | _flag(sometimes) | {"reason": reason}
        )
    return out


def _flag(sometimes: bool) -> dict[str, Any]:
    return {"sometimes": True} if sometimes else {}


def _row(entry: compare.Entry) -> dict[str, Any]:
    row: dict[str, Any] = {"case": entry.case, "path": entry.path}
    if entry.kind:
        row["class"] = entry.kind
    return row | _flag(entry.sometimes) | {"reason": entry.reason}


def _first(rules: Sequence[Rule], case: str, path: str, kind: str) -> Rule | None:
    return next(
        (r for r in rules if re.search(r.case, case) and re.search(r.path, path) and re.search(r.obj, kind)), None
    )


def _values(difference: compare.Difference) -> str:
    def short(value: object) -> str:
        text = str(value).replace("\n", " ")
        return text if len(text) <= 120 else text[:117] + "..."

    return f"real: {short(difference.real)} | double: {short(difference.double)}"


def write(path: str, existing: Sequence[compare.Entry], added: Sequence[dict[str, Any]], *, header: str) -> None:
    rows = [_row(e) for e in existing] + list(added)
    rows.sort(key=lambda r: (r["case"], r["path"]))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(header)
        yaml.safe_dump(rows, handle, sort_keys=False, width=200, allow_unicode=True)


__all__ = ["KNOWN", "OPEN", "propose", "write"]
