"""Specs that run on both targets: the Kubernetes API double and the real control plane (a pytest plugin, loaded by
the repository's conftest).

``target_name`` (parametrised ``double`` / ``control-plane``; the second marked ``control_plane``, so ``make test``
runs the double alone and ``make test-control-plane`` the real one) and ``target``, a :class:`Target` with a
:class:`~harness.kube.Kube` pinned to a namespace of its own on that target. On the double the module's own ``kd``
fixture (a :func:`fakes.kube.serve` handle) provides the double; on the control plane the session's
``control_plane`` fixture does, and its kwok takes the double's fault annotations through the Stages in
``specs/kwok/faults.yaml`` (``[tool.harness] kwok_configs``).
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import Kube

DOUBLE, CONTROL_PLANE = "double", "control-plane"
TARGETS = [
    pytest.param(DOUBLE, id=DOUBLE),
    pytest.param(CONTROL_PLANE, id=CONTROL_PLANE, marks=pytest.mark.control_plane),
]
STAGES = Path(__file__).parent / "kwok" / "faults.yaml"
NAMESPACE_DELETE = 30.0
"""Seconds ``kubectl delete namespace --wait=false`` may take."""


@dataclass
class Target:
    """One target for one spec: ``name``, ``kube`` (its own namespace), ``double`` (the API double's handle, or
    ``None`` on the control plane)."""

    name: str
    kube: Kube
    double: Any = None

    @property
    def on_double(self) -> bool:
        return self.double is not None


@pytest.fixture(params=TARGETS)
def target_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(target_name: str, request: pytest.FixtureRequest) -> Iterator[Target]:
    if target_name == CONTROL_PLANE:
        yield Target(CONTROL_PLANE, request.getfixturevalue("control_plane_namespace"))
        return
    yield request.getfixturevalue("target_on_double")


@pytest.fixture(scope="session")
def local_node_plane() -> Iterator[Any]:
    """A real control plane whose one node is a :class:`fakes.kube.node.LocalNode` (no kwok node), so the scheduler
    binds every pod to it and its containers of the local-process contract run here. Skips without the binaries."""
    from fakes.kube.node import LocalNode
    from harness.controlplane.plane import ControlPlane, Settings
    from harness.errors import BinariesMissing

    plane = ControlPlane(Settings(nodes=0))
    try:
        plane.start_kept()
    except BinariesMissing as exc:
        pytest.skip(str(exc))
    try:
        with LocalNode(plane.kubeconfig) as node:
            plane.local_node = node  # type: ignore[attr-defined]  # for specs that need a pod's local port (the node's port table)
            yield plane
    finally:
        plane.release()


@pytest.fixture(params=TARGETS)
def local_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """Like ``target``, but on the control plane the plane is :func:`local_node_plane`'s: pods of the
    local-process contract run as processes on both."""
    if request.param == DOUBLE:
        yield request.getfixturevalue("target_on_double")
        return
    plane = request.getfixturevalue("local_node_plane")
    name = f"{_namespace_for(request)}-{uuid.uuid4().hex[:6]}"[:63].strip("-")
    admin = plane.kube("default")
    admin.kubectl("create", "namespace", name)
    try:
        yield Target(CONTROL_PLANE, plane.kube(name))
    finally:
        admin.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", timeout=NAMESPACE_DELETE)


@pytest.fixture
def target_on_double(request: pytest.FixtureRequest) -> Target:
    kd = request.getfixturevalue("kd")
    namespace = _namespace_for(request)
    if kd.store.get("namespaces", None, namespace) is None:  # set-up, not under test: no kubectl process
        kd.store.create("namespaces", {"metadata": {"name": namespace}})
    return Target(DOUBLE, kd.kube(namespace=namespace), kd)


def _namespace_for(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.originalname.lower().removeprefix("test_"))[:50]
    return name.strip("-") or "spec"


def skip_on_control_plane(target_name: str, missing: str) -> None:
    """Skip the control-plane variant, naming the simulated part it lacks."""
    if target_name == CONTROL_PLANE:
        pytest.skip(f"on the control plane {missing}")


@cache
def stage_delay(name: str) -> float:
    """Seconds of the default delay (``durationMilliseconds``) of the kwok Stage ``name`` in :data:`STAGES`."""
    for stage in yaml.safe_load_all(STAGES.read_text()):
        if stage["metadata"]["name"] == name:
            return float(stage["spec"]["delay"]["durationMilliseconds"]) / 1000
    raise KeyError(f"no Stage {name!r} in {STAGES}")


PORT_ANNOTATION = "double.stack-harness.dev/port-{port}"
"""The double's kubelet forwards a pod's container port to the local address this annotation holds."""


def route_ports(target: Target, pod: str, ports: dict[int, int]) -> dict[str, str]:
    """Route pod ``pod``'s container ports to local ports on 127.0.0.1 (``{container port: local port}``), before
    the pod is created. On the double: returns the pod's annotations its kubelet reads. On the control plane:
    creates kwok's namespaced ``PortForward`` named after the pod (kwok's API; the plane runs kwok with
    ``--enable-crds=PortForward``) and returns no annotations."""
    if target.on_double:
        return {PORT_ANNOTATION.format(port=p): f"127.0.0.1:{local}" for p, local in ports.items()}
    forwards = [{"ports": [p], "target": {"address": "127.0.0.1", "port": local}} for p, local in ports.items()]
    route = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward", "metadata": {"name": pod}}
    target.kube.kubectl("apply", "-f", "-", input=json.dumps({**route, "spec": {"forwards": forwards}}))
    return {}


def unroute(target: Target, pod: str) -> None:
    """On the control plane, remove pod ``pod``'s kwok route: its container is gone (kwok, unlike a kubelet, keeps
    forwarding to a deleted pod's route). Nothing to do on the double, whose kubelet stops with the pod."""
    if not target.on_double:
        target.kube.kubectl("delete", "portforwards.kwok.x-k8s.io", pod, "--ignore-not-found")


def double_with_kubectl() -> Iterator[Any]:
    """Body of a module's ``kd`` fixture: the API double (``fakes.kube.serve()``); skips without a kubectl on PATH,
    which every both-target spec drives."""
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    import fakes.kube

    with fakes.kube.serve() as handle:
        yield handle
