"""Events as a real cluster writes them: core ``v1`` Event objects in the involved object's namespace.

Two recorders exist on a real cluster and their events look different; both are modelled because ``kubectl get
events --sort-by=.lastTimestamp`` and ``kubectl describe`` show the difference:

- the legacy recorder (client-go ``tools/record``: kubelet, deployment, replicaset, statefulset and job
  controllers): ``firstTimestamp``/``lastTimestamp`` (whole seconds), ``count``, ``source.component`` (and
  ``source.host`` for the kubelet), ``reportingComponent``/``reportingInstance`` copied from the source,
  ``eventTime: null``. A repeat of the same event (same source, object, field path, type, reason and message) is
  not a new object: the existing one gets ``count + 1`` and a new ``lastTimestamp`` (the recorder's
  ``EventCorrelator``), which is what ``x5 over 2m`` in ``kubectl describe`` reads;
- the ``events.k8s.io/v1`` recorder (the scheduler: ``Scheduled``, ``FailedScheduling``): ``eventTime``
  (microseconds), ``action``, ``reportingComponent: default-scheduler``, empty ``source``, and ``firstTimestamp``,
  ``lastTimestamp`` and ``count`` unset; a repeat bumps ``series.count`` and ``series.lastObservedTime``. (Such
  events sort first under ``--sort-by=.lastTimestamp``, as on a real cluster.)

Names are ``<object name>.<hex nanoseconds>`` on the double's clock. Every timestamp comes from the double's clock.
Sources: client-go ``tools/record/event.go`` and ``events_cache.go``, ``tools/events/event_recorder.go``.

Not modelled: the correlator's aggregation of *similar* events (10 within 10 minutes become ``(combined from
similar events)``), its rate limit, and the one-hour event TTL.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from fakes.kube.clock import Clock, rfc3339, rfc3339_micro
from fakes.kube.errors import ApiError
from fakes.kube.store import Store

log = logging.getLogger("fakes.kube.controllers")
Obj = dict[str, Any]
NORMAL = "Normal"
WARNING = "Warning"


class EventRecorder:
    """Writes core v1 Events for the simulated components (see the module docstring). Thread-safe: controllers call
    it on the double's loop, specs and other fakes may call it from any thread."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._last_nanos = 0
        self._index: dict[tuple[Any, ...], tuple[str, str]] = {}  # correlation key -> (namespace, event name)
        self._lock = threading.RLock()  # one recording at a time, so a repeat never races its first

    def record(
        self, obj: Obj, type_: str, reason: str, message: str, *, component: str, host: str = "", field_path: str = ""
    ) -> None:
        """A legacy-recorder event about ``obj`` (any object with ``apiVersion``, ``kind`` and ``metadata``).
        ``component`` is the source (``kubelet``, ``deployment-controller``...), ``host`` the node for the
        kubelet, ``field_path`` e.g. ``spec.containers{app}``. A repeat bumps ``count``."""
        ref = _reference(obj, field_path)
        key = (
            "legacy",
            component,
            host,
            ref["kind"],
            ref["namespace"],
            ref["name"],
            ref["uid"],
            ref["apiVersion"],
            field_path,
            type_,
            reason,
            message,
        )
        now = self.clock.time()

        def bump(event: Obj) -> None:
            event["count"] = int(event.get("count") or 1) + 1
            event["lastTimestamp"] = rfc3339(now)

        with self._lock:
            if not self._bump_existing(key, bump):
                self._create(key, self._legacy(ref, type_, reason, message, component, host, now))

    def _legacy(self, ref: Obj, type_: str, reason: str, message: str, component: str, host: str, now: float) -> Obj:
        source: Obj = {"component": component}
        if host:
            source["host"] = host
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self._name(ref["name"], now), "namespace": ref["namespace"]},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": source,
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "count": 1,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host,
        }
        return event

    def record_new_api(
        self,
        obj: Obj,
        type_: str,
        reason: str,
        message: str,
        *,
        action: str,
        controller: str = "default-scheduler",
        instance: str = "",
    ) -> None:
        """An ``events.k8s.io/v1``-style event (the scheduler's): ``eventTime``, ``action``, no
        ``lastTimestamp``/``count``; a repeat bumps ``series``."""
        ref = _reference(obj, "")
        key = (
            "new",
            controller,
            instance,
            ref["kind"],
            ref["namespace"],
            ref["name"],
            ref["uid"],
            type_,
            reason,
            action,
            message,
        )
        now = self.clock.time()

        def bump(event: Obj) -> None:
            series = event.get("series")
            count = int(series.get("count") or 1) if isinstance(series, dict) else 1
            event["series"] = {"count": count + 1, "lastObservedTime": rfc3339_micro(now)}

        with self._lock:
            if self._bump_existing(key, bump):
                return
            self._create(key, self._new_api(ref, type_, reason, message, action, controller, instance, now))

    def _new_api(
        self, ref: Obj, type_: str, reason: str, message: str, action: str, controller: str, instance: str, now: float
    ) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self._name(ref["name"], now), "namespace": ref["namespace"]},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
            "eventTime": rfc3339_micro(now),
            "action": action,
            "reportingComponent": controller,
            "reportingInstance": instance or controller,
        }

    def reset(self) -> None:
        with self._lock:
            self._index.clear()

    # --- internals ----------------------------------------------------------------------------------------------

    def _name(self, obj_name: str, now: float) -> str:
        nanos = max(int(now * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{obj_name}.{nanos:x}"

    def _bump_existing(self, key: tuple[Any, ...], bump: Any) -> bool:
        where = self._index.get(key)
        if where is None:
            return False
        try:
            self.store.mutate("events", where[0], where[1], bump)
            return True
        except ApiError:  # deleted meanwhile: record a new one
            self._index.pop(key, None)
            return False

    def _create(self, key: tuple[Any, ...], event: Obj) -> None:
        try:
            created = self.store.create("events", event)
        except ApiError as exc:  # e.g. the namespace is being deleted: a real recorder drops it too
            log.debug("event %s %s not recorded: %s", event["reason"], event["involvedObject"]["name"], exc)
            return
        self._index[key] = (created["metadata"]["namespace"], created["metadata"]["name"])


def _reference(obj: Obj, field_path: str) -> Obj:
    meta = obj.get("metadata") or {}
    ref: Obj = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace") or "default",
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return ref
