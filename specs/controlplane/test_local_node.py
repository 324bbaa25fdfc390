"""The local node on a real control plane: it registers as a kubelet does, the scheduler binds pods to it, and it
leaves nothing behind (its Node, its Lease, its processes) when it stops.

What a kubelet writes of its Node and Lease follows ``pkg/kubelet/kubelet_node_status.go`` and
``pkg/kubelet/nodelease``; the node lifecycle controller's not-ready taint, ``pkg/controller/nodelifecycle``.
"""

from __future__ import annotations

import ipaddress
import json
import os
from typing import Any

import pytest

from fakes.kube.node.node import POD_CIDR
from harness import process

pytestmark = [pytest.mark.control_plane, pytest.mark.timeout(300)]
KUBECTL_TIMEOUT = 60.0
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

SLEEPER = """
apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  annotations:
    stack-harness.dev/local-process: "true"
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: local/sleeper
    command: ["python3", "-c", "import os, time; open('pid', 'w').write(str(os.getpid())); time.sleep(600)"]
"""


def _json(kube: Any, *args: str) -> Any:
    return json.loads(kube.kubectl(*args, "-o", "json", timeout=KUBECTL_TIMEOUT).stdout)


def _leases(kube: Any) -> dict[str, Any]:
    raw = kube.kubectl("get", "--raw", LEASES, timeout=KUBECTL_TIMEOUT).stdout
    return {lease["metadata"]["name"]: lease for lease in json.loads(raw)["items"]}


def test_the_node_registers_ready_with_its_kubelet_port_and_renews_its_lease(local_node_plane: Any) -> None:
    kube = local_node_plane.kube("default")
    node = _json(kube, "get", "node", "local-node")
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "local-node"
    assert labels["stack-harness.dev/local-node"] == "true"
    assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert "node.kubernetes.io/not-ready" not in [t["key"] for t in node["spec"].get("taints") or []]
    lease = _leases(kube)["local-node"]
    assert lease["spec"]["holderIdentity"] == "local-node"
    assert lease["spec"]["leaseDurationSeconds"] == 40


def test_a_pod_is_bound_to_it_and_its_process_ends_with_the_pods_deletion(local_node_plane: Any) -> None:
    local_node_plane.kube("default").kubectl("create", "namespace", "bound", timeout=KUBECTL_TIMEOUT)
    kube = local_node_plane.kube("bound")
    before = set(process.LIVE_CHILDREN)
    kube.kubectl("apply", "-f", "-", input=SLEEPER, timeout=KUBECTL_TIMEOUT)
    kube.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s", timeout=KUBECTL_TIMEOUT)
    pod = _json(kube, "get", "pod", "sleeper")
    assert pod["spec"]["nodeName"] == "local-node"
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(POD_CIDR)  # never loopback
    assert pod["status"]["hostIP"] == "127.0.0.1"
    started = set(process.LIVE_CHILDREN) - before
    assert len(started) == 1, started  # the container's process, in its own group
    (pid,) = started
    kube.kubectl("delete", "pod", "sleeper", "--timeout=60s", timeout=KUBECTL_TIMEOUT)
    assert pid not in process.LIVE_CHILDREN
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_stopping_the_node_removes_its_node_and_lease_and_every_process(tmp_path: Any) -> None:
    from fakes.kube.node import LocalNode
    from harness.controlplane.plane import ControlPlane, Settings
    from harness.errors import BinariesMissing

    plane = ControlPlane(Settings(nodes=0))
    try:
        plane.start_kept()
    except BinariesMissing as exc:
        pytest.skip(str(exc))
    try:
        kube = plane.kube("default")
        before = set(process.LIVE_CHILDREN)
        with LocalNode(plane.kubeconfig, name="short-lived"):
            kube.kubectl("apply", "-f", "-", input=SLEEPER, timeout=KUBECTL_TIMEOUT)
            kube.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s", timeout=KUBECTL_TIMEOUT)
            assert set(process.LIVE_CHILDREN) - before
        assert set(process.LIVE_CHILDREN) == before
        nodes = kube.kubectl("get", "nodes", "-o", "name", timeout=KUBECTL_TIMEOUT).stdout.split()
        assert "node/short-lived" not in nodes
        assert "short-lived" not in _leases(kube)
    finally:
        plane.release()
