"""The StatefulSet controller: pods ``<name>-0`` .. ``<name>-N-1`` with stable names, recreated when deleted.

As ``pkg/controller/statefulset`` does for the default ``podManagementPolicy: OrderedReady``: ordinals are created
in order, each only once the ones below it are Running and Ready; a deleted pod is recreated under the same name
once the old one is gone (its grace period ends); scaling down deletes the highest ordinal first, one at a time.
``Parallel`` creates and deletes without waiting. Pods carry the template's labels plus
``controller-revision-hash: <name>-<hash>``, ``statefulset.kubernetes.io/pod-name`` and (1.28+)
``apps.kubernetes.io/pod-index``, ``spec.hostname`` and ``spec.subdomain`` (``serviceName``). Events:
``SuccessfulCreate`` ``create Pod web-0 in StatefulSet web successful`` and ``SuccessfulDelete``.

A template change (new ``updateRevision``) rolls pods from the highest ordinal down to ``partition``: each
out-of-date pod is deleted once every pod is Running and Ready, and comes back with the new revision.
``status``: ``observedGeneration``, ``replicas``, ``readyReplicas``, ``currentReplicas``, ``updatedReplicas``,
``availableReplicas``, ``currentRevision``, ``updateRevision``, ``collisionCount`` (what ``kubectl rollout status
statefulset`` reads: it then prints ``partitioned roll out complete: N new pods have been updated...``).

Not modelled: ControllerRevision objects (the revision names are computed, not stored), volumeClaimTemplates (no
PersistentVolumeClaims are served), ``OnDelete`` beyond not rolling, ``maxUnavailable``.
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
    is_available,
    is_ready,
    is_terminal,
    phase,
    pod_from_template,
    template_hash,
)
from fakes.kube.errors import ApiError
from fakes.kube.store import StoreEvent

STS, STS_KEY = "statefulsets.apps", "apps/statefulsets"
PODS, PODS_KEY = "pods", "/pods"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


class StatefulSetController(Reconciler):
    name = "statefulset-controller"
    watches = (STS_KEY, PODS_KEY)

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.resource.key == STS_KEY:
            return [(event.namespace, event.name)]
        return owner_keys(event, "StatefulSet")

    def sync(self, namespace: str, name: str) -> None:
        sts = self.store.get(STS, namespace, name)
        if sts is None:
            return
        update_revision = f"{name}-{template_hash(spec(sts).get('template') or {})}"
        pods = {self._ordinal(sts, p): p for p in self.store.list(PODS, namespace)[0] if owned_by(p, sts)}
        pods.pop(-1, None)
        if not deleting(sts):
            self._manage(sts, pods, update_revision)
            pods = {self._ordinal(sts, p): p for p in self.store.list(PODS, namespace)[0] if owned_by(p, sts)}
            pods.pop(-1, None)
        self._write_status(sts, pods, update_revision)

    @staticmethod
    def _ordinal(sts: Obj, pod: Obj) -> int:
        prefix, _, index = str(meta(pod).get("name", "")).rpartition("-")
        return int(index) if prefix == meta(sts)["name"] and index.isdigit() else -1

    def _manage(self, sts: Obj, pods: dict[int, Obj], update_revision: str) -> None:
        replicas = int(spec(sts).get("replicas", 1) or 0)
        ordered = spec(sts).get("podManagementPolicy", "OrderedReady") != "Parallel"
        current_revision = status(sts).get("currentRevision") or update_revision
        partition = self._partition(sts)
        for ordinal in range(replicas):
            pod = pods.get(ordinal)
            if pod is None:
                revision = update_revision if ordinal >= partition else current_revision
                self._create(sts, ordinal, revision)
                if ordered:
                    return
                continue
            if is_terminal(pod) and not deleting(pod):
                self._delete(sts, pod)  # a failed pod is replaced under the same name
                if ordered:
                    return
                continue
            if ordered and (deleting(pod) or not (phase(pod) == "Running" and is_ready(pod))):
                return
        extra = sorted((o for o in pods if o >= replicas), reverse=True)
        for ordinal in extra:
            if not deleting(pods[ordinal]):
                self._delete(sts, pods[ordinal])
            if ordered:
                return
        self._roll(sts, pods, replicas, update_revision, partition)

    def _roll(self, sts: Obj, pods: dict[int, Obj], replicas: int, update_revision: str, partition: int) -> None:
        strategy = spec(sts).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        healthy = all(
            o in pods and not deleting(pods[o]) and phase(pods[o]) == "Running" and is_ready(pods[o])
            for o in range(replicas)
        )
        if not healthy:
            return
        for ordinal in range(replicas - 1, partition - 1, -1):
            pod = pods[ordinal]
            if (meta(pod).get("labels") or {}).get(REVISION_LABEL) != update_revision:
                self._delete(sts, pod)
                return

    @staticmethod
    def _partition(sts: Obj) -> int:
        rolling = (spec(sts).get("updateStrategy") or {}).get("rollingUpdate") or {}
        return int(rolling.get("partition") or 0)

    def _create(self, sts: Obj, ordinal: int, revision: str) -> None:
        name = f"{meta(sts)['name']}-{ordinal}"
        labels = {REVISION_LABEL: revision, POD_NAME_LABEL: name}
        if self.ctx.minor >= 28:
            labels[POD_INDEX_LABEL] = str(ordinal)
        pod = pod_from_template(
            spec(sts).get("template") or {},
            owner_reference(sts, "apps/v1", "StatefulSet"),
            meta(sts)["namespace"],
            name=name,
            extra_labels=labels,
        )
        pod["spec"]["hostname"] = name
        if spec(sts).get("serviceName"):
            pod["spec"]["subdomain"] = spec(sts)["serviceName"]
        try:
            self.store.create(PODS, pod)
        except ApiError as exc:
            if exc.code == 409:  # the old pod of that name is still there: wait for it to go
                return
            raise
        self.ctx.recorder.record(
            sts,
            NORMAL,
            "SuccessfulCreate",
            f"create Pod {name} in StatefulSet {meta(sts)['name']} successful",
            component=self.name,
        )

    def _delete(self, sts: Obj, pod: Obj) -> None:
        message = f"delete Pod {meta(pod)['name']} in StatefulSet {meta(sts)['name']} successful"
        self.delete_pod(sts, pod, message)

    def _write_status(self, sts: Obj, pods: dict[int, Obj], update_revision: str) -> None:
        replicas = int(spec(sts).get("replicas", 1) or 0)
        current_revision = status(sts).get("currentRevision") or update_revision
        present = [p for o, p in pods.items() if o < replicas or not deleting(p)]
        ready = [p for p in present if is_ready(p) and not deleting(p)]
        min_ready = int(spec(sts).get("minReadySeconds") or 0)
        now = self.ctx.now()

        def revision(pod: Obj) -> str:
            return str((meta(pod).get("labels") or {}).get(REVISION_LABEL, ""))

        updated = sum(1 for p in present if revision(p) == update_revision)
        current = sum(1 for p in present if revision(p) == current_revision)
        if updated == replicas and len(ready) == replicas and len(present) == replicas:
            current_revision, current = update_revision, updated  # the rollout is complete
        wanted = drop_zeros(
            {
                "observedGeneration": int(meta(sts).get("generation") or 0),
                "replicas": len(present),
                "readyReplicas": len(ready),
                "currentReplicas": current,
                "updatedReplicas": updated,
                "availableReplicas": sum(1 for p in ready if is_available(p, min_ready, now)),
            },
            keep=("replicas",),
        )
        wanted.update({"currentRevision": current_revision, "updateRevision": update_revision, "collisionCount": 0})
        if wanted != status(sts):
            self.store.update(STS, dict(sts, status=wanted), subresource="status")
