"""Each fault kind on a real socket, as an httpx client sees it (``fakes/asgi.py``): a hang is a read timeout, a drip
outlives per-read timeouts (httpx has no total timeout, encode/httpx#1450), a reset is ``ECONNRESET``."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from fakes.server import FakeHandle, serve_fake
from specs.fakes_common.echo import EchoFake


def test_status_fault_with_retry_after_for_the_next_request_only(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("status", "/q*", status=429, headers=[("Retry-After", "3")], times=1)
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        first = client.get("/query")
        assert (first.status_code, first.headers["retry-after"], first.json()) == (429, "3", {"echo_error": 429})
        assert client.get("/query").status_code == 200
    assert [(e.status, e.fault) for e in echo.requests()] == [(429, "status"), (200, None)]
    assert echo.app.calls == 1  # the faulted request never reached the fake


def test_status_fault_with_explicit_body_and_apply(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("status", "/w", status=503, body='{"status":{"error":"down"}}', apply=True)
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        response = client.post("/w")
    assert response.status_code == 503
    assert response.json() == {"status": {"error": "down"}}
    assert echo.app.calls == 1  # applied, answer replaced


def test_method_selects(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("status", "*", method="POST", status=500)
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        assert client.get("/x").status_code == 200
        assert client.post("/x").status_code == 500


def test_hang_is_a_read_timeout_not_a_failure(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("hang", "/slow")
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout), httpx.Client(base_url=echo.url, timeout=httpx.Timeout(5, read=0.3)) as c:
        c.get("/slow")
    assert 0.25 < time.monotonic() - started < 4.0
    (entry,) = echo.requests()
    assert (entry.fault, entry.status) == ("hang", None)


def test_hang_ends_when_the_server_stops(no_leaks: None) -> None:
    outcome: list[BaseException] = []
    with serve_fake(EchoFake()) as handle:
        handle.fault("hang")

        def call() -> None:
            try:
                httpx.get(handle.url + "/forever", timeout=httpx.Timeout(30.0))
            except httpx.HTTPError as exc:
                outcome.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        deadline = time.monotonic() + 5
        while not handle.requests() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert handle.requests(), "the hung request never arrived"
    caller.join(10)
    assert not caller.is_alive()
    assert isinstance(outcome[0], httpx.RemoteProtocolError)


def test_drip_defeats_a_read_timeout(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("drip", "/d", interval=0.02)
    started = time.monotonic()
    with httpx.Client(base_url=echo.url, timeout=httpx.Timeout(5, read=0.5)) as client:
        response = client.get("/d")
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert response.json()["path"] == "/d"
    assert elapsed >= 0.02 * len(response.content) * 0.9  # one byte per interval, the read timeout never fired


def test_drip_sends_headers_first(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("drip", "/d", interval=0.5)
    with httpx.Client(base_url=echo.url, timeout=5) as client, client.stream("GET", "/d") as response:
        started = time.monotonic()
        assert response.status_code == 200
        assert int(response.headers["content-length"]) > 10
        first = next(response.iter_raw(1))
        assert len(first) == 1
        assert time.monotonic() - started < 3.0


def test_reset_is_a_tcp_rst(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("reset", "/r", times=1)
    with pytest.raises(httpx.ReadError, match="Connection reset by peer"):
        httpx.get(echo.url + "/r", timeout=5)
    host, port = echo.url.removeprefix("http://").split(":")
    echo.fault("reset", "/raw", times=1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"GET /raw HTTP/1.1\r\nHost: x\r\n\r\n")
        with pytest.raises(ConnectionResetError):
            sock.recv(1024)  # a clean close would return b"" instead
    assert httpx.get(echo.url + "/r", timeout=5).status_code == 200


def test_latency_delays_the_real_answer(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("latency", "/l", delay=0.3, times=1)
    started = time.monotonic()
    response = httpx.get(echo.url + "/l", timeout=5)
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.3
    echo.fault("latency", "/l", delay=3.0, times=1)
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(echo.url + "/l", timeout=httpx.Timeout(5, read=0.2))


def test_health_routes_are_exempt_unless_asked(echo: FakeHandle[EchoFake]) -> None:
    echo.fault("status", "*", status=503)
    assert httpx.get(echo.url + "/healthz", timeout=5).status_code == 200
    echo.fault("status", "/healthz", status=500, include_health=True)
    echo.clear_faults(echo.runtime.faults.list()[0].id)
    assert httpx.get(echo.url + "/healthz", timeout=5).status_code == 500


def test_serve_fake_leaves_no_thread_or_socket_even_with_open_faults(no_leaks: None) -> None:
    for _ in range(3):
        with serve_fake(EchoFake()) as handle:
            handle.fault("drip", interval=1.0)
            with httpx.Client(base_url=handle.url, timeout=5) as client, client.stream("GET", "/x") as response:
                assert response.status_code == 200


def test_a_fake_that_cannot_start_is_reported_at_once(no_leaks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import server as server_module
    from fakes.server import FakeServerError

    def broken_run(self: object, sockets: object = None) -> None:
        raise RuntimeError("boom at startup")

    monkeypatch.setattr(server_module._FakeUvicornServer, "run", broken_run)
    started = time.monotonic()
    with pytest.raises(FakeServerError, match="boom at startup"), serve_fake(EchoFake(), start_timeout=10.0):
        pass
    assert time.monotonic() - started < 2.0
