"""The in-cluster mode end to end on the real control plane of this machine: ``python -m harness.jobrun --in-cluster``
runs shards whose pods (local processes of the plane's local node) run ``pytest --in-cluster``. Each shard's cluster
specs see the context ``harness-in-cluster`` built from the pod's ServiceAccount token (a
``kubernetes.io/service-account-token`` Secret the real tokens controller filled), may do what the run's Role grants
and no more (the real RBAC authorizer decides), reach a Service without any kubectl port-forward, and never overlap
another shard's: the cluster lock is a Lease the pods share.

The Service's address comes from ``HARNESS_SERVICE_ADDRESSES``: on this machine a pod is a process on 127.0.0.1 and
its Service has no address that routes, so the local node's port for the server pod is what stands in for the
Service's DNS name.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness import process
from harness.waiting import wait_for_sync

pytestmark = [pytest.mark.control_plane, pytest.mark.timeout(300)]
RUN_TIMEOUT = 240.0
"""Seconds one sharded run of the small suite may take on a loaded 2-core machine."""
HOLD = 1.0
"""Seconds each spec holds the cluster lock: long enough that two shards' specs would overlap without it."""
SERVER = "web"

SPEC = """
import json, time

import pytest

from harness import fetch_through_sync
from harness.errors import KubectlError
from harness.service_addresses import ServiceAddress


@pytest.mark.cluster
def test_NAME(kube, forwards, record_property):
    start = time.time()
    assert kube.context == "harness-in-cluster"
    web = forwards.get(kube.in_namespace("WEBNS"), "svc/web", 80)
    assert isinstance(web, ServiceAddress)
    assert forwards.opened == 0
    assert fetch_through_sync(web, "GET", "/", timeout=10).status_code == 200
    assert kube.kubectl_json("get", "leases")["items"][0]["metadata"]["name"] == "harness-cluster-lock"
    try:
        kube.kubectl("get", "secrets")
        raise AssertionError("listing secrets was not refused: the Role grants leases only")
    except KubectlError as exc:
        assert "forbidden" in str(exc)
    time.sleep(HOLD)  # the spec's work, done holding the cluster lock
    record_property("held", json.dumps([start, time.time()]))
"""


def suite(root: Path, web_namespace: str) -> Path:
    folder = root / "suite"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        '[tool.harness]\nallowed_contexts = ["harness-in-cluster"]\n\n'
        '[tool.pytest.ini_options]\njunit_family = "xunit1"\n'  # record_property's properties, without a warning
    )
    body = SPEC.replace("WEBNS", web_namespace).replace("HOLD", repr(HOLD))
    for name in "abcd":
        (folder / f"test_{name}.py").write_text(body.replace("NAME", name))
    return folder


def serve_web(plane: Any, namespace: str) -> tuple[str, int]:
    """A pod serving HTTP on its container port 80 and a Service for it; the local port it listens on."""
    admin = plane.kube("default")
    admin.kubectl("create", "namespace", namespace)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": SERVER,
            "labels": {"app": SERVER},
            "annotations": {"stack-harness.dev/local-process": "true"},
        },
        "spec": {
            "containers": [
                {
                    "name": "http",
                    "image": "local-process",
                    "command": [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "$(PORT)"],
                    "ports": [{"containerPort": 80}],
                }
            ]
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVER},
        "spec": {"selector": {"app": SERVER}, "ports": [{"port": 80, "targetPort": 80}]},
    }
    web = plane.kube(namespace)
    web.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, service]}))
    web.kubectl("wait", "--for=condition=Ready", f"pod/{SERVER}", "--timeout=60s", timeout=70)
    found = wait_for_sync(
        "the local node's port for the web pod",
        lambda: plane.local_node.surface.ports.target(namespace, SERVER, 80),
        timeout=30,
        interval=0.2,
    )
    return found


def held_intervals(artifacts: Path) -> list[tuple[float, float, int]]:
    (run,) = [p for p in artifacts.iterdir() if p.is_dir()]
    out = []
    for junit in sorted(run.glob("shard-*/junit.xml")):
        shard = int(junit.parent.name.split("-")[1])
        for prop in ET.parse(junit).iter("property"):
            if prop.get("name") == "held":
                start, end = json.loads(prop.get("value") or "[]")
                out.append((start, end, shard))
    return sorted(out)


def test_in_cluster_shards_use_their_service_account_a_shared_lease_and_no_port_forward(
    local_node_plane: Any, tmp_path: Path
) -> None:
    namespace = f"web-{tmp_path.name[-8:]}".lower().replace("_", "-").strip("-")
    host, port = serve_web(local_node_plane, namespace)
    try:
        folder = suite(tmp_path, namespace)
        addresses = json.dumps({f"{namespace}/svc/{SERVER}:80": f"{host}:{port}"})
        argv = [
            sys.executable, "-m", "harness.jobrun", "--context", local_node_plane.context,
            "--kubeconfig", str(local_node_plane.kubeconfig), "--shards", "2", "--in-cluster",
            "--grants", str(grants(tmp_path)), "--artifacts", str(tmp_path / "artifacts"),
            "--env", f"HARNESS_SERVICE_ADDRESSES={addresses}", "--env", f"HOME={tmp_path}",
            "--", str(folder), f"--rootdir={folder}", "-p", "no:cacheprovider",
        ]  # fmt: skip
        done = process.run_bounded(argv, timeout=RUN_TIMEOUT, cwd=str(Path.cwd()))
    finally:
        local_node_plane.kube("default").kubectl("delete", "namespace", namespace, "--wait=false")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 shards done; specs: 4 passed, 0 failed" in done.stdout
    held = held_intervals(tmp_path / "artifacts")
    assert len(held) == 4
    assert {shard for *_, shard in held} == {0, 1}, held
    for (_, end, _), (start, _, _) in zip(held, held[1:], strict=False):
        assert end <= start, f"two shards' cluster specs overlapped: {held}"


def grants(root: Path) -> Path:
    """Reading leases (the spec looks at the lock it holds); nothing else beyond the run's own Lease rule."""
    path = root / "grants.json"
    path.write_text(json.dumps([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]}]))
    return path
