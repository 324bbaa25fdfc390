"""Each fault kind as qdrant-client sees it, and as ``harness.fetch_through``'s total deadline sees it.

qdrant-client never retries (``fakes/qdrant/README.md``, "qdrant-client's behaviour"): every fault reaches the caller
once.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as m
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle

# Imported directly: if harness stops exporting these, the specs below must fail, not skip.
from harness import ServiceTimeout, ServiceUnreachable, fetch_through

COUNT = "/collections/c/points/count"


@pytest.fixture
def fq(fake_qdrant: FakeHandle[QdrantFake], client: QdrantClient) -> FakeHandle[QdrantFake]:
    client.create_collection("c", vectors_config=m.VectorParams(size=2, distance=m.Distance.COSINE))
    client.upsert("c", [m.PointStruct(id=1, vector=[1.0, 0.0])])
    return fake_qdrant


def _short_client(url: str, timeout: int = 1) -> QdrantClient:
    return QdrantClient(url=url, timeout=timeout, check_compatibility=False)


def test_hang_is_a_timeout_from_qdrant_client(fq: FakeHandle[QdrantFake]) -> None:
    fq.fault("hang", COUNT, times=1)
    started = time.monotonic()
    with pytest.raises(ResponseHandlingException) as raised:
        _short_client(fq.url).count("c")
    assert isinstance(raised.value.source, httpx.ReadTimeout)
    assert 0.8 < time.monotonic() - started < 5
    assert [(e.fault, e.status) for e in fq.requests(path_prefix=COUNT)] == [("hang", None)]


def test_reset_is_a_connection_error_from_qdrant_client(fq: FakeHandle[QdrantFake]) -> None:
    fq.fault("reset", COUNT, times=1)
    with pytest.raises(ResponseHandlingException) as raised:
        _short_client(fq.url).count("c")
    assert isinstance(raised.value.source, (httpx.ReadError, httpx.RemoteProtocolError))
    assert _short_client(fq.url).count("c").count == 1  # next request is fine: no retry, no residue


def test_status_503_and_429_with_retry_after(fq: FakeHandle[QdrantFake], client: QdrantClient) -> None:
    fq.fault("status", COUNT, status=503, times=1)
    with pytest.raises(UnexpectedResponse) as unavailable:
        client.count("c")
    assert unavailable.value.status_code == 503
    fq.fault("status", COUNT, status=429, headers=[("Retry-After", "7")], times=1)
    with pytest.raises(ResourceExhaustedResponse) as limited:
        client.count("c")
    assert limited.value.retry_after_s == 7
    fq.fault("status", COUNT, status=429, times=1)  # like Qdrant, a 429 always carries Retry-After
    with pytest.raises(ResourceExhaustedResponse) as default:
        client.count("c")
    assert default.value.retry_after_s == 1
    assert client.count("c").count == 1
    fq.fault("status", COUNT, status=429, headers=[("Retry-After", "7")], times=1)
    raw = httpx.post(fq.url + COUNT, json={}, timeout=5)
    assert raw.headers.get_list("retry-after") == ["7"]  # the fault's header replaces the default, no duplicate


def test_status_fault_with_apply_loses_the_answer_not_the_write(
    fq: FakeHandle[QdrantFake], client: QdrantClient
) -> None:
    fq.fault("status", "/collections/c/points", method="PUT", status=503, apply=True, times=1)
    with pytest.raises(UnexpectedResponse):
        client.upsert("c", [m.PointStruct(id=2, vector=[0.0, 1.0])])
    assert client.count("c").count == 2


def test_latency_delays_but_answers(fq: FakeHandle[QdrantFake]) -> None:
    fq.fault("latency", COUNT, delay=0.4, times=1)
    started = time.monotonic()
    assert _short_client(fq.url, timeout=5).count("c").count == 1
    assert time.monotonic() - started >= 0.4


def test_drip_outlives_qdrant_clients_read_timeout(fq: FakeHandle[QdrantFake]) -> None:
    """httpx's timeouts are per read, not in total, so a drip defeats them (encode/httpx#1450): the 1 s client gets
    its answer, late."""
    fq.fault("drip", COUNT, interval=0.03, times=1)
    started = time.monotonic()
    assert _short_client(fq.url, timeout=1).count("c").count == 1
    assert time.monotonic() - started > 1.0  # longer than the client's timeout, and still no error


def test_faults_over_the_admin_api_reach_qdrant_client(fq: FakeHandle[QdrantFake], client: QdrantClient) -> None:
    with httpx.Client(base_url=fq.url, timeout=5) as admin:
        assert (
            admin.post("/_fake/faults", json={"kind": "status", "status": 500, "path": "/collections/c/*"}).status_code
            == 201
        )
        with pytest.raises(UnexpectedResponse):
            client.count("c")
        admin.delete("/_fake/faults")
    assert client.count("c").count == 1


@pytest.mark.parametrize("kind,params", [("hang", {}), ("drip", {"interval": 0.1}), ("latency", {"delay": 3.0})])
def test_fetch_through_total_deadline_catches_hang_drip_and_latency(
    fq: FakeHandle[QdrantFake], kind: str, params: dict[str, Any]
) -> None:
    fq.fault(kind, COUNT, times=1, **params)
    started = time.monotonic()
    with pytest.raises(ServiceTimeout):
        anyio.run(lambda: fetch_through(fq.url, "POST", COUNT, timeout=0.6, json={}))
    assert time.monotonic() - started < 3.0  # the total deadline, not the drip's 6 s or the 3 s latency


def test_fetch_through_sees_reset_as_unreachable_and_status_as_an_answer(fq: FakeHandle[QdrantFake]) -> None:
    fq.fault("reset", COUNT, times=1)
    with pytest.raises(ServiceUnreachable):
        anyio.run(lambda: fetch_through(fq.url, "POST", COUNT, timeout=2.0, json={}))
    fq.fault("status", COUNT, status=503, times=1)
    response = anyio.run(lambda: fetch_through(fq.url, "POST", COUNT, timeout=2.0, json={}))
    assert response.status_code == 503
    assert response.json()["status"]["error"].startswith("Shard temporarily unavailable")
