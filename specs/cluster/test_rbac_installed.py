"""Cluster specs: the core-controller's RBAC is installed and working.

Ported from upstream's rbac-installed spec: the ClusterRole ``core-controller`` grants everything the controller's
kubebuilder markers ask for (this part reads the upstream source tree: pass ``--stack-source DIR``, else it is
skipped with that reason); the core-controller Deployment is Available within 120 s; and no AgentRun is older than
60 s without a phase (a controller that cannot act leaves runs phaseless: failure mode 36).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Kube, parse_k8s_time, wait_for_sync
from specs.agent_controller.agentruns import AGENTRUN_RESOURCE
from specs.agent_controller.rbac import markers_in, missing, role_triples
from specs.agent_controller.timing import Profile
from specs.cluster.pacing import wait_interval
from specs.cluster.stack import CONTROLLER_AVAILABLE, PHASELESS_GRACE

pytestmark = pytest.mark.cluster

CONTROLLER = "core-controller"


def test_cluster_role_covers_the_controller_markers(kube: Kube, stack_source: Path) -> None:
    needed = markers_in(stack_source)
    assert needed, f"no kubebuilder RBAC markers found under {stack_source}: is it the agent-controller source tree?"
    role = kube.kubectl_json("get", "clusterrole", CONTROLLER)
    absent = missing(needed, role_triples(role))
    assert not absent, f"ClusterRole {CONTROLLER} lacks what the controller's markers ask for: {', '.join(absent)}"


def test_core_controller_is_available(kube: Kube, profile: Profile) -> None:
    def available() -> bool | None:
        conditions = (kube.kubectl_json("get", "deployment", CONTROLLER).get("status") or {}).get("conditions") or []
        return True if any(c["type"] == "Available" and c["status"] == "True" for c in conditions) else None

    wait_for_sync(
        f"deployment/{CONTROLLER} to be Available",
        available,
        timeout=CONTROLLER_AVAILABLE,
        interval=wait_interval(profile),
    )


def test_no_agent_run_is_left_without_a_phase(kube: Kube) -> None:
    now = kube.server_time()
    runs = kube.kubectl_json("get", AGENTRUN_RESOURCE).get("items") or []
    ages = {
        run["metadata"]["name"]: (now - parse_k8s_time(run["metadata"]["creationTimestamp"])).total_seconds()
        for run in runs
        if not (run.get("status") or {}).get("phase")
    }
    stuck = [f"{name} ({age:.0f}s)" for name, age in sorted(ages.items()) if age > PHASELESS_GRACE]
    assert not stuck, (
        f"AgentRuns older than {PHASELESS_GRACE:.0f}s without a phase (the core-controller is not "
        f"acting on them: check its RBAC and its pod): {', '.join(stuck)}"
    )
