"""The node's kubelet port: what the API server calls for ``kubectl exec``, ``port-forward`` and ``logs``.

The API server reaches a pod's node at ``https://<InternalIP>:<daemonEndpoints.kubeletEndpoint.Port>`` as its
kubelet client (``--kubelet-client-certificate``; it does not check the node's serving certificate unless given
``--kubelet-certificate-authority``), on the kubelet's paths (``pkg/kubelet/server/server.go``):

- ``/exec/{namespace}/{pod}/{container}?command=..&input=1&output=1&error=1&tty=1`` (the apiserver's
  ``streamParams`` in ``pkg/registry/core/pod/strategy.go`` renames ``stdin``/``stdout``/``stderr``);
- ``/portForward/{namespace}/{pod}``;
- ``/containerLogs/{namespace}/{pod}/{container}`` with the ``PodLogOptions`` query.

It always speaks SPDY/3.1 here: the API server translates a WebSocket client (kubectl >= 1.30 for exec, >= 1.31 for
port-forward) into SPDY towards the node (``StreamTranslatorHandler``, ``TunnelingHandler``). The wire code is the
API double's own (:mod:`fakes.kube.exec`, :mod:`fakes.kube.portforward`, :mod:`fakes.kube.logs`), given this node's
pods through :class:`Surface` in place of the double's store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from aiohttp import web

from fakes.kube import tls
from fakes.kube.clock import Clock
from fakes.kube.errors import ApiError
from fakes.kube.exec import Exec
from fakes.kube.extensions import ExecHandlers, LocalRuns, PortMap, SubresourceContext
from fakes.kube.logs import LogBook
from fakes.kube.portforward import PortForwarding
from fakes.kube.resources import Registry

Obj = dict[str, Any]
CLOSE_SECONDS = 5.0
"""Seconds the server's open streams have to close when the node stops."""


@dataclass
class PodEvent:
    """What :class:`fakes.kube.portforward.PortForwarding` reads of a store event."""

    type: str
    object: Obj

    @property
    def namespace(self) -> str:
        return str((self.object.get("metadata") or {}).get("namespace") or "")

    @property
    def name(self) -> str:
        return str((self.object.get("metadata") or {}).get("name") or "")


class Pods:
    """This node's pods as last read or written, in the shape the double's handlers read a store."""

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], Obj] = {}
        self._subscribers: list[Callable[[PodEvent], None]] = []

    def get(self, _resource: Any, namespace: str | None, name: str) -> Obj | None:
        """The pod ``namespace/name`` (the handlers only ever ask for pods)."""
        return self._pods.get((namespace or "", name))

    def subscribe(self, callback: Callable[[PodEvent], None], _resources: Any = None, **_: Any) -> Any:
        self._subscribers.append(callback)
        return self

    def put(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        self._pods[(str(meta.get("namespace")), str(meta.get("name")))] = pod
        self._tell(PodEvent("MODIFIED", pod))

    def drop(self, namespace: str, name: str) -> None:
        pod = self._pods.pop((namespace, name), None)
        if pod is not None:
            self._tell(PodEvent("DELETED", pod))

    def _tell(self, event: PodEvent) -> None:
        for callback in list(self._subscribers):
            with contextlib.suppress(Exception):
                callback(event)


@dataclass
class Surface:
    """What the double's handlers need of a double (:class:`fakes.kube.double_core.DoubleCore` and the
    extension registries), for this node."""

    loop: asyncio.AbstractEventLoop
    store: Pods = field(default_factory=Pods)
    ports: PortMap = field(default_factory=PortMap)
    exec_handlers: ExecHandlers = field(default_factory=ExecHandlers)
    local_runs: LocalRuns = field(default_factory=LocalRuns)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _closers: set[Callable[[], Awaitable[None]]] = field(default_factory=set)

    def track_stream(self, closer: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        self._closers.add(closer)
        return lambda: self._closers.discard(closer)

    async def close_streams(self, timeout: float) -> None:
        self.stopping.set()
        closers, self._closers = list(self._closers), set()
        if closers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(c() for c in closers), return_exceptions=True), timeout)


class KubeletServer:
    """The HTTPS server on 127.0.0.1 (an OS-chosen port: :attr:`port` once :meth:`start` returned)."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.logs = LogBook(cast(Any, surface.store), Clock())
        double = cast(Any, surface)
        self._exec = Exec(double)
        self._forward = PortForwarding(double)
        self._pods_type = Registry().resolve("pods")
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_route("*", "/exec/{namespace}/{pod}/{container}", self._exec_route)
        app.router.add_route("*", "/portForward/{namespace}/{pod}", self._forward_route)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs_route)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=tls.ssl_context(tls.generate()))
        await site.start()
        server = cast(Any, site._server)
        self.port = int(server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        await self.surface.close_streams(CLOSE_SECONDS)
        if self._runner is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._runner.cleanup(), CLOSE_SECONDS)

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _exec_route(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        if self.surface.store.get("pods", info["namespace"], info["pod"]) is None:
            return web.Response(status=404, text="pod does not exist")  # server.go getExec
        query = request.rel_url.query
        renamed = [(k, v) for k, v in query.items() if k not in ("input", "output", "error")]
        renamed += [
            (new, query[old])
            for old, new in (("input", "stdin"), ("output", "stdout"), ("error", "stderr"))
            if old in query
        ]
        renamed.append(("container", request.match_info["container"]))
        clone = request.clone(rel_url=request.rel_url.with_query(renamed))
        return await self._serve(clone, "exec", self._exec.handle)

    async def _forward_route(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "portforward", self._forward.handle)

    async def _logs_route(self, request: web.Request) -> web.StreamResponse:
        query = [*request.rel_url.query.items(), ("container", request.match_info["container"])]
        clone = request.clone(rel_url=request.rel_url.with_query(query))
        return await self._serve(clone, "log", self.logs.serve)

    async def _serve(
        self, request: web.Request, subresource: str, handler: Callable[[SubresourceContext], Awaitable[Any]]
    ) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self.surface.store.get("pods", namespace, name)
        if pod is None:  # the kubelet's words for a pod it does not run (server.go getContainerLogs / streaming)
            return web.Response(status=404, text=f'pod "{name}" not found')
        ctx = SubresourceContext(request, cast(Any, self.surface), self._pods_type, namespace, name, subresource, pod)
        try:
            return cast(web.StreamResponse, await handler(ctx))
        except ApiError as exc:
            return web.Response(status=exc.code, text=exc.message)
