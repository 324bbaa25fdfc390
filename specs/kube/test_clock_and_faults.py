"""The double's clock (``Date`` header, every timestamp, kubectl's AGE column) and API faults through the shared
fault table, as the real kubectl and client-go experience them (client-go retries a 429 carrying Retry-After)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator

import httpx
import pytest

from fakes.kube import KubeHandle
from fakes.kube.clock import parse_rfc3339
from specs.kube.conftest import bare

CM_PATH = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def served() -> Iterator[KubeHandle]:
    with bare() as handle:
        yield handle


@pytest.fixture
def kd(served: KubeHandle) -> Iterator[KubeHandle]:
    served.reset()
    yield served
    served.reset()


def _server_date(kd: KubeHandle) -> float:
    response = httpx.get(f"{kd.url}/version", timeout=5.0)
    return email.utils.parsedate_to_datetime(response.headers["date"]).timestamp()


def test_date_header_and_timestamps_follow_the_doubles_clock(kd: KubeHandle) -> None:
    kd.clock.set_offset(-90.0)
    assert abs((time.time() - 90.0) - _server_date(kd)) < 3.0
    created = kd.store.create("configmaps", {"metadata": {"name": "behind", "namespace": "default"}})
    assert abs(parse_rfc3339(created["metadata"]["creationTimestamp"]) - (time.time() - 90.0)) < 3.0
    kd.clock.set_offset(3600.0)
    assert abs((time.time() + 3600.0) - _server_date(kd)) < 3.0


def test_kubectl_age_is_measured_on_the_doubles_clock(kd: KubeHandle) -> None:
    kd.store.create("configmaps", {"metadata": {"name": "aged", "namespace": "default"}})
    kd.clock.advance(3 * 3600 + 30)
    lines = kd.kubectl("get", "configmap", "aged", namespace="default").stdout.splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert lines[1].split() == ["aged", "0", "3h"]


def test_the_clock_from_the_admin_api(kd: KubeHandle) -> None:
    moved = httpx.post(f"{kd.url}/_fake/clock", json={"offset": -42.5}, timeout=5.0)
    assert moved.status_code == 200
    assert moved.json()["offset"] == -42.5
    assert kd.clock.offset == -42.5
    httpx.post(f"{kd.url}/_fake/clock", json={"advance": 2.5}, timeout=5.0)
    assert kd.clock.offset == -40.0
    bad = httpx.post(f"{kd.url}/_fake/clock", json={"offset": "soon"}, timeout=5.0)
    assert bad.status_code == 400
    assert "bad clock value" in bad.json()["error"]


def test_kubectl_waits_out_a_429_with_retry_after(kd: KubeHandle) -> None:
    kd.kubectl("get", "configmaps", namespace="default")  # warm the discovery cache
    kd.fault("status", CM_PATH, status=429, times=1)
    started = time.time()
    done = kd.kubectl("get", "configmaps", "-o", "name", namespace="default")
    assert done.returncode == 0, done.stderr
    answered = [e.status for e in kd.requests(path_prefix=CM_PATH) if e.time >= started]
    assert answered == [429, 200]


def test_kubectl_reports_5xx_statuses_with_their_reason(kd: KubeHandle) -> None:
    kd.kubectl("get", "configmaps", namespace="default")
    kd.fault("status", CM_PATH, status=503, times=1)
    unavailable = kd.kubectl("get", "configmaps", namespace="default")
    assert unavailable.returncode == 1
    assert "Error from server (ServiceUnavailable)" in unavailable.stderr
    kd.fault("status", CM_PATH, status=500, times=1)
    internal = kd.kubectl("get", "configmaps", namespace="default")
    assert internal.returncode == 1
    assert "Error from server (InternalError)" in internal.stderr


def test_a_hung_request_ends_at_kubectls_request_timeout(kd: KubeHandle) -> None:
    kd.kubectl("get", "configmaps", namespace="default")
    kd.fault("hang", CM_PATH)
    started = time.monotonic()
    done = kd.kubectl("get", "configmaps", "--request-timeout=1s", namespace="default", timeout=20.0)
    elapsed = time.monotonic() - started
    assert done.returncode == 1
    assert "Client.Timeout" in done.stderr or "context deadline exceeded" in done.stderr, done.stderr
    assert elapsed < 15.0
    assert [e.status for e in kd.requests(path_prefix=CM_PATH)][-1] is None  # no answer was ever sent


def test_kubectl_retries_a_get_whose_connection_was_reset(kd: KubeHandle) -> None:
    kd.kubectl("get", "configmaps", namespace="default")
    kd.fault("reset", CM_PATH, times=1)
    started = time.time()
    done = kd.kubectl("get", "configmaps", "-o", "name", namespace="default")
    assert done.returncode == 0, done.stderr  # client-go retries an idempotent GET on ECONNRESET
    assert [e.status for e in kd.requests(path_prefix=CM_PATH) if e.time >= started] == [None, 200]


def test_a_reset_on_every_attempt_fails_the_create(kd: KubeHandle) -> None:
    kd.kubectl("get", "configmaps", namespace="default")
    kd.fault("reset", CM_PATH, method="POST")
    done = kd.kubectl("create", "configmap", "c", namespace="default")
    assert done.returncode == 1
    assert "connection reset by peer" in done.stderr or "EOF" in done.stderr, done.stderr


def test_latency_delays_the_answer(kd: KubeHandle) -> None:
    kd.fault("latency", CM_PATH, delay=1.0, times=1)
    started = time.monotonic()
    response = httpx.get(f"{kd.url}{CM_PATH}", timeout=10.0)
    assert response.status_code == 200
    assert time.monotonic() - started >= 1.0


def test_a_status_fault_body_is_a_real_status(kd: KubeHandle) -> None:
    kd.fault("status", CM_PATH, status=429, times=1)
    response = httpx.get(f"{kd.url}{CM_PATH}", timeout=5.0)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "TooManyRequests", 429)
