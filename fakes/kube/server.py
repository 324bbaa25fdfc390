"""Serving the double: aiohttp in its own thread and event loop, on 127.0.0.1 and an OS-chosen port.

Why aiohttp (not the uvicorn adapter the other fakes use): the API double streams (chunked watches, ``logs -f``),
serves WebSockets (exec, port-forward since kubectl 1.31) and must take over the raw socket after a ``101`` for
the legacy ``Upgrade: SPDY/3.1`` port-forward, which ASGI servers cannot do.

Each request goes through :func:`entry`: the shared ``/_fake/`` admin API (``fakes.admin``; never journaled or
faulted), then the shared fault table (``fakes.faults``; enacted here on the aiohttp transport: ``hang`` keeps the
connection silent until the client or the server goes, ``reset`` sends a TCP RST, ``status`` answers a real
``Status`` body (429 with ``Retry-After``), ``latency`` delays, ``drip`` sends a non-streaming answer one byte per
``interval``), the shared journal (``fakes.journal``; ``Authorization`` redacted), bearer-token auth
(:mod:`fakes.kube.tokens`: the double's own token, or a ServiceAccount's from a TokenRequest; a wrong token is a 401
``Status``; ``/version`` and the health routes are open to a request without credentials, as
``system:public-info-viewer`` allows; any other request without credentials is a 401 when the double serves https,
and is served over plain http, where client-go never sends the kubeconfig's token: see ``fakes.kube.tls``), RBAC
for ServiceAccount users (:mod:`fakes.kube.authz`: a 403 ``Status`` before anything is routed), then
:func:`fakes.kube.api.handle`. Every answer's ``Date`` header comes from the double's clock. A bug in the double
answers 500 with a ``Status`` naming the exception, never a traceback.

Lifecycle: :class:`KubeServer` binds the socket itself (port 0), starts within ``start_timeout`` seconds and stops
within ``stop_timeout``: stop sets ``double.stopping`` (watches end), awaits the closers streams registered, closes
the listening socket and every connection (aiohttp cancels handlers still running after a short grace), then ends
the loop and joins the thread. Nothing is left: no thread, no socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import struct
import threading
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from fakes.admin import handle_admin, is_admin_path
from fakes.core import FakeRequest, FakeResponse
from fakes.faults import Fault
from fakes.kube import api, authz, tokens
from fakes.kube.clock import http_date
from fakes.kube.double import KubeDouble
from fakes.kube.errors import ApiError, internal, too_large, unauthorized
from fakes.kube.tokens import User
from fakes.runtime import FakeRuntime
from fakes.server import FakeServerError, bind, url_for

log = logging.getLogger("fakes.kube")
#: The API server's request body limit (``MaxRequestBodyBytes``, 3 MiB).
MAX_BODY = 3 * 1024 * 1024
PUBLIC_PATHS = ("/version", "/healthz", "/readyz", "/livez")
DOUBLE_KEY = web.AppKey("double", KubeDouble)
RUNTIME_KEY = web.AppKey("runtime", FakeRuntime)


class KubeServer:
    """One double served on one socket in one thread. Use :func:`fakes.kube.serve` rather than this directly."""

    def __init__(
        self,
        double: KubeDouble,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        shutdown_grace: float = 1.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.double = double
        self.runtime = FakeRuntime(double)
        self.sock = bind(host, port)
        self.ssl_context = ssl_context
        self.url = url_for(self.sock).replace("http://", "https://" if ssl_context is not None else "http://")
        self.shutdown_grace = shutdown_grace
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._errors: list[BaseException] = []

    # --- start and stop ----------------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> None:
        """Serve in a daemon thread. Raises :class:`FakeServerError` if not serving within ``timeout`` seconds."""
        self._thread = threading.Thread(target=self._main, name=f"fake-kube-{self.sock.getsockname()[1]}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05) and self._thread.is_alive() and time.monotonic() < deadline:
            pass
        if not self._ready.is_set():
            detail = f" ({self._errors[0]!r})" if self._errors else ""
            self.stop(timeout=5.0)
            raise FakeServerError(
                f"fake kube: aiohttp did not start serving on {self.url} within {timeout:.1f} s{detail}"
            )

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving; raises :class:`FakeServerError` if the thread is still alive after ``timeout`` seconds."""
        thread, loop = self._thread, self.loop
        try:
            if thread is None or not thread.is_alive() or loop is None:
                return
            try:
                future = asyncio.run_coroutine_threadsafe(self._shutdown(max(timeout - 1.0, 0.5)), loop)
                future.result(timeout)
            except Exception as exc:  # a stuck shutdown: stop the loop anyway, then report if the thread stays
                log.warning("fake kube: graceful stop failed: %r", exc)
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if thread.is_alive():
                raise FakeServerError(f"fake kube: server thread still alive {timeout:.1f} s after stop was requested")
        finally:
            self.sock.close()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._startup())
            self._ready.set()
            loop.run_forever()
        except BaseException as exc:  # reported to the starting thread
            self._errors.append(exc)
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.wait(pending, timeout=2.0))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                self.double.detach()
                loop.close()

    async def _startup(self) -> None:
        self.double.attach(asyncio.get_running_loop())
        app = web.Application(client_max_size=MAX_BODY)
        app[DOUBLE_KEY] = self.double
        app[RUNTIME_KEY] = self.runtime
        app.router.add_route("*", "/{tail:.*}", entry)
        app.on_response_prepare.append(_stamp_headers)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, handler_cancellation=True, shutdown_timeout=self.shutdown_grace
        )
        await self._runner.setup()
        site = web.SockSite(self._runner, self.sock, ssl_context=self.ssl_context)
        await site.start()

    async def _shutdown(self, budget: float) -> None:
        self.runtime.stopping.set()
        await self.double.close_streams(min(budget / 2, 3.0))
        if self._runner is not None:
            await asyncio.wait_for(self._runner.cleanup(), max(budget / 2, 0.5))


# --- the request pipeline --------------------------------------------------------------------------------------


async def _stamp_headers(request: web.Request, response: web.StreamResponse) -> None:
    double: KubeDouble = request.app[DOUBLE_KEY]
    response.headers["Date"] = http_date(double.clock.time())
    response.headers.setdefault("Cache-Control", "no-cache, private")


def _fake_request(request: web.Request, body: bytes) -> FakeRequest:
    headers = {k.lower(): v for k, v in request.headers.items()}
    return FakeRequest(
        method=request.method,
        path=request.path,
        query=request.query_string,
        headers=headers,
        body=body,
        base_url=f"{request.scheme}://{request.host}",
        raw_path=request.raw_path.split("?", 1)[0],
    )


def _from_fake(response: FakeResponse) -> web.Response:
    out = web.Response(status=response.status, body=response.body)
    for name, value in response.headers:
        if name.lower() == "content-length":
            continue
        out.headers.add(name, value)
    return out


async def _read_body(request: web.Request) -> bytes:
    if request.headers.get("Upgrade"):
        return b""  # an upgrade's bytes belong to the protocol that follows
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large(MAX_BODY) from None


def _authenticated(double: KubeDouble, request: web.Request) -> User | None:
    """Who sent ``request`` (:func:`fakes.kube.tokens.authenticate`); ``None`` answers 401."""
    public = request.path.rstrip("/") in PUBLIC_PATHS
    return tokens.authenticate(double, request.headers.get("Authorization"), public=public)


async def entry(request: web.Request) -> web.StreamResponse:
    """The one route: admin, faults, journal, auth, then the API."""
    double: KubeDouble = request.app[DOUBLE_KEY]
    runtime: FakeRuntime = request.app[RUNTIME_KEY]
    try:
        body = await _read_body(request)
    except ApiError as exc:
        return api.error_response(exc)
    fake = _fake_request(request, body)
    if is_admin_path(request.path):
        return _from_fake(await asyncio.to_thread(handle_admin, runtime, fake))
    health = request.path in double.unrecorded_paths
    fault = runtime.faults.take(request.method, request.path, health=health)
    entry_ = None if health else runtime.journal.record(fake, fault=fault.kind if fault else None)
    status: int | None = None
    try:
        if fault is not None:
            response = await _with_fault(request, double, runtime, fault, body)
        else:
            response = await _answer(request, double, body)
        status = response.status if response is not None and not _dropped(request) else None
        if response is None:
            return web.Response(status=499)  # never sent: the connection is already gone
        return response
    finally:
        if entry_ is not None:
            runtime.journal.stamp(entry_, status)


async def _answer(request: web.Request, double: KubeDouble, body: bytes) -> web.StreamResponse:
    try:
        user = _authenticated(double, request)
        if user is None:
            raise unauthorized()
        authz.authorize(double, user, request.method, request.path, request.query)
        return await api.handle(request, double, body)
    except ApiError as exc:
        return api.error_response(exc)
    except (asyncio.CancelledError, ConnectionError):
        raise
    except web.HTTPException:
        raise
    except Exception as exc:  # a bug in the double: a Status naming it, never a traceback on the wire
        log.exception("fake kube crashed on %s %s", request.method, request.path_qs)
        return api.error_response(internal(f"fake kube: {type(exc).__name__}: {exc}"))


def _dropped(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _with_fault(
    request: web.Request, double: KubeDouble, runtime: FakeRuntime, fault: Fault, body: bytes
) -> web.StreamResponse | None:
    kind = fault.kind
    if kind in ("hang", "reset", "status") and fault.apply:
        await _answer(request, double, body)
    if kind == "hang":
        await _wait(request, double, None)
        _drop(request, rst=False)
        return None
    if kind == "reset":
        _drop(request, rst=True)
        return None
    if kind == "status":
        return _from_fake(runtime._fault_response(fault))  # the shared machinery's body/header rules
    if kind == "latency":
        if await _wait(request, double, fault.delay):
            _drop(request, rst=False)
            return None
        return await _answer(request, double, body)
    response = await _answer(request, double, body)  # drip
    if not isinstance(response, web.Response) or response.prepared:
        return response  # a stream is already on the wire: nothing to drip
    return await _drip(request, double, response, fault.interval)


async def _drip(
    request: web.Request, double: KubeDouble, response: web.Response, interval: float
) -> web.StreamResponse | None:
    payload = bytes(response.body or b"")  # type: ignore[arg-type]
    stream = web.StreamResponse(status=response.status, headers=response.headers)
    stream.content_length = len(payload)
    await stream.prepare(request)
    for i in range(len(payload)):
        if await _wait(request, double, interval):
            _drop(request, rst=False)
            return None
        await stream.write(payload[i : i + 1])
    await stream.write_eof()
    return stream


async def _wait(request: web.Request, double: KubeDouble, seconds: float | None) -> bool:
    """Sleep ``seconds`` (``None``: until interrupted); True if the client left or the double is stopping first."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        if double.stopping.is_set() or _dropped(request):
            return True
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(double.stopping.wait(), timeout=min(0.25, left) if left is not None else 0.25)


def _drop(request: web.Request, *, rst: bool) -> None:
    transport = request.transport
    if transport is None or transport.is_closing():
        return
    if rst:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()


Closer = Callable[[], Awaitable[None]]
__all__ = ["KubeServer", "entry", "MAX_BODY", "Closer"]
