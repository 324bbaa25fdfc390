"""Disruptive cluster spec: the orchestrator survives a rollout restart and comes back Available.

Upstream's rollout specs wait with `rollout status --timeout=300s` (a failure-path budget, specs/cluster/README.md
§6); `readyReplicas` alone counts the outgoing pod (failure mode 13, §7), so completion is read from `rollout status`.
"""

from __future__ import annotations

import pytest

from harness import Kube
from specs.cluster.stack import ROLLOUT

pytestmark = [pytest.mark.cluster, pytest.mark.disruptive]


def test_orchestrator_rollout_restart_completes(kube: Kube) -> None:
    before = kube.kubectl_json("get", "deployment", "agent-orchestrator")["metadata"].get("generation", 0)
    kube.rollout_restart("agent-orchestrator")
    assert "successfully rolled out" in kube.rollout_status("agent-orchestrator", timeout=ROLLOUT)
    after = kube.kubectl_json("get", "deployment", "agent-orchestrator")
    assert after["metadata"]["generation"] > before
    assert after["status"].get("updatedReplicas") == after["spec"].get("replicas", 1)
