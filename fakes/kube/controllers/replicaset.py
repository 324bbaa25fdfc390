"""The ReplicaSet controller: keeps ``spec.replicas`` active pods and reports them in ``status``.

Per sync (``pkg/controller/replicaset/replica_set.go``): the ReplicaSet's pods are those whose controller
``ownerReference`` is the ReplicaSet; *active* ones are neither Succeeded/Failed nor being deleted (so a
Terminating pod is replaced at once, as on a real cluster). Missing pods are created from the template with
``generateName: <replicaset>-`` (event ``SuccessfulCreate``: ``Created pod: <name>``); extra ones are deleted in
the ranking order of :func:`~fakes.kube.controllers.podutil.deletion_order` (event ``SuccessfulDelete``).
``status``: ``replicas`` (active pods), ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` (ready
for ``minReadySeconds``; a timer re-syncs when a pod gets there), ``observedGeneration``; zero counts are omitted as
the real API's ``omitempty`` does, ``replicas`` always present.

Not modelled: adopting or releasing pods by selector (only owner references count), slow-start batches, expectations,
the ``ReplicaFailure`` condition.
"""

from __future__ import annotations

from collections.abc import Iterable

from fakes.kube.controllers.base import (
    Key,
    Obj,
    Reconciler,
    deleting,
    drop_zeros,
    meta,
    owned_by,
    owner_keys,
    owner_reference,
    spec,
    status,
)
from fakes.kube.controllers.events import NORMAL
from fakes.kube.controllers.podutil import (
    deletion_order,
    is_active,
    is_available,
    is_ready,
    pod_from_template,
    ready_since,
)
from fakes.kube.store import StoreEvent

RS, RS_KEY = "replicasets.apps", "apps/replicasets"
PODS, PODS_KEY = "pods", "/pods"


class ReplicaSetController(Reconciler):
    name = "replicaset-controller"
    watches = (RS_KEY, PODS_KEY)
    #: The controlled kind: its store name, collection key, kind and apiVersion (the RC controller reuses all this).
    resource, key, kind, api_version = RS, RS_KEY, "ReplicaSet", "apps/v1"

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.resource.key == self.key:
            return [(event.namespace, event.name)]
        return owner_keys(event, self.kind)

    def sync(self, namespace: str, name: str) -> None:
        rs = self.store.get(self.resource, namespace, name)
        if rs is None:
            return
        pods = [p for p in self.store.list(PODS, namespace)[0] if owned_by(p, rs)]
        active = [p for p in pods if is_active(p)]
        if not deleting(rs):
            self._manage(rs, active)
        self._write_status(rs, active)

    def _manage(self, rs: Obj, active: list[Obj]) -> None:
        wanted = int(spec(rs).get("replicas", 1) or 0)
        diff = len(active) - wanted
        if diff < 0:
            for _ in range(-diff):
                self._create_pod(rs)
        elif diff > 0:
            for pod in deletion_order(active, self.ctx.now())[:diff]:
                self.delete_pod(rs, pod)

    def _create_pod(self, rs: Obj) -> None:
        name = meta(rs)["name"]
        pod = pod_from_template(
            spec(rs).get("template") or {},
            owner_reference(rs, self.api_version, self.kind),
            meta(rs)["namespace"],
            generate_name=f"{name}-",
        )
        created = self.store.create(PODS, pod)
        self.ctx.recorder.record(
            rs, NORMAL, "SuccessfulCreate", f"Created pod: {meta(created)['name']}", component=self.name
        )

    def _write_status(self, rs: Obj, active: list[Obj]) -> None:
        now = self.ctx.now()
        min_ready = int(spec(rs).get("minReadySeconds") or 0)
        template_labels = ((spec(rs).get("template") or {}).get("metadata") or {}).get("labels") or {}
        labelled = [p for p in active if template_labels.items() <= (meta(p).get("labels") or {}).items()]
        ready = [p for p in active if is_ready(p)]
        available = [p for p in ready if is_available(p, min_ready, now)]
        wanted = drop_zeros(
            {
                "replicas": len(active),
                "fullyLabeledReplicas": len(labelled),
                "readyReplicas": len(ready),
                "availableReplicas": len(available),
                "observedGeneration": int(meta(rs).get("generation") or 0),
            },
            keep=("replicas",),
        )
        if status(rs).get("conditions"):
            wanted["conditions"] = status(rs)["conditions"]
        if len(available) < len(ready):
            self._recheck_availability(rs, ready, min_ready, now)
        if wanted == status(rs):
            return
        updated = dict(rs, status=wanted)
        self.store.update(self.resource, updated, subresource="status")

    def _recheck_availability(self, rs: Obj, ready: list[Obj], min_ready: int, now: float) -> None:
        due = [since + min_ready for p in ready if (since := ready_since(p)) is not None and since + min_ready > now]
        if due:
            self.requeue_after(meta(rs)["namespace"], meta(rs)["name"], min(due) - now + 0.01)


class ReplicationControllerController(ReplicaSetController):
    """ReplicationControllers: the ReplicaSet controller's work for the older kind (upstream runs the same code,
    ``pkg/controller/replication`` wraps ``replicaset``), pods ``<rc>-xxxxx``."""

    name = "replication-controller"
    watches = ("/replicationcontrollers", PODS_KEY)
    resource, key, kind, api_version = (
        "replicationcontrollers",
        "/replicationcontrollers",
        "ReplicationController",
        "v1",
    )
