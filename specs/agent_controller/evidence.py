"""Evidence of the agent-controller's own objects: the AgentRuns created in a spec's window.

:func:`agent_runs_evidence` builds the :class:`harness.evidence.ExtraEvidence` that keeps them in
``agentruns.yaml``; the layer's plugin registers it as the ``evidence`` marker's ``"agentruns"`` target, and a spec can
add it through the ``evidence`` fixture (``evidence.add(agent_runs_evidence(since))``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import yaml

from harness.evidence import ExtraEvidence
from specs.agent_controller.agentruns import agent_runs_since

if TYPE_CHECKING:
    from harness.kube import Kube

MARKER_TARGET = "agentruns"


def agent_runs_evidence(since: datetime) -> ExtraEvidence:
    """``agentruns.yaml``: every AgentRun created since ``since`` (an aware datetime; ``ValueError`` otherwise)."""
    if since.tzinfo is None:
        raise ValueError("since must be timezone-aware (the since fixture is)")

    def read(kube: Kube, timeout: float) -> str | None:
        runs = agent_runs_since(since, kube=kube, timeout=timeout)
        return yaml.safe_dump_all([r.raw for r in runs], sort_keys=False) if runs else None

    return ExtraEvidence(
        "AgentRuns created since the spec's since",
        "agentruns.yaml",
        read,
        empty="no AgentRun was created since the spec's since",
    )
