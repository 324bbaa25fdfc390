"""The schema rules the double enforces, answered as a real server does: 422 ``Invalid`` naming each field.

Modelled (``pkg/apis/*/validation`` in kubernetes/kubernetes, apimachinery ``validation.IsDNS1123Subdomain`` /
``IsDNS1123Label``):

- ``metadata``: everything ``ValidateObjectMetaAccessor`` checks (:mod:`fakes.kube.metavalidation`: names by each
  kind's rule, generateName, namespace, labels, annotations and their 256 KiB total, finalizers, ownerReferences);
  a CRD's name must be ``<plural>.<group>``.
- Required fields: a pod's ``spec.containers`` (each with ``name`` and ``image``), a workload's ``spec.selector``
  and ``spec.template`` with labels the selector matches (Deployments, ReplicaSets, StatefulSets), a Job's
  ``spec.template``, a Service port's ``port``, a CRD's ``spec.group``, ``spec.names`` and ``spec.versions``.
- Immutable on update (:mod:`fakes.kube.immutable`, in the apiserver's words): a workload's ``spec.selector``, a
  Service's ``spec.clusterIPs``, an immutable ConfigMap's or Secret's data.

Not modelled: unknown fields (``fieldValidation=Strict`` is accepted and not enforced), resource quantities, most
per-field formats, CRD OpenAPI schemas beyond ``required`` at the top of ``spec``.
"""

from __future__ import annotations

from typing import Any

from fakes.kube import immutable, kind_rules, metavalidation
from fakes.kube.errors import Cause, field_invalid, field_required, invalid
from fakes.kube.resources import ResourceType
from fakes.kube.selectors import from_label_selector

Obj = dict[str, Any]


def name_causes(name: Any, *, label: bool, path: str = "metadata.name") -> list[Cause]:
    """A name that must be a DNS-1123 label (``label``) or subdomain, each of apimachinery's complaints a cause."""
    if not isinstance(name, str):
        return [field_invalid(path, name, "must be a string")]
    check = metavalidation.is_dns1123_label if label else metavalidation.is_dns1123_subdomain
    return [field_invalid(path, name, m) for m in check(name)]


def _pod_spec(spec: Any, path: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [field_required(path)]
    out: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        return [field_required(f"{path}.containers")]
    if not isinstance(containers, list):
        return [field_invalid(f"{path}.containers", containers, "must be a list")]
    seen: set[str] = set()
    for i, c in enumerate(containers):
        cpath = f"{path}.containers[{i}]"
        if not isinstance(c, dict):
            out.append(field_invalid(cpath, c, "must be an object"))
            continue
        if not c.get("name"):
            out.append(field_required(f"{cpath}.name"))
        else:
            out += name_causes(c["name"], label=True, path=f"{cpath}.name")
            if c["name"] in seen:
                out.append(Cause("FieldValueDuplicate", f'Duplicate value: "{c["name"]}"', f"{cpath}.name"))
            seen.add(str(c["name"]))
        if not c.get("image"):
            out.append(field_required(f"{cpath}.image"))
        for j, p in enumerate(c.get("ports") or []):
            port = p.get("containerPort") if isinstance(p, dict) else None
            if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
                out.append(
                    field_invalid(f"{cpath}.ports[{j}].containerPort", port, "must be between 1 and 65535, inclusive")
                )
    return out


def _workload(obj: Obj, *, needs_selector: bool) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [field_required("spec")]
    out: list[Cause] = []
    template = spec.get("template")
    selector = spec.get("selector")
    if needs_selector and not selector:
        out.append(field_required("spec.selector"))
    if not isinstance(template, dict):
        return out + [field_required("spec.template")]
    labels = (template.get("metadata") or {}).get("labels") or {}
    if needs_selector and isinstance(selector, dict):
        try:
            matcher = from_label_selector(selector)
        except Exception:  # an unknown operator: report it on the field
            out.append(field_invalid("spec.selector", selector, "invalid label selector"))
        else:
            if not matcher:
                out.append(field_invalid("spec.selector", selector, "empty selector is invalid for deployment"))
            elif not matcher.matches(labels):
                out.append(
                    field_invalid(
                        "spec.template.metadata.labels", labels, "`selector` does not match template `labels`"
                    )
                )
    out += _pod_spec(template.get("spec"), "spec.template.spec")
    return out


def _service(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    out: list[Cause] = []
    if spec.get("type", "ClusterIP") not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        out.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{spec.get("type")}": supported values: '
                '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
                "spec.type",
            )
        )
    ports = spec.get("ports")
    if not ports and spec.get("type", "ClusterIP") != "ExternalName" and spec.get("clusterIP") != "None":
        out.append(field_required("spec.ports"))
    for i, p in enumerate(ports or []):
        port = p.get("port") if isinstance(p, dict) else None
        if port is None:
            out.append(field_required(f"spec.ports[{i}].port"))
        elif not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            out.append(field_invalid(f"spec.ports[{i}].port", port, "must be between 1 and 65535, inclusive"))
        if len(ports or []) > 1 and isinstance(p, dict) and not p.get("name"):
            out.append(field_required(f"spec.ports[{i}].name"))
    return out


def _crd(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    out: list[Cause] = []
    if not spec.get("group"):
        out.append(field_required("spec.group"))
    if not names.get("plural"):
        out.append(field_required("spec.names.plural"))
    if not names.get("kind"):
        out.append(field_required("spec.names.kind"))
    if not spec.get("versions"):
        out.append(field_required("spec.versions", "must have exactly one version marked as storage version"))
    elif sum(1 for v in spec["versions"] if isinstance(v, dict) and v.get("storage")) != 1:
        out.append(field_invalid("spec.versions", "", "must have exactly one version marked as storage version"))
    expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
    name = obj.get("metadata", {}).get("name")
    if names.get("plural") and spec.get("group") and name != expected:
        out.append(field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope", "Namespaced") not in ("Namespaced", "Cluster"):
        out.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
                "spec.scope",
            )
        )
    return out


def _custom(rt: ResourceType, obj: Obj) -> list[Cause]:
    schema = rt.schema or {}
    out: list[Cause] = []
    for name in schema.get("required") or []:
        if name not in obj:
            out.append(field_required(name))
    spec_schema = (schema.get("properties") or {}).get("spec") or {}
    spec = obj.get("spec")
    if isinstance(spec, dict):
        for name in spec_schema.get("required") or []:
            if name not in spec:
                out.append(field_required(f"spec.{name}"))
    return out


def validate(rt: ResourceType, obj: Obj, old: Obj | None = None) -> None:
    """Raise :class:`~fakes.kube.errors.ApiError` 422 Invalid when ``obj`` breaks a modelled rule."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    causes: list[Cause] = metavalidation.object_meta_causes(rt.key, meta, namespaced=rt.namespaced)
    key = rt.key
    if key == "/pods":
        causes += _pod_spec(obj.get("spec"), "spec")
    elif key in ("apps/deployments", "apps/replicasets", "apps/statefulsets"):
        causes += _workload(obj, needs_selector=True)
        if old is not None:
            causes += immutable.selector(obj, old)
    elif key == "batch/jobs":
        causes += _workload(obj, needs_selector=False)
    elif key == "/services":
        causes += _service(obj)
        if old is not None:
            causes += immutable.service_cluster_ips(obj, old)
    elif key in ("/configmaps", "/secrets") and old is not None:
        causes += immutable.immutable_data(obj, old, ("data", "binaryData") if key == "/configmaps" else ("data",))
    elif key == "apiextensions.k8s.io/customresourcedefinitions":
        causes += _crd(obj)
    elif rt.custom:
        causes += _custom(rt, obj)
    causes += kind_rules.causes(rt, obj, old, _workload)
    if causes:
        raise invalid(rt.kind, rt.group, str(name), causes)
