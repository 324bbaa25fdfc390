"""Faults injected by route on the fake GitHub (shared machinery: hang, drip, reset, status, latency), as githubkit
sees them with automatic retries off (githubkit's default backs off 1, 4 and 9 s: one retried 5xx would cost about 1 s,
a persistent one 14 s)
and as ``harness.fetch_through`` sees them (one total deadline, errors naming the hop).
An injected status carries GitHub's own error body, so clients parse it like a real one."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from githubkit import GitHub
from githubkit.exception import (
    PrimaryRateLimitExceeded,
    RequestError,
    RequestFailed,
    RequestTimeout,
    SecondaryRateLimitExceeded,
)

from fakes.github import FakeGitHub
from fakes.server import FakeHandle
from specs.github.world import TOKEN

ISSUE = "/repos/octo/hello/issues/1"


@pytest.fixture
def kit(served: FakeHandle[FakeGitHub]) -> GitHub[Any]:
    return GitHub(TOKEN, base_url=served.url, auto_retry=False, http_cache=False, timeout=1.0)


def test_injected_502_once_then_the_real_answer(served: FakeHandle[FakeGitHub], kit: GitHub[Any]) -> None:
    served.fault("status", ISSUE, status=502, times=1)
    with pytest.raises(RequestFailed) as failed:
        kit.rest.issues.get("octo", "hello", 1)
    assert failed.value.response.status_code == 502
    assert failed.value.response.json() == {
        "message": "Bad Gateway",
        "documentation_url": "https://docs.github.com/rest",
        "status": "502",
    }
    assert kit.rest.issues.get("octo", "hello", 1).parsed_data.number == 1
    assert [(e.status, e.fault) for e in served.requests(path_prefix=ISSUE)] == [(502, "status"), (200, None)]


def test_rate_limit_faults_raise_githubkits_rate_limit_errors(served: FakeHandle[FakeGitHub], kit: GitHub[Any]) -> None:
    served.fault("status", ISSUE, status=429, headers=[("retry-after", "7")], times=1)
    with pytest.raises(SecondaryRateLimitExceeded) as secondary:
        kit.rest.issues.get("octo", "hello", 1)
    assert secondary.value.retry_after.total_seconds() == 7
    reset = str(int(time.time()) + 60)
    served.fault(
        "status", ISSUE, status=403, times=1, headers=[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", reset)]
    )
    with pytest.raises(PrimaryRateLimitExceeded):
        kit.rest.issues.get("octo", "hello", 1)


def test_hang_is_a_timeout_and_reset_a_request_error(served: FakeHandle[FakeGitHub], kit: GitHub[Any]) -> None:
    served.fault("hang", ISSUE, times=1)
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        kit.rest.issues.get("octo", "hello", 1)
    assert time.monotonic() - started < 5.0  # the client's 1 s timeout, generously bounded
    served.fault("reset", ISSUE, times=1)
    with pytest.raises(RequestError) as reset:
        kit.rest.issues.get("octo", "hello", 1)
    assert not isinstance(reset.value, RequestFailed)  # no HTTP answer at all
    assert [e.status for e in served.requests(path_prefix=ISSUE)] == [None, None]


def test_drip_outlives_githubkits_per_read_timeout(served: FakeHandle[FakeGitHub], kit: GitHub[Any]) -> None:
    # 1 s per-read timeout, one byte every 20 ms: every read succeeds, so the whole answer takes far longer than 1 s.
    served.fault("drip", "/repos/octo/nope", interval=0.02, times=1)
    started = time.monotonic()
    with pytest.raises(RequestFailed) as missing:
        kit.rest.repos.get("octo", "nope")
    took = time.monotonic() - started
    body = missing.value.response.content
    assert missing.value.response.status_code == 404
    assert took >= len(body) * 0.02 * 0.8 > 1.0


def test_latency_delays_but_answers(served: FakeHandle[FakeGitHub], kit: GitHub[Any]) -> None:
    served.fault("latency", ISSUE, delay=0.3, times=1)
    started = time.monotonic()
    assert kit.rest.issues.get("octo", "hello", 1).status_code == 200
    assert time.monotonic() - started >= 0.3


def test_faults_in_process_are_the_exceptions_a_socket_client_sees(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    kit = GitHub(
        TOKEN,
        base_url=fake_inproc.url,
        transport=fake_inproc.transport(),
        auto_retry=False,
        http_cache=False,
        timeout=1.0,
    )
    fake_inproc.fault("reset", ISSUE, times=1)
    with pytest.raises(RequestError):
        kit.rest.issues.get("octo", "hello", 1)
    fake_inproc.fault("status", ISSUE, status=503, times=1)
    with pytest.raises(RequestFailed) as unavailable:
        kit.rest.issues.get("octo", "hello", 1)
    assert unavailable.value.response.json()["status"] == "503"


def _fetch(target: str, path: str, timeout: float) -> httpx.Response:
    import functools

    import anyio

    from harness import fetch_through

    return anyio.run(
        functools.partial(
            fetch_through, target, "GET", path, timeout=timeout, headers={"authorization": f"token {TOKEN}"}
        )
    )


def test_faults_seen_from_harness_fetch_through(served: FakeHandle[FakeGitHub]) -> None:
    from harness import ServiceTimeout, ServiceUnreachable

    served.fault("drip", "/repos/octo/nope", interval=0.02)  # the drip githubkit sat through above
    started = time.monotonic()
    with pytest.raises(ServiceTimeout) as dripped:
        _fetch(served.url, "/repos/octo/nope", timeout=0.5)
    assert time.monotonic() - started < 3.0
    assert dripped.value.hop == "service"
    assert "/repos/octo/nope" in str(dripped.value)
    served.fault("hang", ISSUE, times=1)
    with pytest.raises(ServiceTimeout):
        _fetch(served.url, ISSUE, timeout=0.5)
    served.fault("reset", ISSUE, times=1)
    with pytest.raises(ServiceUnreachable):
        _fetch(served.url, ISSUE, timeout=2.0)
    served.fault("status", ISSUE, status=502, times=1)
    answer = _fetch(served.url, ISSUE, timeout=2.0)  # an error status is an answer, not a hop failure
    assert answer.status_code == 502
    assert answer.json()["status"] == "502"
    assert _fetch(served.url, ISSUE, timeout=2.0).json()["number"] == 1
