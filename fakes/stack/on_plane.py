"""The stack twin on a real control plane: the real kube-apiserver, kube-controller-manager and kube-scheduler of
this machine (:mod:`harness.controlplane`), one local node (:class:`fakes.kube.node.LocalNode`) that the scheduler
binds every pod to, and the twin's node running the stack's services as those pods' containers.

What differs from the twin on the API double: every controller is the real one (Deployments, ReplicaSets, Jobs,
garbage collection, ServiceAccount tokens, RBAC); the local node is the kubelet (pod status, deletion with its grace
period, ``kubectl exec``/``port-forward``/``logs`` through the API server's kubelet connection) and hands the twin's
node its port table, exec handlers and log book (:class:`~fakes.stack.node.Host`); readiness is the service's own
start, not its readinessProbe (the local node runs no probes). Start it::

    with fakes.stack.on_plane.serve("/tmp/kc", "stack-twin-plane") as twin:
        twin.kube()

or ``python -m fakes.stack --on control-plane --kubeconfig PATH ...``. The kubeconfig is the plane's admin one,
written at ``kubeconfig`` (which must not exist yet) and removed at the end. Raises
:class:`~harness.errors.BinariesMissing` when the control plane's binaries are not built (``make control-plane``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from fakes.kube.client import Api
from fakes.kube.node import LocalNode
from fakes.stack import bugs as bug_switches
from fakes.stack import config
from fakes.stack.node import Host, Node, NodeRunner
from fakes.stack.profile import Effective, effective
from fakes.stack.up import Up, UpFailed
from harness import process
from harness.controlplane.plane import ControlPlane, Settings

DEFAULT_CONTEXT = "stack-twin-plane"


class KubeconfigExists(FileExistsError):
    """The control-plane twin writes a kubeconfig of its own and will not overwrite or merge into one."""


class PlaneTwinHandle:
    """A running control-plane twin: ``kubeconfig``, ``context``, ``namespace``, ``plane`` (the
    :class:`~harness.controlplane.plane.ControlPlane`), ``local_node``, ``node``, ``bugs``, ``timing``,
    ``start_seconds`` and ``up_steps``, as :class:`fakes.stack.TwinHandle` has them."""

    def __init__(
        self, plane: ControlPlane, local_node: LocalNode, node: Node, start_seconds: float, steps: list[Any]
    ) -> None:
        self.plane, self.local_node, self.node = plane, local_node, node
        self.bugs = node.bugs
        self.timing: Effective = node.timing
        self.start_seconds, self.up_steps = start_seconds, steps
        self.kubeconfig, self.context, self.namespace = str(plane.kubeconfig), plane.context, config.NAMESPACE

    @property
    def logs(self) -> dict[str, str]:
        """Each control-plane component's log file (``kube-apiserver``, ...), for a failed spec's evidence."""
        return {name: str(path) for name, path in self.plane.logs().items()}

    def kube(self, **kwargs: Any) -> Any:
        """A ``harness.Kube`` pinned to the plane's context and the stack's namespace."""
        kube = self.plane.kube(config.NAMESPACE)
        for key, value in kwargs.items():
            setattr(kube, key, value)
        return kube


@contextlib.contextmanager
def serve(
    kubeconfig: str | os.PathLike[str],
    context: str = DEFAULT_CONTEXT,
    *,
    bugs: list[str] | tuple[str, ...] = (),
    kubectl: str = "kubectl",
    time_scale: float = 1.0,
    overrides: Mapping[str, float] | None = None,
) -> Iterator[PlaneTwinHandle]:
    """Start the control plane, its local node, the twin's node and the stack; yields a :class:`PlaneTwinHandle`;
    stops everything on exit. Raises :class:`KubeconfigExists`, what :func:`fakes.stack.serve` raises for bad
    switches, scales and set-up steps, and the control plane's and local node's start errors."""
    path = Path(kubeconfig)
    if path.exists():
        raise KubeconfigExists(f"{path} exists: the control-plane twin writes a kubeconfig of its own, give a new path")
    switched = bug_switches.parse(list(bugs))
    timing = effective(time_scale, overrides)
    began = time.monotonic()
    plane = ControlPlane(Settings(nodes=0), kubeconfig=path, context=context)
    plane.start_kept()
    try:
        with LocalNode(plane.kubeconfig) as local:
            host = Host(local.surface.ports, local.surface.exec_handlers, local.kubelet.logs, time.time)
            api = Api.from_kubeconfig(plane.kubeconfig, context)
            node = Node(host, api, config.NAMESPACE, endpoint_slices=True)  # kube-proxy's source, as on a cluster
            node.bugs, node.timing = bug_switches.Switches(switched), timing
            _register(node)
            try:
                node.start_loop()
                local.runtime = NodeRunner(node).for_local_node
                run_kubectl = _kubectl(plane, kubectl)
                _provide_volumes(run_kubectl, plane)
                up = Up(run_kubectl, timing)
                up.run()
                node.publish_bugs()
                yield PlaneTwinHandle(plane, local, node, time.monotonic() - began, up.steps)
            finally:
                node.close()
    finally:
        plane.release()


def _register(node: Node) -> None:
    from fakes.stack import register_images

    register_images(node)


CLAIMS = ("integration-gateway-outbox",)
"""The stack's PersistentVolumeClaims: each gets a hostPath PersistentVolume bound to it before the set-up, as a
cluster's provisioner would provide one (the plane runs none)."""


def _provide_volumes(run_kubectl: Any, plane: ControlPlane) -> None:
    assert plane.root is not None
    for claim in CLAIMS:
        folder = plane.root / "volumes" / claim
        folder.mkdir(parents=True, exist_ok=True)
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"twin-{claim}"},
            "spec": {
                "capacity": {"storage": "16Mi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": str(folder), "type": "DirectoryOrCreate"},
                "claimRef": {"namespace": config.NAMESPACE, "name": claim},
            },
        }
        done = run_kubectl("apply", "-f", "-", input=json.dumps(volume), timeout=60.0)
        if done.returncode != 0:
            raise UpFailed(f"stack set-up, volumes: PersistentVolume for claim {claim}: {done.stderr.strip()[-400:]}")


def _kubectl(plane: ControlPlane, kubectl: str) -> Any:
    def run(*args: str, input: str | None = None, timeout: float = 60.0) -> Any:
        # The plane's context names no namespace; the twin's names the stack's (objects without one go there).
        argv = [kubectl, "--kubeconfig", str(plane.kubeconfig), "--context", plane.context, "-n", config.NAMESPACE]
        argv += args
        return process.run_bounded(argv, timeout=timeout, input=input.encode() if input is not None else None)

    return run
