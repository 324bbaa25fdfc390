"""Serving a fake: uvicorn in a thread on an OS-chosen port (``serve_fake``), or in-process with no socket
(``in_process``), both giving a :class:`FakeHandle`.

Lifecycle rules: the listening socket is bound by us with port 0 (never probed and released), start and
stop are bounded (``start_timeout`` / ``stop_timeout`` seconds, ``FakeServerError`` naming the hop when exceeded),
hangs and drips end at stop, and the thread and socket are gone when the context exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import signal
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import httpx
import uvicorn

from fakes.asgi import FakeASGI
from fakes.core import FakeApp
from fakes.faults import Fault
from fakes.journal import JournalEntry
from fakes.runtime import AppT, FakeRuntime
from fakes.transport import AsyncFakeTransport, FakeTransport


@functools.cache
def default_tls() -> ssl.SSLContext:
    """httpx's own default verification context (certifi's CA bundle, the environment ignored as ``trust_env=False``
    asks), built once per process: building one reads the whole bundle (about 19 ms of CPU), and the fakes' clients
    are made per call and per delivery."""
    return httpx.create_ssl_context(trust_env=False)


class FakeServerError(RuntimeError):
    """The fake's server did not start or stop within its bound, or died while starting."""


#: The concrete fake given to :func:`serve_fake` / :func:`in_process`.
_App = TypeVar("_App", bound=FakeApp)


class FakeHandle(Generic[AppT]):
    """What a spec holds while a fake runs.

    ``url`` is the base URL (``http://127.0.0.1:<port>`` on a socket; ``http://<name>.fake`` in-process, where only
    :meth:`transport` / :meth:`async_transport` reach it). ``app`` is the fake itself (typed as the fake's own class:
    ``FakeHandle[QdrantFake]``), ``runtime`` its journal and fault table.
    """

    def __init__(self, runtime: FakeRuntime[AppT], url: str, *, served: bool) -> None:
        self.runtime = runtime
        self.app = runtime.app
        self.url = url
        #: True when a real socket serves ``url``; False for :func:`in_process` handles.
        self.served = served

    def requests(
        self, *, path_prefix: str | None = None, since: Any = None, method: str | None = None
    ) -> list[JournalEntry]:
        """Journal entries, oldest first, filtered by path prefix, ``since`` (epoch s / RFC 3339) and method."""
        return self.runtime.journal.entries(path_prefix=path_prefix, since=since, method=method)

    def reset(self) -> None:
        """Clear the fake's state, the journal and every fault."""
        self.runtime.reset()

    def fault(self, kind: str, path: str = "*", *, method: str = "*", times: int | None = None, **params: Any) -> Fault:
        """Add a fault (see ``fakes.faults``): e.g. ``fault("status", "/collections/*", status=429,
        headers=[("retry-after", "2")], times=1)`` or ``fault("hang", "/collections/c/points/query")``.

        Raises ``fakes.faults.FaultSpecError`` on a bad kind or parameter.
        """
        return self.runtime.faults.add(Fault.from_dict(dict(params, kind=kind, path=path, method=method, times=times)))

    def clear_faults(self, fault_id: str | None = None) -> None:
        """Remove one fault by id, or all of them."""
        self.runtime.faults.clear(fault_id)

    def transport(self) -> FakeTransport:
        """A sync httpx transport to this fake with no socket (state shared with the served fake)."""
        return FakeTransport(self.runtime)

    def async_transport(self) -> AsyncFakeTransport:
        """An async httpx transport to this fake with no socket."""
        return AsyncFakeTransport(self.runtime)

    def client(self, **kwargs: Any) -> httpx.Client:
        """An ``httpx.Client`` on ``url`` (socket when served, the in-process transport otherwise); caller closes it.

        The fake is on loopback, so the client ignores ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``
        (``trust_env=False``, unless the caller passes ``trust_env``).
        """
        kwargs.setdefault("timeout", 10.0)
        kwargs.setdefault("trust_env", False)
        if not kwargs["trust_env"]:
            kwargs.setdefault("verify", default_tls())
        if not self.served:
            kwargs.setdefault("transport", self.transport())
        return httpx.Client(base_url=self.url, **kwargs)


#: Seconds between two checks while stopping (connections closed, tasks done). uvicorn polls every 0.1 s, which made
#: every served fake's stop take about 0.17 s: most of a short spec's time.
_STOP_POLL = 0.005


class _FakeUvicornServer(uvicorn.Server):
    """uvicorn's server, plus: signal our readiness event, stop at once when asked (not at the next 0.1 s tick), and
    end hangs and drips before waiting for connections."""

    def __init__(self, config: uvicorn.Config, asgi: FakeASGI) -> None:
        super().__init__(config)
        self.asgi = asgi
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.ready.set()

    async def main_loop(self) -> None:
        """uvicorn's main loop (``on_tick`` every 0.1 s: the date header, the exit check), woken early by
        :meth:`request_stop`."""
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    def request_stop(self) -> None:
        """Ask the server to stop (from any thread); its loop sees the request at once."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed: nothing left to wake
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's graceful shutdown (stop accepting, ask each connection to close, wait for connections and tasks
        up to ``timeout_graceful_shutdown`` seconds, then cancel the tasks left), checking every few milliseconds
        instead of every 0.1 s. Hangs and drips end first, so they never hold the stop."""
        self.asgi.begin_shutdown()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.config.timeout_graceful_shutdown or 0)
        while (self.server_state.connections or self.server_state.tasks) and not self.force_exit:
            if loop.time() >= deadline:
                for task in self.server_state.tasks:
                    task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
                break
            await asyncio.sleep(_STOP_POLL)
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """SIGINT/SIGTERM request a graceful stop; unlike uvicorn's own, the signal is not re-raised afterwards, so
        ``python -m fakes.<name>`` runs its cleanup (temporary files) and exits 0 (a pod's clean stop)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def build_server(runtime: FakeRuntime, *, graceful_timeout: int = 5, log_level: str = "warning") -> _FakeUvicornServer:
    """A uvicorn server for ``runtime`` (h11, asyncio loop, no lifespan, no websockets, no access log)."""
    asgi = FakeASGI(runtime)
    config = uvicorn.Config(
        asgi,
        http=asgi.protocol_class(),
        loop="asyncio",
        lifespan="off",
        ws="none",
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=graceful_timeout,
        timeout_keep_alive=5,
    )
    return _FakeUvicornServer(config, asgi)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: the OS chooses). IPv6 hosts may be bracketed."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128, reuse_port=False)


def url_for(sock: socket.socket) -> str:
    """``http://host:port`` for a bound socket (IPv6 bracketed)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextlib.contextmanager
def serve_fake(
    app: _App, host: str = "127.0.0.1", port: int = 0, *, start_timeout: float = 10.0, stop_timeout: float = 10.0
) -> Iterator[FakeHandle[_App]]:
    """Serve ``app`` on a real socket in a daemon thread; yields a :class:`FakeHandle` with ``url`` set.

    Raises :class:`FakeServerError` if uvicorn is not serving within ``start_timeout`` seconds or its thread is still
    alive ``stop_timeout`` seconds after stop was requested (then it is force-exited first). ``OSError`` from bind
    (e.g. a busy fixed port) propagates unchanged.
    """
    runtime = FakeRuntime(app)
    server = build_server(runtime, graceful_timeout=max(math.ceil(stop_timeout / 2), 1))
    sock = bind(host, port)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # surfaced to the starting thread below (SystemExit included)
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"fake-{app.name}-{sock.getsockname()[1]}", daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + start_timeout
        while not server.ready.wait(0.05) and thread.is_alive() and time.monotonic() < deadline:
            pass  # a thread that died while starting is reported at once, not after start_timeout
        if not server.ready.is_set() or not thread.is_alive():
            raise FakeServerError(
                f"fake {app.name}: uvicorn did not start serving on {url_for(sock)} within "
                f"{start_timeout:.1f} s" + (f" ({errors[0]!r})" if errors else "")
            )
        yield FakeHandle(runtime, url_for(sock), served=True)
    finally:
        try:
            _stop(server, thread, app.name, stop_timeout)
        finally:
            sock.close()


def _stop(server: _FakeUvicornServer, thread: threading.Thread, name: str, timeout: float) -> None:
    if not thread.is_alive():
        return
    server.request_stop()
    thread.join(timeout)
    if thread.is_alive():
        server.force_exit = True
        thread.join(2.0)
    if thread.is_alive():
        raise FakeServerError(f"fake {name}: uvicorn thread still alive {timeout + 2.0:.1f} s after stop was requested")


def in_process(app: _App) -> FakeHandle[_App]:
    """A handle with no server: reach the fake through ``handle.transport()`` / ``async_transport()`` at
    ``handle.url`` (``http://<name>.fake``). Nothing to stop."""
    return FakeHandle(FakeRuntime(app), f"http://{app.name}.fake", served=False)
