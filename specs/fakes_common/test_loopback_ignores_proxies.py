"""Every HTTP client the fakes and the harness create reaches loopback directly, whatever ``HTTP_PROXY``,
``HTTPS_PROXY`` and ``ALL_PROXY`` say: with a proxy set (as on many CI machines and laptops), a webhook delivery, a
redelivery, a fake's own ``client()`` and ``fetch_through`` still reach the fake on 127.0.0.1 (a proxy that cannot be
reached would turn each of them into a bare ``ConnectError``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from fakes.github import DeliveryLog, redeliver, send_webhook
from fakes.server import FakeHandle, serve_fake
from harness.fetch import fetch_through_sync
from specs.fakes_common.echo import EchoFake

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Point every proxy variable at a loopback port nobody listens on (bound, never listening: refused at once)."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{unused.getsockname()[1]}"
        for name in PROXY_VARIABLES:
            monkeypatch.setenv(name, proxy)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        yield proxy


@pytest.fixture
def echo() -> Iterator[FakeHandle[EchoFake]]:
    with serve_fake(EchoFake()) as handle:
        yield handle


def test_send_webhook_and_redeliver_ignore_the_proxy(dead_proxy: str, echo: FakeHandle[EchoFake]) -> None:
    log = DeliveryLog()
    delivery = send_webhook(f"{echo.url}/hook", "ping", {"zen": "direct"}, secret="s", log=log, timeout=5.0)
    again = redeliver(delivery.id, log=log, timeout=5.0)
    assert delivery.error is None
    assert delivery.ok
    assert again.ok
    assert [e.path for e in echo.requests()] == ["/hook", "/hook"]


def test_a_fakes_client_ignores_the_proxy(dead_proxy: str, echo: FakeHandle[EchoFake]) -> None:
    with echo.client() as http:
        answer = http.get("/direct")
    assert answer.status_code == 200


def test_fetch_through_ignores_the_proxy(dead_proxy: str, echo: FakeHandle[EchoFake]) -> None:
    assert fetch_through_sync(echo.url, "GET", "/direct", timeout=5.0).status_code == 200
