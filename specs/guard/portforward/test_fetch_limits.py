"""fetch_through's limits: ``max_body`` stops a runaway answer (an endless answer once pushed
a probe to 1 GB in 3 s), and the caller's mistakes are ``ValueError`` / ``TypeError`` raised before sending, never a
hop failure blamed on the service."""

from __future__ import annotations

import math
import tracemalloc
from typing import Any

import h11
import httpx
import pytest

from harness.errors import HopFailure, ServiceAnswerTooLarge
from harness.fetch import DEFAULT_MAX_BODY, fetch_through_sync
from harness.portforward import port_forward
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer

MiB = 1024 * 1024
READ = 65536
"""The most one read adds past the cap (httpx/httpcore read 64 KiB at a time)."""


# --- max_body (finding 8) -------------------------------------------------------------------------------


def test_endless_chunked_body_stops_at_max_body_without_buffering_it(target: TargetServer) -> None:
    already = tracemalloc.is_tracing()  # someone else's tracing (python -X tracemalloc) is left running
    if already:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    try:
        with pytest.raises(ServiceAnswerTooLarge) as caught:
            fetch_through_sync(target.url, "GET", "/flood", timeout=20.0, max_body=MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not already:
            tracemalloc.stop()
    err = caught.value
    assert err.hop == "service"
    assert err.max_body == MiB
    assert err.status == 200
    assert err.declared is None
    assert MiB < err.received <= MiB + READ
    assert "/flood" in str(err)
    assert "more than max_body=1,048,576 bytes" in str(err)
    assert peak < 16 * MiB  # an uncapped read once reached 1 GB in 3 s; the cap holds about max_body


def test_default_cap_is_64_mib_and_applies_without_asking(target: TargetServer) -> None:
    assert 64 * MiB == DEFAULT_MAX_BODY
    with pytest.raises(ServiceAnswerTooLarge) as caught:
        fetch_through_sync(
            target.url, "GET", "/flood", timeout=30.0
        )  # the call that once read 1 GB, minus its 3 s budget
    assert caught.value.max_body == DEFAULT_MAX_BODY
    assert DEFAULT_MAX_BODY < caught.value.received <= DEFAULT_MAX_BODY + READ


def test_declared_content_length_over_the_cap_is_refused_before_reading(target: TargetServer) -> None:
    with pytest.raises(ServiceAnswerTooLarge, match="Content-Length is 100,000,000 bytes") as caught:
        fetch_through_sync(target.url, "GET", "/big?size=100000000", timeout=20.0, max_body=MiB)
    assert caught.value.declared == 100_000_000
    assert caught.value.received == 0


def test_body_of_exactly_max_body_is_an_answer_one_more_byte_is_not(target: TargetServer) -> None:
    answer = fetch_through_sync(target.url, "GET", "/big?size=5000", timeout=5.0, max_body=5000)
    assert answer.status_code == 200
    assert answer.content == b"x" * 5000
    assert answer.is_closed
    with pytest.raises(ServiceAnswerTooLarge):
        fetch_through_sync(target.url, "GET", "/big?size=5001", timeout=5.0, max_body=5000)


def test_runaway_body_through_a_forward_blames_the_service_and_keeps_the_forward(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        with pytest.raises(ServiceAnswerTooLarge) as caught:
            fetch_through_sync(fwd, "GET", "/flood", timeout=20.0, max_body=MiB)
        assert caught.value.hop == "service"
        assert caught.value.target == "svc/x"
        assert "via port-forward svc/x" in str(caught.value)
        assert fwd.alive
        assert fwd.answers == 1
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).text == "ok"


# --- caller mistakes (finding 9) ------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf])
def test_non_positive_or_non_finite_timeout_is_a_value_error_and_nothing_is_sent(
    target: TargetServer, timeout: float
) -> None:
    with pytest.raises(ValueError, match="timeout must be finite and > 0"):
        fetch_through_sync(target.url, "GET", "/ok", timeout=timeout)
    assert target.requests == []


@pytest.mark.parametrize("timeout", [None, "5", True])
def test_timeout_that_is_not_a_number_is_a_type_error(target: TargetServer, timeout: object) -> None:
    with pytest.raises(TypeError, match="timeout must be seconds"):
        fetch_through_sync(target.url, "GET", "/ok", timeout=timeout)  # type: ignore[arg-type]
    assert target.requests == []


@pytest.mark.parametrize(
    ("max_body", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError), (None, TypeError)]
)
def test_bad_max_body_is_refused_before_sending(target: TargetServer, max_body: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_body"):
        fetch_through_sync(target.url, "GET", "/ok", timeout=2.0, max_body=max_body)  # type: ignore[arg-type]
    assert target.requests == []


@pytest.mark.parametrize(
    "base_url",
    ["not a url", "127.0.0.1:8123", "ftp://127.0.0.1:21", "http://", "http://[::1", "http://127.0.0.1:99999"],
)
def test_malformed_base_url_is_a_value_error_not_an_unreachable_service(base_url: str) -> None:
    with pytest.raises(ValueError, match="base URL") as caught:
        fetch_through_sync(base_url, "GET", "/ok", timeout=2.0)
    assert not isinstance(caught.value, HopFailure)


@pytest.mark.parametrize(
    ("path", "request_args", "cause"),
    [
        ("ftp://127.0.0.1:21/x", {}, httpx.UnsupportedProtocol),
        ("http://[::1/x", {}, httpx.InvalidURL),
        ("/ok", {"headers": {"X-Bad": "a\r\nb"}}, httpx.LocalProtocolError),
        (
            "/ok",
            {"headers": {"Content-Length": "5"}, "content": b"abc"},
            h11.LocalProtocolError,
        ),  # escapes httpx unwrapped
    ],
)
def test_request_httpx_refuses_is_a_value_error_with_the_cause(
    target: TargetServer, path: str, request_args: dict[str, Any], cause: type[Exception]
) -> None:
    with pytest.raises(ValueError, match="caller's mistake, not a failed hop") as caught:
        fetch_through_sync(target.url, "GET", path, timeout=2.0, **request_args)
    assert isinstance(caught.value.__cause__, cause)
    assert not isinstance(caught.value, HopFailure)
