"""The minimal OpenAPI the real kubectl needs before it lets ``apply`` send anything.

``kubectl apply`` (default ``--validate=strict``) asks whether the server validates fields itself: it fetches
``/openapi/v3`` (an index of group-version documents with ``serverRelativeURL``s) and the document of the object's
group-version, and looks for a ``patch`` operation tagged with the object's ``x-kubernetes-group-version-kind`` that
takes a ``fieldValidation`` query parameter (``kubectl/pkg/util/openapi`` and ``cli-runtime/pkg/resource/
query_param_verifier_v3.go``). Finding it, kubectl leaves validation to the server. The documents list no
``application/strategic-merge-patch+json`` request body, so kubectl computes strategic merge patches from its
compiled-in Go types (what it also does for a server without OpenAPI) and uses merge patches for custom resources.

OpenAPI v2 (``/openapi/v2``) is asked for as protobuf by older kubectl builds (and by ``kubectl apply`` paths that
still consult it); the double answers an empty document (zero protobuf bytes decode to an empty
``openapi_v2.Document``), which makes kubectl skip client-side schema checks, or ``{"swagger": "2.0", ...}`` to a JSON
client. No schemas are served: the double is not a source of field documentation (``kubectl explain`` is not
supported).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fakes.kube.resources import Registry, ResourceType

V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_PATCH_PARAMETERS = [
    {
        "name": "dryRun",
        "in": "query",
        "schema": {"type": "string", "uniqueItems": True},
        "description": "When present, indicates that modifications should not be persisted.",
    },
    {
        "name": "fieldManager",
        "in": "query",
        "schema": {"type": "string", "uniqueItems": True},
        "description": "fieldManager is a name associated with the actor or entity that is making these changes.",
    },
    {
        "name": "fieldValidation",
        "in": "query",
        "schema": {"type": "string", "uniqueItems": True},
        "description": "fieldValidation instructs the server on how to handle objects in the request containing "
        "unknown or duplicate fields: Ignore, Warn or Strict.",
    },
    {
        "name": "force",
        "in": "query",
        "schema": {"type": "boolean", "uniqueItems": True},
        "description": 'Force is going to "force" Apply requests.',
    },
]


def _patch_bodies(rt: ResourceType) -> dict[str, Any]:
    ref = {"schema": {"type": "object"}}
    return {
        "application/json-patch+json": ref,
        "application/merge-patch+json": ref,
        "application/apply-patch+yaml": ref,
    }


def _item_path(rt: ResourceType) -> str:
    root = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    ns = "/namespaces/{namespace}" if rt.namespaced else ""
    return f"{root}{ns}/{rt.plural}/{{name}}"


def _operation_id(verb: str, rt: ResourceType) -> str:
    group = "".join(p.capitalize() for p in rt.group.replace("-", ".").split(".")[:1]) if rt.group else "Core"
    scope = "Namespaced" if rt.namespaced else ""
    return f"{verb}{group}{rt.version.capitalize()}{scope}{rt.kind}"


def group_version_document(registry: Registry, group: str, version: str, git_version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version, or ``None`` if it is not served."""
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in types:
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        base = {
            "x-kubernetes-group-version-kind": gvk,
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
            },
        }
        paths[_item_path(rt)] = {
            "get": {**base, "operationId": _operation_id("read", rt), "x-kubernetes-action": "get"},
            "patch": {
                **base,
                "operationId": _operation_id("patch", rt),
                "x-kubernetes-action": "patch",
                "parameters": _PATCH_PARAMETERS,
                "requestBody": {"content": _patch_bodies(rt), "required": True},
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": git_version},
        "paths": paths,
        "components": {"schemas": {}},
    }


IMMUTABLE_SECONDS = 365 * 24 * 3600.0
"""How far ahead ``Expires`` is on a document fetched by its hash (kube-openapi: one year from the request)."""


def document_hash(document: dict[str, Any]) -> str:
    """The document's hash: its ``?hash=`` in the root document and its ``Etag`` (SHA-512, upper-case hex)."""
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


def server_relative_url(key: str, etag: str) -> str:
    """Where the group-version document ``key`` (``api/v1``, ``apis/apps/v1``) with hash ``etag`` is served."""
    return f"/openapi/v3/{key}?hash={etag}"


def root_document(registry: Registry, git_version: str) -> dict[str, Any]:
    """``GET /openapi/v3``: ``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}``."""
    paths: dict[str, Any] = {}
    for group, versions in registry.groups():
        for version in versions:
            doc = group_version_document(registry, group, version, git_version)
            if doc is None:
                continue
            key = f"apis/{group}/{version}" if group else f"api/{version}"
            paths[key] = {"serverRelativeURL": server_relative_url(key, document_hash(doc))}
    return {"paths": paths}


def v2_json(git_version: str) -> dict[str, Any]:
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": git_version}, "paths": {}, "definitions": {}}
