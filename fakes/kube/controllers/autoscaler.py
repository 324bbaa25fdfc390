"""The horizontal pod autoscaler, as it behaves on a cluster without a metrics server (kind and minikube by
default): it reads the scale target, keeps its replicas within ``minReplicas``..``maxReplicas``, and says it cannot
compute anything from metrics, so no replica count is ever made up (``pkg/controller/podautoscaler/horizontal.go``).

Every :data:`SYNC_SECONDS` (the controller manager's ``--horizontal-pod-autoscaler-sync-period``) and on every
change of an HPA, per HPA: the target's ``spec.replicas`` through its ``scale`` (a Deployment, ReplicaSet,
StatefulSet or ReplicationController). Outside the range, the target is scaled to the bound
(``SuccessfulRescale``: ``New size: 3; reason: Current number of replicas above Spec.MaxReplicas``) and
``ScalingLimited`` is True; inside it, ``ScalingActive`` is False with ``FailedGetResourceMetric`` and a Warning
event of that reason. ``status``: ``currentReplicas``, ``desiredReplicas``, ``lastScaleTime`` after a rescale,
the conditions ``AbleToScale``, ``ScalingActive``, ``ScalingLimited``; no ``currentMetrics``. A missing target:
``AbleToScale`` False, ``FailedGetScale``.
"""

from __future__ import annotations

from collections.abc import Iterable

from fakes.kube.clock import rfc3339
from fakes.kube.controllers.base import Key, Obj, Reconciler, deleting, meta, spec, status
from fakes.kube.controllers.events import NORMAL, WARNING
from fakes.kube.conversion import convert
from fakes.kube.errors import ApiError
from fakes.kube.resources import ResourceType
from fakes.kube.store import StoreEvent

HPA, HPA_KEY = "horizontalpodautoscalers.autoscaling", "autoscaling/horizontalpodautoscalers"
SYNC_SECONDS = 15.0
TARGETS = {
    ("apps", "Deployment"): "deployments.apps",
    ("apps", "ReplicaSet"): "replicasets.apps",
    ("apps", "StatefulSet"): "statefulsets.apps",
    ("", "ReplicationController"): "replicationcontrollers",
}
NO_METRICS = (
    "the HPA was unable to compute the replica count: failed to get {name} utilization: unable to get metrics for "
    "resource {name}: unable to fetch metrics from resource metrics API: the server could not find the requested "
    "resource (get pods.metrics.k8s.io)"
)


class AutoscalerController(Reconciler):
    name = "horizontal-pod-autoscaler"
    watches = (HPA_KEY,)

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.type != "DELETED":
            yield event.namespace, event.name

    def sync(self, namespace: str, name: str) -> None:
        hpa = self.store.get(HPA, namespace, name)
        if hpa is None or deleting(hpa):
            return
        self.requeue_after(namespace, name, SYNC_SECONDS)
        s = _v2_spec(hpa)
        ref = s.get("scaleTargetRef") or {}
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        resource = TARGETS.get((group, str(ref.get("kind", ""))))
        target = self.store.get(resource, namespace, str(ref.get("name", ""))) if resource else None
        now = rfc3339(self.ctx.now())
        if target is None or resource is None:
            message = (
                "the HPA controller was unable to get the target's current scale: "
                f'{ref.get("kind")} "{ref.get("name")}" not found'
            )
            self._write(
                hpa, {**status(hpa), "conditions": [_cond(hpa, "AbleToScale", "False", "FailedGetScale", message, now)]}
            )
            return
        current = int(spec(target).get("replicas", 1) or 0)
        low, high = int(s.get("minReplicas", 1) or 1), int(s.get("maxReplicas", 1) or 1)
        out: Obj = {"currentReplicas": current, "desiredReplicas": current}
        if status(hpa).get("lastScaleTime"):
            out["lastScaleTime"] = status(hpa)["lastScaleTime"]
        able = _cond(
            hpa,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            now,
        )
        if current == 0 and low != 0:
            conditions = [
                able,
                _cond(
                    hpa,
                    "ScalingActive",
                    "False",
                    "ScalingDisabled",
                    "scaling is disabled since the replica count of the target is zero",
                    now,
                ),
            ]
        elif current > high or current < low:
            wanted = high if current > high else low
            why = "above Spec.MaxReplicas" if current > high else "below Spec.MinReplicas"
            self._rescale(resource, target, wanted)
            self.ctx.recorder.record(
                hpa,
                NORMAL,
                "SuccessfulRescale",
                f"New size: {wanted}; reason: Current number of replicas {why}",
                component=self.name,
            )
            out["desiredReplicas"] = wanted
            out["lastScaleTime"] = now
            limited = "TooManyReplicas" if current > high else "TooFewReplicas"
            detail = (
                "the desired replica count is more than the maximum replica count"
                if current > high
                else "the desired replica count is less than the minimum replica count"
            )
            conditions = [
                able,
                _cond(
                    hpa,
                    "ScalingActive",
                    "True",
                    "ScalingActive",
                    "the HPA was able to successfully calculate a replica count",
                    now,
                ),
                _cond(hpa, "ScalingLimited", "True", limited, detail, now),
            ]
        else:
            metric = _first_resource(s)
            message = NO_METRICS.format(name=metric)
            conditions = [able, _cond(hpa, "ScalingActive", "False", "FailedGetResourceMetric", message, now)]
            if status(hpa).get("conditions") != [*conditions]:
                self.ctx.recorder.record(hpa, WARNING, "FailedGetResourceMetric", message, component=self.name)
        out["conditions"] = conditions
        self._write(hpa, out)

    def _rescale(self, resource: str, target: Obj, replicas: int) -> None:
        def scale(obj: Obj) -> None:
            obj.setdefault("spec", {})["replicas"] = replicas

        try:
            self.store.mutate(resource, meta(target)["namespace"], meta(target)["name"], scale)
        except ApiError as exc:
            if exc.code != 404:
                raise

    def _write(self, hpa: Obj, wanted: Obj) -> None:
        if wanted == status(hpa):
            return
        self.store.update(HPA, dict(hpa, status=wanted), subresource="status")


_V2 = ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True)


def _v2_spec(hpa: Obj) -> Obj:
    """The spec as ``autoscaling/v2`` has it (an HPA written as v1 has ``targetCPUUtilizationPercentage``)."""
    return spec(convert(hpa, _V2))


def _first_resource(s: Obj) -> str:
    for metric in s.get("metrics") or []:
        if metric.get("type") == "Resource":
            return str((metric.get("resource") or {}).get("name", "cpu"))
    return "cpu"


def _cond(hpa: Obj, kind: str, state: str, reason: str, message: str, now: str) -> Obj:
    previous = next((c for c in status(hpa).get("conditions") or [] if c.get("type") == kind), None)
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == state else None
    return {"type": kind, "status": state, "lastTransitionTime": since or now, "reason": reason, "message": message}
