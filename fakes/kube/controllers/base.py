"""What every simulated controller shares: a context (double, store, clock, timers, event recorder) and a
level-triggered reconcile queue on the double's event loop.

A controller is a :class:`Reconciler`: it subscribes to some collections of the store, maps each change to the keys
``(namespace, name)`` of the objects it must look at again (:meth:`Reconciler.keys_for`), and :meth:`Reconciler.sync`
reads the *current* state from the store and writes what should change. Keys are deduplicated and synced in a batch
on the loop (like client-go's work queue), so a burst of pod events costs one sync per owner. A sync that hits a
409 Conflict or a 404 (someone wrote in between) is retried shortly; any other exception is logged with its
traceback and retried after a second, at most :data:`MAX_FAILURES` times in a row.

Everything here runs on the double's loop (store callbacks and timers are delivered there), so controllers keep
plain dicts without locks. Code on other threads reaches them through :meth:`ControllerContext.on_loop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from fakes.kube.clock import Clock, TimerHandle, Timers, parse_rfc3339
from fakes.kube.controllers.events import NORMAL
from fakes.kube.errors import ApiError
from fakes.kube.resources import server_minor
from fakes.kube.store import Store, StoreEvent

if TYPE_CHECKING:
    from fakes.kube.controllers.events import EventRecorder
    from fakes.kube.double import KubeDouble

log = logging.getLogger("fakes.kube.controllers")
Obj = dict[str, Any]
Key = tuple[str, str]
T = TypeVar("T")

#: Consecutive failed syncs of one key before the controller gives up on it until its next change.
MAX_FAILURES = 5
RETRY_CONFLICT = 0.02  # seconds before a sync that met a 409/404 runs again
RETRY_ERROR = 1.0  # seconds before a sync that raised runs again


class ControllerContext:
    """The double as controllers see it. ``minor`` is the Kubernetes minor version the double reports (32 for
    ``v1.32.4``): some messages and fields differ between versions, as they do on real clusters."""

    def __init__(self, double: KubeDouble, recorder: EventRecorder) -> None:
        self.double = double
        self.recorder = recorder
        self.minor = server_minor(double.git_version)
        self._epoch = 0  # bumped by reset: timers from before it do nothing

    @property
    def store(self) -> Store:
        return self.double.store

    @property
    def clock(self) -> Clock:
        return self.double.clock

    @property
    def timers(self) -> Timers:
        if self.double.timers is None:
            raise RuntimeError("the double is not serving: controllers need its loop")
        return self.double.timers

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self.double.loop is None:
            raise RuntimeError("the double is not serving: controllers need its loop")
        return self.double.loop

    def now(self) -> float:
        """The double's clock, epoch seconds."""
        return self.clock.time()

    def on_loop_thread(self) -> bool:
        loop = self.double.loop
        try:
            return loop is not None and asyncio.get_running_loop() is loop
        except RuntimeError:  # no loop running in this thread
            return False

    def on_loop(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``fn()`` on the double's loop and return its result (directly when already there; bounded wait
        otherwise). Raises ``concurrent.futures.TimeoutError`` after ``timeout`` seconds."""
        if self.on_loop_thread() or self.double.loop is None:
            return fn()
        result: T = self.double.call_on_loop(fn, timeout)
        return result

    def soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the loop after the current callback (from any thread; never blocks)."""
        loop = self.double.loop
        if loop is None or loop.is_closed():
            return
        if self.on_loop_thread():
            loop.call_soon(fn)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the double is stopping
                loop.call_soon_threadsafe(fn)

    def later(self, seconds: float, fn: Callable[[], None]) -> TimerHandle:
        """Run ``fn()`` on the loop ``seconds`` from now on the double's clock (``kd.clock.advance`` hurries it).
        A reset of the double cancels it (the callback then does nothing)."""
        epoch = self._epoch

        def guarded() -> None:
            if epoch == self._epoch:
                fn()

        return self.timers.call_later(max(0.0, seconds), guarded)

    def reset(self) -> None:
        self._epoch += 1


class Reconciler:
    """A controller: ``watches`` (store collection keys), :meth:`keys_for` and :meth:`sync`. See the module
    docstring."""

    #: The controller's name (its events' ``source.component``).
    name = "controller"
    #: Store collection keys whose changes reach :meth:`keys_for`.
    watches: tuple[str, ...] = ()

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._dirty: set[Key] = set()
        self._draining = False
        self._timers: dict[Key, tuple[float, TimerHandle]] = {}
        self._failures: dict[Key, int] = {}

    @property
    def store(self) -> Store:
        return self.ctx.store

    def start(self) -> None:
        self.ctx.store.subscribe(self._on_event, list(self.watches))

    def delete_pod(self, owner: Obj, pod: Obj, message: str | None = None) -> None:
        """Delete ``owner``'s ``pod`` and record ``SuccessfulDelete`` on ``owner`` (``message``, default ``Deleted
        pod: NAME`` as the ReplicaSet, DaemonSet and Job controllers write it); a pod already gone is neither an
        error nor an event."""
        try:
            self.store.delete("pods", meta(pod)["namespace"], meta(pod)["name"])
        except ApiError as exc:
            if exc.code != 404:
                raise
            return
        said = message or f"Deleted pod: {meta(pod)['name']}"
        self.ctx.recorder.record(owner, NORMAL, "SuccessfulDelete", said, component=self.name)

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        raise NotImplementedError

    def sync(self, namespace: str, name: str) -> None:
        raise NotImplementedError

    # --- the queue ----------------------------------------------------------------------------------------

    def enqueue(self, namespace: str, name: str) -> None:
        """Sync ``(namespace, name)`` soon (deduplicated). Callable from the loop only."""
        self._dirty.add((namespace, name))
        if not self._draining:
            self._draining = True
            self.ctx.loop.call_soon(self._drain)

    def requeue_after(self, namespace: str, name: str, seconds: float) -> None:
        """Sync ``(namespace, name)`` again ``seconds`` from now on the double's clock (the earliest request
        wins)."""
        key = (namespace, name)
        due = self.ctx.now() + max(0.0, seconds)
        current = self._timers.get(key)
        if current is not None and current[0] <= due and not current[1].cancelled:
            return
        if current is not None:
            current[1].cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            self.enqueue(*key)

        self._timers[key] = (due, self.ctx.later(seconds, fire))

    def reset(self) -> None:
        """Forget queued keys and timers (the double was reset)."""
        self._dirty.clear()
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._failures.clear()

    def _on_event(self, event: StoreEvent) -> None:
        try:
            for key in self.keys_for(event):
                self.enqueue(*key)
        except Exception:  # a bug here must not stop the store's deliveries
            log.exception("%s: mapping %s %s/%s failed", self.name, event.type, event.namespace, event.name)

    def _drain(self) -> None:
        self._draining = False
        keys, self._dirty = sorted(self._dirty), set()
        for key in keys:
            self._sync_one(key)

    def _sync_one(self, key: Key) -> None:
        try:
            self.sync(*key)
        except ApiError as exc:
            if exc.code in (404, 409):
                self._retry(key, RETRY_CONFLICT, exc)
            else:
                self._retry(key, RETRY_ERROR, exc)
        except Exception as exc:
            log.exception("%s: sync of %s/%s failed", self.name, *key)
            self._retry(key, RETRY_ERROR, exc)
        else:
            self._failures.pop(key, None)

    def _retry(self, key: Key, seconds: float, exc: Exception) -> None:
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        if failures > MAX_FAILURES:
            log.warning("%s: giving up on %s/%s after %d failed syncs (last: %s)", self.name, *key, MAX_FAILURES, exc)
            self._failures.pop(key, None)
            return
        self.requeue_after(key[0], key[1], seconds)


# --- object helpers -----------------------------------------------------------------------------------------


def meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def spec(obj: Obj) -> Obj:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def status(obj: Obj) -> Obj:
    value = obj.get("status")
    return value if isinstance(value, dict) else {}


def controller_of(obj: Obj | None) -> Obj | None:
    """The ``ownerReferences`` entry with ``controller: true``, or ``None``."""
    if not obj:
        return None
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_keys(event: StoreEvent, kind: str) -> Iterable[Key]:
    """The ``(namespace, name)`` of the ``kind`` controller of the event's object (old and new state)."""
    seen: set[str] = set()
    for obj in (event.object, event.old):
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == kind and ref.get("name") and ref["name"] not in seen:
            seen.add(ref["name"])
            yield event.namespace, str(ref["name"])


def owned_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == meta(owner).get("uid")


def owner_reference(owner: Obj, api_version: str, kind: str) -> Obj:
    """A controller ``ownerReferences`` entry pointing at ``owner`` (what real controllers set on what they
    create)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta(owner).get("name", ""),
        "uid": meta(owner).get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def condition(obj_status: Obj, kind: str) -> Obj | None:
    for cond in obj_status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def timestamp(value: Any) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp, or ``None``."""
    if not value:
        return None
    try:
        return parse_rfc3339(str(value))
    except ValueError:
        return None


def drop_zeros(values: Obj, keep: Iterable[str] = ()) -> Obj:
    """``values`` without integer fields equal to 0 (Go's ``omitempty``), except the ``keep`` ones."""
    kept = set(keep)
    return {
        k: v for k, v in values.items() if k in kept or not (isinstance(v, int) and not isinstance(v, bool) and v == 0)
    }


def int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: ``"25%"`` of ``total`` rounded up or down, or an int as is."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError:
            return 0
        scaled = percent * total
        return -(-scaled // 100) if round_up else scaled // 100
    try:
        return int(text)
    except ValueError:
        return 0
