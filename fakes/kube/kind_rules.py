"""Validation of the built-in kinds :mod:`fakes.kube.catalog` added, as their apiserver strategies apply it
(``pkg/apis/<group>/validation/validation.go``), limited to the rules a user's manifest is likely to break:

- DaemonSet and ReplicationController: what a Deployment's template needs (selector matching the template's
  labels, containers named and imaged), the DaemonSet's selector immutable (``apps/validation``);
- HorizontalPodAutoscaler (either version; v1 is validated as the v2 object it converts to):
  ``scaleTargetRef`` kind and name required, ``minReplicas`` at least 1, ``maxReplicas`` above 0 and not below
  ``minReplicas``, a ``Utilization`` target above 0 (``autoscaling/validation``);
- PodDisruptionBudget: not both ``minAvailable`` and ``maxUnavailable``, each a non-negative integer or a
  percentage of at most 100 %, a known ``unhealthyPodEvictionPolicy`` (``policy/validation``);
- RoleBinding and ClusterRoleBinding: ``roleRef`` kind, name and immutability, subjects' kinds
  (``rbac/validation``).
"""

from __future__ import annotations

import re
from typing import Any

from fakes.kube import immutable
from fakes.kube.conversion import convert
from fakes.kube.errors import Cause, field_invalid, field_required
from fakes.kube.resources import ResourceType

Obj = dict[str, Any]
_PERCENT = re.compile(r"^[0-9]+%$")
PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used "
    "for validation is '[0-9]+%')"
)


def causes(rt: ResourceType, obj: Obj, old: Obj | None, workload: Any) -> list[Cause]:
    """The broken rules of ``obj`` (``old``: the stored object on an update). ``workload`` is validation's check
    of a pod-template workload (passed in: this module sits beside it)."""
    key = rt.key
    if key == "apps/daemonsets":
        out: list[Cause] = workload(obj, needs_selector=True)
        return out + (immutable.selector(obj, old) if old is not None else [])
    if key == "/replicationcontrollers":
        return _replication_controller(obj)
    if key == "autoscaling/horizontalpodautoscalers":
        return _hpa(convert(obj, _V2))
    if key == "policy/poddisruptionbudgets":
        return _pdb(obj)
    if key in ("rbac.authorization.k8s.io/rolebindings", "rbac.authorization.k8s.io/clusterrolebindings"):
        return _binding(obj, old, cluster=key.endswith("clusterrolebindings"))
    return []


_V2 = ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True)


def _spec(obj: Obj) -> Obj:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _replication_controller(obj: Obj) -> list[Cause]:
    spec = _spec(obj)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector") or labels  # defaulted from the template's labels before validation runs
    out: list[Cause] = []
    if not selector:
        out.append(field_required("spec.selector"))
    elif not all(labels.get(k) == v for k, v in selector.items()):
        out.append(
            field_invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")
        )
    if not isinstance(spec.get("template"), dict):
        out.append(field_required("spec.template"))
    return out


def _hpa(obj: Obj) -> list[Cause]:
    spec = _spec(obj)
    out: list[Cause] = []
    ref = spec.get("scaleTargetRef") or {}
    if not ref.get("kind"):
        out.append(field_required("spec.scaleTargetRef.kind"))
    if not ref.get("name"):
        out.append(field_required("spec.scaleTargetRef.name"))
    low: Any = spec.get("minReplicas")
    high: Any = spec.get("maxReplicas")
    if _int(low) and low < 1:
        out.append(field_invalid("spec.minReplicas", low, "must be greater than or equal to 1"))
    if not _int(high) or high < 1:
        out.append(field_invalid("spec.maxReplicas", high, "must be greater than 0"))
    elif _int(low) and low > high:
        out.append(field_invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    for i, metric in enumerate(spec.get("metrics") or []):
        target = ((metric or {}).get("resource") or {}).get("target") or {}
        utilization: Any = target.get("averageUtilization")
        if target.get("type") == "Utilization" and _int(utilization) and utilization < 1:
            path = f"spec.metrics[{i}].resource.target.averageUtilization"
            out.append(field_invalid(path, utilization, "must be greater than 0"))
    return out


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    if _int(value):
        return [field_invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
    if not isinstance(value, str) or not _PERCENT.match(value):
        return [field_invalid(path, value, PERCENT_MESSAGE)]
    if int(value[:-1]) > 100:
        return [field_invalid(path, value, "must not be greater than 100%")]
    return []


def _pdb(obj: Obj) -> list[Cause]:
    spec = _spec(obj)
    out: list[Cause] = []
    if "minAvailable" in spec and "maxUnavailable" in spec:
        out.append(
            field_invalid(
                "spec.minAvailable", spec["minAvailable"], "minAvailable and maxUnavailable cannot be both set"
            )
        )
    for name in ("minAvailable", "maxUnavailable"):
        if name in spec:
            out += _int_or_percent(spec[name], f"spec.{name}")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
        out.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "AlwaysAllow", "IfHealthyBudget"',
                "spec.unhealthyPodEvictionPolicy",
            )
        )
    return out


def _binding(obj: Obj, old: Obj | None, *, cluster: bool) -> list[Cause]:
    ref = obj.get("roleRef") or {}
    out: list[Cause] = []
    allowed = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
    if ref.get("apiGroup") != "rbac.authorization.k8s.io":
        out.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{ref.get("apiGroup", "")}": supported values: "rbac.authorization.k8s.io"',
                "roleRef.apiGroup",
            )
        )
    if ref.get("kind") not in allowed:
        supported = ", ".join(f'"{k}"' for k in allowed)
        out.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{ref.get("kind", "")}": supported values: {supported}',
                "roleRef.kind",
            )
        )
    if not ref.get("name"):
        out.append(field_required("roleRef.name"))
    if old is not None and (old.get("roleRef") or {}) != ref:
        out.append(field_invalid("roleRef", ref, "cannot change roleRef"))
    for i, subject in enumerate(obj.get("subjects") or []):
        kind = (subject or {}).get("kind")
        if kind not in ("ServiceAccount", "User", "Group"):
            out.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{kind or ""}": supported values: "ServiceAccount", "User", "Group"',
                    f"subjects[{i}].kind",
                )
            )
        if not (subject or {}).get("name"):
            out.append(field_required(f"subjects[{i}].name"))
    return out
