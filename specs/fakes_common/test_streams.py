"""Streamed bodies and the stream faults, on a real socket and in-process: both adapters must look the same to an
httpx client (fakes/asgi.py, fakes/transport.py, fakes/faults.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from fakes.core import StreamChunk
from fakes.faults import Fault, FaultSpecError
from fakes.server import FakeHandle, in_process, serve_fake
from specs.fakes_common.streamer import StreamFake


@pytest.fixture(params=["socket", "in-process"])
def streamer(request: pytest.FixtureRequest, no_leaks: None) -> Iterator[FakeHandle[StreamFake]]:
    if request.param == "socket":
        with serve_fake(StreamFake()) as handle:
            yield handle
    else:
        yield in_process(StreamFake())


def _client(handle: FakeHandle[StreamFake], read: float = 5.0) -> httpx.Client:
    return handle.client(timeout=httpx.Timeout(10.0, read=read))


def _read_chunks(response: httpx.Response) -> list[bytes]:
    return [line + b"\n" for line in b"".join(response.iter_raw()).split(b"\n") if line]


def test_a_stream_arrives_whole_without_content_length(streamer: FakeHandle[StreamFake]) -> None:
    with _client(streamer) as client:
        response = client.get("/stream", params={"n": 4})
    assert response.status_code == 200
    assert response.content == b"chunk-0\nchunk-1\nchunk-2\nchunk-3\n"
    assert "content-length" not in response.headers
    if streamer.served:
        assert response.headers["transfer-encoding"] == "chunked"
    (entry,) = streamer.requests()
    assert (entry.status, entry.fault) == (200, None)


def test_chunks_are_readable_before_the_stream_ends(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_pause", "/stream", after=2, delay=60.0, times=1)
    started = time.monotonic()
    received = b""
    with _client(streamer, read=120.0) as client, client.stream("GET", "/stream", params={"n": 4}) as response:
        for piece in response.iter_raw():
            received += piece
            if received.count(b"\n") == 2:
                break  # leave in the middle of the pause: the fake must not hold us (or itself) for 60 s
    assert received == b"chunk-0\nchunk-1\n"
    assert time.monotonic() - started < 30.0  # generous: the pause is 60 s


def test_stream_stop_cuts_the_body_after_n_chunks(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_stop", "/stream", after=2, times=1)
    received: list[bytes] = []
    with _client(streamer) as client:
        with (
            pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"),
            client.stream("GET", "/stream", params={"n": 5}) as response,
        ):
            for piece in response.iter_raw():
                received.append(piece)
        assert client.get("/stream", params={"n": 1}).content == b"chunk-0\n"  # one time only; the fake goes on
    assert b"".join(received) == b"chunk-0\nchunk-1\n"
    assert [e.fault for e in streamer.requests()] == ["stream_stop", None]


def test_stream_reset_is_a_connection_reset_mid_body(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_reset", "/stream", after=1, times=1)
    received: list[bytes] = []
    with (
        _client(streamer) as client,
        pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)) as caught,
        client.stream("GET", "/stream", params={"n": 5}) as response,
    ):
        for piece in response.iter_raw():
            received.append(piece)
    assert b"".join(received) == b"chunk-0\n"
    assert isinstance(caught.value, httpx.ReadError), f"expected ECONNRESET, got {caught.value!r}"


def test_a_pause_longer_than_the_read_timeout_is_a_read_timeout(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_pause", "/stream", after=1, delay=3.0, times=1)
    with _client(streamer, read=0.3) as client, pytest.raises(httpx.ReadTimeout):
        client.get("/stream", params={"n": 3})


def test_a_pause_shorter_than_the_read_timeout_only_delays(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_pause", "/stream", after=1, delay=0.2, times=1)
    started = time.monotonic()
    with _client(streamer) as client:
        assert client.get("/stream", params={"n": 3}).content == b"chunk-0\nchunk-1\nchunk-2\n"
    assert time.monotonic() - started >= 0.15


def test_a_stream_fault_past_the_end_still_denies_a_complete_body(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_stop", "/stream", after=99, times=1)
    with _client(streamer) as client, pytest.raises(httpx.RemoteProtocolError):
        client.get("/stream", params={"n": 2})


def test_stream_faults_cut_a_whole_body_too(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("stream_stop", "/whole", after=0, times=1)
    with _client(streamer) as client, pytest.raises(httpx.RemoteProtocolError, match="expected 10"):
        client.get("/whole")


def test_drip_applies_to_every_chunk_of_a_stream(streamer: FakeHandle[StreamFake]) -> None:
    streamer.fault("drip", "/stream", interval=0.005, times=1)
    with _client(streamer) as client:
        assert client.get("/stream", params={"n": 2}).content == b"chunk-0\nchunk-1\n"


def test_a_stream_that_raises_ends_like_a_server_dying_and_the_fake_goes_on(
    streamer: FakeHandle[StreamFake], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="fakes")
    received: list[bytes] = []
    with _client(streamer) as client:
        with pytest.raises(httpx.RemoteProtocolError), client.stream("GET", "/broken") as response:
            for piece in response.iter_raw():
                received.append(piece)
        assert client.get("/whole").content == b"0123456789"
    assert b"".join(received) == b"data: one\n\ndata: two\n\n"
    assert "stream raised" in caplog.text


def test_async_transport_streams_and_faults_the_same() -> None:
    handle = in_process(StreamFake())

    async def main() -> None:
        async with httpx.AsyncClient(base_url=handle.url, transport=handle.async_transport(), timeout=5) as client:
            assert (await client.get("/stream", params={"n": 2})).content == b"chunk-0\nchunk-1\n"
            handle.fault("stream_stop", "/stream", after=1, times=1)
            with pytest.raises(httpx.RemoteProtocolError):
                await client.get("/stream", params={"n": 2})
            handle.fault("stream_reset", "/stream", after=1, times=1)
            with pytest.raises(httpx.ReadError):
                await client.get("/stream", params={"n": 2})
            handle.fault("stream_pause", "/stream", after=1, delay=30.0, times=1)
            started = time.monotonic()
            with anyio.move_on_after(0.3):  # a total deadline ends a pause a read timeout (5 s) would not
                await client.get("/stream", params={"n": 2})
            assert time.monotonic() - started < 10.0

    anyio.run(main)


@pytest.mark.parametrize(
    "spec, complaint",
    [
        ({"kind": "stream_stop", "after": -1}, "after=-1"),
        ({"kind": "stream_stop", "after": True}, "after=True"),
        ({"kind": "stream_stop", "after": "2"}, "after='2'"),
        ({"kind": "stream_pause", "after": 1}, "needs delay > 0"),
    ],
)
def test_bad_stream_fault_specs_are_refused(spec: dict[str, Any], complaint: str) -> None:
    with pytest.raises(FaultSpecError, match=complaint):
        Fault.from_dict(spec)


def test_stream_faults_through_the_admin_api(streamer: FakeHandle[StreamFake]) -> None:
    with _client(streamer) as client:
        created = client.post("/_fake/faults", json={"kind": "stream_stop", "path": "/stream", "after": 1, "times": 1})
        assert created.status_code == 201
        assert created.json()["after"] == 1
        with pytest.raises(httpx.RemoteProtocolError):
            client.get("/stream", params={"n": 3})
        refused = client.post("/_fake/faults", json={"kind": "stream_reset", "after": -2})
        assert refused.status_code == 400
        assert "after=-2" in refused.json()["error"]


def test_stream_chunks_refuse_bad_values() -> None:
    with pytest.raises(TypeError):
        StreamChunk("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delay=nan"):
        StreamChunk(b"x", delay=float("nan"))
    with pytest.raises(ValueError, match="delay=-1"):
        StreamChunk(b"x", delay=-1)
