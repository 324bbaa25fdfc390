"""The Deployment controller: Deployment -> ReplicaSets (``<deployment>-<pod-template-hash>``) -> pods, with the
rolling-update arithmetic, revisions, conditions and progress deadline of ``pkg/controller/deployment``
(``sync.go``, ``rolling.go``, ``recreate.go``, ``progress.go``, ``util/deployment_util.go``).

What a sync does, as upstream:

- **New ReplicaSet**: the ReplicaSet whose template equals the Deployment's (ignoring ``pod-template-hash``) is the
  new one; if none, one is created named ``<deployment>-<hash>`` with the hash label on its selector, template and
  labels, the Deployment's annotations (except kubectl's and the controller's own), annotations
  ``deployment.kubernetes.io/revision`` (max old revision + 1), ``desired-replicas`` and ``max-replicas``, and the
  Deployment as controller owner; the Deployment gets the same ``revision`` annotation and a ``Progressing`` condition
  ``NewReplicaSetCreated`` (``Created new replica set "x"``).
- **RollingUpdate**: scale the new ReplicaSet up to at most ``replicas + maxSurge`` pods in total, then scale old
  ones down while ``replicas - maxUnavailable`` stay available (unhealthy old pods first), one step per sync; each
  scale is an event ``ScalingReplicaSet`` (``Scaled up replica set x from 0 to 1``). ``maxSurge`` rounds up,
  ``maxUnavailable`` down, both 25% by default; if both come out 0, ``maxUnavailable`` is 1.
- **Recreate**: scale every old ReplicaSet to 0, wait until their pods are gone, then scale the new one up.
- **Status**: ``observedGeneration``, ``replicas`` / ``updatedReplicas`` / ``readyReplicas`` / ``availableReplicas`` /
  ``unavailableReplicas`` summed from the ReplicaSets' status (zeros omitted), ``Available`` (``True`` /
  ``MinimumReplicasAvailable`` once ``replicas - maxUnavailable`` pods are available), ``Progressing``
  (``ReplicaSetUpdated`` while counts move, ``NewReplicaSetAvailable`` when complete, and ``False`` /
  ``ProgressDeadlineExceeded`` with ``ReplicaSet "x" has timed out progressing.`` once ``progressDeadlineSeconds``
  pass after the condition's ``lastUpdateTime`` without progress: a timer on the double's clock re-syncs then, so
  ``kd.clock.advance(600)`` times a stuck rollout out at once). ``kubectl rollout status`` reads exactly these.
- **History**: once complete, old ReplicaSets scaled to 0 beyond ``revisionHistoryLimit`` are deleted.
- ``spec.paused``: no new ReplicaSet and no rollout; ``Progressing`` is ``Unknown`` / ``DeploymentPaused``.

Hashes are computed from the template's JSON, so names differ from a real cluster's for the same template (the form
is the same). Not modelled: proportional scaling of several active ReplicaSets during a rollout (the new one is
scaled as in a rollout), the deprecated rollback annotation, ``ReplicaFailure``, adoption of orphaned ReplicaSets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fakes.kube.clock import rfc3339
from fakes.kube.controllers.base import (
    Key,
    Obj,
    Reconciler,
    condition,
    controller_of,
    deleting,
    drop_zeros,
    int_or_percent,
    meta,
    owned_by,
    owner_keys,
    owner_reference,
    spec,
    status,
    timestamp,
)
from fakes.kube.controllers.events import NORMAL
from fakes.kube.controllers.podutil import equal_ignore_hash, is_terminal, template_hash
from fakes.kube.errors import ApiError
from fakes.kube.store import StoreEvent, clone

DEPLOYMENTS, DEPLOYMENTS_KEY = "deployments.apps", "apps/deployments"
RS, RS_KEY = "replicasets.apps", "apps/replicasets"
PODS, PODS_KEY = "pods", "/pods"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
#: ``maxRevHistoryLengthInChars`` of ``pkg/controller/deployment``: the longest ``revision-history`` it writes.
REVISION_HISTORY_CHARS = 2000
NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        DESIRED,
        MAX_REPLICAS,
        REVISION_HISTORY,
        "deprecated.deployment.rollback.to",
    }
)
TIMED_OUT = "ProgressDeadlineExceeded"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"


class DeploymentController(Reconciler):
    name = "deployment-controller"
    watches = (DEPLOYMENTS_KEY, RS_KEY, PODS_KEY)

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        key = event.resource.key
        if key == DEPLOYMENTS_KEY:
            return [(event.namespace, event.name)]
        if key == RS_KEY:
            return owner_keys(event, "Deployment")
        if event.type == "DELETED":  # Recreate waits for old pods to be gone, which changes no ReplicaSet
            ref = controller_of(event.object)
            if ref is not None and ref.get("kind") == "ReplicaSet":
                rs = self.store.get(RS, event.namespace, str(ref.get("name", "")))
                return (
                    owner_keys(StoreEvent("MODIFIED", event.resource, rs, None, event.rv), "Deployment")
                    if rs is not None
                    else []
                )
        return []

    def sync(self, namespace: str, name: str) -> None:
        found = self.store.get(DEPLOYMENTS, namespace, name)
        if found is None or deleting(found):
            return
        rollout = _Rollout(self, found)
        if spec(found).get("paused"):
            rollout.paused()
        elif (spec(found).get("strategy") or {}).get("type") == "Recreate":
            rollout.recreate()
        else:
            rollout.rolling()


class _Rollout:
    """One sync of one Deployment: a working copy ``d`` (annotations and conditions are changed on it and written
    once, with the status, at the end) and its ReplicaSets by name."""

    def __init__(self, controller: DeploymentController, deployment: Obj) -> None:
        self.c = controller
        self.ctx = controller.ctx
        self.store = controller.store
        self.stored = deployment
        self.d = clone(deployment)
        self.d.setdefault("status", {})
        self.namespace = str(meta(deployment)["namespace"])
        self.name = str(meta(deployment)["name"])
        self.rs: dict[str, Obj] = {
            meta(r)["name"]: r for r in self.store.list(RS, self.namespace)[0] if owned_by(r, deployment)
        }

    # --- strategies ------------------------------------------------------------------------------------------

    def rolling(self) -> None:
        new, old = self.new_and_old(create=True)
        if new is None:
            return self.write_status(None)
        if self.reconcile_new(new) or self.reconcile_old(new, old):
            return self.write_status(self.current(new))
        if self.complete(self.d["status"]):
            self.cleanup(old)
        self.write_status(self.current(new))

    def recreate(self) -> None:
        new, old = self.new_and_old(create=False)
        scaled = False
        for rs in old:
            if _replicas(rs) > 0:
                scaled = self.scale(rs, 0) or scaled
        if scaled or self.old_pods_running(old):
            return self.write_status(new)
        if new is None:
            new, old = self.new_and_old(create=True)
            if new is None:
                return self.write_status(None)
        if _replicas(new) != self.replicas:
            self.scale(new, self.replicas)
            return self.write_status(self.current(new))
        if self.complete(self.d["status"]):
            self.cleanup(old)
        self.write_status(new)

    def paused(self) -> None:
        new, _ = self.new_and_old(create=False)
        status_ = self.calculate_status(new)
        if _has_deadline(self.d):
            cond = condition(status_, "Progressing")
            if cond is None or cond.get("reason") != "DeploymentPaused":
                _set_condition(
                    status_, self._condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
                )
        self.store_status(status_)

    # --- the new ReplicaSet ----------------------------------------------------------------------------------

    def new_and_old(self, *, create: bool) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (created when missing and ``create``) with its
        revision synced, and the old ones."""
        template = spec(self.d).get("template") or {}
        by_age = sorted(self.rs.values(), key=lambda r: (str(meta(r).get("creationTimestamp", "")), meta(r)["name"]))
        new = next((r for r in by_age if equal_ignore_hash(spec(r).get("template") or {}, template)), None)
        old = [r for r in by_age if r is not new]
        revision = max((_revision(r) for r in old), default=0) + 1
        if new is not None:
            return self.sync_revision(new, revision), old
        if not create:
            return None, old
        return self.create_new(revision, old), old

    def sync_revision(self, new: Obj, revision: int) -> Obj:
        annotations = dict(meta(new).get("annotations") or {})
        wanted = dict(annotations)
        if _revision(new) < revision:
            wanted[REVISION] = str(revision)
            if REVISION in annotations:  # a rollback reuses this ReplicaSet: keep the revisions it had
                history = with_revision_history(annotations.get(REVISION_HISTORY, ""), annotations[REVISION])
                if history is not None:
                    wanted[REVISION_HISTORY] = history
        wanted[DESIRED] = str(self.replicas)
        wanted[MAX_REPLICAS] = str(self.replicas + self.max_surge())
        if wanted != annotations:
            changed = clone(new)
            changed["metadata"]["annotations"] = wanted
            new = self.save_rs(changed)
        self._set_revision_annotation(str(_revision(new)))
        if _has_deadline(self.d) and condition(self.d["status"], "Progressing") is None:
            _set_condition(
                self.d["status"],
                self._condition(
                    "Progressing", "True", "FoundNewReplicaSet", f'Found new replica set "{meta(new)["name"]}"'
                ),
            )
        return new

    def create_new(self, revision: int, old: list[Obj]) -> Obj | None:
        template = clone(spec(self.d).get("template") or {})
        collisions = status(self.d).get("collisionCount")
        pod_hash = template_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = clone(spec(self.d).get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        annotations = {k: v for k, v in (meta(self.d).get("annotations") or {}).items() if k not in NOT_COPIED}
        annotations.update(
            {REVISION: str(revision), DESIRED: str(self.replicas), MAX_REPLICAS: str(self.replicas + self.max_surge())}
        )
        name = f"{self.name}-{pod_hash}"
        replicas = self.new_rs_replicas(old, 0)
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": dict(template["metadata"]["labels"]),
                "annotations": annotations,
                "ownerReferences": [owner_reference(self.d, "apps/v1", "Deployment")],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int(spec(self.d).get("minReadySeconds") or 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = self.store.create(RS, rs)
        except ApiError as exc:
            if exc.code != 409:
                raise
            return self._collided(name, template)
        self.rs[name] = created
        if replicas > 0:
            self._scaled_event(name, 0, replicas)
        self._set_revision_annotation(str(revision))
        if _has_deadline(self.d):
            _set_condition(
                self.d["status"],
                self._condition("Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{name}"'),
            )
        return created

    def _collided(self, name: str, template: Obj) -> Obj | None:
        """A ReplicaSet of that name exists: ours with the same template is the new one; otherwise bump
        ``collisionCount`` (a new hash on the next sync)."""
        existing = self.store.get(RS, self.namespace, name)
        if (
            existing is not None
            and owned_by(existing, self.d)
            and equal_ignore_hash(spec(existing).get("template") or {}, template)
        ):
            self.rs[name] = existing
            return existing
        self.d["status"]["collisionCount"] = int(status(self.d).get("collisionCount") or 0) + 1
        return None

    def _set_revision_annotation(self, revision: str) -> None:
        annotations = self.d["metadata"].setdefault("annotations", {})
        if annotations.get(REVISION) != revision:
            annotations[REVISION] = revision

    # --- scaling ---------------------------------------------------------------------------------------------

    @property
    def replicas(self) -> int:
        return int(spec(self.d).get("replicas", 1) or 0)

    def rolling_params(self) -> Obj:
        strategy = spec(self.d).get("strategy") or {}
        return strategy.get("rollingUpdate") or {} if strategy.get("type", "RollingUpdate") == "RollingUpdate" else {}

    def fenceposts(self) -> tuple[int, int]:
        """``ResolveFenceposts``: (maxSurge rounded up, maxUnavailable rounded down; 1 if both are 0)."""
        params = self.rolling_params()
        surge = int_or_percent(params.get("maxSurge", 0), self.replicas, True)
        unavailable = int_or_percent(params.get("maxUnavailable", 0), self.replicas, False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, unavailable

    def max_surge(self) -> int:
        strategy = spec(self.d).get("strategy") or {}
        return self.fenceposts()[0] if strategy.get("type", "RollingUpdate") == "RollingUpdate" else 0

    def max_unavailable(self) -> int:
        strategy = spec(self.d).get("strategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate" or self.replicas == 0:
            return 0
        return min(self.fenceposts()[1], self.replicas)

    def new_rs_replicas(self, old: list[Obj], new_replicas: int) -> int:
        """``NewRSNewReplicas``: how far the new ReplicaSet may grow now."""
        strategy = spec(self.d).get("strategy") or {}
        if strategy.get("type") == "Recreate":
            return self.replicas
        surge = int_or_percent(self.rolling_params().get("maxSurge", 0), self.replicas, True)
        current = sum(_replicas(r) for r in old) + new_replicas
        ceiling = self.replicas + surge
        if current >= ceiling:
            return new_replicas
        return new_replicas + min(ceiling - current, self.replicas - new_replicas)

    def reconcile_new(self, new: Obj) -> bool:
        new = self.current(new)
        if _replicas(new) == self.replicas:
            return False
        if _replicas(new) > self.replicas:
            return self.scale(new, self.replicas)
        old = [r for n, r in self.rs.items() if n != meta(new)["name"]]
        return self.scale(new, self.new_rs_replicas(old, _replicas(new)))

    def reconcile_old(self, new: Obj, old: list[Obj]) -> bool:
        new = self.current(new)
        old = [self.current(r) for r in old]
        if sum(_replicas(r) for r in old) == 0:
            return False
        all_pods = sum(_replicas(r) for r in old) + _replicas(new)
        min_available = self.replicas - self.max_unavailable()
        new_unavailable = _replicas(new) - int(status(new).get("availableReplicas") or 0)
        budget = all_pods - min_available - new_unavailable
        if budget <= 0:
            return False
        cleaned = self.cleanup_unhealthy(old, budget)
        old = [self.current(r) for r in old]
        return self.scale_down_old(old + [new], old) + cleaned > 0

    def cleanup_unhealthy(self, old: list[Obj], budget: int) -> int:
        """Scale old ReplicaSets down by their unavailable pods first (they block nothing by going)."""
        done = 0
        for rs in sorted(old, key=_created):
            if done >= budget:
                break
            unhealthy = _replicas(rs) - int(status(rs).get("availableReplicas") or 0)
            if _replicas(rs) == 0 or unhealthy <= 0:
                continue
            step = min(budget - done, unhealthy)
            self.scale(rs, _replicas(rs) - step)
            done += step
        return done

    def scale_down_old(self, all_rs: list[Obj], old: list[Obj]) -> int:
        min_available = self.replicas - self.max_unavailable()
        available = sum(int(status(r).get("availableReplicas") or 0) for r in all_rs)
        if available <= min_available:
            return 0
        room, done = available - min_available, 0
        for rs in sorted(old, key=_created):
            if done >= room:
                break
            if _replicas(rs) == 0:
                continue
            step = min(_replicas(rs), room - done)
            self.scale(rs, _replicas(rs) - step)
            done += step
        return done

    def scale(self, rs: Obj, replicas: int) -> bool:
        """Set a ReplicaSet's replicas (and the desired/max annotations); an event when the size changed."""
        rs = self.current(rs)
        before = _replicas(rs)
        annotations = dict(meta(rs).get("annotations") or {})
        wanted = dict(annotations, **{DESIRED: str(self.replicas), MAX_REPLICAS: str(self.replicas + self.max_surge())})
        if before == replicas and wanted == annotations:
            return False
        changed = clone(rs)
        changed["spec"]["replicas"] = replicas
        changed["metadata"]["annotations"] = wanted
        self.save_rs(changed)
        if before != replicas:
            self._scaled_event(meta(rs)["name"], before, replicas)
        return before != replicas

    def _scaled_event(self, rs_name: str, before: int, after: int) -> None:
        direction = "up" if after > before else "down"
        self.ctx.recorder.record(
            self.d,
            NORMAL,
            "ScalingReplicaSet",
            f"Scaled {direction} replica set {rs_name} from {before} to {after}",
            component=self.c.name,
        )

    def save_rs(self, rs: Obj) -> Obj:
        saved = self.store.update(RS, rs)
        self.rs[meta(saved)["name"]] = saved
        return saved

    def current(self, rs: Obj | None) -> Obj:
        if rs is None:
            return {}
        return self.rs.get(meta(rs).get("name", ""), rs)

    def old_pods_running(self, old: list[Obj]) -> bool:
        uids = {meta(r).get("uid") for r in old}
        return any(
            (controller_of(p) or {}).get("uid") in uids and not is_terminal(p)
            for p in self.store.list(PODS, self.namespace)[0]
        )

    def cleanup(self, old: list[Obj]) -> None:
        """Delete old ReplicaSets beyond ``revisionHistoryLimit`` (oldest revision first), only empty ones."""
        limit = int(spec(self.d).get("revisionHistoryLimit", 10))
        alive = [self.current(r) for r in old if not deleting(self.current(r))]
        for rs in sorted(alive, key=_revision)[: max(0, len(alive) - limit)]:
            settled = int(status(rs).get("observedGeneration") or 0) >= int(meta(rs).get("generation") or 0)
            if _replicas(rs) != 0 or int(status(rs).get("replicas") or 0) != 0 or not settled:
                continue
            try:
                self.store.delete(RS, self.namespace, meta(rs)["name"])
            except ApiError as exc:
                if exc.code != 404:
                    raise
            self.rs.pop(meta(rs)["name"], None)

    # --- status ----------------------------------------------------------------------------------------------

    def calculate_status(self, new: Obj | None) -> Obj:
        all_rs = list(self.rs.values())
        available = sum(int(status(r).get("availableReplicas") or 0) for r in all_rs)
        total = sum(_replicas(r) for r in all_rs)
        fields = {
            "observedGeneration": int(meta(self.d).get("generation") or 0),
            "replicas": sum(int(status(r).get("replicas") or 0) for r in all_rs),
            "updatedReplicas": int(status(self.current(new)).get("replicas") or 0) if new else 0,
            "readyReplicas": sum(int(status(r).get("readyReplicas") or 0) for r in all_rs),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
            "collisionCount": status(self.d).get("collisionCount"),
        }
        out = drop_zeros({k: v for k, v in fields.items() if v is not None}, keep=("collisionCount",))
        out["conditions"] = clone(status(self.d).get("conditions") or [])
        if available >= self.replicas - self.max_unavailable():
            cond = self._condition(
                "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."
            )
        else:
            cond = self._condition(
                "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
            )
        _set_condition(out, cond)
        return out

    def complete(self, st: Obj) -> bool:
        """``DeploymentComplete``: every replica updated, available, and nothing old left."""
        return (
            int(st.get("updatedReplicas") or 0) == self.replicas
            and int(st.get("replicas") or 0) == self.replicas
            and int(st.get("availableReplicas") or 0) == self.replicas
            and int(st.get("observedGeneration") or 0) >= int(meta(self.d).get("generation") or 0)
        )

    def progressing(self, new_status: Obj) -> bool:
        """``DeploymentProgressing``: counts moved the right way since the stored status."""
        old = status(self.stored)

        def n(st: Obj, key: str) -> int:
            return int(st.get(key) or 0)

        old_left = n(old, "replicas") - n(old, "updatedReplicas")
        new_left = n(new_status, "replicas") - n(new_status, "updatedReplicas")
        return (
            n(new_status, "updatedReplicas") > n(old, "updatedReplicas")
            or new_left < old_left
            or n(new_status, "readyReplicas") > n(old, "readyReplicas")
            or n(new_status, "availableReplicas") > n(old, "availableReplicas")
        )

    def timed_out(self, new_status: Obj) -> bool:
        cond = condition(new_status, "Progressing")
        if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
            return False
        if cond.get("reason") == TIMED_OUT:
            return True
        since = timestamp(cond.get("lastUpdateTime"))
        deadline = int(spec(self.d).get("progressDeadlineSeconds") or 0)
        return since is not None and since + deadline < self.ctx.now()

    def write_status(self, new: Obj | None) -> None:
        """``syncRolloutStatus``: counts, Available, Progressing (with the deadline), then one status write."""
        new_status = self.calculate_status(new)
        if not _has_deadline(self.d):
            _remove_condition(new_status, "Progressing")
        current = condition(status(self.d), "Progressing")
        done = (
            int(new_status.get("replicas") or 0) == int(new_status.get("updatedReplicas") or 0)
            and current is not None
            and current.get("reason") == NEW_RS_AVAILABLE
        )
        rs_name = meta(self.current(new)).get("name") if new else None
        if _has_deadline(self.d) and not done:
            if self.complete(new_status):
                message = (
                    f'ReplicaSet "{rs_name}" has successfully progressed.'
                    if rs_name
                    else f'Deployment "{self.name}" has successfully progressed.'
                )
                _set_condition(new_status, self._condition("Progressing", "True", NEW_RS_AVAILABLE, message))
            elif self.progressing(new_status):
                message = (
                    f'ReplicaSet "{rs_name}" is progressing.'
                    if rs_name
                    else f'Deployment "{self.name}" is progressing.'
                )
                cond = self._condition("Progressing", "True", "ReplicaSetUpdated", message)
                if current is not None and current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                _remove_condition(new_status, "Progressing")
                _set_condition(new_status, cond)
            elif self.timed_out(new_status):
                message = (
                    f'ReplicaSet "{rs_name}" has timed out progressing.'
                    if rs_name
                    else f'Deployment "{self.name}" has timed out progressing.'
                )
                _set_condition(new_status, self._condition("Progressing", "False", TIMED_OUT, message))
        self.store_status(new_status)
        self.requeue_stuck(new_status)

    def store_status(self, new_status: Obj) -> None:
        if new_status == status(self.stored) and meta(self.d).get("annotations") == meta(self.stored).get(
            "annotations"
        ):
            return
        self.d["status"] = new_status
        self.store.update(DEPLOYMENTS, self.d, subresource="status")

    def requeue_stuck(self, new_status: Obj) -> None:
        """Re-sync when the progress deadline would pass (``requeueStuckDeployment``)."""
        cond = condition(new_status, "Progressing")
        if cond is None or not _has_deadline(self.d) or self.complete(new_status) or cond.get("reason") == TIMED_OUT:
            return
        since = timestamp(cond.get("lastUpdateTime"))
        if since is None:
            return
        due = since + int(spec(self.d).get("progressDeadlineSeconds") or 0) - self.ctx.now()
        self.c.requeue_after(self.namespace, self.name, max(due, 0.0) + 0.01)

    def _condition(self, kind: str, state: str, reason: str, message: str) -> Obj:
        now = rfc3339(self.ctx.now())
        return {
            "type": kind,
            "status": state,
            "lastUpdateTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }


def _replicas(rs: Obj) -> int:
    return int(spec(rs).get("replicas", 0) or 0)


def with_revision_history(history: str, old_revision: str) -> str | None:
    """``revision-history`` after ``old_revision`` is appended, as ``SetNewReplicaSetAnnotations``
    (``pkg/controller/deployment/util/deployment_util.go``) writes it: comma-separated, oldest first, the oldest
    dropped while the text would pass :data:`REVISION_HISTORY_CHARS`; ``None`` (left as it is) when even that
    cannot fit it."""
    revisions = history.split(",")
    if not revisions[0]:
        return old_revision
    total = len(history) + len(old_revision) + 1
    start = 0
    while total > REVISION_HISTORY_CHARS and start < len(revisions):
        total -= len(revisions[start]) + 1
        start += 1
    if total > REVISION_HISTORY_CHARS:
        return None
    return ",".join([*revisions[start:], old_revision])


def _revision(rs: Obj) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, 0))
    except (TypeError, ValueError):
        return 0


def _created(rs: Obj) -> tuple[str, str]:
    return str(meta(rs).get("creationTimestamp", "")), str(meta(rs).get("name", ""))


def _has_deadline(d: Obj) -> bool:
    value: Any = spec(d).get("progressDeadlineSeconds")
    return isinstance(value, int) and not isinstance(value, bool) and value < 2**31 - 1


def _set_condition(st: Obj, cond: Obj) -> None:
    """``SetDeploymentCondition``: same status and reason -> unchanged; same status -> keep the transition time."""
    conditions: list[Obj] = st.setdefault("conditions", [])
    current = next((c for c in conditions if c.get("type") == cond["type"]), None)
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond["lastTransitionTime"] = current.get("lastTransitionTime")
    st["conditions"] = [c for c in conditions if c.get("type") != cond["type"]] + [cond]


def _remove_condition(st: Obj, kind: str) -> None:
    st["conditions"] = [c for c in st.get("conditions") or [] if c.get("type") != kind]
