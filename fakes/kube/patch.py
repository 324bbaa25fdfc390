"""PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and Kubernetes strategic merge patch.

Strategic merge patch (``application/strategic-merge-patch+json``; apimachinery ``pkg/util/strategicpatch``) merges
maps like a merge patch, but lists whose Go field carries ``patchStrategy:"merge"`` are merged element by element on
their ``patchMergeKey`` (containers, env, volumes, volumeMounts by name; container ports by ``containerPort``;
service ports by ``port``; conditions by ``type``; ownerReferences by ``uid``), and lists of scalars with that
strategy (finalizers) are unions. Directives:

- ``{"$patch": "replace"}`` in a map replaces the map; as a list element it replaces the list with the other
  elements; ``{"$patch": "delete"}`` in a map deletes it; a list element ``{"name": "x", "$patch": "delete"}``
  deletes that element; ``{"$patch": "merge"}`` is the default.
- ``$setElementOrder/<list>``: the merge keys (or scalars) in the order the list should end up in. Elements named
  there come first in that order, elements only the server has follow in their old order (the real algorithm
  interleaves server-only elements by their old index; the double keeps them after, which matters only when a
  list holds elements the patch's author did not know about).
- ``$deleteFromPrimitiveList/<list>``: scalars to remove from a merged scalar list.
- ``$retainKeys``: after merging, keep only these keys of the map (for fields with ``patchStrategy:"retainKeys"``:
  ``spec.strategy`` of a Deployment, volume sources).
- A ``null`` value deletes the key, as in a merge patch.

The merge keys are known only for built-in kinds (the Go structs); a strategic merge patch on a custom resource is
a 415 on a real server, and here too (:func:`apply_patch`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fakes.kube.errors import ApiError, bad_request, unsupported_media_type
from fakes.kube.store import clone

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY_YAML = "application/apply-patch+yaml"
APPLY_CBOR = "application/apply-patch+cbor"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY_YAML)


@dataclass
class Shape:
    """What strategic merge knows about one field: ``merge_key`` for merged lists of maps, ``primitive_merge`` for
    merged lists of scalars, ``retain_keys`` for maps with that strategy, and the shapes of nested fields."""

    fields: dict[str, Shape] = field(default_factory=dict)
    merge_key: str | None = None
    primitive_merge: bool = False
    retain_keys: bool = False

    def child(self, name: str) -> Shape:
        return self.fields.get(name, EMPTY)


EMPTY = Shape()


def _map(**fields: Shape) -> Shape:
    return Shape(fields=dict(fields))


def _merge(key: str, item: Shape = EMPTY, retain: bool = False) -> Shape:
    # For a merged list, ``fields`` describe each element.
    return Shape(fields=item.fields, merge_key=key, retain_keys=retain)


_VOLUME_SOURCE = Shape(retain_keys=True)
_CONTAINER = _map(
    ports=_merge("containerPort"),
    env=_merge("name"),
    volumeMounts=_merge("mountPath"),
    volumeDevices=_merge("devicePath"),
    resizePolicy=_merge("resourceName"),
)
_POD_SPEC = _map(
    containers=_merge("name", _CONTAINER),
    initContainers=_merge("name", _CONTAINER),
    ephemeralContainers=_merge("name", _CONTAINER),
    volumes=_merge("name", _VOLUME_SOURCE, retain=True),
    imagePullSecrets=_merge("name"),
    hostAliases=_merge("ip"),
    topologySpreadConstraints=_merge("topologyKey"),
    resourceClaims=_merge("name"),
    schedulingGates=_merge("name"),
)
_META = _map(finalizers=Shape(primitive_merge=True), ownerReferences=_merge("uid"))
_TEMPLATE = _map(metadata=_META, spec=_POD_SPEC)
_CONDITIONS = _merge("type")
_WORKLOAD_STATUS = _map(conditions=_CONDITIONS)

SHAPES: dict[str, Shape] = {
    "/pods": _map(
        metadata=_META, spec=_POD_SPEC, status=_map(conditions=_CONDITIONS, podIPs=_merge("ip"), hostIPs=_merge("ip"))
    ),
    "/services": _map(metadata=_META, spec=_map(ports=_merge("port"))),
    "/namespaces": _map(metadata=_META, status=_map(conditions=_CONDITIONS)),
    "/serviceaccounts": _map(metadata=_META, secrets=_merge("name"), imagePullSecrets=_merge("name")),
    "apps/deployments": _map(
        metadata=_META, spec=_map(template=_TEMPLATE, strategy=Shape(retain_keys=True)), status=_WORKLOAD_STATUS
    ),
    "apps/replicasets": _map(metadata=_META, spec=_map(template=_TEMPLATE), status=_WORKLOAD_STATUS),
    "apps/statefulsets": _map(metadata=_META, spec=_map(template=_TEMPLATE), status=_WORKLOAD_STATUS),
    "batch/jobs": _map(metadata=_META, spec=_map(template=_TEMPLATE), status=_WORKLOAD_STATUS),
    "batch/cronjobs": _map(metadata=_META, spec=_map(jobTemplate=_map(spec=_map(template=_TEMPLATE)))),
    "apiextensions.k8s.io/customresourcedefinitions": _map(metadata=_META, status=_map(conditions=_CONDITIONS)),
}


def shape_for(resource_key: str) -> Shape:
    return SHAPES.get(resource_key, _map(metadata=_META))


# --- JSON merge patch (RFC 7386) -----------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else (lists included) replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# --- JSON patch (RFC 6902) -----------------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(
            f'the server rejected our request due to an error in our request: path "{path}" must start with "/"'
        )
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise ApiError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: "
                f'doc is missing path: "{path}": missing value',
            )
    return doc


def _add(doc: Any, parts: list[str], value: Any, path: str, *, replace: bool = False) -> Any:
    if not parts:
        return clone(value)
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise ApiError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: "
                f"replace operation does not apply: doc is missing key: {path}: missing value",
            )
        parent[last] = clone(value)
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(clone(value))
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = clone(value)
            else:
                parent.insert(int(last), clone(value))
        else:
            raise ApiError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: "
                f'add operation does not apply: doc is missing path: "{path}": missing value',
            )
    else:
        raise ApiError(
            422,
            "Invalid",
            f"the server rejected our request due to an error in our request: doc is "
            f'missing path: "{path}": missing value',
        )
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise bad_request("the server rejected our request due to an error in our request: cannot remove the root")
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise ApiError(
            422,
            "Invalid",
            f"the server rejected our request due to an error in our request: "
            f'remove operation does not apply: doc is missing path: "{path}": missing value',
        )
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """Apply RFC 6902 ``operations`` to a copy of ``target``; errors are the real server's 422/400 wording."""
    if not isinstance(operations, list):
        raise bad_request(
            "the server rejected our request due to an error in our request: json: cannot unmarshal "
            "object into Go value of type jsonpatch.Patch"
        )
    doc = clone(target)
    for op in operations:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or not isinstance(op.get("path", ""), str):
            raise bad_request(
                "the server rejected our request due to an error in our request: each operation must "
                "be an object with string 'op' and 'path'"
            )
        kind, path = op["op"], op.get("path", "")
        parts = _pointer(path)
        if kind in ("add", "replace") and "value" not in op:
            raise bad_request(
                f"the server rejected our request due to an error in our request: {kind} operation has no value"
            )
        if kind == "add":
            doc = _add(doc, parts, op["value"], path)
        elif kind == "replace":
            doc = _add(doc, parts, op["value"], path, replace=True)
        elif kind == "remove":
            doc = _remove(doc, parts, path)
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise bad_request(
                    f"the server rejected our request due to an error in our request: {kind} operation has no 'from'"
                )
            value = clone(_walk(doc, _pointer(source), source))
            if kind == "move":
                doc = _remove(doc, _pointer(source), source)
            doc = _add(doc, parts, value, path)
        elif kind == "test":
            if _walk(doc, parts, path) != op.get("value"):
                raise ApiError(
                    422,
                    "Invalid",
                    f"the server rejected our request due to an error in our request: "
                    f"testing value {path} failed: test failed",
                )
        else:
            raise bad_request(
                f"the server rejected our request due to an error in our request: Unexpected kind: {kind}"
            )
    return doc


# --- strategic merge patch -----------------------------------------------------------------------------------


def strategic_merge(original: Any, patch: Any, shape: Shape) -> Any:
    """Apply a strategic merge ``patch`` to a copy of ``original`` using the field ``shape``s."""
    if not isinstance(patch, dict):
        return clone(patch)
    if patch.get("$patch") == "delete":
        return None
    if patch.get("$patch") == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    out = clone(original) if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    orders = {k.split("/", 1)[1]: v for k, v in patch.items() if k.startswith("$setElementOrder/")}
    deletions = {k.split("/", 1)[1]: v for k, v in patch.items() if k.startswith("$deleteFromPrimitiveList/")}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        child = shape.child(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge(out.get(key), value, child)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, child)
        else:
            out[key] = value
    for key, values in deletions.items():
        if isinstance(out.get(key), list) and isinstance(values, list):
            out[key] = [v for v in out[key] if v not in values]
    for key, order in orders.items():
        if isinstance(out.get(key), list) and isinstance(order, list):
            out[key] = _reorder(out[key], order, shape.child(key))
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(original: Any, patch: list[Any], shape: Shape) -> list[Any]:
    if shape.primitive_merge:
        base = list(original) if isinstance(original, list) else []
        return base + [clone(v) for v in patch if v not in base]
    key = shape.merge_key
    if key is None:
        return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    out = [clone(v) for v in original] if isinstance(original, list) else []
    element_shape = Shape(fields=shape.fields, retain_keys=shape.retain_keys)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise ApiError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: map: "
                f"{json.dumps(item)} does not contain declared merge key: {key}",
            )
        index = next((i for i, v in enumerate(out) if isinstance(v, dict) and v.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
            continue
        if index is None:
            out.append(strategic_merge({}, item, element_shape))
        else:
            out[index] = strategic_merge(out[index], item, element_shape)
    return out


def _reorder(items: list[Any], order: list[Any], shape: Shape) -> list[Any]:
    key = shape.merge_key

    def ident(v: Any) -> Any:
        return v.get(key) if key and isinstance(v, dict) else v

    rank = {json.dumps(ident(o), sort_keys=True): i for i, o in enumerate(order)}
    named = [v for v in items if json.dumps(ident(v), sort_keys=True) in rank]
    rest = [v for v in items if json.dumps(ident(v), sort_keys=True) not in rank]
    named.sort(key=lambda v: rank[json.dumps(ident(v), sort_keys=True)])
    return named + rest


# --- dispatch ------------------------------------------------------------------------------------------------


def apply_patch(
    content_type: str, original: dict[str, Any], patch: Any, *, resource_key: str, custom: bool
) -> dict[str, Any]:
    """The object after a PATCH of ``content_type``. Raises :class:`ApiError`: 415 for an unknown type or a
    strategic merge patch on a custom resource, 400/422 for a malformed patch."""
    media = content_type.split(";")[0].strip().lower()
    if media == JSON_PATCH:
        result = json_patch(original, patch)
    elif media == MERGE_PATCH:
        result = merge_patch(original, require_map(patch))
    elif media == STRATEGIC:
        if custom:
            raise unsupported_media_type([JSON_PATCH, MERGE_PATCH, APPLY_YAML])
        result = strategic_merge(original, require_map(patch), shape_for(resource_key))
    else:
        raise unsupported_media_type(list(PATCH_TYPES))
    if not isinstance(result, dict):
        raise bad_request("the patched object is not an object")
    return result


def require_map(patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request(
            "the server rejected our request due to an error in our request: json: cannot unmarshal "
            f"{type(patch).__name__} into Go value of type map[string]interface {{}}"
        )
    return patch
