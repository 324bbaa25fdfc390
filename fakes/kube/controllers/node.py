"""The simulated kubelet's Node: one Node object, ``fake-node``, registered as a kubelet registers itself, and its
heartbeat Lease in ``kube-node-lease``.

The Node carries what ``kubectl get nodes`` / ``describe node`` and schedulers read: the well-known labels
(``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch``, the ``control-plane`` role of a
single-node kind or minikube cluster), ``status.conditions`` (``MemoryPressure``, ``DiskPressure``, ``PIDPressure``
False and ``Ready`` True with the kubelet's reasons and messages, ``pkg/kubelet/nodestatus/setters.go``),
``capacity``/``allocatable``, ``addresses``, ``daemonEndpoints`` and ``nodeInfo`` (``kubeletVersion`` is the
double's ``gitVersion``). No taints: a single-node cluster's control plane runs workloads. Every pod the simulated
scheduler binds gets ``spec.nodeName: fake-node`` (:mod:`fakes.kube.lifecycle`).

The Lease (``coordination.k8s.io/v1``, ``leaseDurationSeconds: 40``) is renewed every :data:`RENEW_SECONDS` on the
double's clock, as the kubelet's node lease controller does (``pkg/kubelet/nodelease``). Deleting the Node or the
Lease gets them registered again, as a running kubelet would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from fakes.kube.clock import rfc3339, rfc3339_micro
from fakes.kube.controllers.base import ControllerContext, Key, Obj, Reconciler
from fakes.kube.errors import ApiError
from fakes.kube.resources import server_minor
from fakes.kube.store import StoreEvent

NODE = "fake-node"
NODE_IP = "127.0.0.1"
"""The Node's InternalIP, and so every pod's ``hostIP``: loopback, as kwok's nodes report on the real control plane
(``harness.controlplane``, ``--node-ip``), so the double names no machine of any cluster tool's network (it once
reported minikube's docker-network address). Nothing dials it: pods are reached through port-forwards."""
LEASE_NAMESPACE = "kube-node-lease"
RENEW_SECONDS = 10.0
"""Seconds between node lease renewals (the kubelet's: a quarter of the 40 s lease duration)."""
LEASE_SECONDS = 40

CAPACITY = {
    "cpu": "2",
    "ephemeral-storage": "61202244Ki",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "8039868Ki",
    "pods": "110",
}


def healthy_conditions(stamp: str) -> list[Obj]:
    """A healthy kubelet's Node conditions, heartbeat and transition at ``stamp`` (``kubelet_node_status.go``'s
    setters: ``MemoryPressure``, ``DiskPressure``, ``PIDPressure`` False, ``Ready`` True)."""

    def cond(kind: str, state: str, reason: str, message: str) -> Obj:
        return {
            "type": kind,
            "status": state,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "reason": reason,
            "message": message,
        }

    return [
        cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]


def node_object(git_version: str, now: float) -> Obj:
    """The Node the kubelet registers (``kubelet_node_status.go`` ``initialNode`` plus the status setters)."""
    stamp = rfc3339(now)
    digest = hashlib.sha256(NODE.encode()).hexdigest()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": NODE,
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        # kubeadm's default pod network, which kind and minikube share (not any one tool's): the pods' IPs.
        "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]},
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(CAPACITY),
            "conditions": healthy_conditions(stamp),
            "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": digest[:32],
                "systemUUID": f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}",
                "bootID": f"{digest[32:40]}-{digest[40:44]}-{digest[44:48]}-{digest[48:52]}-{digest[52:64]}",
                "kernelVersion": "6.8.0-1015-gcp",
                "osImage": "Ubuntu 22.04.5 LTS",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": git_version,
                # Left empty from 1.31 (the DisableNodeKubeProxyVersion gate, on by default), deprecated field.
                "kubeProxyVersion": git_version if server_minor(git_version) < 31 else "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


class NodeController(Reconciler):
    """Keeps ``fake-node`` registered and its Lease renewed (see the module docstring)."""

    name = "kubelet"
    watches = ("/nodes", "coordination.k8s.io/leases")

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)

    def start(self) -> None:
        super().start()
        self.ctx.soon(self.register)

    def register(self) -> None:
        """Enqueue the Node (and through it the Lease); after a reset too."""
        self.enqueue("", NODE)

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.name == NODE and event.type == "DELETED":
            yield "", NODE

    def sync(self, namespace: str, name: str) -> None:
        store, now = self.store, self.ctx.now()
        if store.get("nodes", None, NODE) is None:
            # Registered, then its status posted through nodes/status, as the kubelet does (the create drops it).
            registered = node_object(self.ctx.double.git_version, now)
            posted = registered["status"]
            store.create("nodes", registered)

            def post(node: Obj) -> None:
                node["status"] = posted

            store.mutate("nodes", None, NODE, post, subresource="status")
        self._renew(now)
        self.requeue_after("", NODE, RENEW_SECONDS)

    def _renew(self, now: float) -> None:
        store = self.store
        if store.get("namespaces", None, LEASE_NAMESPACE) is None:
            return
        if store.get("leases", LEASE_NAMESPACE, NODE) is None:
            node = store.get("nodes", None, NODE) or {}
            owner = {
                "apiVersion": "v1",
                "kind": "Node",
                "name": NODE,
                "uid": (node.get("metadata") or {}).get("uid", ""),
            }
            try:
                store.create(
                    "leases",
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": NODE, "namespace": LEASE_NAMESPACE, "ownerReferences": [owner]},
                        "spec": {
                            "holderIdentity": NODE,
                            "leaseDurationSeconds": LEASE_SECONDS,
                            "renewTime": rfc3339_micro(now),
                        },
                    },
                )
            except ApiError as exc:
                if exc.code != 409:
                    raise
            return

        def renew(lease: Obj) -> None:
            lease.setdefault("spec", {})["renewTime"] = rfc3339_micro(now)

        store.mutate("leases", LEASE_NAMESPACE, NODE, renew)
