"""In-process httpx transports (sync and async) to a fake: no socket, no thread, same journal and faults.

Faults surface as the httpx exceptions a client on a real socket would see, honouring the request's own timeouts
(``request.extensions["timeout"]``):

- hang: waits the request's read timeout, then ``httpx.ReadTimeout``; with no read timeout it waits until the faults
  are cleared or the runtime stops (then ``httpx.RemoteProtocolError``, as a server closing the connection), at
  most ``HANG_CAP`` seconds.
- reset: ``httpx.ReadError("[Errno 104] Connection reset by peer")``, what httpx raises on ``ECONNRESET``.
- latency: the answer after ``delay`` seconds, or ``ReadTimeout`` after the read timeout if that is shorter.
- drip: status and headers at once, then one body byte per ``interval`` while the body is read; ``ReadTimeout`` if
  ``interval`` exceeds the read timeout (a per-read timeout never fires otherwise: field-pitfalls.md §13).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx

from fakes.core import FakeRequest
from fakes.runtime import FakeRuntime, Outcome

#: Upper bound (seconds) on an in-process hang for a request with no read timeout.
HANG_CAP = 600.0
_POLL = 0.05  # seconds between checks of "faults cleared / runtime stopping" while an in-process fault waits
RESET_MESSAGE = "[Errno 104] Connection reset by peer"


def _to_fake(request: httpx.Request, body: bytes) -> FakeRequest:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers.raw}
    url = request.url
    port = f":{url.port}" if url.port else ""
    return FakeRequest(
        method=request.method,
        path=url.path,
        query=url.query.decode("latin-1"),
        headers=headers,
        body=body,
        base_url=f"{url.scheme}://{url.host}{port}",
        raw_path=url.raw_path.split(b"?", 1)[0].decode("latin-1"),
    )


def _read_timeout(request: httpx.Request) -> float | None:
    return (request.extensions.get("timeout") or {}).get("read")


def _interrupted(runtime: FakeRuntime) -> bool:
    return runtime.stopping.is_set() or runtime.faults.cleared.is_set()


def _response(outcome: Outcome, request: httpx.Request, stream) -> httpx.Response:
    assert outcome.response is not None
    return httpx.Response(outcome.response.status, headers=outcome.response.headers, stream=stream,
                          request=request)


class FakeTransport(httpx.BaseTransport):
    """Sync transport: ``httpx.Client(transport=FakeTransport(runtime), base_url=...)``."""

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        outcome = self.runtime.dispatch(_to_fake(request, request.read()))
        kind = outcome.fault.kind if outcome.fault else None
        read = _read_timeout(request)
        if kind == "hang":
            self._wait(read if read is not None else HANG_CAP, request, interruptible=True)
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        if kind == "reset":
            raise httpx.ReadError(RESET_MESSAGE, request=request)
        if kind == "latency":
            self._delay(outcome.fault.delay, read, request)
        body = outcome.response.body
        if kind == "drip":
            return _response(outcome, request, _SyncDrip(body, outcome.fault.interval, read, request, self))
        return _response(outcome, request, httpx.ByteStream(body))

    def _delay(self, seconds: float, read: float | None, request: httpx.Request) -> None:
        if read is not None and seconds > read:
            self._wait(read, request, interruptible=False)
            raise httpx.ReadTimeout("timed out", request=request)
        time.sleep(seconds)  # the injected latency itself, not a readiness wait

    def _wait(self, seconds: float, request: httpx.Request, *, interruptible: bool) -> None:
        """Wait ``seconds``; raise ReadTimeout at the end; return early only when the fault is lifted."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if interruptible and _interrupted(self.runtime):
                return
            time.sleep(min(_POLL, left))
        raise httpx.ReadTimeout("timed out", request=request)


class _SyncDrip(httpx.SyncByteStream):
    def __init__(self, body: bytes, interval: float, read: float | None, request: httpx.Request,
                 transport: FakeTransport) -> None:
        self.body, self.interval, self.read, self.request, self.transport = body, interval, read, request, transport

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self.body)):
            if self.read is not None and self.interval > self.read:
                self.transport._wait(self.read, self.request, interruptible=False)
            time.sleep(self.interval)  # the drip pace itself
            yield self.body[i:i + 1]


class AsyncFakeTransport(httpx.AsyncBaseTransport):
    """Async transport: ``httpx.AsyncClient(transport=AsyncFakeTransport(runtime), base_url=...)``.

    Waits are ``anyio.sleep`` slices, so a caller's cancel scope (``anyio.fail_after``) ends them at once.
    """

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        outcome = await anyio.to_thread.run_sync(self.runtime.dispatch, _to_fake(request, body))
        kind = outcome.fault.kind if outcome.fault else None
        read = _read_timeout(request)
        if kind == "hang":
            await self._wait(read if read is not None else HANG_CAP, request, interruptible=True)
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        if kind == "reset":
            raise httpx.ReadError(RESET_MESSAGE, request=request)
        if kind == "latency":
            if read is not None and outcome.fault.delay > read:
                await self._wait(read, request, interruptible=False)
            await anyio.sleep(outcome.fault.delay)
        if kind == "drip":
            return _response(outcome, request, _AsyncDrip(outcome.response.body, outcome.fault.interval, read,
                                                          request, self))
        return _response(outcome, request, httpx.ByteStream(outcome.response.body))

    async def _wait(self, seconds: float, request: httpx.Request, *, interruptible: bool) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if interruptible and _interrupted(self.runtime):
                return
            await anyio.sleep(min(_POLL, left))
        raise httpx.ReadTimeout("timed out", request=request)


class _AsyncDrip(httpx.AsyncByteStream):
    def __init__(self, body: bytes, interval: float, read: float | None, request: httpx.Request,
                 transport: AsyncFakeTransport) -> None:
        self.body, self.interval, self.read, self.request, self.transport = body, interval, read, request, transport

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i in range(len(self.body)):
            if self.read is not None and self.interval > self.read:
                await self.transport._wait(self.read, self.request, interruptible=False)
            await anyio.sleep(self.interval)
            yield self.body[i:i + 1]
