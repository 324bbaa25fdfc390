"""The API routes: version, discovery, OpenAPI, and get/list/watch/create/update/patch/delete of every served type.

Paths follow the API server's layout: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` for the
others, then ``[namespaces/<ns>/]<plural>[/<name>[/<subresource>]]``. Errors are ``Status`` objects
(:mod:`fakes.kube.errors`). Bodies are JSON (or YAML for ``application/yaml`` and server-side apply); a malformed one
is a 400 naming the decoder's complaint. Answers are JSON whatever protobuf the client also offers (client-go and
kubectl accept JSON everywhere). ``dryRun=All`` computes the answer without storing it.

Server-side apply (``application/apply-patch+yaml``) and the ``managedFields`` of every write follow
structured-merge-diff (:mod:`fakes.kube.managed`): ownership per manager and operation, fields a manager stops
applying removed, 409 conflicts, ``force=true``; a missing object is created (201).
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from fakes.core import BadJson, FakeRequest
from fakes.kube import discovery, managed, openapi, options, patch, protobuf, shapes, tables, tokens, validation
from fakes.kube.clock import http_date, rfc3339
from fakes.kube.errors import (
    STALE,
    ApiError,
    bad_request,
    conflict,
    method_not_allowed,
    not_found,
    page_not_found,
    status_object,
)
from fakes.kube.extensions import SubresourceContext
from fakes.kube.resources import ResourceType
from fakes.kube.selectors import label_selector_string, parse_field_selector, parse_label_selector
from fakes.kube.store import precondition_failed, require_object
from fakes.kube.watch import for_version, serve_watch

Obj = dict[str, Any]
HEALTH = ("/healthz", "/readyz", "/livez")
JSON_TYPE = "application/json"
#: Types whose DELETE answers the deleted object rather than a ``Status`` (their registries return it).
#: Types whose DELETE answers the deleted object rather than a ``Status``: the registries built with
#: ``ReturnDeletedObject: true`` (kubernetes ``pkg/registry/core/{pod,service,serviceaccount,namespace,
#: persistentvolume,persistentvolumeclaim}/storage``, ``storage/storageclass``; apiextensions-apiserver for CRDs and
#: every custom resource). Every other kind answers ``Status{status: Success, details}``.
RETURNS_OBJECT = frozenset(
    {
        "/pods",
        "/services",
        "/serviceaccounts",
        "/namespaces",
        "/persistentvolumes",
        "/persistentvolumeclaims",
        "storage.k8s.io/storageclasses",
        "apiextensions.k8s.io/customresourcedefinitions",
    }
)


def json_response(payload: Any, status: int = 200, content_type: str = JSON_TYPE) -> web.Response:
    """A compact JSON answer ending in a newline, as the apiserver's encoder (Go's ``json.Encoder.Encode``) writes."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    return web.Response(status=status, body=body, headers={"Content-Type": content_type})


def error_response(error: ApiError) -> web.Response:
    response = json_response(error.status_body(), error.code)
    for name, value in error.headers:
        response.headers[name] = value
    if error.retry_after is not None and "Retry-After" not in response.headers:
        response.headers["Retry-After"] = str(error.retry_after)
    return response


@dataclass
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def version_info(git_version: str) -> Obj:
    major, minor = (git_version.lstrip("v").split(".") + ["0"])[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2025-04-22T16:00:00Z",
        "goVersion": "go1.23.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


async def handle(request: web.Request, double: Any, body: bytes) -> web.StreamResponse:
    """Answer one authenticated API request (admin routes, journal, faults and auth happened before)."""
    path = request.path
    if path == "/version" or path == "/version/":
        return json_response(version_info(double.git_version))
    if path in HEALTH or any(path.startswith(h + "/") for h in HEALTH):
        return web.Response(text="ok", content_type="text/plain")
    if path.startswith("/openapi/"):
        return _openapi(request, double)
    answered = _discovery(request, double)
    if answered is not None:
        return answered
    target = parse_target(double, path)
    if target is None:
        raise page_not_found()
    return await _dispatch(request, double, target, body)


# --- discovery and OpenAPI --------------------------------------------------------------------------------


def _discovery(request: web.Request, double: Any) -> web.StreamResponse | None:
    path = request.path.rstrip("/") or "/"
    registry = double.registry
    if path in ("/api", "/apis"):
        version = discovery.negotiate(request.headers.get("Accept"))
        if version is not None:
            return json_response(
                discovery.aggregated(registry, legacy=path == "/api", version=version),
                content_type=discovery.AGGREGATED.format(version=version),
            )
        if path == "/api":
            return json_response(discovery.api_versions(request.host))
        return json_response(discovery.api_group_list(registry))
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        doc = discovery.api_resource_list(registry, "", parts[1])
        return json_response(doc) if doc else None
    if parts[0] == "apis" and len(parts) == 2:
        doc = discovery.api_group(registry, parts[1])
        return json_response(doc) if doc else None
    if parts[0] == "apis" and len(parts) == 3:
        doc = discovery.api_resource_list(registry, parts[1], parts[2])
        return json_response(doc) if doc else None
    return None


def _openapi(request: web.Request, double: Any) -> web.StreamResponse:
    path = request.path.rstrip("/")
    if path == "/openapi/v2":
        if openapi.V2_PROTOBUF in request.headers.get("Accept", "") or "protobuf" in request.headers.get("Accept", ""):
            return web.Response(body=b"", headers={"Content-Type": "application/octet-stream"})
        return json_response(openapi.v2_json(double.git_version))
    if path == "/openapi/v3":
        return _openapi_v3_answer(request, openapi.root_document(double.registry, double.git_version))
    parts = path[len("/openapi/v3/") :].split("/") if path.startswith("/openapi/v3/") else []
    doc = None
    if len(parts) == 2 and parts[0] == "api":
        doc = openapi.group_version_document(double.registry, "", parts[1], double.git_version)
    elif len(parts) == 3 and parts[0] == "apis":
        doc = openapi.group_version_document(double.registry, parts[1], parts[2], double.git_version)
    if doc is None:
        raise page_not_found()
    etag = openapi.document_hash(doc)
    asked = request.query.get("hash", "")
    if asked and asked != etag:  # a stale hash: moved permanently to the current document's address
        raise web.HTTPMovedPermanently(openapi.server_relative_url("/".join(parts), etag))
    response = _openapi_v3_answer(request, doc, etag=etag)
    if asked:  # the hashed address never changes its content: clients may cache it for good
        response.headers["Vary"] = "Accept"
        response.headers["Cache-Control"] = "public, immutable"
        response.headers["Expires"] = http_date(double.clock.time() + openapi.IMMUTABLE_SECONDS)
    return response


def _openapi_v3_answer(request: web.Request, document: dict[str, Any], *, etag: str | None = None) -> web.Response:
    """An OpenAPI v3 document with its quoted ``Etag``; ``304 Not Modified`` when ``If-None-Match`` holds it (as
    kube-openapi's ``pkg/handler3`` serves them through Go's ``http.ServeContent``)."""
    quoted = f'"{etag or openapi.document_hash(document)}"'
    if quoted in {tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")}:
        return web.Response(status=304, headers={"Etag": quoted})
    response = json_response(document)
    response.headers["Etag"] = quoted
    return response


# --- routing ----------------------------------------------------------------------------------------------


def parse_target(double: Any, path: str) -> Target | None:
    """The resource a path names, or ``None`` when it names nothing the double serves (a 404)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    rt = double.registry.lookup(group, version, rest[0])
    if rt is None:
        return None
    if namespace is not None and not rt.namespaced:
        return None
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    if rt.namespaced and name is not None and namespace is None:
        return None  # /api/v1/pods/x is not a route on a real server either
    if sub is not None and rt.subresource(sub) is None:
        return None
    return Target(rt, namespace, name, sub)


async def _dispatch(request: web.Request, double: Any, target: Target, body: bytes) -> web.StreamResponse:
    method = request.method.upper()
    rt = target.rt
    if target.subresource is not None:
        return await _subresource(request, double, target, body)
    if target.name is None:
        if method == "GET":
            if request.query.get("watch") in ("true", "1"):
                return await _watch(request, double, target)
            return _list(request, double, target)
        if method == "POST":
            return _create(request, double, target, body)
        if method == "DELETE":
            return _delete_collection(request, double, target, body)
        raise method_not_allowed(method, rt.plural, rt.group)
    if method == "GET":
        obj = double.store.require(rt, target.namespace, target.name)
        return _answer_object(request, double, rt, obj)
    if method == "PUT":
        return _replace(request, double, target, body)
    if method == "PATCH":
        return _patch(request, double, target, body)
    if method == "DELETE":
        return _delete(request, double, target, body)
    raise method_not_allowed(method, rt.plural, rt.group)


# --- bodies -----------------------------------------------------------------------------------------------


def parse_body(request: web.Request, body: bytes) -> Any:
    """The request body as JSON (or YAML when the content type says so); 400 with the parser's complaint."""
    content_type = request.headers.get("Content-Type", JSON_TYPE).split(";")[0].strip().lower()
    if not body.strip():
        raise bad_request("the request body is empty: an object is required")
    if content_type in ("application/yaml", "application/x-yaml", "text/yaml", patch.APPLY_YAML):
        return parse_yaml(body)
    if content_type == protobuf.MEDIA_TYPE:
        return protobuf.decode(body)
    if content_type.startswith("application/vnd.kubernetes.protobuf") or content_type == "application/cbor":
        raise ApiError(
            415, "UnsupportedMediaType", f"the double accepts JSON, YAML and protobuf bodies, not {content_type}"
        )
    try:
        return FakeRequest("POST", "/", body=body).json()
    except BadJson as exc:
        raise bad_request(f"couldn't get version/kind; json parse error: {exc.detail}") from None


def parse_yaml(body: bytes) -> Any:
    try:
        for token in yaml.scan(body.decode("utf-8")):
            if isinstance(token, (yaml.AliasToken, yaml.AnchorToken)):
                raise bad_request("error converting YAML to JSON: yaml: anchors and aliases are not supported")
        return yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeDecodeError:
        raise bad_request("error converting YAML to JSON: yaml: invalid UTF-8") from None
    except yaml.YAMLError as exc:
        raise bad_request(f"error converting YAML to JSON: yaml: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise bad_request("error converting YAML to JSON: yaml: exceeded max depth") from None


def _check_type(rt: ResourceType, obj: Obj) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version is not None and api_version != rt.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
        )
    if kind is not None and kind != rt.kind:
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request("metadata must be an object")


def _dry_run(request: web.Request) -> bool:
    """``?dryRun=All`` on a create, update or patch; anything else is the 422 ``ValidateCreateOptions`` (and the
    update and patch variants) answers."""
    method = request.method.upper()
    kind = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}.get(method, "CreateOptions")
    return options.dry_run(request.query, kind)


# --- reads ------------------------------------------------------------------------------------------------


def _answer_object(request: web.Request, double: Any, rt: ResourceType, obj: Obj, status: int = 200) -> web.Response:
    obj = for_version(obj, rt)
    if tables.wants_table(request.headers.get("Accept")):
        include = request.query.get("includeObject", "Metadata")
        meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        return json_response(tables.table(rt, [obj], now=double.clock.time(), include=include, list_meta=meta), status)
    return json_response(obj, status)


def _selectors(request: web.Request, rt: ResourceType) -> tuple[Any, Any]:
    labels = parse_label_selector(request.query.get("labelSelector"))
    fields = parse_field_selector(request.query.get("fieldSelector"), rt.key, custom=rt.custom)
    return labels, fields


def _list(request: web.Request, double: Any, target: Target) -> web.Response:
    rt = target.rt
    labels, fields = _selectors(request, rt)
    items, rv = double.store.list(rt, target.namespace)
    items = [o for o in items if labels.matches(o["metadata"].get("labels")) and fields.matches(o, rt.key)]
    items, cont, remaining = _page(request, items, rv)
    meta: Obj = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
        meta["remainingItemCount"] = remaining
    if tables.wants_table(request.headers.get("Accept")):
        include = request.query.get("includeObject", "Metadata")
        shown = [for_version(o, rt) for o in items]
        return json_response(tables.table(rt, shown, now=double.clock.time(), include=include, list_meta=meta))
    shown = [for_version(o, rt) if rt.custom else _without_type(for_version(o, rt)) for o in items]
    return json_response({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": shown})


def _without_type(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def _page(request: web.Request, items: list[Obj], rv: int) -> tuple[list[Obj], str, int]:
    token = request.query.get("continue")
    if token:
        try:
            state = json.loads(base64.urlsafe_b64decode(token.encode() + b"==="))
            start = str(state["start"])
        except (ValueError, KeyError, TypeError):
            raise ApiError(400, "BadRequest", "continue key is not valid: invalid continue token") from None
        items = [o for o in items if _sort_key(o) > start]
    limit_text = request.query.get("limit")
    try:
        limit = int(limit_text) if limit_text else 0
    except ValueError:
        raise bad_request(f'invalid value for limit: "{limit_text}"') from None
    if limit <= 0 or len(items) <= limit:
        return items, "", 0
    page = items[:limit]
    state = {"v": "meta.k8s.io/v1", "rv": rv, "start": _sort_key(page[-1])}
    cont = base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")
    return page, cont, len(items) - limit


def _sort_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


async def _watch(request: web.Request, double: Any, target: Target) -> web.StreamResponse:
    labels, fields = _selectors(request, target.rt)
    return await serve_watch(request, double, target.rt, target.namespace, labels, fields)


# --- writes -----------------------------------------------------------------------------------------------


def _prepare_new(rt: ResourceType, target: Target, obj: Obj) -> Obj:
    shapes.check_object(rt.key, rt.kind, obj, custom=rt.custom)
    _check_type(rt, obj)
    obj = shapes.drop_nulls(obj)
    meta = obj.setdefault("metadata", {})
    if rt.namespaced:
        sent = meta.get("namespace")
        if sent and sent != target.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = target.namespace
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    return obj


def _create(request: web.Request, double: Any, target: Target, body: bytes) -> web.Response:
    rt = target.rt
    obj = _prepare_new(rt, target, require_object(parse_body(request, body)))
    _record_update(request, double, rt, None, obj)
    validation.validate(rt, obj)
    created = double.store.create(rt, obj, namespace=target.namespace, dry_run=_dry_run(request))
    return _answer_object(request, double, rt, created, 201)


def _replace(request: web.Request, double: Any, target: Target, body: bytes) -> web.Response:
    rt = target.rt
    obj = _prepare_new(rt, target, require_object(parse_body(request, body)))
    sent_name = obj["metadata"].get("name")
    if sent_name != target.name:
        raise bad_request(f"the name of the object ({sent_name}) does not match the name on the URL ({target.name})")
    old = double.store.require(rt, target.namespace, target.name or "")
    _check_preconditions(rt, target, obj, old)
    _carry_allocated(rt, old, obj)
    validation.validate(rt, obj, old)
    _record_update(request, double, rt, old, obj)
    updated = double.store.update(rt, obj, namespace=target.namespace, dry_run=_dry_run(request))
    return _answer_object(request, double, rt, updated)


def _check_preconditions(rt: ResourceType, target: Target, sent: Obj, current: Obj) -> None:
    """The sent uid and resourceVersion against the stored object, before any validation: the registry's
    ``GuaranteedUpdate`` compares them first and only then runs the strategy's ``ValidateUpdate`` (apiserver
    ``pkg/registry/generic/registry/store.go`` ``Update``), so a stale write is a 409 even when it is also invalid."""
    meta = sent.get("metadata") or {}
    uid = meta.get("uid")
    if uid and uid != current["metadata"].get("uid"):
        raise precondition_failed(
            rt,
            target.namespace or "",
            target.name or "",
            f"UID in precondition: {uid}, UID in object meta: {current['metadata'].get('uid')}",
        )
    sent_rv = meta.get("resourceVersion")
    if sent_rv and sent_rv != current["metadata"].get("resourceVersion"):
        raise conflict(rt.plural, rt.group, target.name or "", STALE)


def _carry_allocated(rt: ResourceType, old: Obj, new: Obj) -> None:
    """Fields the server allocated that an update may omit (a Service's clusterIP)."""
    if rt.key == "/services":
        old_spec, new_spec = old.get("spec") or {}, new.setdefault("spec", {})
        if isinstance(new_spec, dict) and not new_spec.get("clusterIP") and old_spec.get("clusterIP"):
            new_spec["clusterIP"] = old_spec["clusterIP"]
            new_spec.setdefault("clusterIPs", old_spec.get("clusterIPs", [old_spec["clusterIP"]]))


def _patch(
    request: web.Request, double: Any, target: Target, body: bytes, subresource: str | None = None
) -> web.Response:
    rt = target.rt
    content_type = request.headers.get("Content-Type", "")
    media = content_type.split(";")[0].strip().lower()
    if media not in patch.PATCH_TYPES:
        from fakes.kube.errors import unsupported_media_type

        raise unsupported_media_type(
            [patch.JSON_PATCH, patch.MERGE_PATCH, patch.APPLY_YAML] if rt.custom else list(patch.PATCH_TYPES)
        )
    sent = parse_body(request, body)
    manager = request.query.get("fieldManager") or ""
    if media == patch.APPLY_YAML:
        return _server_side_apply(request, double, target, require_object(sent), manager, subresource)
    current = double.store.require(rt, target.namespace, target.name or "")
    result = shapes.drop_nulls(patch.apply_patch(media, current, sent, resource_key=rt.key, custom=rt.custom))
    shapes.check_object(rt.key, rt.kind, result, custom=rt.custom)
    _check_identity(rt, target, result)
    _check_preconditions(rt, target, result, current)
    if subresource is None:
        validation.validate(rt, result, current)
    _record_update(request, double, rt, current, result, subresource)
    if result.get("metadata", {}).get("resourceVersion") == current["metadata"].get("resourceVersion"):
        result["metadata"].pop("resourceVersion", None)  # patches apply to the latest version
    updated = double.store.update(
        rt, result, namespace=target.namespace, subresource=subresource, dry_run=_dry_run(request)
    )
    return _answer_object(request, double, rt, updated)


def _check_identity(rt: ResourceType, target: Target, obj: Obj) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if meta.get("name") != target.name:
        raise bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({target.name})"
        )
    if rt.namespaced and meta.get("namespace") not in (None, target.namespace):
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")


def _server_side_apply(
    request: web.Request, double: Any, target: Target, applied: Obj, manager: str, subresource: str | None
) -> web.Response:
    rt = target.rt
    if not manager:
        raise bad_request("PATCH request must use fieldManager query parameter when applying")
    shapes.check_object(rt.key, rt.kind, applied, custom=rt.custom)
    _check_type(rt, applied)
    if applied.get("apiVersion") is None or applied.get("kind") is None:
        raise bad_request("invalid object type: /, Kind=")
    force = _force(request)
    write = _write(double, rt, subresource)
    current = double.store.get(rt, target.namespace, target.name or "")
    dry = _dry_run(request)
    if current is None:
        obj = _prepare_new(rt, target, applied)
        obj["metadata"]["name"] = target.name
        obj = shapes.drop_nulls(managed.apply(None, obj, manager, write, force=force))
        validation.validate(rt, obj)
        created = double.store.create(rt, obj, namespace=target.namespace, keep_status=False, dry_run=dry)
        return _answer_object(request, double, rt, created, 201)
    merged = shapes.drop_nulls(managed.apply(current, applied, manager, write, force=force))
    shapes.check_object(rt.key, rt.kind, merged, custom=rt.custom)
    merged["metadata"].pop("resourceVersion", None)
    _check_identity(rt, target, merged)
    if subresource is None:
        validation.validate(rt, merged, current)
    updated = double.store.update(rt, merged, namespace=target.namespace, subresource=subresource, dry_run=dry)
    return _answer_object(request, double, rt, updated)


def _force(request: web.Request) -> bool:
    value = request.query.get("force", "false")
    if value not in ("true", "false", "1", "0", "True", "False"):
        raise bad_request(f'invalid boolean value for force: "{value}"')
    return value in ("true", "1", "True")


def _default_manager(request: web.Request) -> str:
    agent = request.headers.get("User-Agent", "unknown")
    return agent.split("/")[0] or "unknown"


def _write(double: Any, rt: ResourceType, subresource: str | None) -> managed.Write:
    return managed.Write(
        schema=managed.Schema(rt.key, rt.custom, rt.schema),
        api_version=rt.api_version,
        subresource=subresource or "",
        now=rfc3339(double.clock.time()),
        status_subresource=rt.status_subresource,
    )


def _record_update(
    request: web.Request, double: Any, rt: ResourceType, live: Obj | None, new: Obj, subresource: str | None = None
) -> None:
    """``new``'s ``managedFields`` after this non-apply write (the ``fieldManager`` query, else the user agent's
    first word, as the apiserver's ``prefixFromUserAgent``)."""
    manager = request.query.get("fieldManager") or _default_manager(request)
    managed.record_update(live, new, manager, _write(double, rt, subresource))


def _delete_options(request: web.Request, body: bytes) -> options.DeleteOptions:
    sent = parse_body(request, body) if body.strip() else None
    return options.delete_options(sent, request.query)


def _delete(request: web.Request, double: Any, target: Target, body: bytes) -> web.Response:
    rt = target.rt
    opts = _delete_options(request, body)
    obj, gone = double.store.delete(
        rt,
        target.namespace,
        target.name or "",
        grace_seconds=opts.grace_period_seconds,
        propagation=opts.propagation,
        precondition_uid=opts.precondition_uid,
        precondition_rv=opts.precondition_rv,
        dry_run=opts.dry_run,
    )
    if not gone or rt.key in RETURNS_OBJECT or rt.custom:
        return _answer_object(request, double, rt, obj)
    details: Obj = {"name": target.name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural  # the registry puts the resource in ``kind`` (store.go finalizeDelete)
    details["uid"] = obj["metadata"].get("uid", "")
    return json_response(status_object("Success", 0, details=details))


def _delete_collection(request: web.Request, double: Any, target: Target, body: bytes) -> web.Response:
    rt = target.rt
    if "deletecollection" not in rt.verbs:
        raise method_not_allowed("DELETE", rt.plural, rt.group)
    labels, fields = _selectors(request, rt)
    opts = _delete_options(request, body)
    items, _ = double.store.list(rt, target.namespace)
    deleted = []
    for obj in items:
        if not (labels.matches(obj["metadata"].get("labels")) and fields.matches(obj, rt.key)):
            continue
        try:
            last, _gone = double.store.delete(
                rt,
                obj["metadata"].get("namespace"),
                obj["metadata"]["name"],
                grace_seconds=opts.grace_period_seconds,
                propagation=opts.propagation,
                dry_run=opts.dry_run,
            )
        except ApiError as exc:
            if exc.code == 404:
                continue
            raise
        deleted.append(for_version(last, rt))
    return json_response(
        {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(double.store.resource_version)},
            "items": deleted,
        }
    )


# --- subresources -----------------------------------------------------------------------------------------


async def _subresource(request: web.Request, double: Any, target: Target, body: bytes) -> web.StreamResponse:
    rt, sub = target.rt, target.subresource or ""
    obj = double.store.require(rt, target.namespace, target.name or "")
    handler = double.subresources.find(rt, sub)
    if handler is not None:
        ctx = SubresourceContext(request, double, rt, target.namespace or "", target.name or "", sub, obj)
        answer: web.StreamResponse = await handler(ctx)
        return answer
    method = request.method.upper()
    if sub == "status":
        if method == "GET":
            return _answer_object(request, double, rt, obj)
        if method == "PUT":
            sent = _prepare_new(rt, target, require_object(parse_body(request, body)))
            _record_update(request, double, rt, obj, sent, "status")
            updated = double.store.update(
                rt, sent, namespace=target.namespace, subresource="status", dry_run=_dry_run(request)
            )
            return _answer_object(request, double, rt, updated)
        if method == "PATCH":
            return _patch(request, double, target, body, subresource="status")
        raise method_not_allowed(method, rt.plural, rt.group)
    if sub == "scale":
        return _scale(request, double, target, obj, body)
    if sub == "token" and rt.key == "/serviceaccounts" and method == "POST":
        return _token(request, double, target, obj, body)
    if sub == "log":
        raise bad_request(
            f'container logs are not served for pod "{target.name}": the double has no log source '
            f"registered for pods/log"
        )
    raise ApiError(400, "BadRequest", f'the double serves no handler for {rt.plural}/{sub} (of "{target.name}")')


def _token(request: web.Request, double: Any, target: Target, obj: Obj, body: bytes) -> web.Response:
    """``serviceaccounts/<name>/token``: a TokenRequest answered with a token the double accepts as that
    ServiceAccount until ``expirationTimestamp`` (:mod:`fakes.kube.tokens`; RBAC decides what it may do,
    :mod:`fakes.kube.authz`). ``audiences`` default to :data:`fakes.kube.tokens.AUDIENCE`, the one the double
    accepts; ``expirationSeconds`` (default 3600) below 600 is a 422."""
    sent = require_object(parse_body(request, body)) if body.strip() else {}
    spec_sent = sent.get("spec")
    spec: Obj = spec_sent if isinstance(spec_sent, dict) else {}
    seconds = spec.get("expirationSeconds") or 3600
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 600:
        from fakes.kube.errors import field_invalid, invalid

        raise invalid(
            "TokenRequest",
            "authentication.k8s.io",
            target.name or "",
            [field_invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")],
        )
    now = double.clock.time()
    audiences = spec.get("audiences") or [tokens.AUDIENCE]
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise bad_request("spec.audiences: a list of strings is required")
    return json_response(
        {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": target.name, "namespace": target.namespace, "creationTimestamp": None},
            "spec": {
                "audiences": audiences,
                "expirationSeconds": seconds,
                "boundObjectRef": None,
            },
            "status": {
                "token": double.tokens.issue(obj, audiences, seconds, now),
                "expirationTimestamp": rfc3339(now + seconds),
            },
        },
        201,
    )


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": out_meta,
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {"replicas": status.get("replicas", 0), "selector": label_selector_string(spec.get("selector"))},
    }


def _scale(request: web.Request, double: Any, target: Target, obj: Obj, body: bytes) -> web.Response:
    rt = target.rt
    method = request.method.upper()
    if method == "GET":
        return json_response(scale_of(rt, obj))
    if method not in ("PUT", "PATCH"):
        raise method_not_allowed(method, rt.plural, rt.group)
    sent = parse_body(request, body)
    current = scale_of(rt, obj)
    if method == "PUT":
        wanted = require_object(sent)
    else:
        media = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media == patch.APPLY_YAML:
            media = patch.MERGE_PATCH
        wanted = patch.apply_patch(media, current, sent, resource_key="autoscaling/scales", custom=False)
    replicas = (wanted.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        from fakes.kube.errors import field_invalid, invalid

        raise invalid(
            "Scale",
            "autoscaling",
            target.name or "",
            [field_invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
        )
    sent_rv = (wanted.get("metadata") or {}).get("resourceVersion")
    if method == "PUT" and sent_rv and sent_rv != obj["metadata"]["resourceVersion"]:
        from fakes.kube.errors import STALE, conflict

        raise conflict(rt.plural, rt.group, target.name or "", STALE)

    def set_replicas(o: Obj) -> None:
        before = copy.deepcopy(o)
        o.setdefault("spec", {})["replicas"] = replicas
        _record_update(request, double, rt, before, o, "scale")

    if _dry_run(request):
        set_replicas(obj)  # ``obj`` is the store's copy: the preview is never written
        return json_response(scale_of(rt, obj))
    updated = double.store.mutate(rt, target.namespace, target.name or "", set_replicas)
    return json_response(scale_of(rt, updated))


__all__ = ["handle", "parse_target", "json_response", "error_response", "not_found"]
