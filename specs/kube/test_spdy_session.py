"""The server-side SPDY/3.1 session of the Kubernetes API double, driven by a scripted client over bytes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fakes.kube import spdy
from fakes.kube.spdy import (
    DataFrame,
    FrameDecoder,
    FrameEncoder,
    GoAway,
    GoAwayStatus,
    Ping,
    RstStatus,
    RstStream,
    Session,
    Stream,
    SynReply,
    SynStream,
)

BOUND = 5.0
"""Seconds any single await in these specs may take (generous: a loaded 2-core CI machine)."""


class Client:
    """The client half: encodes what it sends, decodes what the session sent."""

    def __init__(self) -> None:
        self.encoder = FrameEncoder()
        self.decoder = FrameDecoder()
        self.received: list[spdy.Frame] = []
        self.arrived = asyncio.Event()

    async def sink(self, data: bytes) -> None:
        self.received += self.decoder.feed(data)
        self.arrived.set()

    def wire(self, *frames: spdy.Frame) -> bytes:
        return b"".join(self.encoder.encode(f) for f in frames)

    async def wait_for(self, predicate: Callable[[spdy.Frame], bool]) -> spdy.Frame:
        async def find() -> spdy.Frame:
            while True:
                for frame in self.received:
                    if predicate(frame):
                        return frame
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(find(), BOUND)


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 4 * BOUND))


def open_stream(stream_id: int, kind: str = "data") -> SynStream:
    return SynStream(stream_id, {"streamtype": [kind], "port": ["8080"], "requestid": ["0"]})


def test_client_pings_are_echoed_and_answers_to_ours_are_not() -> None:
    async def main() -> None:
        client = Client()
        session = Session(client.sink, _never_called)
        await session.feed(client.wire(Ping(1), Ping(2), Ping(7)))
        assert client.received == [Ping(1), Ping(7)]

    run(main)


def test_a_stream_is_replied_to_echoed_and_half_closed() -> None:
    async def main() -> None:
        client = Client()

        async def echo(stream: Stream) -> None:
            assert stream.headers == {"streamtype": "data", "port": "8080", "requestid": "0"}
            await stream.reply()
            while chunk := await stream.read():
                await stream.write(chunk.upper())
            await stream.close()

        session = Session(client.sink, echo)
        await session.feed(client.wire(open_stream(1), DataFrame(1, b"abc")))
        await client.wait_for(lambda f: f == DataFrame(1, b"ABC"))
        await session.feed(client.wire(DataFrame(1, b"", fin=True)))
        await client.wait_for(lambda f: f == DataFrame(1, b"", fin=True))
        assert client.received[0] == SynReply(1)  # the reply comes before any data
        assert session.streams == {}  # both halves closed: forgotten
        await session.aclose()

    run(main)


def test_data_split_across_feeds_at_any_byte_reaches_the_stream_whole() -> None:
    async def main() -> None:
        client = Client()
        got: list[bytes] = []

        async def collect(stream: Stream) -> None:
            await stream.reply()
            got.append(await stream.read_all(limit=1 << 20))

        session = Session(client.sink, collect)
        wire = client.wire(open_stream(1), DataFrame(1, b"hello "), DataFrame(1, b"world", fin=True))
        for index in range(len(wire)):
            await session.feed(wire[index : index + 1])
        await asyncio.wait_for(session.aclose(), BOUND)
        assert got == [b"hello world"]

    run(main)


def test_client_reset_ends_reading_and_silences_writes() -> None:
    async def main() -> None:
        client = Client()
        done = asyncio.Event()
        seen: list[bytes] = []

        async def handler(stream: Stream) -> None:
            await stream.reply()
            seen.append(await stream.read())
            await stream.write(b"after reset")
            done.set()

        session = Session(client.sink, handler)
        await session.feed(client.wire(open_stream(1)))
        await client.wait_for(lambda f: f == SynReply(1))
        await session.feed(client.wire(RstStream(1, RstStatus.CANCEL)))
        await asyncio.wait_for(done.wait(), BOUND)
        assert seen == [b""]
        assert not any(isinstance(f, DataFrame) for f in client.received)

    run(main)


def test_a_wedged_session_never_answers_new_streams_but_still_echoes_pings() -> None:
    async def main() -> None:
        client = Client()
        session = Session(client.sink, _never_called)
        session.wedged = True
        await session.feed(client.wire(open_stream(1), DataFrame(1, b"GET / HTTP/1.1\r\n\r\n"), Ping(3)))
        assert client.received == [Ping(3)]  # no SYN_REPLY, and no RST for the unanswered stream's data
        assert session.ignored_streams == [1]
        assert not session.closed

    run(main)


def test_protocol_error_sends_goaway_and_ends_the_session() -> None:
    async def main() -> None:
        client = Client()
        session = Session(client.sink, _never_called)
        await session.feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")  # a SPDY/2 ping
        assert client.received == [GoAway(0, GoAwayStatus.PROTOCOL_ERROR)]
        assert session.closed

    run(main)


def test_data_on_an_unknown_stream_and_even_client_ids_are_refused() -> None:
    async def main() -> None:
        client = Client()
        session = Session(client.sink, _never_called)
        await session.feed(client.wire(DataFrame(9, b"x"), open_stream(2)))
        assert client.received == [RstStream(9, RstStatus.INVALID_STREAM), RstStream(2, RstStatus.PROTOCOL_ERROR)]

    run(main)


def test_a_failing_handler_resets_its_stream_only() -> None:
    async def main() -> None:
        client = Client()

        async def broken(stream: Stream) -> None:
            await stream.reply()
            raise RuntimeError("handler bug")

        session = Session(client.sink, broken)
        await session.feed(client.wire(open_stream(1)))
        await client.wait_for(lambda f: f == RstStream(1, RstStatus.INTERNAL_ERROR))
        await session.feed(client.wire(Ping(5)))
        await client.wait_for(lambda f: f == Ping(5))
        assert not session.closed

    run(main)


def test_large_writes_are_cut_into_bounded_data_frames() -> None:
    async def main() -> None:
        client = Client()

        async def big(stream: Stream) -> None:
            await stream.reply()
            await stream.write(b"z" * (3 * spdy.DATA_CHUNK + 5))
            await stream.close()

        session = Session(client.sink, big)
        await session.feed(client.wire(open_stream(1)))
        await client.wait_for(lambda f: isinstance(f, DataFrame) and f.fin)
        sizes = [len(f.data) for f in client.received if isinstance(f, DataFrame)]
        assert sizes == [spdy.DATA_CHUNK] * 3 + [5, 0]

    run(main)


def test_a_slow_stream_pauses_the_reader_instead_of_buffering_without_bound() -> None:
    async def main() -> None:
        client = Client()
        streams: list[Stream] = []

        async def hold(stream: Stream) -> None:
            await stream.reply()
            streams.append(stream)
            await asyncio.sleep(3600)  # never reads until the spec does

        session = Session(client.sink, hold)
        await session.feed(client.wire(open_stream(1)))
        await client.wait_for(lambda f: f == SynReply(1))
        chunk = client.wire(DataFrame(1, b"x" * 65536))
        feeds = 0

        async def push() -> None:
            nonlocal feeds
            while True:
                await session.feed(chunk)
                feeds += 1

        pusher = asyncio.create_task(push())
        await asyncio.sleep(0.3)
        assert feeds * 65536 <= spdy.STREAM_BUFFER + 65536  # paused once the inbox passed its bound
        drained = 0
        while drained < spdy.STREAM_BUFFER:
            drained += len(await asyncio.wait_for(streams[0].read(), BOUND))
        await asyncio.sleep(0.1)
        assert feeds * 65536 > spdy.STREAM_BUFFER  # reading resumed once drained
        pusher.cancel()
        await session.aclose()

    run(main)


def test_goaway_names_the_last_stream_and_cancels_stream_tasks() -> None:
    async def main() -> None:
        client = Client()
        cancelled = asyncio.Event()

        async def hold(stream: Stream) -> None:
            await stream.reply()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        session = Session(client.sink, hold)
        await session.feed(client.wire(open_stream(1), open_stream(3)))
        await client.wait_for(lambda f: f == SynReply(3))
        await session.goaway()
        assert client.received[-1] == GoAway(3, GoAwayStatus.OK)
        await asyncio.wait_for(cancelled.wait(), BOUND)
        assert session.closed
        await session.feed(client.wire(Ping(9)))
        assert Ping(9) not in client.received  # a closed session answers nothing

    run(main)


def test_connection_lost_gives_every_stream_eof() -> None:
    async def main() -> None:
        client = Client()
        reads: list[bytes] = []

        async def reader(stream: Stream) -> None:
            await stream.reply()
            reads.append(await stream.read())

        session = Session(client.sink, reader)
        await session.feed(client.wire(open_stream(1)))
        await client.wait_for(lambda f: f == SynReply(1))
        session.connection_lost()
        assert await session.wait_closed(BOUND)
        await asyncio.sleep(0)
        assert reads in ([b""], [])  # read returned EOF, or the task was cancelled first: never hangs

    run(main)


async def _never_called(stream: Stream) -> None:
    raise AssertionError(f"no stream should reach the handler here, got {stream}")  # shows up as an RST
