"""The real control plane (harness.controlplane): what it reports, what real clients do through it, and how a start
that cannot finish is told.

Needs the binaries (`make control-plane`); `make test-control-plane` runs these, `make test` never does. Each spec
module gets the process's plane from the `control_plane` fixture and a namespace of its own per spec.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import process
from harness.controlplane.assets import Assets, find
from harness.controlplane.plane import ControlPlane, Settings
from harness.controlplane.release import ENVTEST_PAIR, pinned
from harness.errors import BinariesMissing, ControlPlaneStartFailed
from harness.fetch import fetch_through_sync
from harness.portforward import port_forward
from harness.testing.kubectl_builds import real_kubectl
from specs.controlplane.local_http import Quiet, serving

pytestmark = [pytest.mark.control_plane, pytest.mark.timeout(300)]

KUBECTL_TIMEOUT = 90.0
"""Seconds one kubectl call may take here: a watch-based verb (rollout status, wait) waits for controllers and kwok
on a loaded 2-core machine."""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
        ports:
        - containerPort: 8080
"""


@pytest.fixture(autouse=True)
def _binaries() -> None:
    try:
        find().require()
    except BinariesMissing as exc:
        pytest.skip(str(exc))


def _kubectl(kube, kubectl: str, *args: str, stdin: str | None = None) -> process.Completed:
    argv = [kubectl, "--kubeconfig", str(kube.kubeconfig), "--context", kube.context, "-n", kube.namespace, *args]
    done = process.run_bounded(argv, timeout=KUBECTL_TIMEOUT, input=stdin.encode() if stdin else None, env=kube.env)
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
    return done


def test_version_reports_the_pinned_release(control_plane) -> None:
    release = pinned()
    done = _kubectl(control_plane.kube, "kubectl", "version", "-o", "json")
    server = json.loads(done.stdout)["serverVersion"]
    assert server["gitVersion"] == release.kubernetes
    assert (server["major"], server["minor"]) == tuple(release.minor.split("."))


def test_the_apiserver_finds_every_storage_feature_it_needs_in_etcd(control_plane) -> None:
    # k8s.io/apiserver pkg/storage/feature/feature_support_checker.go logs these when etcd lacks RequestWatchProgress
    # (etcd below 3.5.13), which consistent reads from the watch cache rely on.
    log = control_plane.logs()["kube-apiserver"].read_text()
    assert "is not supported by" not in log
    assert "Failed to check if RequestWatchProgress is supported" not in log


def test_every_node_is_ready_and_carries_the_well_known_labels(control_plane) -> None:
    nodes = json.loads(_kubectl(control_plane.kube, "kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert nodes
    for node in nodes:
        ready = [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready == ["True"], node["metadata"]["name"]
        assert {"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"} <= set(node["metadata"]["labels"])
        assert node["status"]["addresses"][0]["address"].startswith("127.")


@pytest.mark.parametrize("minor", [27, 32, 33])
def test_real_kubectl_applies_gets_watches_rolls_out_and_deletes(control_plane_namespace, minor: int) -> None:
    kubectl = real_kubectl(minor)
    if kubectl is None:
        pytest.skip(f"kubectl.1.{minor} is not installed beside the kubectl on PATH")
    kube = control_plane_namespace
    _kubectl(kube, kubectl, "apply", "--server-side", "-f", "-", stdin=DEPLOYMENT)
    _kubectl(kube, kubectl, "rollout", "status", "deployment/web", f"--timeout={KUBECTL_TIMEOUT / 2:.0f}s")
    pods = json.loads(_kubectl(kube, kubectl, "get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
    assert [p["status"]["phase"] for p in pods] == ["Running"]
    assert pods[0]["status"]["podIP"].startswith("127.1.")
    _kubectl(kube, kubectl, "set", "image", "deployment/web", "web=registry.invalid/web:2")
    _kubectl(kube, kubectl, "rollout", "status", "deployment/web", f"--timeout={KUBECTL_TIMEOUT / 2:.0f}s")
    image = _kubectl(kube, kubectl, "get", "deployment/web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
    assert image.stdout == "registry.invalid/web:2"
    _kubectl(kube, kubectl, "delete", "deployment/web", f"--timeout={KUBECTL_TIMEOUT / 2:.0f}s")
    left = _kubectl(kube, kubectl, "get", "deployments", "-o", "name")
    assert left.stdout.strip() == ""


def test_the_kubernetes_client_creates_watches_patches_and_deletes(control_plane_namespace) -> None:
    from kubernetes import client, watch

    kube = control_plane_namespace
    core = client.CoreV1Api(kube.api_client())
    made = core.create_namespaced_config_map(
        kube.namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"level": "1"})
    )
    assert made.metadata is not None
    core.patch_namespaced_config_map("settings", kube.namespace, {"data": {"level": "2"}})
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()
    for event in stream.stream(
        core.list_namespaced_config_map,
        kube.namespace,
        field_selector="metadata.name=settings",
        resource_version=made.metadata.resource_version,
        timeout_seconds=30,
    ):
        seen.append((event["type"], event["object"].data["level"]))
        if event["object"].data["level"] == "2":
            stream.stop()
    assert seen == [("MODIFIED", "2")]
    core.delete_namespaced_config_map("settings", kube.namespace)
    assert core.list_namespaced_config_map(kube.namespace, field_selector="metadata.name=settings").items == []


class _Hello(Quiet):
    def do_GET(self) -> None:
        self.answer(200, b"hello from a local process")


@pytest.fixture
def local_server() -> Iterator[int]:
    with serving(_Hello) as port:
        yield port


def _routes(tmp_path: Path, port: int, log: Path) -> Path:
    """kwok's own route objects, given in its --config file: every pod's port 8080 forwards to ``port`` on
    127.0.0.1, and every container's log is ``log`` (kwok's API: ClusterPortForward, ClusterLogs)."""
    routes = tmp_path / "routes.yaml"
    routes.write_text(
        json.dumps(
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "ClusterPortForward",
                "metadata": {"name": "local"},
                "spec": {"forwards": [{"ports": [8080], "target": {"port": port, "address": "127.0.0.1"}}]},
            }
        )
        + "\n---\n"
        + json.dumps(
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "ClusterLogs",
                "metadata": {"name": "local"},
                "spec": {"logs": [{"containers": ["web"], "logsFile": str(log)}]},
            }
        )
    )
    return routes


def test_port_forward_reaches_a_local_process_and_logs_read_a_local_file(tmp_path: Path, local_server: int) -> None:
    log = tmp_path / "web.log"
    # The kubelet's log line format (CRI: time, stream, tag, text), which kwok's logs route requires.
    log.write_text("2026-12-02T08:00:00.000000000Z stdout F listening on 8080\n")
    with ControlPlane(Settings(kwok_configs=(_routes(tmp_path, local_server, log),))) as plane:
        kube = plane.kube()
        _kubectl(kube, "kubectl", "apply", "-f", "-", stdin=DEPLOYMENT)
        _kubectl(kube, "kubectl", "rollout", "status", "deployment/web", f"--timeout={KUBECTL_TIMEOUT / 2:.0f}s")
        with port_forward(kube, "deploy/web", 8080) as forward:
            answer = fetch_through_sync(forward, "GET", "/")
        assert answer.text == "hello from a local process"
        logs = _kubectl(kube, "kubectl", "logs", "deployment/web")
        assert logs.stdout == "listening on 8080\n"
        kube.close()


def test_a_start_past_its_bound_names_the_component_quotes_its_log_and_leaves_nothing(monkeypatch) -> None:
    # A real kube-apiserver that its probe never finds ready (as when etcd answers but never well enough): the start
    # must end at its bound, name the apiserver and quote what it logged meanwhile.
    monkeypatch.setattr("harness.controlplane.admin.AdminClient.ready", lambda self: False)
    plane = ControlPlane(Settings(start_timeout=8.0))
    with pytest.raises(ControlPlaneStartFailed) as raised:
        plane.start()
    assert raised.value.component == "kube-apiserver"
    assert "was not ready (/readyz answers ok) when the start's bound ran out" in str(raised.value)
    assert raised.value.log_tail.strip()
    assert raised.value.log_tail.splitlines()[-1].strip() in str(raised.value)
    assert plane.root is not None
    assert not plane.root.exists()
    assert all(not process.group_alive(pid) for pid in plane.pids().values())


def test_a_component_that_exits_is_named_with_the_end_of_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nspec: [not, a, stage\n")
    plane = ControlPlane(Settings(kwok_configs=(broken,)))
    with pytest.raises(ControlPlaneStartFailed) as raised:
        plane.start()
    assert raised.value.component == "kwok"
    assert re.search(r"kwok exited with code \d+ before /healthz answers ok", str(raised.value))
    assert "did not find expected" in raised.value.log_tail  # kwok's own words about the file
    assert raised.value.log_tail.splitlines()[-1].strip() in str(raised.value)
    assert all(not process.group_alive(pid) for pid in plane.pids().values())


def test_etcd_and_the_apiserver_alone_serve_the_api_and_name_what_is_missing_for_pods() -> None:
    found = find()
    pair = Assets({n: found.paths[n] for n in ENVTEST_PAIR}, dict.fromkeys(ENVTEST_PAIR, "KUBEBUILDER_ASSETS"), None)
    with pytest.raises(BinariesMissing) as missing:
        pair.require()
    assert missing.value.missing == ("kube-controller-manager", "kube-scheduler", "kwok")
    assert "with etcd and kube-apiserver alone an API server runs" in str(missing.value)
    with ControlPlane(Settings(components=ENVTEST_PAIR), assets=pair) as plane:
        assert set(plane.servers) == set(ENVTEST_PAIR)
        done = _kubectl(plane.kube(), "kubectl", "get", "namespaces", "-o", "name")
        assert "namespace/kube-system" in done.stdout.split()


def test_a_component_that_loses_its_port_to_another_process_is_started_again_on_a_new_one(monkeypatch) -> None:
    # etcd and the apiserver cannot take port 0: a port is picked by binding 0 and closing, and another process can
    # take it in between. Here one is taken on purpose, the first time a port is picked.
    from harness.controlplane.processes import free_port

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks = iter([taken.getsockname()[1]])
    monkeypatch.setattr("harness.controlplane.plane.free_port", lambda: next(picks, None) or free_port())
    try:
        with ControlPlane(Settings(components=ENVTEST_PAIR)) as plane:
            log = plane.logs()["etcd"].read_text()
            assert "address already in use" in log  # the first etcd lost the race ...
            assert plane.servers["etcd"].alive()  # ... and the second, on a new port, serves
            assert _kubectl(plane.kube(), "kubectl", "get", "namespaces").stdout
    finally:
        taken.close()


def test_kwok_manages_only_the_nodes_the_harness_made_for_it(control_plane) -> None:
    kube = control_plane.kube
    name = f"foreign-{os.getpid()}"
    foreign = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"owner": "someone-else"}}}
    _kubectl(kube, "kubectl", "create", "-f", "-", stdin=json.dumps(foreign))
    try:
        # kwok's node-initialize stage is the one that writes a Node's conditions: a Node made after ours, and
        # read after ours was Ready, has none only because kwok does not manage it.
        mine = json.loads(_kubectl(kube, "kubectl", "get", "node", "kwok-node-0", "-o", "json").stdout)
        assert [c["status"] for c in mine["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
        theirs = json.loads(_kubectl(kube, "kubectl", "get", "node", name, "-o", "json").stdout)
        assert theirs.get("status", {}).get("conditions") is None
    finally:
        _kubectl(kube, "kubectl", "delete", "node", name)


def test_the_standalone_command_serves_until_sigterm_then_leaves_nothing(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "cp.kubeconfig"
    argv = [sys.executable, "-m", "harness.controlplane", "run", "--kubeconfig", str(kubeconfig)]
    child = process.spawn(argv)
    try:
        assert child.stdout is not None
        ready_line = _read_line(child, Settings().start_timeout + 30)
        ready = json.loads(ready_line)
        assert ready["version"] == pinned().kubernetes
        assert ready["kubeconfig"] == str(kubeconfig)
        config = json.loads(kubeconfig.read_text())
        assert [c["name"] for c in config["contexts"]] == [ready["context"]]
        nodes = process.run_bounded(
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "name"], timeout=KUBECTL_TIMEOUT
        )
        assert nodes.stdout.split() == ["node/kwok-node-0"]
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=Settings().stop_timeout * 6) == 0
    finally:
        process.kill_group(child)
    assert not kubeconfig.exists()
    pids = [c["pid"] for c in ready["components"].values()]
    assert [pid for pid in pids if process.group_alive(pid)] == []
    assert not Path(ready["components"]["etcd"]["log"]).parents[1].exists()


def _read_line(child: subprocess.Popen[bytes], bound: float) -> str:
    """The child's first stdout line within ``bound`` seconds (AssertionError with its stderr otherwise)."""
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], bound)
    line = child.stdout.readline().decode() if ready else ""
    if not line:
        child.kill()
        assert child.stderr is not None
        raise AssertionError(f"no ready line within {bound:.0f}s: {child.stderr.read().decode()[-2000:]}")
    return line
