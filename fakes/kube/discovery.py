"""Discovery: what ``GET /api``, ``/apis``, ``/api/v1``, ``/apis/<group>`` and ``/apis/<group>/<version>`` answer.

kubectl asks ``/api`` and ``/apis`` with an ``Accept`` listing the aggregated discovery types first
(``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``; kubectl up to 1.29 lists the ``v2beta1``
form, later ones both) and plain ``application/json`` last. The double answers the first form the client accepts,
with that exact media type as ``Content-Type`` (client-go decides aggregated-or-legacy from it; source:
``client-go/discovery/discovery_client.go``). A client that accepts only plain JSON gets the legacy documents
(``APIVersions``, ``APIGroupList``) and then walks ``/api/v1`` and each ``/apis/<group>/<version>``
(``APIResourceList``). Both walks list the same resources, CRD kinds included as soon as the CRD exists.
"""

from __future__ import annotations

from typing import Any

from fakes.kube.resources import Registry, ResourceType

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def negotiate(accept: str | None) -> str | None:
    """``"v2"``/``"v2beta1"`` for the first aggregated form ``accept`` lists before plain JSON, else ``None``."""
    for part in (accept or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if (
            media == "application/json"
            and params.get("g") == "apidiscovery.k8s.io"
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in ("v2", "v2beta1")
        ):
            return params["v"]
        if media in ("application/json", "*/*", "application/*") and not params.get("as"):
            return None
    return None


def _kind_ref(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": _kind_ref(rt.group, rt.version, rt.kind),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular_name,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    if rt.subresources:
        out["subresources"] = [
            {
                "subresource": s.name,
                "responseKind": _kind_ref(s.group or rt.group, s.version or rt.version, s.kind),
                "verbs": list(s.verbs),
            }
            for s in rt.subresources
        ]
    return out


def aggregated(registry: Registry, *, legacy: bool, version: str) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` for ``/api`` (``legacy``: the core group only) or ``/apis`` (the others)."""
    items = []
    for group, versions in registry.groups():
        if (group == "") != legacy:
            continue
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": v,
                        "freshness": "Current",
                        "resources": [_aggregated_resource(t) for t in registry.in_group_version(group, v)],
                    }
                    for v in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """Legacy ``GET /api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    """Legacy ``GET /apis``."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, vs) for g, vs in registry.groups() if g]}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>``, or ``None`` when the group is not served."""
    for g, versions in registry.groups():
        if g == group and g:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(g, versions)}
    return None


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>``, or ``None`` when that group/version is not served."""
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for t in types:
        entry: dict[str, Any] = {
            "name": t.plural,
            "singularName": t.singular_name,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": list(t.verbs),
        }
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        resources.append(entry)
        for s in t.subresources:
            sub: dict[str, Any] = {
                "name": f"{t.plural}/{s.name}",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": s.kind,
                "verbs": list(s.verbs),
            }
            if s.group:
                sub.update(group=s.group, version=s.version)
            resources.append(sub)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
