"""Controllers for the Kubernetes API double, so workloads behave like a cluster's: Deployments roll out, pods start,
crash, get Ready and go away, Jobs complete, events and logs appear, all on the double's clock.

The control loops live in :mod:`fakes.kube.controllers` (one module each), the kubelet in :mod:`fakes.kube.lifecycle`
and the log book in :mod:`fakes.kube.logs`; this module assembles them (above all three, so none imports it back).

``fakes.kube.serve()`` installs them (``controllers=False`` serves a bare API); ``kd.controllers`` is the
:class:`Controllers` of a running double:

- ``deployments`` (:mod:`fakes.kube.controllers.deployment`): Deployment -> ReplicaSet ``<name>-<pod-template-hash>``
  with revisions, rolling updates (maxSurge/maxUnavailable, 25%/25% by default) or Recreate, ``observedGeneration``,
  replica counts, ``Available``/``Progressing`` conditions and ``ProgressDeadlineExceeded``; ``ScalingReplicaSet``
  events.
- ``replicasets`` (:mod:`fakes.kube.controllers.replicaset`): keeps ``spec.replicas`` active pods
  (``<replicaset>-xxxxx``), status counts; ``replicationcontrollers`` the same for ReplicationControllers.
- ``statefulsets`` (:mod:`fakes.kube.controllers.statefulset`): pods ``<name>-0..N-1`` in order, recreated under the
  same name when deleted, rolled from the highest ordinal.
- ``jobs`` (:mod:`fakes.kube.controllers.job`): pods until ``completions`` succeed (``Complete``) or ``backoffLimit``
  is passed (``Failed``).
- ``daemonsets`` (:mod:`fakes.kube.controllers.daemonset`): one pod per DaemonSet on the node, rolled on a template
  change.
- ``node`` (:mod:`fakes.kube.controllers.node`): the Node ``fake-node`` every pod is bound to, and its heartbeat Lease.
- ``namespaces`` (:mod:`fakes.kube.controllers.namespace`): the ``default`` ServiceAccount and ``kube-root-ca.crt`` in
  every namespace.
- ``disruption`` (:mod:`fakes.kube.controllers.disruption`): PodDisruptionBudget status from the pods it selects.
- ``autoscalers`` (:mod:`fakes.kube.controllers.autoscaler`): HPAs as on a cluster without a metrics server (range
  kept, no metrics).
- ``kubelet`` (:class:`fakes.kube.lifecycle.Kubelet`): the scheduler and kubelet: every pod, whoever created it, is
  scheduled, started, made Ready, restarted and removed after its grace period, with the kubelet's events; faults
  declared on pod-template annotations (``double.stack-harness.dev/crash-loop: "true"``...) or from Python
  (``kd.controllers.kubelet.set_faults(selector={"app": "api"}, never_ready="...")``); real processes as containers
  (``kd.controllers.kubelet.containers.register(...)``).
- ``logs`` (:class:`fakes.kube.logs.LogBook`): ``pods/x/log`` (all of ``kubectl logs``' flags); lines from the
  ``logs`` annotation or ``kd.controllers.logs.append(ns, pod, "line")``.
- ``events`` (:class:`fakes.kube.controllers.events.EventRecorder`): how every component above writes Events (also
  usable from Python).

Timing: a Deployment of N replicas is Available about 0.1 s after it is created; every delay is a timer on the
double's clock, so ``kd.clock.advance(seconds)`` makes it pass at once (a 600 s progress deadline, a 5-minute
back-off). All controller work runs on the double's event loop; the Python methods above are thread-safe.

Typical use::

    with fakes.kube.serve() as kd:
        kd.kubectl("apply", "-f", "deploy.yaml")
        kd.kubectl("rollout", "status", "deployment/api", "--timeout=30s")        # real kubectl, real rollout
        kd.controllers.kubelet.set_faults(selector={"app": "api"}, crash_loop=True, backoff=0.5)
        kd.kubectl("rollout", "restart", "deployment/api")                       # new pods crash-loop
        kd.clock.advance(601)                                                     # progress deadline passes
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fakes.kube.controllers.autoscaler import AutoscalerController
from fakes.kube.controllers.base import ControllerContext, Reconciler
from fakes.kube.controllers.daemonset import DaemonSetController
from fakes.kube.controllers.deployment import DeploymentController
from fakes.kube.controllers.disruption import DisruptionController
from fakes.kube.controllers.events import EventRecorder
from fakes.kube.controllers.job import JobController
from fakes.kube.controllers.namespace import NamespaceDefaults
from fakes.kube.controllers.node import NodeController
from fakes.kube.controllers.replicaset import ReplicaSetController, ReplicationControllerController
from fakes.kube.controllers.statefulset import StatefulSetController
from fakes.kube.lifecycle import Kubelet, PodFaults
from fakes.kube.logs import LogBook

if TYPE_CHECKING:
    from fakes.kube.double import KubeDouble


class Controllers:
    """Every simulated control-plane and node component of one double (see the module docstring)."""

    def __init__(self, double: KubeDouble) -> None:
        self.double = double
        self.events = EventRecorder(double.store, double.clock)
        self.ctx = ControllerContext(double, self.events)
        self.logs: LogBook = LogBook(double.store, double.clock)
        self.kubelet: Kubelet = Kubelet(self.ctx, self.logs)
        self.replicasets = ReplicaSetController(self.ctx)
        self.deployments = DeploymentController(self.ctx)
        self.statefulsets = StatefulSetController(self.ctx)
        self.jobs = JobController(self.ctx)
        self.daemonsets = DaemonSetController(self.ctx)
        self.replicationcontrollers = ReplicationControllerController(self.ctx)
        self.node = NodeController(self.ctx)
        self.namespaces = NamespaceDefaults(self.ctx)
        self.disruption = DisruptionController(self.ctx)
        self.autoscalers = AutoscalerController(self.ctx)

    @property
    def reconcilers(self) -> list[Reconciler]:
        return [
            self.replicasets,
            self.deployments,
            self.statefulsets,
            self.jobs,
            self.daemonsets,
            self.replicationcontrollers,
            self.node,
            self.namespaces,
            self.disruption,
            self.autoscalers,
        ]

    def start(self) -> None:
        """Subscribe to the store, serve ``pods/log``, and reset with the double. Needs a serving double."""
        self.kubelet.start()
        for reconciler in self.reconcilers:
            reconciler.start()
        self.double.subresources.register("pods", "log", self.logs.serve)
        self.double.on_reset.append(self._on_reset)

    def _on_reset(self) -> None:
        # The store was emptied without events; forget everything before events of new objects arrive (the
        # reset is queued on the loop ahead of them).
        self.ctx.soon(self._reset)

    def _reset(self) -> None:
        self.ctx.reset()
        self.events.reset()
        self.logs.reset()
        self.kubelet.reset()
        for reconciler in self.reconcilers:
            reconciler.reset()
        self.node.register()
        self.namespaces.resync()


def install(double: KubeDouble) -> Controllers:
    """Start the controllers on a serving double (idempotent); also ``double.controllers``."""
    existing = getattr(double, "controllers", None)
    if isinstance(existing, Controllers):
        return existing
    controllers = Controllers(double)
    controllers.start()
    double.controllers = controllers  # type: ignore[attr-defined]
    return controllers


def of(double: KubeDouble) -> Controllers:
    """The controllers of ``double``. Raises ``RuntimeError`` when it was served with ``controllers=False``."""
    found = getattr(double, "controllers", None)
    if not isinstance(found, Controllers):
        raise RuntimeError("this double runs no controllers (it was served with controllers=False)")
    return found


__all__ = ["Controllers", "EventRecorder", "Kubelet", "LogBook", "PodFaults", "install", "of"]
