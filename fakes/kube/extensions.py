"""Extension points: where streaming subresources, port mappings and exec handlers plug into the double.

Four small registries, all on :class:`~fakes.kube.double.KubeDouble` (``double.subresources``,
``double.ports``, ``double.exec_handlers``, ``double.local_runs``):

**Subresource handlers** (:class:`SubresourceHandlers`). ``double.subresources.register("pods", "portforward",
handler)`` makes every request to ``.../pods/<name>/portforward`` (any method; GET and POST alike, upgrades
included) call ``await handler(ctx)`` with a :class:`SubresourceContext`: the aiohttp request, the double, the
resolved resource type, namespace, name, subresource and the current object (already fetched: a missing object is
a 404 before the handler runs). The handler returns an aiohttp ``StreamResponse`` (a ``WebSocketResponse``, a
chunked ``StreamResponse`` or a plain ``Response``) or raises :class:`~fakes.kube.errors.ApiError` for a
``Status`` answer. Handlers run on the double's event loop: never block it (use ``asyncio.to_thread`` for blocking
work). Long-lived handlers must end when the client goes away (aiohttp does not cancel them by itself for every
transport: check ``request.transport is None or request.transport.is_closing()``, or wait on ``ctx.stopping``)
and when the double stops (``ctx.stopping``, an ``asyncio.Event``; ``ctx.track(closer)`` registers an async
closer the double awaits, bounded, at stop). Built in: ``status`` and ``scale`` (generic, override by registering
the same name), ``log`` answers 400 until a handler is registered. ``register("*", "status", h)`` applies to
every resource type.

**Port mappings** (:class:`PortMap`): per pod (namespace, pod name), container port to a local ``(host, port)``
that a port-forward connects to. Filled from Python (``double.ports.map(ns, pod, 8090, "127.0.0.1", 5123)``) or by
the port-forward code from pod-template annotations; ``double.ports.target(ns, pod, 8090)`` reads it.

**Exec handlers** (:class:`ExecHandlers`): per pod (namespace, pod name or ``*``), a callable the exec code runs for
``kubectl exec``; the calling convention is the exec module's (``fakes/kube/exec.py``). ``set``/``get``/``clear``.

**Local runs** (:class:`LocalRuns`): per container of a pod of the local-process contract
(:mod:`fakes.kube.local_process`), the :class:`~fakes.kube.local_process.Launch` of its running process, kept by the
kubelet (:mod:`fakes.kube.lifecycle`) while it runs; ``kubectl exec`` runs its command with that environment and
working directory.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fakes.kube.resources import ResourceType

if TYPE_CHECKING:
    from fakes.kube.double_core import DoubleCore as KubeDouble  # the double imports this module: no import back
    from fakes.kube.local_process import Launch


@dataclass
class SubresourceContext:
    """Everything a subresource handler needs for one request."""

    request: web.Request
    double: KubeDouble
    resource: ResourceType
    namespace: str
    name: str
    subresource: str
    object: dict[str, Any]

    @property
    def stopping(self) -> asyncio.Event:
        """Set when the double begins to stop: streams must end."""
        return self.double.stopping

    def track(self, closer: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        """Register ``closer`` to be awaited (bounded) when the double stops; returns an untrack function."""
        return self.double.track_stream(closer)

    def client_gone(self) -> bool:
        """True once the client's connection is closing or closed."""
        transport = self.request.transport
        return transport is None or transport.is_closing()


SubresourceHandler = Callable[[SubresourceContext], Awaitable[web.StreamResponse]]


class SubresourceHandlers:
    """``(resource plural or "*", subresource) -> handler``. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: dict[tuple[str, str], SubresourceHandler] = {}

    def register(self, resource: str, subresource: str, handler: SubresourceHandler) -> None:
        """Serve ``<resource>/<name>/<subresource>`` with ``handler`` (``resource`` is the plural, e.g. ``pods``,
        or a collection key such as ``apps/deployments``, or ``*``)."""
        with self._lock:
            self._handlers[(resource, subresource)] = handler

    def unregister(self, resource: str, subresource: str) -> None:
        with self._lock:
            self._handlers.pop((resource, subresource), None)

    def find(self, rt: ResourceType, subresource: str) -> SubresourceHandler | None:
        with self._lock:
            for key in ((rt.key, subresource), (rt.plural, subresource), ("*", subresource)):
                if key in self._handlers:
                    return self._handlers[key]
        return None


@dataclass
class PortMap:
    """``(namespace, pod) -> {container port: (host, port)}``. Thread-safe."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _targets: dict[tuple[str, str], dict[int, tuple[str, int]]] = field(default_factory=dict)

    def map(self, namespace: str, pod: str, container_port: int, host: str, port: int) -> None:
        with self._lock:
            self._targets.setdefault((namespace, pod), {})[int(container_port)] = (host, int(port))

    def target(self, namespace: str, pod: str, container_port: int) -> tuple[str, int] | None:
        with self._lock:
            return self._targets.get((namespace, pod), {}).get(int(container_port))

    def ports(self, namespace: str, pod: str) -> dict[int, tuple[str, int]]:
        with self._lock:
            return dict(self._targets.get((namespace, pod), {}))

    def clear(self, namespace: str | None = None, pod: str | None = None) -> None:
        """Forget one pod's mappings, or all."""
        with self._lock:
            if namespace is None:
                self._targets.clear()
            else:
                self._targets.pop((namespace, pod or ""), None)


@dataclass
class ExecHandlers:
    """``(namespace, pod or "*") -> handler`` for ``kubectl exec``. Thread-safe."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _handlers: dict[tuple[str, str], Any] = field(default_factory=dict)

    def set(self, namespace: str, pod: str, handler: Any) -> None:
        with self._lock:
            self._handlers[(namespace, pod)] = handler

    def get(self, namespace: str, pod: str) -> Any | None:
        with self._lock:
            return self._handlers.get((namespace, pod)) or self._handlers.get((namespace, "*"))

    def clear(self, namespace: str | None = None, pod: str | None = None) -> None:
        with self._lock:
            if namespace is None:
                self._handlers.clear()
            else:
                self._handlers.pop((namespace, pod or "*"), None)


@dataclass
class LocalRuns:
    """``(namespace, pod, container) -> Launch`` of the container's running local process. Thread-safe."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _runs: dict[tuple[str, str, str], Launch] = field(default_factory=dict)

    def set(self, namespace: str, pod: str, container: str, launch: Launch) -> None:
        with self._lock:
            self._runs[(namespace, pod, container)] = launch

    def get(self, namespace: str, pod: str, container: str) -> Launch | None:
        with self._lock:
            return self._runs.get((namespace, pod, container))

    def drop(self, namespace: str, pod: str, container: str | None = None) -> None:
        """Forget one container's run, or (``container`` None) every run of the pod."""
        with self._lock:
            for key in [k for k in self._runs if k[:2] == (namespace, pod) and container in (None, k[2])]:
                del self._runs[key]

    def clear(self) -> None:
        with self._lock:
            self._runs.clear()
