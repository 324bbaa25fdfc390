"""Cleanup of what the agent-controller creates on its own: the AgentRuns of a spec's window and their Secrets.

The controller keeps finished AgentRuns (and their ``<run>-identity`` Secrets) for an hour; upstream's suite piled up
dozens across runs (failure mode 8 in ``specs/cluster/README.md``). :func:`cleanup_agent_runs_since` deletes those
created since a ``since``; :func:`sweep_agent_runs_since` asks a :class:`harness.cleanup.Ledger` to do it at the end
of its scope (and to leave them, with the command to list them, when the scope is kept).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING

from harness.cleanup import DEFAULT_DELETE_TIMEOUT, CleanupResult, Ledger, Sweep, delete_refs
from harness.errors import KubectlError
from specs.agent_controller.agentruns import AGENTRUN_RESOURCE, agent_runs_since

if TYPE_CHECKING:
    from harness.kube import Kube


def cleanup_agent_runs_since(since: datetime, *, kube: Kube, timeout: float = DEFAULT_DELETE_TIMEOUT) -> CleanupResult:
    """Delete the AgentRuns created since ``since`` (the same widened window as
    :func:`~specs.agent_controller.agentruns.agent_runs_since`) and their ``<run>-identity`` Secrets, without waiting
    (``--wait=false --ignore-not-found``).

    All calls share ``timeout`` seconds. Never raises for a cluster failure (listing included): see
    :class:`CleanupResult`. Raises ``ValueError`` for a naive ``since``."""
    deadline = time.monotonic() + timeout
    result = CleanupResult()
    try:
        runs = agent_runs_since(since, kube=kube, timeout=timeout)
    except KubectlError as exc:
        result.failed.append(("list AgentRuns", str(exc).splitlines()[0]))
        return result
    names = [run.name for run in runs]
    if not names:
        return result
    result.extend(
        delete_refs(kube, [f"{AGENTRUN_RESOURCE}/{n}" for n in names], timeout=max(1.0, deadline - time.monotonic()))
    )
    result.extend(
        delete_refs(kube, [f"secret/{n}-identity" for n in names], timeout=max(1.0, deadline - time.monotonic()))
    )
    return result


def sweep_agent_runs_since(ledger: Ledger, since: datetime) -> None:
    """At the end of ``ledger``'s scope, delete the AgentRuns created since ``since`` and their identity Secrets."""
    if since.tzinfo is None:
        raise ValueError(f"since must be timezone-aware, got {since!r}")

    def run(kube: Kube, timeout: float) -> CleanupResult:
        return cleanup_agent_runs_since(since, kube=kube, timeout=timeout)

    stamp = since.isoformat()
    ledger.sweep(
        Sweep(
            f"AgentRuns since {stamp}",
            run,
            f"get agentruns  # those created since {stamp} (and their <run>-identity Secrets)",
            AGENTRUN_RESOURCE,
        )
    )
