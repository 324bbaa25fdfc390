"""In-process httpx transports (sync and async) to a fake: no socket, no thread, same journal and faults.

Faults surface as the httpx exceptions a client on a real socket would see, honouring the request's own timeouts
(``request.extensions["timeout"]``):

- hang: waits the request's read timeout, then ``httpx.ReadTimeout``; with no read timeout it waits until the faults
  are cleared or the runtime stops (then ``httpx.RemoteProtocolError``, as a server closing the connection), at
  most ``HANG_CAP`` seconds.
- reset: ``httpx.ReadError("[Errno 104] Connection reset by peer")``, what httpx raises on ``ECONNRESET``.
- latency: the answer after ``delay`` seconds, or ``ReadTimeout`` after the read timeout if that is shorter.
- drip: status and headers at once, then one body byte per ``interval`` while the body is read; ``ReadTimeout`` if
  ``interval`` exceeds the read timeout (a per-read timeout never fires otherwise, encode/httpx#1450).
- a streamed response: each chunk is yielded after its ``delay`` as the body is read (``ReadTimeout`` if one delay
  exceeds the read timeout); ``stream_pause`` likewise; ``stream_stop`` raises ``httpx.RemoteProtocolError`` with
  httpcore's wording for a body cut short, ``stream_reset`` ``httpx.ReadError`` (``ECONNRESET``), both after
  ``after`` chunks. A fake stream that raises ends the body like ``stream_stop`` (and is logged).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx

from fakes.core import FakeRequest, FakeResponse, StreamChunk
from fakes.faults import STREAM_KINDS, Fault
from fakes.runtime import FakeRuntime, Outcome

log = logging.getLogger("fakes")

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


def _response(
    outcome: Outcome, request: httpx.Request, stream: httpx.SyncByteStream | httpx.AsyncByteStream
) -> httpx.Response:
    assert outcome.response is not None
    return httpx.Response(outcome.response.status, headers=outcome.response.headers, stream=stream, request=request)


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
        if outcome.fault is not None and kind == "latency":
            self._delay(outcome.fault.delay, read, request)
        assert outcome.response is not None
        if outcome.fault is None and outcome.response.stream is None:
            return _response(outcome, request, httpx.ByteStream(outcome.response.body))
        return _response(outcome, request, _SyncBody(_BodyPlan(outcome.response, outcome.fault, read, request, self)))

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


class _BodyPlan:
    """What to send of one response body and where its faults fall: shared by the sync and async streams."""

    def __init__(
        self,
        response: FakeResponse,
        fault: Fault | None,
        read: float | None,
        request: httpx.Request,
        transport: FakeTransport | AsyncFakeTransport,
    ) -> None:
        self.response, self.read, self.request, self.transport = response, read, request, transport
        self.drip = fault.interval if fault is not None and fault.kind == "drip" else None
        self.cut = fault if fault is not None and fault.kind in STREAM_KINDS else None
        self.chunks = response.chunks()
        self.sent_bytes = 0

    def next_chunk(self) -> StreamChunk | None:
        """The next chunk, ``None`` at the end; a fake stream that raises ends the body as a server dying would."""
        try:
            return next(self.chunks)
        except StopIteration:
            return None
        except Exception:
            log.exception("fake %s: its response stream raised; ending the body", self.transport.runtime.app.name)
            raise self.cut_short() from None

    def pieces(self, data: bytes) -> list[tuple[float, bytes]]:
        """``data`` as (wait, bytes) pieces: one piece, or one byte per drip interval."""
        self.sent_bytes += len(data)  # counted up front: a piece is yielded right after its wait, or the read fails
        if self.drip is None:
            return [(0.0, data)] if data else []
        return [(self.drip, data[i : i + 1]) for i in range(len(data))]

    def fault_error(self, fault: Fault) -> httpx.TransportError:
        if fault.kind == "stream_reset":
            return httpx.ReadError(RESET_MESSAGE, request=self.request)
        return self.cut_short()

    def cut_short(self) -> httpx.RemoteProtocolError:
        """What httpcore raises when the peer closes before the body is complete."""
        if self.response.stream is None:
            detail = f"received {self.sent_bytes} bytes, expected {len(self.response.body)}"
        else:
            detail = "incomplete chunked read"
        return httpx.RemoteProtocolError(
            f"peer closed connection without sending complete message body: {detail}", request=self.request
        )

    def too_slow(self, seconds: float) -> bool:
        """True when a wait of ``seconds`` outlasts the request's read timeout (then it ends in ``ReadTimeout``)."""
        return self.read is not None and seconds > self.read


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, plan: _BodyPlan) -> None:
        self.plan = plan

    def __iter__(self) -> Iterator[bytes]:
        plan, sent = self.plan, 0
        while True:
            if plan.cut is not None and sent == plan.cut.after:
                self._fault(plan.cut)
                plan.cut = None
            chunk = plan.next_chunk()
            if chunk is None:
                break
            self._pause(chunk.delay)
            for wait, piece in plan.pieces(chunk.data):
                self._pause(wait)
                yield piece
            sent += 1
        if plan.cut is not None:
            self._fault(plan.cut)

    def _fault(self, fault: Fault) -> None:
        if fault.kind != "stream_pause":
            raise self.plan.fault_error(fault)
        self._pause(fault.delay)

    def _pause(self, seconds: float) -> None:
        if not seconds:
            return
        if self.plan.too_slow(seconds):
            assert isinstance(self.plan.transport, FakeTransport)
            assert self.plan.read is not None
            self.plan.transport._wait(self.plan.read, self.plan.request, interruptible=False)
        time.sleep(seconds)  # the stream's own pacing (or a drip or pause fault), not a readiness wait


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
        if outcome.fault is not None and kind == "latency":
            if read is not None and outcome.fault.delay > read:
                await self._wait(read, request, interruptible=False)
            await anyio.sleep(outcome.fault.delay)
        assert outcome.response is not None
        if outcome.fault is None and outcome.response.stream is None:
            return _response(outcome, request, httpx.ByteStream(outcome.response.body))
        return _response(outcome, request, _AsyncBody(_BodyPlan(outcome.response, outcome.fault, read, request, self)))

    async def _wait(self, seconds: float, request: httpx.Request, *, interruptible: bool) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if interruptible and _interrupted(self.runtime):
                return
            await anyio.sleep(min(_POLL, left))
        raise httpx.ReadTimeout("timed out", request=request)


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, plan: _BodyPlan) -> None:
        self.plan = plan

    async def __aiter__(self) -> AsyncIterator[bytes]:
        plan, sent = self.plan, 0
        while True:
            if plan.cut is not None and sent == plan.cut.after:
                await self._fault(plan.cut)
                plan.cut = None
            chunk = plan.next_chunk()
            if chunk is None:
                break
            await self._pause(chunk.delay)
            for wait, piece in plan.pieces(chunk.data):
                await self._pause(wait)
                yield piece
            sent += 1
        if plan.cut is not None:
            await self._fault(plan.cut)

    async def _fault(self, fault: Fault) -> None:
        if fault.kind != "stream_pause":
            raise self.plan.fault_error(fault)
        await self._pause(fault.delay)

    async def _pause(self, seconds: float) -> None:
        if not seconds:
            return
        if self.plan.too_slow(seconds):
            assert isinstance(self.plan.transport, AsyncFakeTransport)
            assert self.plan.read is not None
            await self.plan.transport._wait(self.plan.read, self.plan.request, interruptible=False)
        await anyio.sleep(seconds)
