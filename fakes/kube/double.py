"""The double's state in one object: registry, store, clock, timers, extension registries, settings.

:class:`KubeDouble` is what ``fakes.kube.serve()`` builds and what every handler receives. It also plugs into the
shared fake machinery (``fakes.runtime.FakeRuntime``): ``name``, ``unrecorded_paths`` (health routes the journal
skips), ``reset()``, ``error_response(status)`` (an injected status fault answers a real ``Status`` body) and the
``admin(request)`` hook for the double's own ``/_fake/`` routes:

- ``GET /_fake/clock`` → ``{"offset": s, "now": "<RFC 3339>"}``; ``POST /_fake/clock`` with ``{"offset": s}``,
  ``{"advance": s}`` or ``{"now": "<RFC 3339>"}`` moves the double's clock.
- ``GET /_fake/objects?resource=pods&namespace=ns`` → ``{"items": [...]}`` (a state dump).
- ``POST /_fake/silence-watches`` ``{"silent": true|false}``: open and new watches stop sending events (and
  bookmarks) while staying open: a watch that goes silent. ``GET`` tells the current setting.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from fakes.core import BadJson, FakeRequest, FakeResponse
from fakes.kube.clock import Clock, Timers, rfc3339_micro
from fakes.kube.errors import for_status
from fakes.kube.exec import Exec
from fakes.kube.extensions import ExecHandlers, LocalRuns, PortMap, SubresourceHandlers
from fakes.kube.portforward import PortForwarding
from fakes.kube.resources import Registry, server_minor
from fakes.kube.store import Store
from fakes.kube.tokens import TokenIssuer

log = logging.getLogger("fakes.kube")
HEALTH_PATHS = frozenset({"/healthz", "/readyz", "/livez"})


class KubeDouble:
    """A Kubernetes API server double's state. Thread-safe where documented; see the package docstring."""

    name = "kube"
    unrecorded_paths = HEALTH_PATHS

    def __init__(
        self,
        *,
        git_version: str = "v1.32.4",
        token: str = "",
        history_size: int = 1000,
        clock_offset: float = 0.0,
        namespace: str | None = None,
    ) -> None:
        self.git_version = git_version if git_version.startswith("v") else f"v{git_version}"
        self.token = token
        #: Signs and checks the ServiceAccount tokens TokenRequest answers (fakes/kube/tokens.py).
        self.tokens = TokenIssuer()
        #: True (https): a request without the token is a 401. False (plain http, where client-go never sends
        #: credentials): only a wrong token is.
        self.require_token = False
        #: The CA of the serving certificate (PEM) when served over https: what ``kube-root-ca.crt`` publishes.
        self.ca_pem: bytes | None = None
        self.clock = Clock(clock_offset)
        self.registry = Registry(server_minor(self.git_version))
        self.store = Store(self.registry, self.clock, history_size=history_size)
        self.subresources = SubresourceHandlers()
        self.ports = PortMap()
        self.exec_handlers = ExecHandlers()
        #: The running local processes' launches (fakes/kube/local_process.py), kept by the kubelet, read by exec.
        self.local_runs = LocalRuns()
        #: ``pods/portforward`` and ``pods/exec`` (fakes/kube/portforward.py, fakes/kube/exec.py); the hub carries
        #: the port-forward faults (fail_open, fail_next, wedge) and the open tunnels.
        self.portforward = PortForwarding.install(self)
        Exec.install(self)
        #: Namespaces created at start and after every reset besides the initial four (the kubeconfig's).
        self.extra_namespaces = [namespace] if namespace and namespace not in ("default",) else []
        #: Seconds between BOOKMARK events on watches that allow them (a real server: about a minute).
        self.bookmark_interval = 10.0
        #: True: watches send nothing (events are dropped for them) while staying open.
        self.watches_silent = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.timers: Timers | None = None
        self._stopping: asyncio.Event | None = None
        self._closers: set[Callable[[], Awaitable[None]]] = set()
        self._closers_lock = threading.Lock()
        #: Callables run after every reset, in the thread that called it (a test thread, or a worker thread for
        #: ``POST /_fake/reset``): controllers forgetting their state. Hop to the loop yourself if needed.
        self.on_reset: list[Callable[[], None]] = []
        self._create_extra_namespaces()

    # --- lifecycle (called by the server) ----------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind to the serving loop: store deliveries, timers and the stop event live there."""
        self.loop = loop
        self._stopping = asyncio.Event()
        self.timers = Timers(self.clock, loop)
        self.store.attach(loop)

    def detach(self) -> None:
        self.store.attach(None)
        if self.timers is not None:
            self.timers.close()

    @property
    def stopping(self) -> asyncio.Event:
        """Set when the double begins to stop (only valid while serving)."""
        if self._stopping is None:
            raise RuntimeError("the double is not serving")
        return self._stopping

    def track_stream(self, closer: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        """Register an async ``closer`` awaited at stop; returns the function that unregisters it."""
        with self._closers_lock:
            self._closers.add(closer)

        def untrack() -> None:
            with self._closers_lock:
                self._closers.discard(closer)

        return untrack

    async def close_streams(self, timeout: float) -> None:
        """Set ``stopping`` and await every tracked closer, all within ``timeout`` seconds."""
        self.stopping.set()
        with self._closers_lock:
            closers = list(self._closers)
            self._closers.clear()
        if not closers:
            return
        results = asyncio.gather(*(c() for c in closers), return_exceptions=True)
        try:
            await asyncio.wait_for(results, timeout)
        except TimeoutError:
            log.warning("fake kube: %d stream closers still running after %.1f s", len(closers), timeout)

    def call_on_loop(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Run ``fn()`` on the double's loop from another thread and return its result (bounded)."""
        if self.loop is None:
            return fn()

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    # --- FakeApp protocol ------------------------------------------------------------------------------

    def handle(self, request: FakeRequest) -> FakeResponse:
        """Not used: the aiohttp adapter dispatches itself (streams need the socket)."""
        return FakeResponse.json(501, for_status(501).status_body())

    def reset(self) -> None:
        """Every object and CRD gone (initial namespaces recreated), port mappings, exec handlers and the clock
        offset cleared; registered subresource handlers stay (they are code, not state)."""
        self.store.reset()
        self._create_extra_namespaces()
        self.ports.clear()
        self.exec_handlers.clear()
        self.local_runs.clear()
        self.portforward.reset()
        self.watches_silent = False
        self.clock.set_offset(0.0)
        for hook in list(self.on_reset):
            hook()

    def error_response(self, status: int) -> FakeResponse:
        """The Status body for an injected ``status`` fault (429 carries ``Retry-After: 1`` unless overridden)."""
        error = for_status(status)
        headers = [("Retry-After", str(error.retry_after))] if error.retry_after is not None else []
        body = json.dumps(error.status_body(), separators=(",", ":")).encode() + b"\n"
        return FakeResponse(status, [("content-type", "application/json"), *headers], body)

    def admin(self, request: FakeRequest) -> FakeResponse | None:
        route = request.path[len("/_fake") :].rstrip("/")
        method = request.method.upper()
        try:
            if route == "/clock":
                return self._admin_clock(request, method)
            if route == "/objects" and method == "GET":
                resource = request.query_param("resource") or ""
                try:
                    items, rv = self.store.list(resource, request.query_param("namespace") or None)
                except KeyError as exc:
                    return FakeResponse.json(400, {"error": str(exc.args[0])})
                return FakeResponse.json(200, {"items": items, "resourceVersion": str(rv)})
            if route == "/silence-watches":
                if method == "POST":
                    body = request.json() or {}
                    self.watches_silent = bool(body.get("silent", True))
                return FakeResponse.json(200, {"silent": self.watches_silent})
        except BadJson as exc:
            return FakeResponse.json(400, {"error": f"body is not JSON: {exc.detail}"})
        return None

    def _admin_clock(self, request: FakeRequest, method: str) -> FakeResponse:
        if method == "POST":
            body = request.json() or {}
            if not isinstance(body, dict):
                return FakeResponse.json(400, {"error": 'send {"offset": s}, {"advance": s} or {"now": ts}'})
            try:
                if "offset" in body:
                    self.clock.set_offset(float(body["offset"]))
                elif "advance" in body:
                    self.clock.advance(float(body["advance"]))
                elif "now" in body:
                    from fakes.kube.clock import parse_rfc3339

                    self.clock.set_time(parse_rfc3339(str(body["now"])))
                else:
                    return FakeResponse.json(
                        400, {"error": 'send {"offset": s}, {"advance": s} or {"now": "<RFC 3339>"}'}
                    )
            except (TypeError, ValueError) as exc:
                return FakeResponse.json(400, {"error": f"bad clock value: {exc}"})
        return FakeResponse.json(200, {"offset": self.clock.offset, "now": rfc3339_micro(self.clock.time())})

    def _create_extra_namespaces(self) -> None:
        for ns in self.extra_namespaces:
            if self.store.get("namespaces", None, ns) is None:
                self.store.create("namespaces", {"metadata": {"name": ns}})
