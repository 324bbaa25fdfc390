"""The double's object store: every object, one global resourceVersion counter, watch fan-out and change feeds.

Semantics modelled on a real API server backed by etcd:

- One counter for the whole store: every write bumps it and stamps ``metadata.resourceVersion``; a list answers the
  counter as its ``metadata.resourceVersion``.
- Create sets ``uid``, ``creationTimestamp`` (whole seconds, truncated, from the double's clock; the precise instant
  is kept privately: :meth:`Store.created_at`), ``generation`` 1 for kinds that keep one, and the kind's defaults.
- Update with a stale ``metadata.resourceVersion`` is a 409 Conflict. On a kind with a ``status`` subresource, an
  update of the main resource keeps the stored ``status`` and an update of ``/status`` keeps everything but
  ``status`` (and ``metadata`` labels/annotations, which ``/status`` may change too). ``generation`` is bumped when
  anything outside ``metadata`` and ``status`` changed.
- Delete: an object with ``metadata.finalizers`` gets ``deletionTimestamp`` and stays until an update empties the
  finalizers; a pod that was scheduled (``spec.nodeName``) and is deleted with a grace period stays Terminating
  (``deletionTimestamp`` = now + grace) until :meth:`Store.remove` (the kubelet's part; controllers do it);
  anything else goes at once. Dependents (``ownerReferences`` naming the deleted uid) are deleted with it unless
  ``propagationPolicy=Orphan`` (the garbage collector's part, done synchronously here). Deleting a namespace deletes
  everything in it; deleting a CRD deletes its custom resources and stops serving its kind.
- History: the last ``history_size`` events are kept for watches from an older ``resourceVersion``; a watch from
  before them is a 410 ``Expired`` (``too old resource version: R (OLDEST)``).

Thread-safety: every method may be called from any thread (one re-entrant lock). Watchers and subscribers get
their events on the double's event loop, in resourceVersion order, via ``loop.call_soon_threadsafe``.

Extension point for controllers (``fakes/kube/controllers/``): :meth:`Store.subscribe` runs a callback on the
double's loop for each change (optionally only for some resource types); :meth:`Store.create`,
:meth:`Store.update` (``subresource="status"`` for status writes, ``bump_generation`` to force or suppress the
generation rule), :meth:`Store.mutate` (read-modify-write under the lock), :meth:`Store.delete` and
:meth:`Store.remove` write objects back; the double's :class:`~fakes.kube.clock.Timers` schedule timed work.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import secrets
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from fakes.kube import defaults
from fakes.kube.clock import Clock, rfc3339
from fakes.kube.errors import (
    STALE,
    ApiError,
    already_exists,
    bad_request,
    conflict,
    field_required,
    gone_too_old,
    invalid,
    not_found,
)
from fakes.kube.resources import Registry, ResourceType

Obj = dict[str, Any]
T = TypeVar("T")
#: Kinds whose strategy sets ``generation`` 1 on create and has no ``PrepareForUpdate`` rule bumping it
#: (``pkg/registry/scheduling/priorityclass/strategy.go``).
GENERATION_SET_ONCE = frozenset({"scheduling.k8s.io/priorityclasses"})
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: What a subscriber or watcher may queue before it is cut off (a real server drops slow watchers too).
MAX_BACKLOG = 20_000


def clone(value: T) -> T:
    """A deep copy of a JSON-shaped value (dicts, lists, scalars), faster than ``copy.deepcopy``."""
    return cast(T, _clone(value))


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


@dataclass
class StoreEvent:
    """One change: ``type`` is ``ADDED``, ``MODIFIED`` or ``DELETED``; ``object`` the new state (the last state for
    DELETED), ``old`` the previous one (``None`` for ADDED); ``rv`` the store's resourceVersion after it.
    Objects are shared between receivers: treat them as read-only (``clone`` before changing)."""

    type: str
    resource: ResourceType
    object: Obj
    old: Obj | None
    rv: int

    @property
    def namespace(self) -> str:
        return str(self.object.get("metadata", {}).get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.object.get("metadata", {}).get("name", ""))


@dataclass
class Subscription:
    """A change feed receiver; :meth:`cancel` stops delivery. ``keys`` limits it to some resource keys."""

    callback: Callable[[StoreEvent], None]
    keys: frozenset[str] | None
    store: Store
    backlog: int = 0
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        self.store._drop(self)

    def wants(self, key: str) -> bool:
        return not self.cancelled and (self.keys is None or key in self.keys)


@dataclass
class _Entry:
    obj: Obj
    created: float


@dataclass
class _Collections:
    by_key: dict[str, dict[tuple[str, str], _Entry]] = field(default_factory=dict)

    def table(self, key: str) -> dict[tuple[str, str], _Entry]:
        return self.by_key.setdefault(key, {})


class Store:
    """All objects of one double. See the module docstring for the semantics."""

    def __init__(self, registry: Registry, clock: Clock, *, history_size: int = 1000) -> None:
        self.registry = registry
        self.clock = clock
        self.history_size = history_size
        self._lock = threading.RLock()
        self._data = _Collections()
        self._rv = 0
        self._history: collections.deque[StoreEvent] = collections.deque()
        self._compacted = 0  # the rv of the newest event that fell out of the history
        self._subs: list[Subscription] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ips = defaults.ClusterIPs()
        self.reset()

    # --- lifecycle -------------------------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Deliver events on ``loop`` from now on (the server calls this at start, with ``None`` at stop)."""
        with self._lock:
            self._loop = loop

    def reset(self) -> None:
        """Forget every object and every CRD; recreate the initial namespaces (``default``, ``kube-system``, ...).
        The resourceVersion keeps counting, so a stale watch never aliases a new object."""
        with self._lock:
            self._data = _Collections()
            self._history.clear()
            self._compacted = self._rv
            self.registry.reset()
            for name in INITIAL_NAMESPACES:
                self.create("namespaces", {"metadata": {"name": name}})

    def compact(self) -> None:
        """Forget the history up to now: a watch or list from an older resourceVersion is a 410 ``Expired`` from now
        on, as on a real API server whose watch cache started now (or after an etcd compaction)."""
        with self._lock:
            self._history.clear()
            self._compacted = self._rv

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    # --- reads ---------------------------------------------------------------------------------------------

    def get(self, resource: str | ResourceType, namespace: str | None, name: str) -> Obj | None:
        """A copy of the object, or ``None``."""
        rt = self.registry.resolve(resource)
        with self._lock:
            entry = self._data.table(rt.key).get((self._ns(rt, namespace), name))
            return clone(entry.obj) if entry else None

    def require(self, resource: str | ResourceType, namespace: str | None, name: str) -> Obj:
        """A copy of the object; raises :class:`ApiError` 404 NotFound (real wording) if missing."""
        rt = self.registry.resolve(resource)
        obj = self.get(rt, namespace, name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def created_at(self, resource: str | ResourceType, namespace: str | None, name: str) -> float | None:
        """The precise creation instant (epoch seconds on the double's clock); ``creationTimestamp`` is truncated."""
        rt = self.registry.resolve(resource)
        with self._lock:
            entry = self._data.table(rt.key).get((self._ns(rt, namespace), name))
            return entry.created if entry else None

    def list(self, resource: str | ResourceType, namespace: str | None = None) -> tuple[list[Obj], int]:
        """Copies of the objects (all namespaces when ``namespace`` is None), sorted by namespace and name, and the
        store's resourceVersion at that instant."""
        rt = self.registry.resolve(resource)
        with self._lock:
            table = self._data.table(rt.key)
            items = [
                clone(e.obj)
                for (ns, _), e in sorted(table.items())
                if namespace is None or not rt.namespaced or ns == namespace
            ]
            return items, self._rv

    # --- writes --------------------------------------------------------------------------------------------

    def create(
        self,
        resource: str | ResourceType,
        obj: Obj,
        *,
        namespace: str | None = None,
        keep_status: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        """Store a new object (server-set metadata and defaults filled in) and return a copy.

        ``namespace`` defaults to ``obj.metadata.namespace``. ``keep_status``: keep the ``status`` given (a
        controller writing both at once); otherwise a kind with a status subresource starts with an empty status.
        ``dry_run``: compute and return the object without storing it (``?dryRun=All``).
        Raises :class:`ApiError`: 409 AlreadyExists, 404 for a missing namespace, 422 for a missing name.
        """
        rt = self.registry.resolve(resource)
        obj = clone(obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        ns = self._ns(rt, namespace if namespace is not None else meta.get("namespace"))
        with self._lock:
            if rt.namespaced:
                if not ns:
                    raise bad_request("the server could not find the requested resource: a namespace is required")
                if ns != meta.get("namespace", ns):
                    raise bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request"
                    )
                if self._data.table("/namespaces").get(("", ns)) is None:
                    raise not_found("namespaces", "", ns)
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            if rt.key == "/pods":
                defaults.service_account_admission(obj, ns, lambda sa: self._stored("/serviceaccounts", ns, sa))
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generate_name(rt, ns, str(meta["generateName"]))
            name = meta.get("name")
            if not name:
                raise invalid(
                    rt.kind, rt.group, "", [field_required("metadata.name", "name or generateName is required")]
                )
            table = self._data.table(rt.key)
            if (ns, name) in table:
                raise already_exists(rt.plural, rt.group, name)
            now = self.clock.time()
            for server_owned in (
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "selfLink",
            ):
                meta.pop(server_owned, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = rfc3339(now)
            if rt.has_generation:
                meta["generation"] = 1
            if rt.status_subresource and not keep_status and rt.key not in ("/pods", "/namespaces"):
                obj.pop("status", None)
            obj.setdefault("apiVersion", rt.api_version)
            obj.setdefault("kind", rt.kind)
            defaults.apply_defaults(rt.key, obj, self._ips)
            if rt.key == "batch/jobs":
                defaults.job_selector(obj)
            if rt.key == "apiextensions.k8s.io/customresourcedefinitions":
                self._accept_crd(obj)
            if dry_run:
                return clone(obj)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            table[(ns, name)] = _Entry(obj, now)
            if rt.key == "apiextensions.k8s.io/customresourcedefinitions":
                self.registry.set_crd(obj)
            self._emit("ADDED", rt, obj, None)
            return clone(obj)

    def update(
        self,
        resource: str | ResourceType,
        obj: Obj,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        bump_generation: bool | None = None,
        check_version: bool = True,
        dry_run: bool = False,
    ) -> Obj:
        """Replace the stored object with ``obj`` and return a copy of the result.

        ``subresource="status"`` writes only ``status`` (plus labels/annotations). ``bump_generation``: ``None``
        applies the real rule (bump when anything outside metadata and status changed), ``True``/``False`` force
        it. ``check_version``: a ``metadata.resourceVersion`` that is not the stored one is a 409 Conflict (an
        empty one skips the check, as on a real server for kinds that allow unconditional update). ``dry_run``:
        return the result without storing it. Raises :class:`ApiError` 404 / 409.
        """
        rt = self.registry.resolve(resource)
        obj = clone(obj)
        meta = obj.setdefault("metadata", {})
        ns = self._ns(rt, namespace if namespace is not None else meta.get("namespace"))
        name = str(meta.get("name", ""))
        with self._lock:
            table = self._data.table(rt.key)
            entry = table.get((ns, name))
            if entry is None:
                raise not_found(rt.plural, rt.group, name)
            old = entry.obj
            sent_rv = meta.get("resourceVersion")
            if check_version and sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name, STALE)
            new = self._merge_for_update(rt, old, obj, subresource)
            defaults.status_defaults(rt.key, new)
            if subresource is None:
                if rt.key == "/services" and not (new.get("spec") or {}).get("clusterIP"):
                    old_ip = (old.get("spec") or {}).get("clusterIP")
                    if old_ip and isinstance(new.get("spec"), dict):
                        new["spec"]["clusterIP"] = old_ip
                defaults.apply_defaults(rt.key, new, self._ips)
            if rt.key == "apiextensions.k8s.io/customresourcedefinitions":
                self._accept_crd(new)
            if new == old:
                return clone(old)  # a no-op write does not bump the resourceVersion (as on a real server)
            if rt.has_generation and self._bumps(rt, old, new, bump_generation, subresource):
                new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
            if dry_run:
                return clone(new)
            self._rv += 1
            new["metadata"]["resourceVersion"] = str(self._rv)
            if (
                new["metadata"].get("deletionTimestamp")
                and not new["metadata"].get("finalizers")
                and not self._awaits_kubelet(rt, new)
            ):
                del table[(ns, name)]
                self._emit("DELETED", rt, new, old)
                self._after_removal(rt, new, orphan=False)
                return clone(new)
            entry.obj = new
            if rt.key == "apiextensions.k8s.io/customresourcedefinitions":
                self.registry.set_crd(new)
            self._emit("MODIFIED", rt, new, old)
            return clone(new)

    def mutate(
        self,
        resource: str | ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[Obj], Obj | None],
        *,
        subresource: str | None = None,
        bump_generation: bool | None = None,
    ) -> Obj:
        """Read-modify-write under the store lock: ``change(obj)`` edits a copy in place (or returns a new one);
        the result is written with :meth:`update` semantics. Raises :class:`ApiError` 404 if missing."""
        rt = self.registry.resolve(resource)
        with self._lock:
            current = self.require(rt, namespace, name)
            changed = change(current)
            return self.update(
                rt,
                changed if changed is not None else current,
                namespace=namespace,
                subresource=subresource,
                bump_generation=bump_generation,
                check_version=False,
            )

    def delete(
        self,
        resource: str | ResourceType,
        namespace: str | None,
        name: str,
        *,
        grace_seconds: int | None = None,
        propagation: str = "Background",
        precondition_uid: str | None = None,
        precondition_rv: str | None = None,
        dry_run: bool = False,
    ) -> tuple[Obj, bool]:
        """Delete as a real server does (see the module docstring). Returns ``(object, gone)``: ``gone`` False
        when the object stays (finalizers, a terminating pod). ``dry_run``: every check runs and the answer is the
        one a real delete would give, but nothing is written and no dependent is touched (the registry's dry-run
        path, apiserver ``pkg/registry/generic/registry/store.go``). Raises :class:`ApiError` 404 / 409
        (precondition, worded as the storage layer's ``Preconditions.Check``)."""
        rt = self.registry.resolve(resource)
        ns = self._ns(rt, namespace)
        with self._lock:
            table = self._data.table(rt.key)
            entry = table.get((ns, name))
            if entry is None:
                raise not_found(rt.plural, rt.group, name)
            old = entry.obj
            meta = old["metadata"]
            if precondition_uid is not None and precondition_uid != meta.get("uid"):
                raise precondition_failed(
                    rt, ns, name, f"UID in precondition: {precondition_uid}, UID in object meta: {meta.get('uid')}"
                )
            if precondition_rv is not None and precondition_rv != meta.get("resourceVersion"):
                raise precondition_failed(
                    rt,
                    ns,
                    name,
                    f"ResourceVersion in precondition: {precondition_rv}, "
                    f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
                )
            grace = self._grace(rt, old, grace_seconds)
            if meta.get("finalizers") or (grace > 0 and self._awaits_kubelet(rt, old)) or rt.key == "/namespaces":
                if dry_run:
                    return self._terminating(rt, old, grace), False
                return self._mark_terminating(rt, entry, grace, propagation), False
            if dry_run:
                return clone(old), True
            del table[(ns, name)]
            self._rv += 1
            gone = clone(old)
            gone["metadata"]["resourceVersion"] = str(self._rv)
            self._emit("DELETED", rt, gone, old)
            self._after_removal(rt, gone, orphan=propagation == "Orphan")
            return clone(gone), True

    def remove(self, resource: str | ResourceType, namespace: str | None, name: str) -> Obj | None:
        """Remove the object now, whatever its finalizers or grace period (the kubelet's final delete, a forced
        delete). Returns its last state, or ``None`` if it was already gone."""
        rt = self.registry.resolve(resource)
        ns = self._ns(rt, namespace)
        with self._lock:
            entry = self._data.table(rt.key).pop((ns, name), None)
            if entry is None:
                return None
            self._rv += 1
            gone = clone(entry.obj)
            gone["metadata"]["resourceVersion"] = str(self._rv)
            self._emit("DELETED", rt, gone, entry.obj)
            self._after_removal(rt, gone, orphan=False)
            return clone(gone)

    # --- watch support -------------------------------------------------------------------------------------

    def history_since(self, rv: int, keys: Iterable[str]) -> builtins.list[StoreEvent]:
        """Events after ``rv`` for ``keys``; raises :class:`ApiError` 410 Expired if the history no longer reaches
        back to ``rv``. Call under :meth:`locked` together with :meth:`subscribe` to get a gapless feed."""
        wanted = set(keys)
        with self._lock:
            if rv < self._compacted:
                raise gone_too_old(rv, self._compacted + 1)
            return [e for e in self._history if e.rv > rv and e.resource.key in wanted]

    @property
    def subscriber_count(self) -> int:
        """How many change feeds are open (watches and controllers): a closed watch must not leave one behind."""
        with self._lock:
            return len(self._subs)

    def locked(self) -> threading.RLock:
        """The store lock (``with store.locked():``) to make a snapshot and a subscription atomic."""
        return self._lock

    def subscribe(
        self,
        callback: Callable[[StoreEvent], None],
        resources: Iterable[str | ResourceType] | None = None,
    ) -> Subscription:
        """Call ``callback(event)`` on the double's event loop for every later change (of ``resources`` only, when
        given). Raises ``RuntimeError`` if the double is not serving (no loop to run callbacks on)."""
        keys = None if resources is None else frozenset(self._key_of(r) for r in resources)
        with self._lock:
            if self._loop is None:
                raise RuntimeError("the double is not serving: subscribe after serve() started")
            sub = Subscription(callback, keys, self)
            self._subs.append(sub)
            return sub

    # --- internals -----------------------------------------------------------------------------------------

    def _key_of(self, resource: str | ResourceType) -> str:
        """A collection key: ``"apps/deployments"`` as is (also for a CRD not created yet), else resolved."""
        if isinstance(resource, ResourceType):
            return resource.key
        if any(t.key == resource for t in self.registry.all()):
            return resource
        try:
            return self.registry.resolve(resource).key
        except KeyError:
            if resource.count("/") == 1:
                return resource
            raise

    def _drop(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def _emit(self, kind: str, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        event = StoreEvent(kind, rt, clone(obj), old, self._rv)
        self._history.append(event)
        while len(self._history) > self.history_size:
            self._compacted = self._history.popleft().rv
        loop = self._loop
        if loop is None:
            return
        for sub in list(self._subs):
            if not sub.wants(rt.key):
                continue
            sub.backlog += 1
            if sub.backlog > MAX_BACKLOG:
                sub.cancelled = True
                self._subs.remove(sub)
                continue
            try:
                loop.call_soon_threadsafe(self._deliver, sub, event)
            except RuntimeError:  # the loop closed under us: the double is stopping
                return

    @staticmethod
    def _deliver(sub: Subscription, event: StoreEvent) -> None:
        sub.backlog -= 1
        if not sub.cancelled:
            sub.callback(event)

    @staticmethod
    def _ns(rt: ResourceType, namespace: Any) -> str:
        return str(namespace or "") if rt.namespaced else ""

    def _stored(self, key: str, ns: str, name: str) -> Obj | None:
        entry = self._data.table(key).get((ns, name))
        return entry.obj if entry is not None else None

    def _generate_name(self, rt: ResourceType, ns: str, prefix: str) -> str:
        alphabet = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's: no vowels, no confusable digits
        table = self._data.table(rt.key)
        for _ in range(100):
            name = prefix[:58] + "".join(secrets.choice(alphabet) for _ in range(5))
            if (ns, name) not in table:
                return name
        raise already_exists(rt.plural, rt.group, prefix)

    @staticmethod
    def _merge_for_update(rt: ResourceType, old: Obj, sent: Obj, subresource: str | None) -> Obj:
        new = clone(sent)
        meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
        for kept in (
            "uid",
            "creationTimestamp",
            "namespace",
            "name",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        new["apiVersion"] = old.get("apiVersion", rt.api_version)
        new["kind"] = old.get("kind", rt.kind)
        if subresource == "status":
            merged = clone(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            for name in ("labels", "annotations"):
                if name in meta:
                    merged["metadata"][name] = meta[name]
            return merged
        if rt.status_subresource:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        return new

    @staticmethod
    def _bumps(rt: ResourceType, old: Obj, new: Obj, forced: bool | None, subresource: str | None) -> bool:
        if forced is not None:
            return forced
        if subresource is not None or rt.key in GENERATION_SET_ONCE:
            return False
        strip = ("metadata", "status")
        return {k: v for k, v in old.items() if k not in strip} != {k: v for k, v in new.items() if k not in strip}

    @staticmethod
    def _grace(rt: ResourceType, obj: Obj, requested: int | None) -> int:
        if requested is not None:
            return max(0, int(requested))
        if rt.key == "/pods":
            return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30) or 0)
        return 0

    @staticmethod
    def _awaits_kubelet(rt: ResourceType, obj: Obj) -> bool:
        """A pod bound to a node ends through its kubelet, so a graceful delete leaves it Terminating."""
        phase = (obj.get("status") or {}).get("phase")
        return (
            rt.key == "/pods" and bool((obj.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed")
        )

    def _terminating(self, rt: ResourceType, old: Obj, grace: int) -> Obj:
        """``old`` as a graceful delete leaves it (a copy: nothing stored)."""
        new = clone(old)
        meta = new["metadata"]
        # the first delete sets the grace period; a later one with a shorter grace period wins
        if not meta.get("deletionTimestamp") or grace < int(meta.get("deletionGracePeriodSeconds") or 0):
            meta["deletionTimestamp"] = rfc3339(self.clock.time() + grace)
            meta["deletionGracePeriodSeconds"] = grace
        if rt.key == "/namespaces":
            new.setdefault("status", {})["phase"] = "Terminating"
        return new

    def _mark_terminating(self, rt: ResourceType, entry: _Entry, grace: int, propagation: str) -> Obj:
        old = entry.obj
        new = self._terminating(rt, old, grace)
        meta = new["metadata"]
        if new == old:
            return clone(old)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        entry.obj = new
        self._emit("MODIFIED", rt, new, old)
        if rt.key == "/namespaces":
            self._empty_namespace(str(meta["name"]))
            self.remove(rt, None, str(meta["name"]))
        return clone(new)

    def _empty_namespace(self, namespace: str) -> None:
        for rt in self.registry.all():
            if not rt.namespaced:
                continue
            for ns, name in list(self._data.table(rt.key)):
                if ns == namespace:
                    self.remove(rt, ns, name)

    def _after_removal(self, rt: ResourceType, gone: Obj, *, orphan: bool) -> None:
        if rt.key == "apiextensions.k8s.io/customresourcedefinitions":
            self._drop_crd(gone)
        uid = gone["metadata"].get("uid")
        if not uid:
            return
        seen: set[str] = set()
        for other in self.registry.all():
            if other.key in seen:
                continue
            seen.add(other.key)
            table = self._data.table(other.key)
            for (ns, name), entry in list(table.items()):
                refs = entry.obj["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == uid for r in refs):
                    continue
                if orphan:

                    def drop_ref(o: Obj) -> None:
                        o["metadata"]["ownerReferences"] = [
                            r for r in o["metadata"]["ownerReferences"] if r.get("uid") != uid
                        ]

                    self.mutate(other, ns, name, drop_ref)
                elif (ns, name) in table:
                    self.delete(other, ns, name)

    def _drop_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        key = f"{spec.get('group', '')}/{(spec.get('names') or {}).get('plural', '')}"
        table = self._data.by_key.pop(key, {})
        rt = self.registry.by_key(key)
        if rt is not None:
            for entry in table.values():
                self._rv += 1
                gone = clone(entry.obj)
                gone["metadata"]["resourceVersion"] = str(self._rv)
                self._emit("DELETED", rt, gone, entry.obj)
        self.registry.remove_crd(str(crd["metadata"]["name"]))

    def _accept_crd(self, crd: Obj) -> None:
        """A CRD is Established at once (a real server takes a moment): status.acceptedNames and conditions."""
        names = (crd.get("spec") or {}).get("names") or {}
        now = rfc3339(self.clock.time())
        status = crd.setdefault("status", {})
        status["acceptedNames"] = {
            k: v
            for k, v in names.items()
            if k in ("plural", "singular", "kind", "listKind", "shortNames", "categories")
        }
        status["acceptedNames"].setdefault("listKind", f"{names.get('kind', '')}List")
        status["storedVersions"] = [
            v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, dict) and v.get("storage")
        ]
        old = {c.get("type"): c for c in status.get("conditions") or []}
        status["conditions"] = [
            old.get("NamesAccepted")
            or {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            old.get("Established")
            or {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ]
        if not names.get("plural") or not names.get("kind"):
            raise invalid(
                "CustomResourceDefinition",
                "apiextensions.k8s.io",
                str(crd["metadata"].get("name", "")),
                [field_required("spec.names.plural" if not names.get("plural") else "spec.names.kind")],
            )


def storage_key(rt: ResourceType, namespace: str, name: str) -> str:
    """The etcd key a real apiserver keeps the object under (``/registry/<resource>/[<ns>/]<name>``; custom
    resources and API-extension kinds prefixed with their group, Services under ``services/specs``): storage errors
    quote it."""
    resource = rt.plural
    if rt.key == "/services":
        resource = "services/specs"
    elif rt.custom or rt.group == "apiextensions.k8s.io":
        resource = f"{rt.group}/{rt.plural}"
    return "/".join(["/registry", resource, *([namespace] if namespace else []), name])


def precondition_failed(rt: ResourceType, namespace: str, name: str, detail: str) -> ApiError:
    """409 for a precondition that does not hold, in the apiserver's words: the storage layer's ``StorageError``
    (code 4, invalid object) wrapped in a Conflict (apiserver ``pkg/storage/interfaces.go`` ``Preconditions.Check``,
    ``pkg/storage/errors/storage.go`` ``InterpretDeleteError``)."""
    return conflict(
        rt.plural,
        rt.group,
        name,
        f"StorageError: invalid object, Code: 4, Key: {storage_key(rt, namespace, name)}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: {detail}",
    )


def require_object(body: Any) -> Obj:
    """``body`` as an object, or a 400 like the decoder's when it is not a JSON object."""
    if not isinstance(body, dict):
        raise ApiError(
            400,
            "BadRequest",
            f"the object provided is unrecognized (must be of type Object): "
            f"couldn't get version/kind; json parse error: expected an object, got {type(body).__name__}",
        )
    return body
