"""Conversion between the versions of a built-in kind served under more than one version.

The double stores each object once per group and resource, in the shape it was written in. A real API server
stores one version and converts on every read; the double converts on read too, by the object's shape, so a
HorizontalPodAutoscaler created by ``kubectl autoscale`` (``autoscaling/v1``) reads back under ``autoscaling/v2``
(what ``kubectl get hpa`` asks for) with ``spec.metrics``, and the other way round.

Source: ``pkg/apis/autoscaling/v1/conversion.go`` (v1 ``targetCPUUtilizationPercentage`` is a v2 ``Resource``
metric ``cpu`` with an ``Utilization`` target; the v2 fields v1 cannot express are dropped here, where a real
server keeps them in ``autoscaling.alpha.kubernetes.io/*`` annotations) and ``pkg/apis/autoscaling/v2/defaults.go``
(``minReplicas`` 1; no metrics means CPU at 80 %).
"""

from __future__ import annotations

import copy
from typing import Any

from fakes.kube.resources import ResourceType

Obj = dict[str, Any]
HPA_KEY = "autoscaling/horizontalpodautoscalers"
DEFAULT_CPU_UTILIZATION = 80


def convert(obj: Obj, rt: ResourceType) -> Obj:
    """``obj`` in ``rt``'s version (a copy when anything changes; ``apiVersion``/``kind`` are the caller's)."""
    if rt.key == HPA_KEY:
        return _hpa_v1(obj) if rt.version == "v1" else _hpa_v2(obj)
    return obj


def _cpu_metric(utilization: int) -> Obj:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }


def _hpa_v2(obj: Obj) -> Obj:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if "targetCPUUtilizationPercentage" not in spec and "currentCPUUtilizationPercentage" not in status:
        return obj
    out = copy.deepcopy(obj)
    spec, status = out.setdefault("spec", {}), out.setdefault("status", {})
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None and not spec.get("metrics"):
        spec["metrics"] = [_cpu_metric(int(target))]
    current = status.pop("currentCPUUtilizationPercentage", None)
    if current is not None and not status.get("currentMetrics"):
        status["currentMetrics"] = [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}}
        ]
    return out


def _hpa_v1(obj: Obj) -> Obj:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if not any(k in spec for k in ("metrics", "behavior")) and not any(
        k in status for k in ("currentMetrics", "conditions")
    ):
        return obj
    out = copy.deepcopy(obj)
    spec, status = out.setdefault("spec", {}), out.setdefault("status", {})
    for metric in spec.pop("metrics", None) or []:
        resource = metric.get("resource") or {}
        target = resource.get("target") or {}
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" and target.get("type") == "Utilization":
            spec["targetCPUUtilizationPercentage"] = target.get("averageUtilization")
    spec.pop("behavior", None)
    for metric in status.pop("currentMetrics", None) or []:
        resource = metric.get("resource") or {}
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            current = (resource.get("current") or {}).get("averageUtilization")
            if current is not None:
                status["currentCPUUtilizationPercentage"] = current
    status.pop("conditions", None)
    status.setdefault("currentReplicas", 0)
    status.setdefault("desiredReplicas", 0)
    return out


def hpa_defaults(obj: Obj) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (v1 and v2) in place: ``minReplicas`` 1, and a v2 object without
    metrics gets the CPU-at-80 % one."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("minReplicas", 1)
    obj.setdefault("status", {}).setdefault("desiredReplicas", 0)
    if str(obj.get("apiVersion", "")).endswith("/v2") and not spec.get("metrics"):
        spec["metrics"] = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
