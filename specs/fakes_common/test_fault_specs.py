"""Fault descriptions are validated up front with ``FaultSpecError`` (never a raw TypeError or a crash on the socket
later), and a status that cannot carry a body (204, 304) still answers cleanly."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from fakes.faults import FaultSpecError
from fakes.server import FakeHandle
from specs.fakes_common.echo import EchoFake


@pytest.mark.parametrize(
    "kind,params,needle",
    [
        ("latency", {"seconds": 1}, "unknown fault field(s) ['seconds']"),
        ("latency", {"delay": float("nan")}, "finite non-negative"),
        ("latency", {"delay": float("inf")}, "finite non-negative"),
        ("drip", {"interval": float("nan")}, "finite non-negative"),
        ("status", {"status": 101}, "1xx status is informational"),
        ("status", {"status": True}, "not an HTTP status code"),
        ("status", {"body": 42}, "give a string or bytes"),
        ("status", {"headers": [("X-A", "1\r\nX-B: 2")]}, "CR, LF or NUL"),
        ("hang", {"times": True}, "positive integer"),
    ],
)
def test_bad_fault_keywords_raise_fault_spec_error(
    echo: FakeHandle[EchoFake], kind: str, params: dict[str, Any], needle: str
) -> None:
    with pytest.raises(FaultSpecError) as caught:
        echo.fault(kind, **params)
    assert needle in str(caught.value)
    assert echo.runtime.faults.list() == []


def test_bad_fault_over_the_admin_api_is_a_400(echo: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        response = client.post("/_fake/faults", json={"kind": "status", "status": 100})
    assert response.status_code == 400
    assert "informational" in response.json()["error"]


@pytest.mark.parametrize("status", [204, 304])
def test_a_bodyless_status_fault_drops_the_body_and_the_server_keeps_serving(
    echo: FakeHandle[EchoFake], status: int, caplog: pytest.LogCaptureFixture
) -> None:
    echo.fault("status", "/x", status=status, body='{"would": "break h11"}', times=1)
    echo.fault("status", "/y", status=status, times=1)  # the fake's own error body is dropped too
    with caplog.at_level(logging.ERROR), httpx.Client(base_url=echo.url, timeout=5) as client:
        first, second = client.get("/x"), client.get("/y")
        assert (first.status_code, first.content) == (status, b"")
        assert (second.status_code, second.content) == (status, b"")
        assert client.get("/x").status_code == 200  # same server, still answering
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
