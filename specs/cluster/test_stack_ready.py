"""Cluster specs: the stack on minikube is up and its clocks agree well enough for time windows.

Each check names the failure mode it catches (stack-under-test.md §3 and §9), so a red spec here points
at the set-up step to re-run rather than reading as a product bug later.
"""

from __future__ import annotations

import pytest

from harness import Kube, KubectlError, agent_runs_since, wait_for_sync
from harness.timestamps import DEFAULT_SKEW

pytestmark = pytest.mark.cluster

DEPLOYMENTS = ["agent-orchestrator", "agent-controller-integration-gateway"]
CATALOG_KINDS = ["tools.core.controller-agent.dev", "skills.core.controller-agent.dev", "agents.core.controller-agent.dev"]


def test_agentrun_crd_is_served(kube: Kube) -> None:
    # Install-only Helm CRDs left older releases without newer kinds (a bare "404 page not found", failure mode 35).
    crd = kube.kubectl_json("get", "crd", "agentruns.core.controller-agent.dev")
    assert "v1alpha1" in [v["name"] for v in crd["spec"]["versions"] if v.get("served")]


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_deployment_is_available(kube: Kube, deployment: str) -> None:
    def available() -> bool | None:
        conditions = kube.kubectl_json("get", "deployment", deployment).get("status", {}).get("conditions", [])
        return True if any(c["type"] == "Available" and c["status"] == "True" for c in conditions) else None

    assert wait_for_sync(f"deployment/{deployment} to be Available", available, timeout=300.0, interval=5.0, probe_timeout=30.0)


@pytest.mark.parametrize("kind", CATALOG_KINDS)
def test_catalog_is_not_empty(kube: Kube, kind: str) -> None:
    # Zero Tool/Skill/Agent CRs make every turn time out silently (up.sh step 10).
    try:
        items = kube.kubectl_json("get", kind).get("items", [])
    except KubectlError as exc:
        pytest.fail(f"cannot list {kind}: {exc}", pytrace=False)
    assert items, f"no {kind} in namespace {kube.namespace}: is the community-components release deployed?"


def test_clock_skew_fits_the_window_allowance(kube: Kube) -> None:
    # Host/minikube drift past the allowance hides runs from agent_runs_since (failure mode 4).
    skew = kube.clock_skew()
    assert abs(skew) < DEFAULT_SKEW, (
        f"host clock is {skew:+.1f}s off the API server's, beyond the {DEFAULT_SKEW:.0f}s skew allowance; "
        "anchor `since` on the server clock (the `since` fixture does) or resync the VM (`minikube ssh -- sudo date -s @$(date +%s)`)"
    )


def test_agent_runs_listing_is_readable(kube: Kube) -> None:
    # Every run must carry a readable creationTimestamp and a known phase; one that does not breaks every window.
    from datetime import datetime, timezone

    runs = agent_runs_since(datetime(1970, 1, 1, 0, 0, 10, tzinfo=timezone.utc), kube=kube)  # all of them
    assert all(run.created.tzinfo is not None for run in runs)
    unknown = [(run.name, run.phase) for run in runs if run.phase not in (None, "Pending", "Running", "Succeeded", "Failed")]
    assert not unknown, f"AgentRuns with a phase the specs do not know: {unknown}"
