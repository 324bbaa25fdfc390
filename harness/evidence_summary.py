"""The terminal summary's account of failed specs: every spec pytest counts as failed or errored is either a row with
its evidence folder or a row saying why it has none, so the heading's count reconciles with pytest's own line.

pytest counts one outcome per phase that failed (a spec failing in call and in teardown is "1 failed, 1 error"),
and collection errors as errors; this counts specs, and says how many pytest counted twice. What a worker knew
(the folder, or why there is none) reaches the main process in the reports' ``user_properties``, as pytest-xdist
carries them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVIDENCE_PROPERTY = "harness.evidence"
NO_EVIDENCE_PROPERTY = "harness.no-evidence"
SHOWN_WITHOUT_EVIDENCE = 10  # rows of specs without evidence before "and N more"
NO_CLUSTER = "it reached no cluster, fake or port-forward"
REFUSED = "it was refused before it reached a cluster (its error says why)"
NOT_SEEN = "the harness did not see it fail (its worker died, or another plugin reported it)"
COLLECTION = "its module did not collect"


@dataclass
class _Failed:
    phases: list[str] = field(default_factory=list)
    evidence: str | None = None
    reason: str | None = None


def no_evidence_reason(is_cluster_spec: bool) -> str:
    """Why a failed spec that never qualified for evidence has none: a cluster spec was refused at set-up (the
    context guard, an unusable API server), any other reached nothing of a cluster."""
    return REFUSED if is_cluster_spec else NO_CLUSTER


def lines(stats: dict[str, list[Any]]) -> tuple[str, list[str]] | None:
    """``(heading, rows)`` from the terminal reporter's ``stats``; None when no failed spec has evidence (a run
    whose failures never touched a cluster prints nothing of the harness)."""
    failed, outcomes = _failed_specs(stats)
    with_evidence = {nodeid: f for nodeid, f in failed.items() if f.evidence}
    if not with_evidence:
        return None
    rows = [_evidence_row(nodeid, Path(f.evidence or ""), f.phases) for nodeid, f in with_evidence.items()]
    rows += _without_evidence_rows({n: f for n, f in failed.items() if not f.evidence})
    return _heading(len(with_evidence), len(failed), outcomes), rows


def _failed_specs(stats: dict[str, list[Any]]) -> tuple[dict[str, _Failed], int]:
    failed: dict[str, _Failed] = {}
    outcomes = 0
    for reports in stats.values():
        for rep in reports:
            if not getattr(rep, "failed", False) or not hasattr(rep, "nodeid"):
                continue
            outcomes += 1
            spec = failed.setdefault(rep.nodeid, _Failed())
            spec.phases.append(getattr(rep, "when", None) or "collection")
            if spec.phases[-1] == "collection":
                spec.reason = COLLECTION
    for reports in stats.values():  # a passing teardown's report may carry the folder too: read every report
        for rep in reports:
            known = failed.get(getattr(rep, "nodeid", None) or "")
            if known is not None:
                _read_properties(known, getattr(rep, "user_properties", ()))
    return failed, outcomes


def _read_properties(spec: _Failed, properties: Any) -> None:
    for name, value in properties:
        if name == EVIDENCE_PROPERTY and value:
            spec.evidence = value
        elif name == NO_EVIDENCE_PROPERTY and value and spec.reason is None:
            spec.reason = value


def _heading(shown: int, specs: int, outcomes: int) -> str:
    if shown == specs == outcomes:
        return f"evidence of failed specs ({shown})"
    twice = outcomes - specs
    counted = f"; pytest counts {twice} of them twice (failed in two phases)" if twice > 0 else ""
    return f"evidence of failed specs ({shown} of {specs} failed specs{counted})"


def _evidence_row(nodeid: str, folder: Path, phases: list[str]) -> str:
    twice = f"; failed in {' and '.join(phases)}" if len(phases) > 1 else ""
    return f"{nodeid}: evidence in {shown(folder)}{_index_note(folder)}{twice}"


def _without_evidence_rows(specs: dict[str, _Failed]) -> list[str]:
    rows = [f"{nodeid}: no evidence: {f.reason or NOT_SEEN}" for nodeid, f in specs.items()]
    if len(rows) > SHOWN_WITHOUT_EVIDENCE:
        rest = len(rows) - SHOWN_WITHOUT_EVIDENCE
        rows = rows[:SHOWN_WITHOUT_EVIDENCE] + [f"... and {rest} more failed spec(s) without evidence"]
    return rows


def _index_note(folder: Path) -> str:
    try:
        data = json.loads((folder / "index.json").read_text())
    except (OSError, ValueError):
        return " (no index: collection did not start)"
    steps = data.get("steps") or []
    counts = {s: sum(1 for x in steps if x.get("status") == s) for s in ("failed", "cut")}
    extra = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return f" ({len(steps)} steps{', ' + extra if extra else ''}, {data.get('elapsed', 0):.1f}s)"


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it can be, as a user would type it."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
