"""Fields an update may not change, refused in the apiserver's words (Kubernetes 1.32).

- A Service's ClusterIPs (``pkg/apis/core/validation/validation.go``, ``validateUpgradeDowngradeClusterIPs``):
  ``spec.clusterIPs[0]: Invalid value: []string{"10.96.0.99"}: may not change once set``. The value is the whole new
  list, as Go's ``%#v`` prints it. A changed ``clusterIP`` with ``clusterIPs`` left as stored moves ``clusterIPs[0]``
  first (the Service strategy's ``normalizeClusterIPs``), so either field changed gives this message.
- A Deployment's, ReplicaSet's or StatefulSet's ``spec.selector`` (apps ``ValidateImmutableField``):
  ``spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"b"},
  MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable``.
- A ConfigMap's or Secret's ``data`` (and ``binaryData``) once ``immutable: true``, and the flag itself
  (``ValidateConfigMapUpdate``/``ValidateSecretUpdate``): ``data: Forbidden: field is immutable when `immutable` is
  set``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fakes.kube.errors import Cause

Obj = dict[str, Any]
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


def go_string(value: Any) -> str:
    """Go's ``%q`` of a string (JSON's escapes are close enough for the values Kubernetes names carry)."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def go_string_slice(values: Iterable[Any] | None) -> str:
    """``%#v`` of a ``[]string``: ``[]string{"a", "b"}``, ``[]string(nil)`` for none."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_string(v) for v in values) + "}"


def _go_string_map(values: Any) -> str:
    if not values:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_string(k)}:{go_string(v)}" for k, v in sorted(values.items())) + "}"


def go_label_selector(selector: Any) -> str:
    """``%#v`` of a ``v1.LabelSelector`` (a nil selector pointer prints ``null``)."""
    if not isinstance(selector, dict):
        return "null"
    expressions = selector.get("matchExpressions")
    if expressions:
        shown = ", ".join(
            "v1.LabelSelectorRequirement{"
            f"Key:{go_string(e.get('key', ''))}, Operator:{go_string(e.get('operator', ''))}, "
            f"Values:{go_string_slice(e.get('values'))}}}"
            for e in expressions
            if isinstance(e, dict)
        )
        rendered = "[]v1.LabelSelectorRequirement{" + shown + "}"
    else:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{_go_string_map(selector.get('matchLabels'))}, MatchExpressions:{rendered}}}"


def selector(new: Obj, old: Obj) -> list[Cause]:
    after, before = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
    if after == before:
        return []
    return [
        Cause("FieldValueInvalid", f"Invalid value: {go_label_selector(after)}: field is immutable", "spec.selector")
    ]


def service_cluster_ips(new: Obj, old: Obj) -> list[Cause]:
    """Normalize ``clusterIPs`` from a changed ``clusterIP`` as the strategy does, then compare them with the stored
    ones (a headless or ExternalName Service on both sides is left alone, as upstream)."""
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if not isinstance(spec, dict):
        return []
    before = list(old_spec.get("clusterIPs") or ([old_spec["clusterIP"]] if old_spec.get("clusterIP") else []))
    ip = spec.get("clusterIP")
    ips = spec.get("clusterIPs")
    if ip and ip != old_spec.get("clusterIP") and (ips is None or list(ips) == before):
        ips = [ip, *before[1:]]
        spec["clusterIPs"] = ips
    if ips is None or not before or "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    after = list(ips)
    if after == ["None"] and before == ["None"]:
        return []
    return [
        field_invalid_list(f"spec.clusterIPs[{i}]", after, "may not change once set")
        for i, value in enumerate(before)
        if i < len(after) and after[i] != value
    ]


def field_invalid_list(path: str, values: list[Any], detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {go_string_slice(values)}: {detail}", path)


def immutable_data(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[Cause]:
    """ConfigMap/Secret with ``immutable: true``: the data fields and the flag stay as stored."""
    if old.get("immutable") is not True:
        return []
    changed = ["immutable"] if new.get("immutable") is not True else []
    changed += [name for name in fields if (new.get(name) or {}) != (old.get(name) or {})]
    return [Cause("FieldValueForbidden", f"Forbidden: {IMMUTABLE_WHEN_SET}", name) for name in changed]


__all__ = ["go_label_selector", "go_string_slice", "immutable_data", "selector", "service_cluster_ips"]
