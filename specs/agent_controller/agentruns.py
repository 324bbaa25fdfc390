"""AgentRuns (``agentruns.core.controller-agent.dev``, ``v1alpha1``) as the specs see them.

The controller stamps ``metadata.creationTimestamp`` in whole seconds and sets ``status.phase``
(``Running``, ``Succeeded``, ``Failed``) only once it has seen the run (``specs/cluster/README.md`` §1, Components).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.attempts import note
from harness.kube import Kube
from harness.timestamps import (
    DEFAULT_GRANULARITY,
    DEFAULT_SKEW,
    created_since,
    creation_timestamp,
    object_name,
    window_cutoff,
)

AGENTRUN_RESOURCE = "agentruns.v1alpha1.core.controller-agent.dev"


@dataclass(frozen=True)
class AgentRunRecord:
    """One AgentRun: ``name``, ``phase`` (``None`` until the controller has seen it), ``created`` (aware UTC),
    ``raw`` object."""

    name: str
    phase: str | None
    created: datetime
    raw: dict[str, Any]

    @property
    def agent(self) -> str | None:
        """``spec.agentRef``: the agent the planner picked (a name, or the ``name`` of a reference object)."""
        ref = (self.raw.get("spec") or {}).get("agentRef")
        return ref.get("name") if isinstance(ref, dict) else ref


def agent_runs_since(
    since: datetime,
    *,
    kube: Kube,
    granularity: float = DEFAULT_GRANULARITY,
    skew: float = DEFAULT_SKEW,
    timeout: float = 30.0,
) -> list[AgentRunRecord]:
    """AgentRuns in ``kube``'s namespace created at or after ``since - granularity - skew``, newest first.

    One bounded ``kubectl get`` (``timeout`` seconds, shortened to the current wait attempt's bound).
    Inside a ``wait_for`` the cutoff is noted on the attempt, so a ``WaitTimeout`` shows the window it
    applied. Raises ``ValueError`` for a naive ``since`` or a too-wide window, ``KubectlError`` /
    ``KubectlTimeout`` when kubectl fails, ``TimestampError`` for an unreadable ``creationTimestamp``.
    """
    cutoff = window_cutoff(since, granularity=granularity, skew=skew)
    note(
        f"window: AgentRuns created at or after {cutoff.isoformat()} "
        f"(since {since.isoformat()} - {granularity:g}s granularity - {skew:g}s skew)"
    )
    listing = kube.kubectl_json("get", AGENTRUN_RESOURCE, timeout=timeout)
    items = listing.get("items", []) if isinstance(listing, dict) else []
    kept = created_since(items, since, granularity=granularity, skew=skew)
    return [
        AgentRunRecord(object_name(item), (item.get("status") or {}).get("phase"), creation_timestamp(item), item)
        for item in kept
    ]
