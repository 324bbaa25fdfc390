"""The corpus: what users' tools send to an API server, as committed cases (``corpus/*.yaml``, one file per group).

A ``kinds`` file instead lists one object per kind, each expanded to the same create, get, list, patch, update and
delete case. A case is a list of steps run in a namespace of its own (``$ns`` in a path, a body or an argument), in
order:

- ``request``: one call of the ``kubernetes`` client (``ApiClient.call_api``: its serialisation, headers and auth):
  ``method``, ``path``, optional ``query`` (a mapping), ``body``, ``content_type`` (the patch types), ``client``
  (the typed method a user would call, for the reader); ``body_from: <step>`` sends that step's answer instead,
  with ``set`` (dotted paths to values) changed in it.
- ``kubectl``: the real kubectl with ``args`` (and ``stdin``); the case runs once per kubectl minor of
  :data:`KUBECTL_MINORS`, each in a namespace of its own, unless it names ``minors``.
- ``watch``: a watch from ``from`` (``"0"``, ``"now"``: the resourceVersion of the list just before, or
  ``"<step>"``: the resourceVersion of that step's answer) that ends when ``until`` holds for an event's object
  (``{path: equals}``; dotted paths) or when the server ends it after ``timeout`` seconds (its ``timeoutSeconds``).
  Each event keeps its type and the ``project`` paths of its object; consecutive equal events are one. When the
  ``from`` step's own answer already meets ``until``, the watch is not opened (its state is recorded as ``(from)``).

``$rv.<step>`` in a path, query or body is the resourceVersion of an earlier step's answer. Every step has a ``name``
(default ``s<index>``): a difference's path starts with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

HERE = os.path.dirname(__file__)
CORPUS = os.path.join(HERE, "corpus")
KUBECTL_MINORS = (32, 33, 27)
"""kubectl minors a kubectl case runs with: the release's skew (1.32, 1.33) and 1.27, whose differences are reported
apart (outside kubectl's supported skew of one minor either side of the server's)."""
STEP_KINDS = ("request", "kubectl", "watch")
MERGE_PATCH = "application/merge-patch+json"
SETTLE_TIMEOUT = 15
"""Seconds a kinds case waits for its controller's first write (a watch's ``timeoutSeconds``)."""
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class CorpusError(ValueError):
    """A case that cannot run: names the file, the case and the key."""


@dataclass(frozen=True)
class Step:
    name: str
    kind: str
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class Case:
    """One case; ``id`` is ``<group>/<name>`` (``@1.NN`` appended for a kubectl minor's run)."""

    group: str
    name: str
    steps: tuple[Step, ...]
    minor: int | None = None
    cluster_scoped: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}" + (f"@1.{self.minor}" if self.minor else "")

    @property
    def namespace(self) -> str:
        """The case's namespace: its name and minor, at most 63 characters (a DNS label)."""
        base = f"{self.name}-{self.minor}" if self.minor else self.name
        return base[:63].rstrip("-")

    @property
    def out_of_skew(self) -> bool:
        return self.minor is not None and self.minor < min(KUBECTL_MINORS[:2])


def load(folder: str = CORPUS) -> list[Case]:
    """Every case of every ``*.yaml`` under ``folder``, kubectl cases expanded per minor. Raises
    :class:`CorpusError` for a malformed case or a repeated name."""
    cases: list[Case] = []
    for file in sorted(os.listdir(folder)):
        if file.endswith(".yaml"):
            cases.extend(_file_cases(os.path.join(folder, file)))
    seen: set[str] = set()
    for case in cases:
        if case.namespace in seen:
            raise CorpusError(f"case {case.id}: its namespace {case.namespace!r} is another case's too")
        seen.add(case.namespace)
    return cases


def _file_cases(path: str) -> Iterator[Case]:
    group = os.path.basename(path).removesuffix(".yaml")
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    if isinstance(doc, Mapping) and "kinds" in doc:
        doc = [_kind_case(path, raw) for raw in doc["kinds"]]
    if not isinstance(doc, list):
        raise CorpusError(f"{path}: a list of cases, each with 'name' and 'steps'")
    for raw in doc:
        yield from _cases(path, group, raw)


def _kind_case(path: str, raw: Any) -> dict[str, Any]:
    """A ``kinds`` entry (a collection ``path``, an ``object``, and ``settled``: what its controller writes first)
    as a case: create, a watch until settled, get, list, merge patch, update, delete, get of the deleted name (the
    list selects the case's object by name)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("path"), str) or not isinstance(raw.get("object"), dict):
        raise CorpusError(f"{path}: a kinds entry needs 'path' (the collection) and 'object'")
    collection, obj = raw["path"], raw["object"]
    one = f"{collection}/{obj['metadata']['name']}"
    group, _, version = obj["apiVersion"].rpartition("/")
    name = f"{collection.rsplit('/', 1)[-1]}-{(group or 'core').split('.')[0]}-{version}"
    patch = {"metadata": {"labels": {"patched": "yes"}}}
    only = f"metadata.name={obj['metadata']['name']}"  # the case's object, not the cluster's others
    steps = [
        {"name": "create", "request": {"method": "POST", "path": collection, "body": obj}},
        *_settled(collection, obj, raw.get("settled")),
        {"name": "get", "request": {"method": "GET", "path": one}},
        {"name": "list", "request": {"method": "GET", "path": collection, "query": {"fieldSelector": only}}},
        {"name": "patch", "request": {"method": "PATCH", "path": one, "body": patch, "content_type": MERGE_PATCH}},
        {
            "name": "update",
            "request": {"method": "PUT", "path": one, "body_from": "patch", "set": {"metadata.labels.updated": "yes"}},
        },
        {"name": "delete", "request": {"method": "DELETE", "path": one}},
        {"name": "get-deleted", "request": {"method": "GET", "path": one}},
    ]
    scoped = [] if "/namespaces/$ns/" in collection else [one]
    return {"name": name, "steps": steps, "cluster_scoped": scoped}


def _settled(collection: str, obj: Mapping[str, Any], until: Any) -> list[dict[str, Any]]:
    """A watch until the kind's controller has written what ``settled`` names: a read after it does not race it."""
    if not until:
        return []
    name = obj["metadata"]["name"]
    watch = {
        "path": collection,
        "from": "create",
        "timeout": SETTLE_TIMEOUT,
        "query": {"fieldSelector": f"metadata.name={name}"},
        "project": list(until),
        "until": dict(until),
    }
    return [{"name": "settled", "watch": watch}]


def _cases(path: str, group: str, raw: Any) -> Iterator[Case]:
    name = raw.get("name") if isinstance(raw, Mapping) else None
    if not isinstance(name, str) or not _NAME.match(name):
        raise CorpusError(f"{path}: case name {name!r} is not a DNS label")
    steps = tuple(_step(path, name, i, s) for i, s in enumerate(raw.get("steps") or ()))
    if not steps:
        raise CorpusError(f"{path}: case {name} has no steps")
    scoped = tuple(raw.get("cluster_scoped") or ())
    if any(s.kind == "kubectl" for s in steps):
        for minor in raw.get("minors") or KUBECTL_MINORS:
            yield Case(group, name, steps, int(minor), scoped)
    else:
        yield Case(group, name, steps, None, scoped)


def _step(path: str, case: str, index: int, raw: Any) -> Step:
    if not isinstance(raw, Mapping):
        raise CorpusError(f"{path}: case {case} step {index} is not a mapping")
    kinds = [k for k in STEP_KINDS if k in raw]
    if len(kinds) != 1:
        raise CorpusError(f"{path}: case {case} step {index}: give exactly one of {', '.join(STEP_KINDS)}")
    spec = raw[kinds[0]]
    if kinds[0] == "kubectl" and isinstance(spec, list):
        spec = {"args": spec}
    if not isinstance(spec, Mapping):
        raise CorpusError(f"{path}: case {case} step {index}: {kinds[0]} takes a mapping")
    if kinds[0] == "request" and not {"method", "path"} <= set(spec):
        raise CorpusError(f"{path}: case {case} step {index}: a request needs 'method' and 'path'")
    if kinds[0] == "kubectl" and not isinstance(spec.get("args"), list):
        raise CorpusError(f"{path}: case {case} step {index}: kubectl needs 'args', a list")
    if kinds[0] == "watch" and not {"path", "timeout"} <= set(spec):
        raise CorpusError(f"{path}: case {case} step {index}: a watch needs 'path' and 'timeout' (seconds)")
    return Step(str(raw.get("name") or f"s{index}"), kinds[0], spec)


__all__ = ["Case", "CorpusError", "KUBECTL_MINORS", "Step", "load"]
