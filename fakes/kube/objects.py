"""Load recorded Kubernetes objects, statuses included, into the Kubernetes API double (``fakes.kube``).

For specs that need a cluster in a given state (a rollout stuck on a crash loop, a pod the scheduler cannot place)
without driving controllers there: the objects are created through the double's store as a controller would write
them, and the real kubectl reads them back. Server-set metadata (uid, resourceVersion, generation, deletion stamps)
is dropped and set by the double; each object's ``creationTimestamp`` is kept by creating it with the double's clock
set to that instant. With ``end_at_now`` every timestamp of the scenario is moved so that its latest one is the
host's present (a scenario recorded hours ago then reads as if it just happened, in timelines and reports).
"""

from __future__ import annotations

import copy
import inspect
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

STORE_NAMES = {
    "Deployment": "deployments.apps",
    "StatefulSet": "statefulsets.apps",
    "ReplicaSet": "replicasets.apps",
    "Pod": "pods",
    "Event": "events",
    "ResourceQuota": "resourcequotas",
}
_SERVER_SET = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z$")


def load_objects(kd: Any, objects: list[dict[str, Any]], *, end_at_now: bool = False) -> None:
    """Create ``objects`` (any of :data:`STORE_NAMES`' kinds) in the double ``kd``, keeping their ``status`` and
    ``creationTimestamp``; their namespaces are created when missing. Raises ``KeyError`` for another kind."""
    objects = copy.deepcopy(objects)
    if end_at_now:
        latest = max((t for obj in objects for t in _stamps(obj)), default=None)
        if latest is not None:
            shift = datetime.now(UTC) - latest
            objects = [_shifted(obj, shift) for obj in objects]
    before = kd.clock.offset
    try:
        for obj in objects:
            namespace = obj["metadata"].get("namespace")
            if namespace and kd.store.get("namespaces", None, namespace) is None:
                kd.store.create("namespaces", {"metadata": {"name": namespace}})
            created = _parse(obj["metadata"].get("creationTimestamp"))
            kd.clock.set_offset(before if created is None else created.timestamp() + 0.5 - time.time())
            for key in _SERVER_SET:
                obj["metadata"].pop(key, None)
            kind = STORE_NAMES[obj["kind"]]
            kd.store.create(kind, obj, keep_status=kind != "events")
    finally:
        kd.clock.set_offset(before)


def _parse(value: Any) -> datetime | None:
    match = _STAMP.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    return datetime.fromisoformat(match[1] + (match[2] or "")).replace(tzinfo=UTC)


def _stamps(value: Any) -> Iterator[datetime]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _stamps(item)
    elif isinstance(value, list):
        for item in value:
            yield from _stamps(item)
    else:
        parsed = _parse(value)
        if parsed is not None:
            yield parsed


def _shifted(value: Any, shift: timedelta) -> Any:
    if isinstance(value, dict):
        return {k: _shifted(v, shift) for k, v in value.items()}
    if isinstance(value, list):
        return [_shifted(v, shift) for v in value]
    parsed = _parse(value)
    if parsed is None:
        return value
    moved = parsed + shift
    fraction = _STAMP.match(value)[2]  # type: ignore[index]
    return moved.strftime("%Y-%m-%dT%H:%M:%S") + (f".{moved.microsecond:06d}" if fraction else "") + "Z"


@contextmanager
def bare_double(**options: Any) -> Iterator[Any]:
    """``fakes.kube.serve(**options)`` without the simulated controllers where the double has them, so loaded
    objects keep the state they were loaded in."""
    import fakes.kube

    if "controllers" in inspect.signature(fakes.kube.serve).parameters:
        options.setdefault("controllers", False)
    with fakes.kube.serve(**options) as handle:
        yield handle
