"""The DaemonSet controller: one pod of each DaemonSet on the node (the double has one, ``fake-node``), rolled on a
template change, with the status ``kubectl rollout status daemonset/x`` reads.

Per sync (``pkg/controller/daemon/daemon_controller.go`` and ``update.go``):

- the DaemonSet should run on the node when the template's ``nodeSelector`` matches the Node's labels (taints are
  not modelled: the node has none); a missing pod is created from the template with ``generateName: <ds>-``, the
  labels ``controller-revision-hash`` and ``pod-template-generation``, a required node affinity on
  ``metadata.name`` and the tolerations every daemon pod gets (``pkg/controller/daemon/util``); event
  ``SuccessfulCreate`` (``Created pod: <name>``). A pod on a node where it should not run is deleted, a Failed
  one too (``SuccessfulDelete``), and replaced.
- the template's revision is a ControllerRevision ``<ds>-<hash>`` (``revision`` counts up), what
  ``kubectl rollout history daemonset/x`` lists. With ``updateStrategy.type: RollingUpdate`` (the default) a pod of
  an older revision is deleted when no more than ``maxUnavailable`` (1) pods are unavailable, and a new one
  created; with ``OnDelete`` old pods stay until someone deletes them.
- ``status``: ``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberMisscheduled``, ``numberReady``,
  ``updatedNumberScheduled``, ``numberAvailable`` (ready for ``minReadySeconds``), ``numberUnavailable``,
  ``observedGeneration``; zero counts kept, as the API's non-``omitempty`` fields are.

Not modelled: more nodes, taints and their tolerations, ``maxSurge``, revision history cleanup.
"""

from __future__ import annotations

from collections.abc import Iterable

from fakes.kube.controllers.base import (
    Key,
    Obj,
    Reconciler,
    deleting,
    int_or_percent,
    meta,
    owned_by,
    owner_keys,
    owner_reference,
    spec,
    status,
)
from fakes.kube.controllers.events import NORMAL
from fakes.kube.controllers.node import NODE
from fakes.kube.controllers.podutil import (
    is_active,
    is_available,
    is_ready,
    phase,
    pod_from_template,
    ready_since,
    template_hash,
)
from fakes.kube.errors import ApiError
from fakes.kube.store import StoreEvent, clone

DS, DS_KEY = "daemonsets.apps", "apps/daemonsets"
REVISIONS = "controllerrevisions.apps"
PODS, PODS_KEY = "pods", "/pods"
HASH_LABEL = "controller-revision-hash"
#: The tolerations ``AddOrUpdateDaemonPodTolerations`` gives every daemon pod.
TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)


class DaemonSetController(Reconciler):
    name = "daemonset-controller"
    watches = (DS_KEY, PODS_KEY, "/nodes")

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.resource.key == DS_KEY:
            return [(event.namespace, event.name)]
        if event.resource.key == "/nodes":
            return [(meta(d)["namespace"], meta(d)["name"]) for d in self.store.list(DS)[0]]
        return owner_keys(event, "DaemonSet")

    def sync(self, namespace: str, name: str) -> None:
        ds = self.store.get(DS, namespace, name)
        if ds is None:
            return
        revision_hash = self._revision(ds)
        pods = [p for p in self.store.list(PODS, namespace)[0] if owned_by(p, ds)]
        node = self.store.get("nodes", None, NODE)
        should_run = node is not None and _selects(ds, node)
        if not deleting(ds):
            self._manage(ds, pods, should_run, revision_hash)
            pods = [p for p in self.store.list(PODS, namespace)[0] if owned_by(p, ds)]
        self._write_status(ds, pods, should_run, revision_hash)

    # --- pods ----------------------------------------------------------------------------------------------

    def _manage(self, ds: Obj, pods: list[Obj], should_run: bool, revision_hash: str) -> None:
        for pod in pods:
            if phase(pod) == "Failed" and not deleting(pod):
                self._delete_pod(ds, pod)
        active = [p for p in pods if is_active(p)]
        if not should_run:
            for pod in active:
                self._delete_pod(ds, pod)
            return
        for extra in sorted(active, key=lambda p: str(meta(p).get("creationTimestamp")))[1:]:
            self._delete_pod(ds, extra)
        active = active[:1]
        if not active:
            self._create_pod(ds, revision_hash)
            return
        strategy = spec(ds).get("updateStrategy") or {}
        old = [p for p in active if (meta(p).get("labels") or {}).get(HASH_LABEL) != revision_hash]
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and old:
            max_unavailable = int_or_percent(
                (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1), 1, round_up=True
            )
            unavailable = sum(1 for p in active if not is_ready(p))
            if unavailable <= max(max_unavailable, 1):
                for pod in old:
                    self._delete_pod(ds, pod)

    def _create_pod(self, ds: Obj, revision_hash: str) -> None:
        name = meta(ds)["name"]
        pod = pod_from_template(
            spec(ds).get("template") or {},
            owner_reference(ds, "apps/v1", "DaemonSet"),
            meta(ds)["namespace"],
            generate_name=f"{name}-",
            extra_labels={HASH_LABEL: revision_hash, "pod-template-generation": str(meta(ds).get("generation", 1))},
        )
        pod_spec = pod["spec"]
        pod_spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}
                    ]
                }
            }
        }
        tolerations = list(pod_spec.get("tolerations") or [])
        for key, effect in TOLERATIONS:
            if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": effect})
        pod_spec["tolerations"] = tolerations
        created = self.store.create(PODS, pod)
        self.ctx.recorder.record(
            ds, NORMAL, "SuccessfulCreate", f"Created pod: {meta(created)['name']}", component=self.name
        )

    def _delete_pod(self, ds: Obj, pod: Obj) -> None:
        if not deleting(pod):
            self.delete_pod(ds, pod)

    # --- revisions -----------------------------------------------------------------------------------------

    def _revision(self, ds: Obj) -> str:
        """The hash of the current template; its ControllerRevision is created when new."""
        template = spec(ds).get("template") or {}
        revision_hash = template_hash(template, status(ds).get("collisionCount"))
        namespace, name = meta(ds)["namespace"], meta(ds)["name"]
        revisions = [r for r in self.store.list(REVISIONS, namespace)[0] if owned_by(r, ds)]
        if any((meta(r).get("labels") or {}).get(HASH_LABEL) == revision_hash for r in revisions):
            return revision_hash
        if deleting(ds):
            return revision_hash
        number = max((int(r.get("revision") or 0) for r in revisions), default=0) + 1
        patch = {"spec": {"template": dict(clone(template), **{"$patch": "replace"})}}
        labels = dict((template.get("metadata") or {}).get("labels") or {}, **{HASH_LABEL: revision_hash})
        try:
            self.store.create(
                REVISIONS,
                {
                    "apiVersion": "apps/v1",
                    "kind": "ControllerRevision",
                    "metadata": {
                        "name": f"{name}-{revision_hash}",
                        "namespace": namespace,
                        "labels": labels,
                        "ownerReferences": [owner_reference(ds, "apps/v1", "DaemonSet")],
                    },
                    "data": patch,
                    "revision": number,
                },
            )
        except ApiError as exc:
            if exc.code != 409:
                raise
        return revision_hash

    # --- status --------------------------------------------------------------------------------------------

    def _write_status(self, ds: Obj, pods: list[Obj], should_run: bool, revision_hash: str) -> None:
        now = self.ctx.now()
        min_ready = int(spec(ds).get("minReadySeconds") or 0)
        active = [p for p in pods if is_active(p)]
        scheduled = active[:1] if should_run else []
        ready = [p for p in scheduled if is_ready(p)]
        available = [p for p in ready if is_available(p, min_ready, now)]
        updated = [p for p in scheduled if (meta(p).get("labels") or {}).get(HASH_LABEL) == revision_hash]
        desired = 1 if should_run else 0
        wanted: Obj = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": 0 if should_run else len(active),
            "desiredNumberScheduled": desired,
            "numberReady": len(ready),
            "observedGeneration": int(meta(ds).get("generation") or 0),
            "updatedNumberScheduled": len(updated),
            "numberAvailable": len(available),
        }
        if desired - len(available) > 0:
            wanted["numberUnavailable"] = desired - len(available)
        if wanted.get("numberAvailable") == 0:
            wanted.pop("numberAvailable")
        if len(available) < len(ready):
            due = [
                since + min_ready for p in ready if (since := ready_since(p)) is not None and since + min_ready > now
            ]
            if due:
                self.requeue_after(meta(ds)["namespace"], meta(ds)["name"], min(due) - now + 0.01)
        if status(ds).get("collisionCount") is not None:
            wanted["collisionCount"] = status(ds)["collisionCount"]
        if wanted == status(ds):
            return
        self.store.update(DS, dict(ds, status=wanted), subresource="status")


def _selects(ds: Obj, node: Obj) -> bool:
    """``nodeShouldRunDaemonPod`` reduced to the template's ``nodeSelector`` against the node's labels."""
    selector = (spec(spec(ds).get("template") or {}) or {}).get("nodeSelector") or {}
    labels = meta(node).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())
