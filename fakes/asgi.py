"""The ASGI adapter: a :class:`~fakes.runtime.FakeRuntime` served by uvicorn, faults enacted on the real socket.

- hang: the request is read, nothing is sent; the coroutine waits for the client to go away or the server to stop,
  then drops the connection.
- drip: status and headers (with the true ``content-length``) at once, then one body byte per ``interval`` seconds.
- reset: ``SO_LINGER`` on with a zero timeout on the accepted socket, then ``transport.abort()``: the kernel sends a
  TCP RST, so the client reads ``ECONNRESET``, not a clean EOF.
- a streamed response (``FakeResponse.stream``): status and headers at once without ``content-length`` (uvicorn
  then uses chunked transfer encoding), then each chunk after its ``delay``. ``stream_stop`` closes the connection
  after ``after`` chunks without the terminating chunk, ``stream_reset`` sends a RST there, ``stream_pause`` waits
  ``delay`` seconds there. A stream that raises is logged and its connection closed (a server dying mid-body).

uvicorn does not put the transport in the ASGI scope, so :meth:`FakeASGI.protocol_class` returns an ``H11Protocol``
subclass that registers each connection's transport under its peer address (``scope["client"]``). Serve with
``http=fake_asgi.protocol_class()`` and ``loop="asyncio"`` (``fakes.server`` does).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from fakes.core import FakeRequest, FakeResponse, StreamChunk
from fakes.faults import STREAM_KINDS, Fault
from fakes.runtime import FakeRuntime, Outcome

log = logging.getLogger("fakes")

# ASGI 3's callables (asgiref's spec), typed loosely: messages are plain dicts.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class FakeASGI:
    """ASGI 3 application for one runtime. Call :meth:`begin_shutdown` (inside the server loop) on stop."""

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime
        self._transports: dict[tuple[str, int], asyncio.Transport] = {}
        self._stop: asyncio.Event | None = None

    def protocol_class(self) -> type[H11Protocol]:
        """An ``H11Protocol`` that records its transport by peer address, so a reset fault can reach the socket."""
        registry = self._transports

        class FakeH11Protocol(H11Protocol):
            # uvicorn's H11Protocol narrows asyncio's BaseTransport to Transport here; this override follows it.
            def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
                # asyncio sets TCP_NODELAY only when the socket's proto is IPPROTO_TCP, and socket.create_server
                # leaves it 0: without this, headers and body go out in two segments and Nagle plus the peer's
                # delayed ACK add ~40 ms to every answer.
                sock = transport.get_extra_info("socket")
                if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                super().connection_made(transport)
                if self.client:
                    registry[self.client] = transport

            def connection_lost(self, exc: Exception | None) -> None:
                if self.client and registry.get(self.client) is self.transport:
                    del registry[self.client]
                super().connection_lost(exc)

        return FakeH11Protocol

    def begin_shutdown(self) -> None:
        """End every hang and drip now (called from the server loop before uvicorn waits for connections)."""
        self.runtime.stopping.set()
        self._stop_event().set()

    def _stop_event(self) -> asyncio.Event:
        if self._stop is None:
            self._stop = asyncio.Event()
        return self._stop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = await self._read_request(scope, receive)
        outcome = await asyncio.to_thread(self.runtime.dispatch, request)
        await self._enact(outcome, scope, receive, send)

    async def _read_request(self, scope: Scope, receive: Receive) -> FakeRequest:
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", []):
            headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        server_host, server_port = scope.get("server") or ("localhost", 80)
        host = headers.get("host") or f"{server_host}:{server_port}"
        raw_path = scope.get("raw_path") or scope["path"].encode()
        return FakeRequest(
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=b"".join(chunks),
            base_url=f"{scope.get('scheme', 'http')}://{host}",
            raw_path=raw_path.decode("latin-1"),
        )

    async def _enact(self, outcome: Outcome, scope: Scope, receive: Receive, send: Send) -> None:
        fault, response = outcome.fault, outcome.response
        kind = fault.kind if fault is not None else None
        if kind == "hang":
            await self._wait(receive, None)
            await self._drop(scope, rst=False)
            return
        if kind == "reset":
            await self._drop(scope, rst=True)
            return
        assert response is not None
        if fault is not None and kind == "latency" and await self._wait(receive, fault.delay):
            await self._drop(scope, rst=False)
            return
        await send({"type": "http.response.start", "status": response.status, "headers": _headers(response)})
        if fault is None and response.stream is None:  # the common case: one write
            await send({"type": "http.response.body", "body": response.body})
            return
        if await self._send_body(response, fault, scope, receive, send):
            await send({"type": "http.response.body", "body": b""})

    async def _send_body(
        self, response: FakeResponse, fault: Fault | None, scope: Scope, receive: Receive, send: Send
    ) -> bool:
        """Send the body chunk by chunk with its pacing, drip and stream faults; False if the connection was dropped
        (the client left, the server is stopping, or a stream fault cut it)."""
        cut = fault if fault is not None and fault.kind in STREAM_KINDS else None
        chunks, sent = response.chunks(), 0
        while True:
            if cut is not None and sent == cut.after:
                if not await self._stream_fault(cut, scope, receive):
                    return False
                cut = None
            chunk = self._next_chunk(chunks)
            if chunk is None:
                break
            if chunk is _BROKEN:
                await self._drop(scope, rst=False)
                return False
            if chunk.delay and await self._wait(receive, chunk.delay):
                await self._drop(scope, rst=False)
                return False
            if not await self._send_chunk(chunk.data, fault, scope, receive, send):
                return False
            sent += 1
        return cut is None or await self._stream_fault(cut, scope, receive)

    def _next_chunk(self, chunks: Iterator[StreamChunk]) -> StreamChunk | None:
        try:
            return next(chunks)
        except StopIteration:
            return None
        except Exception:  # the fake's stream broke mid-body: the client sees a server that died, not a hang
            log.exception("fake %s: its response stream raised; closing the connection", self.runtime.app.name)
            return _BROKEN

    async def _send_chunk(self, data: bytes, fault: Fault | None, scope: Scope, receive: Receive, send: Send) -> bool:
        if fault is None or fault.kind != "drip":
            if data:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            return True
        for i in range(len(data)):
            if await self._wait(receive, fault.interval):
                await self._drop(scope, rst=False)
                return False
            await send({"type": "http.response.body", "body": data[i : i + 1], "more_body": True})
        return True

    async def _stream_fault(self, fault: Fault, scope: Scope, receive: Receive) -> bool:
        """Enact a stream fault at its place; True if the stream goes on (a pause the client waited out)."""
        if fault.kind == "stream_pause":
            if await self._wait(receive, fault.delay):
                await self._drop(scope, rst=False)
                return False
            return True
        await self._drop(scope, rst=fault.kind == "stream_reset")
        return False

    async def _wait(self, receive: Receive, seconds: float | None) -> bool:
        """Sleep ``seconds`` (``None``: forever); True if the client left or the server is stopping first."""
        stop = asyncio.ensure_future(self._stop_event().wait())
        gone = asyncio.ensure_future(_until_disconnect(receive))
        try:
            done, _ = await asyncio.wait({stop, gone}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
            return bool(done)
        finally:
            for task in (stop, gone):
                task.cancel()
            await asyncio.gather(stop, gone, return_exceptions=True)

    async def _drop(self, scope: Scope, *, rst: bool) -> None:
        """Close the connection without an answer: with a TCP RST when ``rst``, else a plain close."""
        client = scope.get("client")  # (host, port) as uvicorn's protocol registered it
        transport = self._transports.get((client[0], client[1])) if client else None
        if transport is None or transport.is_closing():
            return
        if rst:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()
        # Let connection_lost run, so uvicorn sees a disconnect and does not try to send its own 500.
        for _ in range(3):
            await asyncio.sleep(0)


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


#: Marks a response stream that raised (see ``FakeASGI._next_chunk``).
_BROKEN = StreamChunk(b"")


def _headers(response: FakeResponse) -> list[tuple[bytes, bytes]]:
    out = [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in response.headers]
    if response.stream is None and not any(k == b"content-length" for k, _ in out):
        out.append((b"content-length", str(len(response.body)).encode()))
    return out
