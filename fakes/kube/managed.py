"""Field ownership (``metadata.managedFields``) and server-side apply, as structured-merge-diff defines them.

Sources followed: kubernetes-sigs/structured-merge-diff ``merge/update.go`` (``Updater.Apply``, ``Updater.Update``,
``prune``), ``typed/tofieldset.go``, ``typed/merge.go`` (list order), ``fieldpath/serialize*.go`` (the ``FieldsV1``
format) and ``fieldpath/element.go`` (how a path prints); apimachinery ``pkg/util/managedfields/internal/``:
``fieldmanager.go`` (managedFields sent on an update replace the live ones; ``[]`` or ``[{}]`` resets them),
``managedfieldsupdater.go`` (an update's manager gains only what it changed, its time moves only then),
``stripmeta.go`` (``apiVersion``, ``kind``, ``metadata.name``... are never owned), ``managedfields.go`` (manager
identity and entry order), ``conflict.go`` (the 409's words), ``lastappliedmanager.go`` and
``lastappliedupdater.go`` (``kubectl`` taking over from client-side apply).

A field set is a set of paths; a path is a tuple of serialized path elements: ``f:<field>``, ``k:<json of the
key fields>`` (an associative list's element), ``v:<json value>`` (a set's element), ``i:<index>``.

- **Apply** (``application/apply-patch+yaml``): the applied configuration is merged into the live object (maps by
  key, associative lists by their keys, sets as unions, atomic lists and scalars replaced); the applier then owns
  exactly the fields of its configuration. Fields it owned before and no longer applies are removed from the
  object unless another manager owns them. Changing a field another manager owns is a 409 naming each manager
  and field, unless ``force`` (``--force-conflicts``) moves those fields to the applier. ``kubectl`` may take
  over fields whose live value still equals the ``last-applied-configuration`` annotation without a conflict.
- **Update** (create, PUT, every other PATCH, subresource writes): the writer's ``Update`` entry (per manager,
  apiVersion and subresource) gains the fields it added or changed, which every other manager loses; removed
  fields leave every manager. No conflicts.

The schema is what the API's ``x-kubernetes-list-type``/``x-kubernetes-list-map-keys`` (or, without them, the
strategic merge keys) say for built-in kinds: containers, volumes, env, imagePullSecrets by ``name``, container
ports by ``containerPort`` + ``protocol`` (``TCP`` when omitted), Service ports by ``port`` + ``protocol``,
volumeMounts by ``mountPath``, conditions by ``type``, ownerReferences by ``uid``, finalizers as a set; other
lists are atomic. Custom resources: metadata as above, the rest as the CRD's schema marks it
(``x-kubernetes-list-type: map`` with ``x-kubernetes-list-map-keys``, ``set``; atomic without a marker; maps with
``additionalProperties`` hold entries).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fakes.kube import defaults
from fakes.kube.errors import ApiError, Cause, bad_request, internal

Obj = dict[str, Any]
Path = tuple[str, ...]
FieldSet = set[Path]

APPLY = "Apply"
UPDATE = "Update"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CONFLICT_CAUSE = "FieldManagerConflict"

_STRIPPED_META = frozenset(
    {"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields"}
    | {"resourceVersion"}
)
#: Maps whose keys are entries (each key owned on its own), not struct fields.
GRANULAR_MAPS = frozenset(
    {"labels", "annotations", "matchLabels", "nodeSelector", "data", "binaryData", "stringData", "limits"}
    | {"requests", "capacity", "allocatable", "hard", "used", "parameters", "overhead"}
)
_CONTAINER_LISTS: dict[str, tuple[str, ...]] = {
    "ports": ("containerPort", "protocol"),
    "env": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "resizePolicy": ("resourceName",),
}
_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")
_POD_SPEC_LISTS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_CONTAINERS, ("name",)),
    "volumes": ("name",),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "resourceClaims": ("name",),
    "schedulingGates": ("name",),
}
#: Key fields the schema defaults when an element omits them (``protocol: TCP`` on ports).
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


@dataclass(frozen=True)
class ListType:
    """``atomic`` (replaced whole, owned as one field), ``set`` (scalars owned each) or ``map`` (keyed elements)."""

    kind: str
    keys: tuple[str, ...] = ()


ATOMIC, SET = ListType("atomic"), ListType("set")


@dataclass(frozen=True)
class Schema:
    """What field ownership knows of one type: ``resource_key`` (``"apps/deployments"``), ``custom`` for a CR."""

    resource_key: str
    custom: bool = False
    crd_schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    """A custom resource's ``openAPIV3Schema``: its ``x-kubernetes-list-type`` and ``x-kubernetes-list-map-keys``
    markers decide its lists (atomic without one, as for a structural schema)."""

    def list_type(self, names: tuple[str, ...]) -> ListType:
        """The list type of the list at field names ``names`` (list elements do not add names)."""
        name = names[-1] if names else ""
        parent = names[-2] if len(names) > 1 else ""
        if names[:1] == ("metadata",):
            if name == "finalizers":
                return SET
            return ListType("map", ("uid",)) if name == "ownerReferences" else ATOMIC
        if self.custom:
            return _crd_list_type(_crd_node(self.crd_schema, names))
        if name == "conditions":
            return ListType("map", ("type",))
        if parent in _CONTAINERS and name in _CONTAINER_LISTS:
            return ListType("map", _CONTAINER_LISTS[name])
        if parent == "spec" and name in _POD_SPEC_LISTS:
            return ListType("map", _POD_SPEC_LISTS[name])
        if self.resource_key == "/services" and names == ("spec", "ports"):
            return ListType("map", ("port", "protocol"))
        if name in ("podIPs", "hostIPs"):
            return ListType("map", ("ip",))
        if self.resource_key == "/serviceaccounts" and names in (("secrets",), ("imagePullSecrets",)):
            return ListType("map", ("name",))
        return ATOMIC

    def granular(self, names: tuple[str, ...]) -> bool:
        """True when the map at ``names`` holds entries rather than struct fields."""
        name = names[-1] if names else ""
        if self.custom:
            if names[:1] == ("metadata",):
                return name in ("labels", "annotations")
            node = _crd_node(self.crd_schema, names)
            return node is not None and isinstance(node.get("additionalProperties"), dict | bool)
        if names == ("spec", "selector"):
            return self.resource_key in ("/services", "/replicationcontrollers")
        return name in GRANULAR_MAPS


def _crd_node(schema: dict[str, Any] | None, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The schema node at field names ``names`` (list items stepped through), or None where it is not declared."""
    node = schema
    for name in names:
        if not isinstance(node, dict):
            return None
        if node.get("type") == "array":
            node = node.get("items")
            if not isinstance(node, dict):
                return None
        properties = node.get("properties")
        if isinstance(properties, dict) and name in properties:
            node = properties[name]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    return node if isinstance(node, dict) else None


def _crd_list_type(node: dict[str, Any] | None) -> ListType:
    marker = (node or {}).get("x-kubernetes-list-type")
    keys = (node or {}).get("x-kubernetes-list-map-keys")
    if marker == "map" and isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys):
        return ListType("map", tuple(keys))
    return SET if marker == "set" else ATOMIC


# --- path elements ------------------------------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _element(item: Any, list_type: ListType, index: int) -> str | None:
    """The path element of one list item; None when a keyed item lacks a key field with no default."""
    if list_type.kind == "set":
        return "v:" + _json(item)
    if list_type.kind == "map" and isinstance(item, dict):
        key: dict[str, Any] = {}
        for name in sorted(list_type.keys):
            if name in item:
                key[name] = item[name]
            elif name in KEY_DEFAULTS:
                key[name] = KEY_DEFAULTS[name]
            else:
                return None
        return "k:" + _json(key)
    return f"i:{index}"


class UntypedElement(ValueError):
    """An applied list element lacking a key field with no default, or repeating a key (``typed`` validation's
    words)."""


def _items(value: list[Any], list_type: ListType, names: tuple[str, ...], strict: bool) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for index, item in enumerate(value):
        element = _element(item, list_type, index)
        if element is None:
            if strict:
                missing = next(k for k in list_type.keys if not isinstance(item, dict) or k not in item)
                raise UntypedElement(
                    f".{'.'.join(names)}: element {index}: associative list with keys has an element that omits "
                    f'key field "{missing}" (and doesn\'t have default value)'
                )
            element = f"i:{index}"
        elif strict and any(element == seen for seen, _ in out):
            raise UntypedElement(f".{'.'.join(names)}: duplicate entries for key {path_string((element,))}")
        out.append((element, item))
    return out


def path_string(path: Path) -> str:
    """A path as structured-merge-diff prints it: ``.spec.template.spec.containers[name="app"].image``."""
    out = []
    for element in path:
        kind, text = element[:2], element[2:]
        if kind == "f:":
            out.append("." + text)
        elif kind == "k:":
            fields = json.loads(text)
            out.append("[" + ",".join(f"{k}={_json(v)}" for k, v in fields.items()) + "]")
        elif kind == "v:":
            out.append(f"[={text}]")
        else:
            out.append(f"[{text}]")
    return "".join(out)


# --- field sets and comparisons -----------------------------------------------------------------------------


def _stripped(obj: Obj | None) -> Obj:
    """The object without what nobody owns (``stripmeta.go``)."""
    if not obj:
        return {}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _STRIPPED_META}
    return out


def field_set(obj: Obj, schema: Schema, *, strict: bool = False) -> FieldSet:
    """The fields ``obj`` sets (``ToFieldSet``): leaves, atomic lists, list elements, map entries, empty maps."""
    out: FieldSet = set()
    _collect(_stripped(obj), (), (), schema, out, strict)
    out.discard(("f:metadata",))
    return out


def _collect(value: Any, names: tuple[str, ...], path: Path, schema: Schema, out: FieldSet, strict: bool) -> None:
    if isinstance(value, dict):
        granular = schema.granular(names)
        for key, child in value.items():
            child_path, child_names = (*path, "f:" + key), (*names, key)
            _collect(child, child_names, child_path, schema, out, strict)
            if child is None or child == {} or granular:
                out.add(child_path)
        return
    if isinstance(value, list):
        list_type = schema.list_type(names)
        if list_type.kind == "atomic":
            out.add(path)
            return
        for element, item in _items(value, list_type, names, strict):
            out.add((*path, element))
            if list_type.kind == "map" and isinstance(item, dict):
                _collect(item, names, (*path, element), schema, out, strict)
        return
    out.add(path)


def _every_path(value: Any, names: tuple[str, ...], path: Path, schema: Schema, out: FieldSet) -> None:
    """Every node under ``path``, owned or not (what leaves every manager when the subtree goes)."""
    out.add(path)
    if isinstance(value, dict):
        for key, child in value.items():
            _every_path(child, (*names, key), (*path, "f:" + key), schema, out)
    elif isinstance(value, list):
        list_type = schema.list_type(names)
        if list_type.kind != "atomic":
            for element, item in _items(value, list_type, names, False):
                _every_path(item, names, (*path, element), schema, out)


@dataclass
class Comparison:
    added: FieldSet = field(default_factory=set)
    modified: FieldSet = field(default_factory=set)
    removed: FieldSet = field(default_factory=set)

    def changed(self) -> FieldSet:
        return self.added | self.modified


def compare(old: Obj | None, new: Obj, schema: Schema) -> Comparison:
    """What changed from ``old`` to ``new`` (``TypedValue.Compare``), ownable fields only."""
    result = Comparison()
    _compare(_stripped(old), _stripped(new), (), (), schema, result)
    for found in (result.added, result.modified, result.removed):
        found.discard(())
        found.discard(("f:metadata",))
    return result


def _added(value: Any, names: tuple[str, ...], path: Path, schema: Schema, into: FieldSet) -> None:
    if not (isinstance(value, dict) and value and not schema.granular(names)):
        into.add(path)  # a new leaf, list element, map or empty struct is owned itself ("." in FieldsV1)
    _collect(value, names, path, schema, into, False)


def _compare(old: Any, new: Any, names: tuple[str, ...], path: Path, schema: Schema, result: Comparison) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            child_path, child_names = (*path, "f:" + key), (*names, key)
            if key not in old:
                _added(new[key], child_names, child_path, schema, result.added)
            elif key not in new:
                _every_path(old[key], child_names, child_path, schema, result.removed)
            else:
                _compare(old[key], new[key], child_names, child_path, schema, result)
        return
    if isinstance(old, list) and isinstance(new, list):
        list_type = schema.list_type(names)
        if list_type.kind != "atomic":
            before = dict(_items(old, list_type, names, False))
            after = dict(_items(new, list_type, names, False))
            for element, item in after.items():
                if element not in before:
                    _added(item, names, (*path, element), schema, result.added)
                elif list_type.kind == "map":
                    _compare(before[element], item, names, (*path, element), schema, result)
            for element, item in before.items():
                if element not in after:
                    _every_path(item, names, (*path, element), schema, result.removed)
            return
    if old != new:
        result.modified.add(path)
        if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
            _every_path(old, names, path, schema, result.removed)
            result.removed.discard(path)
            _collect(new, names, path, schema, result.added, False)


# --- merging and pruning ------------------------------------------------------------------------------------


def merge(live: Any, config: Any, schema: Schema, names: tuple[str, ...] = ()) -> Any:
    """``config`` merged into ``live`` (``TypedValue.Merge``): maps by key, keyed lists by element (in the
    configuration's order, live-only elements kept where they were), sets as unions, the rest replaced."""
    if isinstance(live, dict) and isinstance(config, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live.get(key), value, schema, (*names, key)) if key in live else _copy(value)
        return out
    if isinstance(live, list) and isinstance(config, list):
        list_type = schema.list_type(names)
        if list_type.kind == "atomic":
            return _copy(config)
        return _merge_list(live, config, list_type, names, schema)
    return _copy(config)


def _merge_list(
    live: list[Any], config: list[Any], list_type: ListType, names: tuple[str, ...], schema: Schema
) -> list[Any]:
    ours = _items(config, list_type, names, True)
    theirs = dict(_items(live, list_type, names, False))
    wanted = [element for element, _ in ours]
    by_element = dict(ours)
    out: list[Any] = []
    emitted: set[str] = set()

    def emit_through(element: str) -> None:
        for pending in wanted[: wanted.index(element) + 1]:
            if pending not in emitted:
                emitted.add(pending)
                item = by_element[pending]
                out.append(merge(theirs[pending], item, schema, names) if pending in theirs else _copy(item))

    for element, item in _items(live, list_type, names, False):
        if element in by_element:
            emit_through(element)
        else:
            out.append(item)
    if wanted:
        emit_through(wanted[-1])
    return out


def _copy(value: Any) -> Any:
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


def prune(obj: Obj, paths: Iterable[Path], keep: FieldSet, schema: Schema) -> None:
    """Remove from ``obj`` (in place) every node at ``paths`` unless a path in ``keep`` lies at or under it."""
    kept_prefixes = {p[:n] for p in keep for n in range(1, len(p) + 1)}
    for path in sorted(paths, key=len):  # parents first: a removed element takes its fields along
        if path not in kept_prefixes:
            _remove(obj, path, (), schema)


def _remove(value: Any, path: Path, names: tuple[str, ...], schema: Schema) -> None:
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head.startswith("f:"):
        key = head[2:]
        if key not in value:
            return
        if not rest:
            del value[key]
        else:
            _remove(value[key], rest, (*names, key), schema)
            child = value[key]
            if child == [] or (child == {} and schema.granular((*names, key))):
                del value[key]  # an emptied map of entries or list is omitted, as Go's omitempty does
        return
    if isinstance(value, list):
        list_type = schema.list_type(names)
        for index, (element, item) in enumerate(_items(value, list_type, names, False)):
            if element == head:
                if not rest:
                    del value[index]
                else:
                    _remove(item, rest, names, schema)
                return


# --- managedFields entries ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manager:
    """A manager's identity (``BuildManagerIdentifier``): an applier's does not include its apiVersion."""

    name: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    def identifier(self) -> str:
        entry: dict[str, str] = {"manager": self.name, "operation": self.operation}
        if self.api_version:
            entry["apiVersion"] = self.api_version
        if self.subresource:
            entry["subresource"] = self.subresource
        return _json(entry)

    def printed(self) -> str:
        """How the 409 names it (``conflict.go`` ``printManager``)."""
        text = _json(self.name)
        if self.subresource:
            text += f" with subresource {_json(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


@dataclass
class Entry:
    fields: FieldSet
    api_version: str
    time: str | None


Managed = dict[Manager, Entry]


def decode(entries: Any) -> Managed | None:
    """The ``managedFields`` list as sets per manager; None when it cannot be decoded."""
    if not isinstance(entries, list):
        return None
    managed: Managed = {}
    for raw in entries:
        if not isinstance(raw, dict) or not isinstance(raw.get("manager", ""), str):
            return None
        operation = raw.get("operation")
        if operation not in (APPLY, UPDATE):
            return None
        api_version = str(raw.get("apiVersion") or "")
        who = Manager(
            raw.get("manager") or "",
            operation,
            "" if operation == APPLY else api_version,
            str(raw.get("subresource") or ""),
        )
        fields: FieldSet = set()
        if not _decode_fields(raw.get("fieldsV1") or {}, (), fields):
            return None
        managed[who] = Entry(fields, api_version, raw.get("time"))
    return managed


def _decode_fields(node: Any, path: Path, into: FieldSet) -> bool:
    if not isinstance(node, dict):
        return False
    for key, child in node.items():
        if key == ".":
            into.add(path)
        elif key[:2] in ("f:", "k:", "v:", "i:"):
            if child == {}:
                into.add((*path, key))
            elif not _decode_fields(child, (*path, key), into):
                return False
        else:
            return False
    return True


_RANK = {"f:": 0, "k:": 1, "v:": 2, "i:": 3}


def encode_fields(fields: FieldSet) -> Obj:
    """A field set as ``FieldsV1``: nested ``f:``/``k:``/``v:``/``i:`` keys, ``"."`` where a node with children is
    itself owned; children in structured-merge-diff's order (fields, keys, values, indices)."""
    tree: dict[str, Any] = {}
    members: set[Path] = set(fields)
    for path in fields:
        node = tree
        for element in path:
            node = node.setdefault(element, {})

    def render(node: dict[str, Any], path: Path) -> Obj:
        out: Obj = {}
        if node and path in members:
            out["."] = {}
        for key in sorted(node, key=lambda k: (_RANK.get(k[:2], 9), k)):
            out[key] = render(node[key], (*path, key))
        return out

    return render(tree, ())


def encode(managed: Managed) -> list[Obj]:
    """``managedFields`` in the apiserver's order: Apply before Update, then by time, manager, apiVersion."""
    rows: list[tuple[tuple[str, str, str, str, str], Obj]] = []
    for who, entry in managed.items():
        row: Obj = {"manager": who.name, "operation": who.operation, "apiVersion": entry.api_version}
        if entry.time:
            row["time"] = entry.time
        row["fieldsType"] = "FieldsV1"
        row["fieldsV1"] = encode_fields(entry.fields)
        if who.subresource:
            row["subresource"] = who.subresource
        order = (who.operation, (entry.time or "")[:19], who.name, entry.api_version, who.subresource)
        rows.append((order, row))
    return [row for _, row in sorted(rows, key=lambda r: r[0])]


def _without(managed: Managed, fields: FieldSet, skip: Manager | None = None) -> None:
    """Take ``fields`` from every manager but ``skip``; a manager left with nothing is dropped (``update.go``)."""
    for who in list(managed):
        if who != skip:
            managed[who].fields -= fields
        if not managed[who].fields:
            del managed[who]


# --- the two operations -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """One write's context: the type, the request's apiVersion and subresource, the clock's RFC 3339 ``now``."""

    schema: Schema
    api_version: str
    subresource: str
    now: str
    status_subresource: bool = False

    def ignored(self, path: Path) -> bool:
        """Fields the strategy resets, never owned through this endpoint (``GetResetFields``)."""
        in_status = path[:1] == ("f:status",)
        if self.subresource == "status":
            return not (in_status or path[:1] == ("f:metadata",))
        return in_status and self.status_subresource

    def keep(self, fields: Iterable[Path]) -> FieldSet:
        return {p for p in fields if not self.ignored(p)}


def record_update(live: Obj | None, new: Obj, manager: str, write: Write) -> None:
    """Set ``new``'s ``managedFields`` after a non-apply write by ``manager`` (``live`` None for a create)."""
    meta = new.setdefault("metadata", {})
    live_entries = (live or {}).get("metadata", {}).get("managedFields")
    sent = meta.get("managedFields")
    if write.subresource or sent is None:
        managed = decode(live_entries) or {}
    elif sent == [] or sent == [{}]:
        managed = {}
    else:
        managed = decode(sent) or decode(live_entries) or {}
    changes = compare(_decoded(live, write.schema) if live else None, _decoded(new, write.schema), write.schema)
    changed, removed = write.keep(changes.changed()), write.keep(changes.removed)
    _without(managed, changed | removed)
    who = Manager(manager or "unknown", UPDATE, write.api_version, write.subresource)
    if changed:
        previous = managed.get(who)
        managed[who] = Entry((previous.fields if previous else set()) | changed, write.api_version, write.now)
    entries = encode(managed)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


#: Defaults the apiserver fills in while decoding a request body (``SetDefaults_*``), so an Update's manager owns
#: them; what a registry strategy sets later (a Service's clusterIP, a Secret's ``stringData`` folded into
#: ``data``, a namespace's label, a pod's phase) is nobody's.
_DECODING_DEFAULTS = {key: defaults.BY_KEY[key] for key in ("apps/deployments", "apps/replicasets")}
_DECODING_DEFAULTS.update({key: defaults.BY_KEY[key] for key in ("apps/statefulsets", "batch/jobs", "batch/cronjobs")})


def _decoded(obj: Obj, schema: Schema) -> Obj:
    """``obj`` as the apiserver holds it after decoding: with its kind's decoding defaults (a copy)."""
    if schema.custom:
        return obj
    fill = _DECODING_DEFAULTS.get(schema.resource_key)
    out: Obj = _copy(obj)
    try:
        if schema.resource_key == "/pods" and isinstance(out.get("spec"), dict):
            defaults.pod_own_spec(out["spec"])
        elif fill is not None:
            fill(out)
    except (AttributeError, TypeError):
        return obj  # a malformed body: validation answers it, ownership does not matter
    stripped: Obj = _without_nulls(out)
    return stripped


def _without_nulls(value: Any) -> Any:
    """A typed object holds no ``null``: a zero value (a template's ``creationTimestamp``) sets no field, nor does
    the struct it leaves empty (a jobTemplate's ``metadata``)."""
    if isinstance(value, dict):
        out = {k: _without_nulls(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in out.items() if v != {} or value[k] == {}}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def apply(live: Obj | None, config: Obj, manager: str, write: Write, *, force: bool) -> Obj:
    """The object after ``manager`` applies ``config`` to ``live`` (None: the object is created), with its
    ``managedFields``. Raises :class:`ApiError` 400 for ``managedFields`` in the configuration, 500 (the
    apiserver's InternalError) for a keyed list element without its key, 409 for conflicts (unless ``force``)."""
    if (config.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    schema = write.schema
    managed = decode((live or {}).get("metadata", {}).get("managedFields")) or {}
    who = Manager(manager, APPLY, "", write.subresource)
    applied, merged = _typed_merge(live, config, write)
    previous = managed.get(who)
    merged.setdefault("metadata", {})
    merged["metadata"].pop("managedFields", None)
    managed[who] = Entry(applied, write.api_version, previous.time if previous else None)
    if previous is not None:
        owned = set().union(*(entry.fields for entry in managed.values()))
        prune(merged, previous.fields - owned, owned, schema)
    changes = compare(live, merged, schema)
    conflicts = {
        other: entry.fields & write.keep(changes.changed())
        for other, entry in managed.items()
        if other != who and entry.fields & write.keep(changes.changed())
    }
    if conflicts and not force:
        conflicts = _beyond_last_applied(live, conflicts, manager, schema)
        if conflicts:
            raise conflict_error(conflicts)
    for other, fields in conflicts.items():
        managed[other].fields -= fields
    _without(managed, write.keep(changes.removed), skip=who)
    if who in managed and (previous is None or previous.fields != applied or changes.changed() or changes.removed):
        managed[who].time = write.now
    if manager == "kubectl" and LAST_APPLIED in ((live or {}).get("metadata", {}).get("annotations") or {}):
        merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = _last_applied(config)
    entries = encode(managed)
    if entries:
        merged["metadata"]["managedFields"] = entries
    return merged


def _typed_merge(live: Obj | None, config: Obj, write: Write) -> tuple[FieldSet, Obj]:
    """The applier's field set and the merged object; the apiserver's 500 when the configuration does not convert
    to its type (``structuredmerge.go``: "failed to create typed patch object")."""
    try:
        applied = write.keep(field_set(config, write.schema, strict=True))
        merged: Obj = dict(merge(live or {}, config, write.schema))
    except UntypedElement as exc:
        meta = {**((live or {}).get("metadata") or {}), **(config.get("metadata") or {})}
        group_version = write.api_version if "/" in write.api_version else f"/{write.api_version}"  # Go's GVK
        where = "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))
        raise internal(
            f"failed to create typed patch object ({where}; {group_version}, Kind={config.get('kind')}): {exc}"
        ) from None
    return applied, merged


def _last_applied(config: Obj) -> str:
    """``buildLastApplied``: the configuration without the annotation itself, as JSON."""
    out = _copy(config)
    notes = (out.get("metadata") or {}).get("annotations")
    if isinstance(notes, dict):
        notes.pop(LAST_APPLIED, None)
    return json.dumps(out, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str) + "\n"


def _beyond_last_applied(
    live: Obj | None, conflicts: dict[Manager, FieldSet], manager: str, schema: Schema
) -> dict[Manager, FieldSet]:
    """Conflicts left once ``kubectl`` may take the fields its client-side ``last-applied-configuration`` still
    matches (``lastappliedmanager.go``)."""
    if manager != "kubectl" or live is None:
        return conflicts
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        last = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        last = None
    if not isinstance(last, dict) or last.get("apiVersion") != live.get("apiVersion"):
        return conflicts
    differs = compare(last, live, schema)
    allowed = field_set(last, schema) - differs.modified - differs.added - differs.removed
    left = {who: fields - allowed for who, fields in conflicts.items()}
    if not any(left.values()):
        return {}
    return {who: fields for who, fields in left.items() if fields}


def conflict_error(conflicts: dict[Manager, FieldSet]) -> ApiError:
    """The 409 ``conflict.go`` builds: one cause per (manager, field), the message grouped by manager."""
    pairs = [
        (who, path)
        for who in sorted(conflicts, key=Manager.identifier)
        for path in sorted(conflicts[who], key=path_string)
    ]
    causes = [Cause(CONFLICT_CAUSE, f"conflict with {who.printed()}", path_string(path)) for who, path in pairs]
    if len(pairs) == 1:
        who, path = pairs[0]
        message = f"Apply failed with 1 conflict: conflict with {who.printed()}: {path_string(path)}"
    else:
        lines = []
        for who in sorted(conflicts, key=Manager.identifier):
            lines.append(f"conflicts with {who.printed()}:")
            lines += [f"- {path_string(p)}" for p in sorted(conflicts[who], key=path_string)]
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, causes=causes)
