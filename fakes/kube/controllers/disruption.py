"""The disruption controller: a PodDisruptionBudget's ``status`` from the pods its selector matches, as
``pkg/controller/disruption/disruption.go`` computes it.

- ``expectedPods``: with an integer ``minAvailable``, the number of matching pods; otherwise (a percentage, or
  ``maxUnavailable``) the replicas their controllers ask for (a Deployment's ``spec.replicas`` through its
  ReplicaSet, a StatefulSet's, a ReplicaSet's or ReplicationController's), a pod without a controller counting one;
- ``desiredHealthy``: ``minAvailable`` (a percentage of ``expectedPods`` rounded up), or ``expectedPods`` less
  ``maxUnavailable`` (rounded up);
- ``currentHealthy``: matching pods that are Ready and not being deleted;
- ``disruptionsAllowed``: ``currentHealthy - desiredHealthy``, at least 0; the ``DisruptionAllowed`` condition
  (``SufficientPods`` / ``InsufficientPods``) and ``observedGeneration``.

Evictions (``pods/eviction``) do not consult it: the double serves no eviction subresource handler.
"""

from __future__ import annotations

from collections.abc import Iterable

from fakes.kube.clock import rfc3339
from fakes.kube.controllers.base import (
    Key,
    Obj,
    Reconciler,
    controller_of,
    deleting,
    int_or_percent,
    meta,
    spec,
    status,
)
from fakes.kube.controllers.podutil import is_ready
from fakes.kube.selectors import from_label_selector
from fakes.kube.store import StoreEvent

PDB, PDB_KEY = "poddisruptionbudgets.policy", "policy/poddisruptionbudgets"
PODS_KEY = "/pods"
_OWNERS = {
    "ReplicaSet": "replicasets.apps",
    "StatefulSet": "statefulsets.apps",
    "ReplicationController": "replicationcontrollers",
}


class DisruptionController(Reconciler):
    name = "controllermanager"
    watches = (PDB_KEY, PODS_KEY)

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.resource.key == PDB_KEY:
            return [(event.namespace, event.name)]
        return [(event.namespace, meta(p)["name"]) for p in self.store.list(PDB, event.namespace)[0]]

    def sync(self, namespace: str, name: str) -> None:
        pdb = self.store.get(PDB, namespace, name)
        if pdb is None or deleting(pdb):
            return
        try:
            selector = from_label_selector(spec(pdb).get("selector") or {})
        except Exception:
            return  # validation refused it already; nothing to count
        pods = [
            p
            for p in self.store.list("pods", namespace)[0]
            if spec(pdb).get("selector") and selector.matches(meta(p).get("labels") or {})
        ]
        expected, desired = self._expected_and_desired(pdb, pods)
        healthy = sum(1 for p in pods if is_ready(p) and not deleting(p))
        allowed = max(0, healthy - desired)
        wanted: Obj = {
            "observedGeneration": int(meta(pdb).get("generation") or 0),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": [self._condition(pdb, allowed > 0)],
        }
        if wanted == status(pdb):
            return
        self.store.update(PDB, dict(pdb, status=wanted), subresource="status")

    def _expected_and_desired(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int]:
        s = spec(pdb)
        minimum = s.get("minAvailable")
        if isinstance(minimum, int) and not isinstance(minimum, bool):
            return len(pods), minimum
        expected = self._controller_scale(pods)
        if minimum is not None:
            return expected, int_or_percent(minimum, expected, round_up=True)
        unavailable = int_or_percent(s.get("maxUnavailable", 0), expected, round_up=True)
        return expected, max(0, expected - unavailable)

    def _controller_scale(self, pods: list[Obj]) -> int:
        total, seen = 0, set()
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                total += 1
                continue
            key = (ref.get("kind"), ref.get("name"))
            if key in seen:
                continue
            seen.add(key)
            resource = _OWNERS.get(str(ref.get("kind")))
            owner = self.store.get(resource, meta(pod)["namespace"], str(ref.get("name"))) if resource else None
            if owner is None:
                total += 1
                continue
            top = controller_of(owner)
            if ref.get("kind") == "ReplicaSet" and top is not None and top.get("kind") == "Deployment":
                owner = self.store.get("deployments.apps", meta(pod)["namespace"], str(top.get("name"))) or owner
            total += int(spec(owner).get("replicas", 1) or 0)
        return total

    def _condition(self, pdb: Obj, allowed: bool) -> Obj:
        state = "True" if allowed else "False"
        previous = next((c for c in status(pdb).get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
        since = previous.get("lastTransitionTime") if previous and previous.get("status") == state else None
        return {
            "type": "DisruptionAllowed",
            "status": state,
            "observedGeneration": int(meta(pdb).get("generation") or 0),
            "lastTransitionTime": since or rfc3339(self.ctx.now()),
            "reason": "SufficientPods" if allowed else "InsufficientPods",
            "message": "",
        }
