"""fetch_through against a plain base URL: only the service hop can fail."""

from __future__ import annotations

import time

import anyio
import pytest

from harness import attempts
from harness.errors import HopFailure, ServiceTimeout, ServiceUnreachable
from harness.fetch import fetch_through, fetch_through_sync
from harness.testing.target import TargetServer


def test_answer_of_any_status_is_returned_with_its_body(target: TargetServer) -> None:
    ok = fetch_through_sync(target.url, "GET", "/ok", timeout=2.0)
    assert (ok.status_code, ok.text) == (200, "ok")
    failed = fetch_through_sync(target.url, "GET", "/status/503", timeout=2.0)
    assert (failed.status_code, failed.text) == (503, "status")
    assert ok.is_closed
    assert failed.is_closed


def test_silent_service_fails_at_the_budget_naming_path_and_budget(target: TargetServer) -> None:
    start = time.monotonic()
    with pytest.raises(ServiceTimeout) as caught:
        fetch_through_sync(target.url, "GET", "/hang", timeout=0.5)
    assert 0.45 < time.monotonic() - start < 3.0
    err = caught.value
    assert err.hop == "service"
    assert err.path == "/hang"
    assert err.budget == pytest.approx(0.5)
    assert "/hang" in str(err)
    assert "0.50s" in str(err)
    assert "no response headers" in str(err)


def test_dripping_body_fails_at_the_total_deadline_not_per_read(target: TargetServer) -> None:
    # One byte every 0.2 s: each read is well inside httpx's per-phase timeout, the whole body takes 8 s.
    start = time.monotonic()
    with pytest.raises(ServiceTimeout) as caught:
        fetch_through_sync(target.url, "GET", "/drip?every=0.2&size=40", timeout=1.0)
    assert time.monotonic() - start < 3.0
    assert "headers received (HTTP 200)" in str(caught.value)


@pytest.mark.parametrize("path", ["/reset", "/close"])
def test_reset_or_closed_connection_is_unreachable_service(target: TargetServer, path: str) -> None:
    with pytest.raises(ServiceUnreachable) as caught:
        fetch_through_sync(target.url, "GET", path, timeout=2.0)
    assert caught.value.hop == "service"
    assert path in str(caught.value)


def test_refused_connection_is_unreachable_service() -> None:
    with TargetServer() as server:
        url = server.url
    with pytest.raises(ServiceUnreachable, match="refused"):
        fetch_through_sync(url, "GET", "/ok", timeout=2.0)


def test_hop_failures_are_assertion_errors() -> None:
    assert issubclass(HopFailure, AssertionError)


def test_budget_is_clamped_to_the_current_wait_attempt(target: TargetServer) -> None:
    token = attempts.enter(attempts.Attempt(number=1, bound=0.3, deadline=time.monotonic() + 0.3))
    try:
        start = time.monotonic()
        with pytest.raises(ServiceTimeout) as caught:
            fetch_through_sync(target.url, "GET", "/hang", timeout=20.0)
    finally:
        attempts.leave(token)
    assert time.monotonic() - start < 2.0
    assert caught.value.budget is not None
    assert caught.value.budget <= 0.3


def test_async_twin_and_outer_cancellation_close_everything(target: TargetServer) -> None:
    async def main() -> None:
        answer = await fetch_through(target.url, "POST", "/ok", timeout=2.0, content=b"{}")
        assert answer.status_code == 200
        with anyio.move_on_after(0.2) as scope:  # a caller's own cancellation is not swallowed
            await fetch_through(target.url, "GET", "/hang", timeout=10.0)
        assert scope.cancelled_caught

    anyio.run(main)


def test_caller_mistakes_are_not_hop_failures(target: TargetServer) -> None:
    with pytest.raises(TypeError):
        fetch_through_sync(target.url, "GET", "/ok", timeout=1.0, no_such_argument=1)
