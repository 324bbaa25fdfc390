"""SPDY/3.1 as Kubernetes streaming speaks it: a frame codec and a server-side session.

kubectl's port-forward (and, before 1.30, exec) multiplexes its streams over SPDY/3.1, using the Go package
``moby/spdystream`` on both ends. This module is the server half, written from the SPDY/3.1 draft
(draft-mbelshe-httpbis-spdy-00 and the SPDY/3.1 changes) and checked against the real kubectl builds.

Wire facts it relies on (all big-endian):

- control frame: ``1`` bit, 15-bit version (3), 16-bit type, 8-bit flags, 24-bit payload length; data frame:
  ``0`` bit, 31-bit stream id, 8-bit flags (``FIN`` = 1), 24-bit length. So a frame is at most 8 + 16 MiB - 1 bytes;
- header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are a 32-bit pair count, then length-prefixed lower-case names and
  values (several values of one name are joined by NUL), compressed with zlib primed with the fixed SPDY/3
  dictionary (:data:`DICTIONARY`, 1,423 bytes). Each direction is ONE zlib stream for the whole connection, with a
  ``Z_SYNC_FLUSH`` after each block: a fresh compressor per frame is unreadable for the peer. Because the
  compressor's state follows the wire order, encoding and sending a frame happen under one lock;
- a SYN_STREAM payload starts with stream id, associated stream id, 3-bit priority and an 8-bit slot (10 bytes)
  before its header block; the client opens odd stream ids, a server even ones (this double never opens any);
- spdystream has no flow control: WINDOW_UPDATE and SETTINGS are read and ignored; PINGs from the client (odd
  ids) are echoed; GOAWAY tells the peer to stop, and its ``last good stream id`` is the highest one accepted.

:class:`FrameDecoder` cuts frames out of bytes arriving in arbitrary pieces (the WebSocket tunnel of kubectl >=
1.31 chunks SPDY bytes without regard to frame boundaries); :class:`FrameEncoder` writes them. :class:`Session`
runs one connection: it answers pings, hands every new stream to a callback, and keeps per-stream inboxes bounded
(a stream whose consumer is slow pauses the reading of the whole connection, as a TCP window would).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import zlib
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from aiohttp import web

log = logging.getLogger("fakes.kube.spdy")

VERSION = 3
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
FLAG_SETTINGS_CLEAR = 0x01
MAX_LENGTH = 0xFFFFFF
"""Largest frame payload SPDY can express (24-bit length), in bytes."""

MAX_HEADER_BYTES = 256 * 1024
"""Most decompressed header-block bytes accepted in one frame: a block beyond it is a protocol error, not memory."""


def _dictionary() -> bytes:
    """The SPDY/3 header dictionary: length-prefixed common header words, then a run of common values."""
    words = (  # noqa: SIM905 - one string reads like the specification's list
        "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
        "allow authorization cache-control connection content-base content-encoding content-language content-length "
        "content-location content-md5 content-range content-type date etag expect expires from host if-match "
        "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
        "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
        "user-agent vary via warning www-authenticate method get status 200_OK version HTTP/1.1 url public set-cookie "
        "keep-alive origin"
    ).split()
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    prefixed = b"".join(struct.pack(">I", len(w)) + w.replace("_", " ").encode() for w in words)
    return prefixed + tail.encode()


DICTIONARY = _dictionary()
"""The fixed SPDY/3 zlib dictionary (1,423 bytes, Adler-32 ``0xe3c6a7c2``, the zlib dictionary id peers check)."""


class FrameType(IntEnum):
    """SPDY/3 control frame types (type 5, NOOP, was dropped in SPDY/3)."""

    SYN_STREAM = 1
    SYN_REPLY = 2
    RST_STREAM = 3
    SETTINGS = 4
    PING = 6
    GOAWAY = 7
    HEADERS = 8
    WINDOW_UPDATE = 9


class RstStatus(IntEnum):
    """RST_STREAM status codes."""

    PROTOCOL_ERROR = 1
    INVALID_STREAM = 2
    REFUSED_STREAM = 3
    UNSUPPORTED_VERSION = 4
    CANCEL = 5
    INTERNAL_ERROR = 6
    FLOW_CONTROL_ERROR = 7
    STREAM_IN_USE = 8
    STREAM_ALREADY_CLOSED = 9


class GoAwayStatus(IntEnum):
    """GOAWAY status codes."""

    OK = 0
    PROTOCOL_ERROR = 1
    INTERNAL_ERROR = 2


class ProtocolError(Exception):
    """The peer sent bytes that are not SPDY/3 as this codec reads it; the message says which frame and why."""


Headers = dict[str, list[str]]
"""A header block: lower-case name -> its values, in order."""


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    fin: bool = False
    unidirectional: bool = False
    associated_id: int = 0
    priority: int = 0
    slot: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: tuple[tuple[int, int, int], ...] = ()
    """``(flags, id, value)`` per setting."""
    clear: bool = False


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = GoAwayStatus.OK


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class UnknownControl:
    """A control frame of a type this codec does not know; SPDY says to ignore it."""

    type: int
    flags: int
    payload: bytes


Frame = (
    DataFrame
    | SynStream
    | SynReply
    | HeadersFrame
    | RstStream
    | Settings
    | Ping
    | GoAway
    | WindowUpdate
    | UnknownControl
)


# --- header blocks ----------------------------------------------------------------------------------------


def pack_headers(headers: Mapping[str, str | Iterable[str]]) -> bytes:
    """The uncompressed SPDY/3 header block for ``headers`` (names lower-cased; several values NUL-joined)."""
    parts = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        value = values if isinstance(values, str) else "\0".join(values)
        raw_name, raw_value = name.lower().encode(), value.encode()
        parts += [struct.pack(">I", len(raw_name)), raw_name, struct.pack(">I", len(raw_value)), raw_value]
    return b"".join(parts)


def unpack_headers(block: bytes) -> Headers:
    """Parse an uncompressed header block. Raises :class:`ProtocolError` for a truncated block or a name that is
    empty or not lower-case (spdystream refuses those too)."""
    view = memoryview(block)

    def take(offset: int, size: int, what: str) -> tuple[bytes, int]:
        if offset + size > len(view):
            raise ProtocolError(f"header block truncated while reading {what} ({len(block)} bytes)")
        return bytes(view[offset : offset + size]), offset + size

    raw, at = take(0, 4, "the pair count")
    (count,) = struct.unpack(">I", raw)
    headers: Headers = {}
    for index in range(count):
        raw, at = take(at, 4, f"name length #{index}")
        name_bytes, at = take(at, struct.unpack(">I", raw)[0], f"name #{index}")
        raw, at = take(at, 4, f"value length #{index}")
        value_bytes, at = take(at, struct.unpack(">I", raw)[0], f"value #{index}")
        name = name_bytes.decode("latin-1")
        if not name or name != name.lower():
            raise ProtocolError(f"header name {name!r} is empty or not lower-case")
        headers.setdefault(name, []).extend(value_bytes.decode("latin-1").split("\0"))
    if at != len(view):
        raise ProtocolError(f"header block has {len(view) - at} bytes after its {count} pairs")
    return headers


class HeaderCompressor:
    """One zlib stream for every header block a connection sends (``Z_SYNC_FLUSH`` per block)."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)

    def compress(self, headers: Mapping[str, str | Iterable[str]]) -> bytes:
        block = pack_headers(headers)
        return self._z.compress(block) + self._z.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecompressor:
    """One zlib stream for every header block a connection receives."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(15, DICTIONARY)

    def decompress(self, compressed: bytes) -> Headers:
        try:
            block = self._z.decompress(compressed, MAX_HEADER_BYTES + 1)
        except zlib.error as exc:
            raise ProtocolError(f"header block does not inflate with the SPDY/3 dictionary: {exc}") from None
        if len(block) > MAX_HEADER_BYTES or self._z.unconsumed_tail:
            raise ProtocolError(f"header block inflates to more than {MAX_HEADER_BYTES} bytes")
        return unpack_headers(block)


# --- frames ---------------------------------------------------------------------------------------------------


def _control(frame_type: int, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_LENGTH:
        raise ValueError(f"SPDY control frame payload of {len(payload)} bytes exceeds {MAX_LENGTH}")
    return struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload)) + payload


def encode_data(stream_id: int, data: bytes, *, fin: bool = False) -> bytes:
    """One DATA frame. Raises ``ValueError`` for a stream id outside 1..2**31-1 or more than 16 MiB - 1 of data."""
    if not 0 < stream_id < 2**31:
        raise ValueError(f"stream id {stream_id} is outside 1..2**31-1")
    if len(data) > MAX_LENGTH:
        raise ValueError(f"DATA frame of {len(data)} bytes exceeds {MAX_LENGTH}")
    return struct.pack(">II", stream_id, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


class FrameEncoder:
    """Writes frames for one direction of one connection; keeps the header compressor's state.

    Not thread-safe and order-sensitive: the bytes of header-carrying frames must reach the wire in the order they
    were encoded (:class:`Session` encodes and sends under one lock).
    """

    def __init__(self) -> None:
        self._headers = HeaderCompressor()

    def encode(self, frame: Frame) -> bytes:
        """The bytes of ``frame``. Raises ``ValueError`` for a frame SPDY cannot carry."""
        match frame:
            case DataFrame(stream_id, data, fin):
                return encode_data(stream_id, data, fin=fin)
            case SynStream(stream_id, headers, fin, unidirectional, associated_id, priority, slot):
                flags = (FLAG_FIN if fin else 0) | (FLAG_UNIDIRECTIONAL if unidirectional else 0)
                head = struct.pack(">IIBB", stream_id, associated_id, (priority & 0x7) << 5, slot)
                return _control(FrameType.SYN_STREAM, flags, head + self._headers.compress(headers))
            case SynReply(stream_id, headers, fin):
                body = struct.pack(">I", stream_id) + self._headers.compress(headers)
                return _control(FrameType.SYN_REPLY, FLAG_FIN if fin else 0, body)
            case HeadersFrame(stream_id, headers, fin):
                body = struct.pack(">I", stream_id) + self._headers.compress(headers)
                return _control(FrameType.HEADERS, FLAG_FIN if fin else 0, body)
            case RstStream(stream_id, status):
                return _control(FrameType.RST_STREAM, 0, struct.pack(">II", stream_id, status))
            case Settings(entries, clear):
                body = struct.pack(">I", len(entries)) + b"".join(
                    struct.pack(">II", (flags << 24) | ident, value) for flags, ident, value in entries
                )
                return _control(FrameType.SETTINGS, FLAG_SETTINGS_CLEAR if clear else 0, body)
            case Ping(ping_id):
                return _control(FrameType.PING, 0, struct.pack(">I", ping_id))
            case GoAway(last_good, status):
                return _control(FrameType.GOAWAY, 0, struct.pack(">II", last_good, status))
            case WindowUpdate(stream_id, delta):
                return _control(FrameType.WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))
            case UnknownControl(frame_type, flags, payload):
                return _control(frame_type, flags, payload)
        raise TypeError(f"not a SPDY frame: {frame!r}")


class FrameDecoder:
    """Cuts frames out of bytes fed in arbitrary pieces; keeps the header decompressor's state.

    :meth:`feed` returns every frame completed by the new bytes. At most one frame (16 MiB + 8 bytes) is buffered.
    Raises :class:`ProtocolError` for a version other than 3 or a malformed control frame; after that the decoder
    is unusable (the connection must end: the header stream is out of step).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._headers = HeaderDecompressor()

    @property
    def buffered(self) -> int:
        """Bytes held that do not make a whole frame yet."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                break
            head = bytes(self._buffer[:8])
            payload = bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            frames.append(self._frame(head, payload))
        return frames

    def _frame(self, head: bytes, payload: bytes) -> Frame:
        first, flags = struct.unpack(">I", head[:4])[0], head[4]
        if not first & 0x80000000:
            return DataFrame(first & 0x7FFFFFFF, payload, bool(flags & FLAG_FIN))
        version, frame_type = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"control frame of SPDY version {version}; only version 3 is spoken here")
        try:
            return self._control(frame_type, flags, payload)
        except struct.error:
            raise ProtocolError(f"control frame type {frame_type} too short ({len(payload)} bytes)") from None

    def _control(self, frame_type: int, flags: int, payload: bytes) -> Frame:
        fin = bool(flags & FLAG_FIN)
        if frame_type == FrameType.SYN_STREAM:
            stream_id, associated, priority, slot = struct.unpack(">IIBB", payload[:10])
            headers = self._headers.decompress(payload[10:])
            return SynStream(
                stream_id & 0x7FFFFFFF,
                headers,
                fin,
                bool(flags & FLAG_UNIDIRECTIONAL),
                associated & 0x7FFFFFFF,
                priority >> 5,
                slot,
            )
        if frame_type in (FrameType.SYN_REPLY, FrameType.HEADERS):
            (stream_id,) = struct.unpack(">I", payload[:4])
            headers = self._headers.decompress(payload[4:])
            kind = SynReply if frame_type == FrameType.SYN_REPLY else HeadersFrame
            return kind(stream_id & 0x7FFFFFFF, headers, fin)
        if frame_type == FrameType.RST_STREAM:
            stream_id, status = struct.unpack(">II", payload)
            return RstStream(stream_id & 0x7FFFFFFF, status)
        if frame_type == FrameType.SETTINGS:
            (count,) = struct.unpack(">I", payload[:4])
            if len(payload) != 4 + 8 * count:
                raise ProtocolError(f"SETTINGS says {count} entries but carries {len(payload) - 4} bytes")
            entries = tuple(
                (word >> 24, word & 0xFFFFFF, value) for word, value in struct.iter_unpack(">II", payload[4:])
            )
            return Settings(entries, bool(flags & FLAG_SETTINGS_CLEAR))
        if frame_type == FrameType.PING:
            (ping_id,) = struct.unpack(">I", payload)
            return Ping(ping_id)
        if frame_type == FrameType.GOAWAY:
            last_good, status = struct.unpack(">II", payload)
            return GoAway(last_good & 0x7FFFFFFF, status)
        if frame_type == FrameType.WINDOW_UPDATE:
            stream_id, delta = struct.unpack(">II", payload)
            return WindowUpdate(stream_id & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        return UnknownControl(frame_type, flags, payload)


# --- a server-side session -----------------------------------------------------------------------------------

STREAM_BUFFER = 1024 * 1024
"""Bytes a stream's inbox may hold before the session stops reading the connection until it is drained."""

DATA_CHUNK = 256 * 1024
"""Largest DATA frame payload this side sends, in bytes."""


class Stream:
    """One client-opened stream: its SYN_STREAM ``headers`` (first value per name), an inbox, and the send half.

    :meth:`read` returns ``b""`` once the client half-closed (FIN) or reset the stream, or the connection ended.
    :meth:`write` / :meth:`close` (FIN, a half-close) / :meth:`reset` (RST_STREAM) send; they do nothing once this
    half is closed or the connection is gone, so a consumer never has to race the peer.
    """

    def __init__(self, session: Session, stream_id: int, headers: Headers) -> None:
        self.session = session
        self.id = stream_id
        self.all_headers = headers
        self.headers = {name: values[0] if values else "" for name, values in headers.items()}
        self.replied = False
        self.remote_closed = False
        self.local_closed = False
        self.reset_by_peer = False
        self._abandoned = False
        self._inbox: deque[bytes] = deque()
        self._inbox_bytes = 0
        self._readable = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()

    def __repr__(self) -> str:
        return f"Stream({self.id}, {self.headers})"

    async def reply(self) -> None:
        """Send the (empty) SYN_REPLY that accepts the stream; spdystream drops data on an unanswered stream."""
        if not self.replied and not self.local_closed:
            self.replied = True
            await self.session.send(SynReply(self.id))

    async def read(self) -> bytes:
        """The next bytes the client sent, or ``b""`` at its FIN, a reset, or the end of the connection."""
        while not self._inbox:
            if self.remote_closed:
                return b""
            self._readable.clear()
            await self._readable.wait()
        chunk = self._inbox.popleft()
        self._inbox_bytes -= len(chunk)
        if self._inbox_bytes <= STREAM_BUFFER // 2:
            self._drained.set()
        return chunk

    async def read_all(self, limit: int) -> bytes:
        """Everything until the client's FIN, at most ``limit`` bytes (the rest is read and dropped)."""
        parts: list[bytes] = []
        size = 0
        while chunk := await self.read():
            if size < limit:
                parts.append(chunk[: limit - size])
            size += len(chunk)
        return b"".join(parts)

    async def write(self, data: bytes) -> None:
        """Send ``data`` in DATA frames of at most :data:`DATA_CHUNK` bytes."""
        for offset in range(0, len(data), DATA_CHUNK):
            if self.local_closed or self.session.closed:
                return
            await self.session.send(DataFrame(self.id, data[offset : offset + DATA_CHUNK]))

    async def close(self) -> None:
        """Half-close: an empty DATA frame with FIN (what spdystream's ``Close`` sends)."""
        if not self.local_closed:
            self.local_closed = True
            if not self.session.closed:
                await self.session.send(DataFrame(self.id, b"", fin=True))
            self.session._forget_if_done(self)

    async def reset(self, status: int = RstStatus.CANCEL) -> None:
        """RST_STREAM: both halves end at once."""
        if not self.local_closed:
            self.local_closed = True
            if not self.session.closed:
                await self.session.send(RstStream(self.id, status))
        self._end_remote()
        self.session._forget(self)

    # --- driven by the session -----------------------------------------------------------------------

    async def _deliver(self, data: bytes, fin: bool) -> None:
        if data and not self.remote_closed and not self._abandoned:
            self._inbox.append(data)
            self._inbox_bytes += len(data)
            self._readable.set()
            if self._inbox_bytes > STREAM_BUFFER:
                self._drained.clear()
                await self._drained.wait()  # pauses the connection's reader: bounded memory, like a TCP window
        if fin:
            self._end_remote()

    def _abandon(self) -> None:
        """Nobody reads this stream any more: drop what it holds and what still comes, never pause the reader."""
        self._abandoned = True
        self._inbox.clear()
        self._inbox_bytes = 0
        self._drained.set()

    def _end_remote(self) -> None:
        self.remote_closed = True
        self._readable.set()
        self._drained.set()


StreamHandler = Callable[[Stream], Awaitable[None]]
Send = Callable[[bytes], Awaitable[None]]


class Session:
    """The server side of one SPDY/3.1 connection, over any byte transport.

    ``send`` writes bytes to the transport (awaiting its backpressure); the transport's reader calls :meth:`feed`
    with whatever bytes arrived and :meth:`connection_lost` at the end. ``on_stream`` runs as its own task for
    every stream the client opens (it must :meth:`Stream.reply`); it is cancelled when the session ends.

    ``wedged`` (settable at any time): new SYN_STREAMs are accepted into the session but never handed to
    ``on_stream``, so the client never gets a SYN_REPLY and its stream creation times out, while pings are still
    echoed and the connection stays open (a tunnel that stopped working without dropping).
    """

    def __init__(self, send: Send, on_stream: StreamHandler, *, name: str = "spdy") -> None:
        self.name = name
        self.wedged = False
        self.closed = False
        self.frames_in = 0
        self.last_stream_id = 0
        self.streams: dict[int, Stream] = {}
        self.ignored_streams: list[int] = []
        """Stream ids that arrived while wedged (never answered)."""
        self._send = send
        self._on_stream = on_stream
        self._decoder = FrameDecoder()
        self._encoder = FrameEncoder()
        self._send_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._done = asyncio.Event()

    async def send(self, frame: Frame) -> None:
        """Encode and send ``frame`` under the send lock (header compression follows the wire order).

        A transport error ends the session (``ConnectionError`` and friends are swallowed: the peer is gone)."""
        async with self._send_lock:
            if self.closed:  # before this send, or while it waited for the lock
                return
            try:
                await self._send(self._encoder.encode(frame))
            except (ConnectionError, RuntimeError, OSError) as exc:
                log.debug("%s: send failed, ending the session: %s", self.name, exc)
                self._end()

    async def feed(self, data: bytes) -> None:
        """Bytes from the transport, cut at any point. A protocol error resets the connection (GOAWAY, end)."""
        if self.closed:
            return
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            log.warning("%s: protocol error from the client, ending the connection: %s", self.name, exc)
            await self.goaway(GoAwayStatus.PROTOCOL_ERROR)
            return
        for frame in frames:
            self.frames_in += 1
            await self._dispatch(frame)

    async def goaway(self, status: int = GoAwayStatus.OK) -> None:
        """Send GOAWAY (last good stream = the highest the client opened) and end the session."""
        await self.send(GoAway(self.last_stream_id, status))
        self._end()

    def connection_lost(self) -> None:
        """The transport ended: every stream reads EOF, stream tasks are cancelled."""
        self._end()

    async def wait_closed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the session to end; True if it did."""
        try:
            await asyncio.wait_for(self._done.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self, timeout: float = 2.0) -> None:
        """End the session and wait (bounded) for its stream tasks to finish."""
        self._end()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    # --- internals -----------------------------------------------------------------------------------

    async def _dispatch(self, frame: Frame) -> None:
        match frame:
            case SynStream(stream_id, headers, fin):
                await self._open(stream_id, headers, fin)
            case DataFrame(stream_id, data, fin):
                stream = self.streams.get(stream_id)
                if stream is None:
                    if stream_id not in self.ignored_streams:
                        await self.send(RstStream(stream_id, RstStatus.INVALID_STREAM))
                    return
                await stream._deliver(data, fin)
                self._forget_if_done(stream)
            case RstStream(stream_id, _):
                stream = self.streams.pop(stream_id, None)
                if stream is not None:
                    stream.reset_by_peer = True
                    stream.local_closed = True
                    stream._end_remote()
            case Ping(ping_id):
                if ping_id % 2 == 1:  # the client's ping: echo it; an even id would be an answer to ours
                    await self.send(Ping(ping_id))
            case GoAway(_):
                self._end()
            case HeadersFrame(stream_id, _, fin):
                stream = self.streams.get(stream_id)
                if stream is not None and fin:
                    await stream._deliver(b"", True)
            case _:
                pass  # SETTINGS, WINDOW_UPDATE, SYN_REPLY to nothing, unknown types: no flow control here

    async def _open(self, stream_id: int, headers: Headers, fin: bool) -> None:
        if stream_id % 2 == 0 or stream_id <= self.last_stream_id:
            await self.send(RstStream(stream_id, RstStatus.PROTOCOL_ERROR))
            return
        self.last_stream_id = stream_id
        if self.wedged:
            self.ignored_streams.append(stream_id)
            return
        stream = Stream(self, stream_id, headers)
        self.streams[stream_id] = stream
        if fin:
            stream._end_remote()
        task = asyncio.get_running_loop().create_task(self._run(stream), name=f"{self.name} stream {stream_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, stream: Stream) -> None:
        try:
            await self._on_stream(stream)
        except asyncio.CancelledError:
            raise
        except Exception:  # a handler bug must not take the connection down with a traceback to the client
            log.exception("%s: stream %d handler failed", self.name, stream.id)
            await stream.reset(RstStatus.INTERNAL_ERROR)
        finally:
            stream._abandon()

    def _forget_if_done(self, stream: Stream) -> None:
        if stream.local_closed and stream.remote_closed:
            self._forget(stream)

    def _forget(self, stream: Stream) -> None:
        if self.streams.get(stream.id) is stream:
            del self.streams[stream.id]

    def _end(self) -> None:
        if self.closed:
            return
        self.closed = True
        for stream in list(self.streams.values()):
            stream._end_remote()
        self.streams.clear()
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        self._done.set()


# --- the SPDY/3.1 upgrade on an aiohttp server --------------------------------------------------------------------

READ_BUFFER = 1024 * 1024
"""Bytes of SPDY input buffered on an upgraded socket before reading pauses."""


class RawFeed:
    """Bytes of an upgraded aiohttp connection, handed to us instead of the HTTP parser (``set_parser``).

    aiohttp calls :meth:`feed_data` synchronously; reading pauses the socket above :data:`READ_BUFFER` bytes and
    resumes once drained, so a fast client cannot grow this without bound."""

    def __init__(self, transport: asyncio.Transport | None) -> None:
        self._transport = transport
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._eof = False
        self._paused = False
        self._ready = asyncio.Event()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if data:
            self._chunks.append(bytes(data))
            self._size += len(data)
            self._ready.set()
            if self._size > READ_BUFFER and self._transport is not None and not self._paused:
                self._paused = True
                self._transport.pause_reading()
        return False, b""

    def feed_eof(self) -> None:
        self._eof = True
        self._ready.set()

    async def read(self) -> bytes | None:
        """The next bytes, or ``None`` at EOF (the client closed the socket)."""
        while not self._chunks:
            if self._eof:
                return None
            self._ready.clear()
            await self._ready.wait()
        chunk = self._chunks.popleft()
        self._size -= len(chunk)
        if self._paused and self._size <= READ_BUFFER // 2 and self._transport is not None:
            self._paused = False
            with contextlib.suppress(RuntimeError):
                self._transport.resume_reading()
        return chunk


class Upgraded:
    """An accepted ``Upgrade: SPDY/3.1`` request: :meth:`send` and :meth:`read` raw bytes, :meth:`close` the socket;
    return :attr:`response` from the aiohttp handler."""

    def __init__(self, request: web.BaseRequest, response: web.StreamResponse, feed: RawFeed) -> None:
        self.request = request
        self.response = response
        self._feed = feed

    async def send(self, data: bytes) -> None:
        await self.response.write(data)

    async def read(self) -> bytes | None:
        """The next bytes from the client, ``None`` once it closed the connection."""
        return await self._feed.read()

    async def close(self) -> None:
        self.response.force_close()
        if self.request.transport is not None:
            self.request.transport.close()


async def accept_upgrade(request: web.BaseRequest, stream_protocol: str) -> Upgraded:
    """Answer ``101 Switching Protocols`` (``Upgrade: SPDY/3.1``, ``X-Stream-Protocol-Version: stream_protocol``)
    and take the socket over from aiohttp's HTTP parser.

    aiohttp switches parsers by itself only for WebSocket upgrades, so the socket's bytes are routed to a
    :class:`RawFeed` *before* the 101 goes out: nothing the client sends after it can be parsed as HTTP."""
    response = web.StreamResponse(
        status=101,
        headers={
            "Connection": "Upgrade",
            "Upgrade": "SPDY/3.1",
            "X-Stream-Protocol-Version": stream_protocol,
        },
    )
    feed = RawFeed(request.transport)
    request.protocol.set_parser(feed)  # type: ignore[arg-type]
    await response.prepare(request)
    return Upgraded(request, response, feed)
