"""``pods/<name>/portforward`` over the WebSocket channel protocols ``v4.channel.k8s.io`` and
``v4.base64.channel.k8s.io`` (what the ``kubernetes`` Python client's ``stream.portforward()`` speaks).

The framing follows the kubelet (``pkg/kubelet/cri/streaming/portforward/websocket.go``) and apimachinery's
``pkg/util/httpstream/wsstream/conn.go``:

- the ports come from the query (``?ports=8080&ports=9090`` or ``ports=8080,9090`` at the API server; a missing or
  unparsable one is a 400 with the kubelet's words);
- port ``i`` gets two channels: ``2*i`` carries data both ways, ``2*i+1`` carries the error text to the client;
- every message starts with its channel: a byte for ``v4.channel.k8s.io`` (binary messages), an ASCII digit for
  ``v4.base64.channel.k8s.io`` (text messages whose rest is base64); no subprotocol at all means binary;
- the server's first message on each channel is the port, two bytes little-endian;
- one WebSocket carries one connection per port: when a port's target closes, its error channel carries the
  failure (if any) and the WebSocket closes once every port is done, as the kubelet's handler does.

The connections go where kubectl's do (:class:`~fakes.kube.portforward.PortForwarding`: port maps, the pod's
port annotations), and the same faults apply except ``wedge`` (there are no streams to leave unanswered here).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
from typing import TYPE_CHECKING, Protocol, cast

from aiohttp import WSMessage, WSMsgType, web

from fakes.kube import spdy
from fakes.kube.errors import bad_request
from fakes.kube.portforward_tunnels import Pair, Tunnel

if TYPE_CHECKING:
    from fakes.kube.extensions import SubresourceContext

BINARY = "v4.channel.k8s.io"
BASE64 = "v4.base64.channel.k8s.io"
PROTOCOLS = (BINARY, BASE64)
MAX_MESSAGE = 4 * 1024 * 1024
"""Largest client message accepted (bytes)."""
STOP_TIMEOUT = 2.0
"""Seconds any one teardown step may take."""


def offered(protocols: set[str]) -> bool:
    """True when a WebSocket offering ``protocols`` is served here (a v4 channel protocol, or none at all)."""
    return not protocols or bool(protocols & set(PROTOCOLS))


def parse_ports(values: list[str]) -> list[int]:
    """The ``ports`` query values as port numbers; 400 with the kubelet's ``NewV4Options`` messages."""
    if not values:
        raise bad_request('query parameter "port" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise bad_request('query parameter "port" cannot be empty')
        for part in value.split(","):
            if not part.isdigit() or int(part) > 65535:
                raise bad_request(
                    f'unable to parse "{value}" as a port: strconv.ParseUint: parsing "{part}": invalid syntax'
                )
            if int(part) < 1:
                raise bad_request(f'port "{value}" must be > 0')
            ports.append(int(part))
    return ports


class Hub(Protocol):
    """What the channel server drives of :class:`fakes.kube.portforward.PortForwarding` (its tunnel table and its
    relay, run on the double's loop); described here because that module imports this one."""

    def _ensure_subscribed(self) -> None: ...

    def _add(self, tunnel: Tunnel) -> None: ...

    def _remove(self, tunnel: Tunnel) -> None: ...

    async def _forward(self, tunnel: Tunnel, pair: Pair) -> None: ...


class _Channels:
    """Encode and send one WebSocket's channel messages in its negotiated framing."""

    def __init__(self, ws: web.WebSocketResponse, text: bool) -> None:
        self.ws = ws
        self.text = text
        self.lock = asyncio.Lock()

    async def send(self, channel: int, data: bytes) -> None:
        if self.ws.closed:
            return
        async with self.lock:
            with contextlib.suppress(ConnectionError, RuntimeError):
                if self.text:
                    await self.ws.send_str(chr(ord("0") + channel) + base64.b64encode(data).decode("ascii"))
                else:
                    await self.ws.send_bytes(bytes((channel,)) + data)

    def decode(self, message: WSMessage) -> tuple[int, bytes] | None:
        """``(channel, data)`` of a client message, or None for one that cannot be read."""
        if self.text and message.type == WSMsgType.TEXT and message.data:
            try:
                return ord(message.data[0]) - ord("0"), base64.b64decode(message.data[1:], validate=True)
            except (binascii.Error, ValueError):
                return None
        if not self.text and message.type == WSMsgType.BINARY and message.data:
            return message.data[0], bytes(message.data[1:])
        return None


class ChannelStream:
    """One channel seen as a stream (the interface the relay uses for a SPDY stream): reads what the client sent
    on it, writes to it; ``close`` marks the end of this side (the channel protocol has no half-close on the wire)."""

    def __init__(self, channels: _Channels, channel: int) -> None:
        self.channels = channels
        self.channel = channel
        self.reset_by_peer = False
        self.local_closed = False
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()

    def deliver(self, data: bytes) -> None:
        self._inbox.put_nowait(data)

    def end(self) -> None:
        self._inbox.put_nowait(b"")

    async def read(self) -> bytes:
        return await self._inbox.get()

    async def write(self, data: bytes) -> None:
        if not self.local_closed:
            for offset in range(0, len(data), spdy.DATA_CHUNK):
                await self.channels.send(self.channel, data[offset : offset + spdy.DATA_CHUNK])

    async def close(self) -> None:
        self.local_closed = True


async def serve(hub: Hub, ctx: SubresourceContext, protocols: set[str]) -> web.StreamResponse:
    """Serve one channel-protocol port-forward WebSocket until every port is done, the client goes, or the
    double stops."""
    ports = parse_ports(ctx.request.query.getall("ports", []) or ctx.request.query.getall("port", []))
    chosen = BINARY if BINARY in protocols else BASE64 if BASE64 in protocols else None
    ws = web.WebSocketResponse(protocols=(chosen,) if chosen else (), autoping=True, max_msg_size=MAX_MESSAGE)
    await ws.prepare(ctx.request)
    channels = _Channels(ws, text=chosen == BASE64)
    tunnel = Tunnel(ctx.namespace, ctx.object, "websocket-channels")
    streams = [ChannelStream(channels, n) for n in range(2 * len(ports))]
    for n in range(len(streams)):
        await channels.send(n, ports[n // 2].to_bytes(2, "little"))
    hub._ensure_subscribed()
    hub._add(tunnel)
    forwards = []
    for i, port in enumerate(ports):
        pair = Pair(f"ws-{i}", port, cast(spdy.Stream, streams[2 * i + 1]), cast(spdy.Stream, streams[2 * i]))
        forwards.append(asyncio.ensure_future(hub._forward(tunnel, pair)))

    async def stop() -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(), STOP_TIMEOUT)

    untrack = ctx.track(stop)
    reading = asyncio.ensure_future(_read(ws, channels, streams))
    all_done = asyncio.ensure_future(asyncio.wait(forwards))
    stopping = asyncio.ensure_future(ctx.stopping.wait())
    try:
        await asyncio.wait({reading, all_done, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for stream in streams:
            stream.end()
        for task in (reading, stopping, all_done, *forwards):
            if task is not all_done:
                task.cancel()
        await asyncio.wait({reading, stopping, *forwards}, timeout=STOP_TIMEOUT)
        all_done.cancel()
        untrack()
        hub._remove(tunnel)
        await stop()
    return ws


async def _read(ws: web.WebSocketResponse, channels: _Channels, streams: list[ChannelStream]) -> None:
    """Client messages to their channels' inboxes until the client closes; data on an error channel, an unknown
    channel or an unreadable message is dropped (wsstream ignores writes to a write-only channel)."""
    async for message in ws:
        if message.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
            break
        decoded = channels.decode(message)
        if decoded is None:
            continue
        channel, data = decoded
        if 0 <= channel < len(streams) and channel % 2 == 0 and data:
            streams[channel].deliver(data)
