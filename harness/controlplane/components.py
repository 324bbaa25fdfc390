"""What each component is started with, all on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok.

Flags are the components' own (``<binary> --help``; kube-apiserver's as kubeadm and envtest pass them). Addresses the
cluster hands out are in the loopback range too, so nothing a client is told ever leads off this machine: Services
get ClusterIPs from :data:`SERVICE_RANGE`, kwok gives pods IPs from :data:`POD_RANGE` and Nodes the InternalIP
127.0.0.1. Nothing of the harness dials those addresses: pods are reached by ``kubectl port-forward``.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane.pki import Pair, Pki
from harness.controlplane.processes import Server

HOST = "127.0.0.1"
SERVICE_RANGE = "127.2.0.0/16"
POD_RANGE = "127.1.0.0/16"
NODE_LEASE_SECONDS = 40
"""A Node lease's duration: the kubelet's own default (``nodeLeaseDurationSeconds``, kubelet config docs)."""
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
"""kwok's own convention for the Nodes it simulates; kwok is told to manage only Nodes that carry it."""


def first_service_ip() -> str:
    """The ``kubernetes`` Service's ClusterIP: the range's first address (kube-apiserver's own choice)."""
    return str(next(ipaddress.ip_network(SERVICE_RANGE).hosts()))


@dataclass(frozen=True)
class Layout:
    """Where one start keeps its files: ``root`` holds one folder per component and the PKI."""

    root: Path

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def log(self, name: str) -> Path:
        return self.folder(name) / f"{name}.log"


def write_kubeconfig(path: Path, *, server: str, ca: Path, client: Pair, context: str) -> Path:
    """A kubeconfig with one cluster, one user (a client certificate) and one context, as JSON (valid YAML)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": context, "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": "default"}}],
        "current-context": context,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
    path.chmod(0o600)
    return path


def etcd(binary: str, layout: Layout, client_port: int, peer_port: int) -> Server:
    folder = layout.folder("etcd")
    client = f"http://{HOST}:{client_port}"
    peer = f"http://{HOST}:{peer_port}"
    argv = [
        binary,
        "--name=harness",
        f"--data-dir={folder / 'data'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=harness={peer}",
        "--unsafe-no-fsync",  # a test cluster's data dies with it; fsync on a loaded disk only slows every write
        "--log-level=warn",
    ]
    return Server("etcd", argv, layout.log("etcd"))


def kube_apiserver(binary: str, layout: Layout, pki: Pki, *, port: int, etcd_port: int) -> Server:
    folder = layout.folder("kube-apiserver")
    argv = [
        binary,
        f"--etcd-servers=http://{HOST}:{etcd_port}",
        f"--bind-address={HOST}",
        f"--advertise-address={HOST}",
        f"--secure-port={port}",
        f"--cert-dir={folder}",
        f"--tls-cert-file={pki.serving.cert}",
        f"--tls-private-key-file={pki.serving.key}",
        f"--client-ca-file={pki.ca.cert}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.service_account.cert}",
        f"--service-account-signing-key-file={pki.service_account.key}",
        f"--service-cluster-ip-range={SERVICE_RANGE}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        # Port-forward, exec and logs: the apiserver calls the node's kubelet port (kwok's server) as this client.
        f"--kubelet-client-certificate={pki.kubelet_client.cert}",
        f"--kubelet-client-key={pki.kubelet_client.key}",
        "--kubelet-preferred-address-types=InternalIP",
        # The `kubernetes` Service's Endpoints would name the advertise address, and a loopback address is invalid in
        # Endpoints: without this the apiserver logs that failure every few seconds. That Service has no endpoints.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]
    return Server("kube-apiserver", argv, layout.log("kube-apiserver"))


def _client_and_serving(name: str, layout: Layout, kubeconfig: Path, port: int) -> list[str]:
    """The flags kube-controller-manager and kube-scheduler share: one identity for its API calls and for checking
    who calls its own ``/healthz`` server, which serves on ``port`` with a self-signed certificate in its folder."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={port}",
        f"--cert-dir={layout.folder(name)}",
    ]


def kube_controller_manager(binary: str, layout: Layout, pki: Pki, *, kubeconfig: Path, port: int) -> Server:
    argv = [
        binary,
        *_client_and_serving("kube-controller-manager", layout, kubeconfig, port),
        f"--service-account-private-key-file={pki.service_account.key}",
        f"--root-ca-file={pki.ca.cert}",
        f"--cluster-signing-cert-file={pki.ca.cert}",
        f"--cluster-signing-key-file={pki.ca.key}",
        f"--service-cluster-ip-range={SERVICE_RANGE}",
        "--use-service-account-credentials=true",
        # At its default 20 requests/s (burst 30) the controller manager's start (a ServiceAccount and a token for
        # each of its ~35 controllers) throttled the `default` ServiceAccount by 4-5 s; an API server that serves one
        # test machine has room for more (start to ready 9.3 and 9.6 s -> 5.7 and 4.8 s, under load).
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--leader-elect=false",
        "--profiling=false",
    ]
    return Server("kube-controller-manager", argv, layout.log("kube-controller-manager"))


def kube_scheduler(binary: str, layout: Layout, *, kubeconfig: Path, port: int) -> Server:
    argv = [
        binary,
        *_client_and_serving("kube-scheduler", layout, kubeconfig, port),
        "--leader-elect=false",
        "--profiling=false",
    ]
    return Server("kube-scheduler", argv, layout.log("kube-scheduler"))


def kwok(
    binary: str, layout: Layout, pki: Pki, *, kubeconfig: Path, port: int, configs: list[Path], env: dict[str, str]
) -> Server:
    folder = layout.folder("kwok")
    key, value = KWOK_NODE_ANNOTATION
    argv = [
        binary,
        f"--kubeconfig={kubeconfig}",
        *(f"--config={c}" for c in configs),
        "--enable-crds=PortForward",  # routes are API objects: a spec adds one for its pod while kwok runs
        f"--manage-nodes-with-annotation-selector={key}={value}",
        f"--node-ip={HOST}",
        f"--node-port={port}",
        f"--server-address={HOST}:{port}",
        f"--tls-cert-file={pki.kwok_serving.cert}",
        f"--tls-private-key-file={pki.kwok_serving.key}",
        f"--cidr={POD_RANGE}",
        f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
    ]
    # kwok also reads ~/.kwok/kwok.yaml when it exists: its work dir is its own folder, so a user's file never joins.
    return Server("kwok", argv, layout.log("kwok"), env={**env, "KWOK_WORKDIR": str(folder), "HOME": str(folder)})


def node_manifest(name: str) -> dict[str, object]:
    """A Node for kwok to simulate: kwok's annotation, and the well-known labels a kubelet sets on its own Node
    (``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch``: Kubernetes docs, "Well-Known
    Labels, Annotations and Taints")."""
    key, value = KWOK_NODE_ANNOTATION
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "spec": {},
    }
