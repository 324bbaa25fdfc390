"""The in-process httpx transports raise what a socket client would see (fakes/transport.py)."""

from __future__ import annotations

import time

import anyio
import httpx
import pytest

from fakes.server import FakeHandle, in_process
from specs.fakes_common.echo import EchoFake


@pytest.fixture
def fake() -> FakeHandle[EchoFake]:
    return in_process(EchoFake())


def test_round_trip_and_journal_without_a_socket(fake: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=fake.url, transport=fake.transport(), timeout=5) as client:
        response = client.put("/p/a%20b?x=1", json={"k": "v"}, headers={"authorization": "Bearer z"})
    assert response.json()["path"] == "/p/a b"
    assert response.json()["base_url"] == fake.url
    (entry,) = fake.requests()
    assert entry.method == "PUT"
    assert entry.query == "x=1"
    assert entry.headers["authorization"] == "<redacted>"
    assert fake.client().get("/_fake/").json()["name"] == "echo"


def test_sync_faults(fake: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=fake.url, transport=fake.transport(), timeout=httpx.Timeout(5, read=0.2)) as c:
        fake.fault("hang", "/h", times=1)
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            c.get("/h")
        assert 0.15 < time.monotonic() - started < 3
        fake.fault("reset", "/r", times=1)
        with pytest.raises(httpx.ReadError, match="reset by peer"):
            c.get("/r")
        fake.fault("status", "/s", status=429, headers=[("Retry-After", "1")], times=1)
        assert c.get("/s").headers["retry-after"] == "1"
        fake.fault("latency", "/l", delay=1.0, times=1)
        with pytest.raises(httpx.ReadTimeout):
            c.get("/l")
        fake.fault("drip", "/d", interval=0.01, times=1)
        assert c.get("/d").json()["path"] == "/d"
        fake.fault("drip", "/d", interval=1.0, times=1)
        with pytest.raises(httpx.ReadTimeout):
            c.get("/d")
    assert [e.fault for e in fake.requests()] == ["hang", "reset", "status", "latency", "drip", "drip"]


def test_sync_hang_without_timeout_ends_when_faults_are_cleared(fake: FakeHandle[EchoFake]) -> None:
    fake.fault("hang")
    import threading

    timer = threading.Timer(0.3, fake.clear_faults)
    timer.start()
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.Client(base_url=fake.url, transport=fake.transport(), timeout=None).get("/x")
    finally:
        timer.cancel()


def test_async_faults_and_cancellation(fake: FakeHandle[EchoFake]) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(
            base_url=fake.url, transport=fake.async_transport(), timeout=httpx.Timeout(5, read=0.2)
        ) as c:
            assert (await c.get("/ok")).status_code == 200
            fake.fault("hang", "/h", times=1)
            with pytest.raises(httpx.ReadTimeout):
                await c.get("/h")
            fake.fault("reset", "/r", times=1)
            with pytest.raises(httpx.ReadError):
                await c.get("/r")
            fake.fault("drip", "/d", interval=0.05, times=1)
            started = time.monotonic()
            with anyio.move_on_after(0.3):  # a total deadline cuts a drip a read timeout never would
                await c.get("/d")
            assert time.monotonic() - started < 2

    anyio.run(main)
