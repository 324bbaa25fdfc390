"""``harness.qdrant.QdrantView`` against the fake: exact counts, whole scrolls, points by field, bounded calls."""

from __future__ import annotations

import time

import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as m

from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle
from harness.qdrant import QdrantReadError, QdrantView


@pytest.fixture
def loaded(fake_qdrant: FakeHandle[QdrantFake], client: QdrantClient) -> QdrantView:
    client.create_collection("tools", vectors_config=m.VectorParams(size=2, distance=m.Distance.COSINE))
    client.upsert(
        "tools",
        [m.PointStruct(id=i, vector=[1.0, i], payload={"kind": "a" if i % 3 else "b", "n": i}) for i in range(1, 26)],
    )
    return QdrantView(fake_qdrant.url, timeout=5)


def test_exact_count_with_and_without_filter(loaded: QdrantView, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    assert loaded.count("tools") == 25
    assert loaded.count("tools", {"must": [{"key": "kind", "match": {"value": "b"}}]}) == 8
    assert all(
        e.json() == {"exact": True} or e.json()["exact"] is True
        for e in fake_qdrant.requests(path_prefix="/collections/tools/points/count")
    )


def test_scroll_all_follows_next_page_offset(loaded: QdrantView, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    points = loaded.scroll_all("tools", page_size=7)
    assert [p["id"] for p in points] == list(range(1, 26))
    assert len(fake_qdrant.requests(path_prefix="/collections/tools/points/scroll")) == 4


def test_points_where_and_exists(loaded: QdrantView) -> None:
    assert [p["id"] for p in loaded.points_where("tools", "kind", "b")] == [3, 6, 9, 12, 15, 18, 21, 24]
    assert loaded.exists("tools")
    assert not loaded.exists("nope")
    assert loaded.collections() == ["tools"]


def test_errors_name_the_collection_and_qdrants_message(loaded: QdrantView) -> None:
    with pytest.raises(QdrantReadError) as missing:
        loaded.count("nope")
    assert missing.value.status == 404
    assert "Collection `nope` doesn't exist" in str(missing.value)


def test_a_hung_qdrant_is_bounded(loaded: QdrantView, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    from harness.errors import ServiceTimeout

    fake_qdrant.fault("hang", "/collections/tools/points/count")
    started = time.monotonic()
    with pytest.raises(ServiceTimeout):
        QdrantView(fake_qdrant.url, timeout=0.5).count("tools")
    assert time.monotonic() - started < 3


def test_a_scroll_that_never_ends_is_reported(loaded: QdrantView, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    body = b'{"result":{"points":[{"id":1,"payload":{}}],"next_page_offset":2},"status":"ok","time":0.0}'
    fake_qdrant.fault("status", "/collections/tools/points/scroll", status=200, body=body)
    with pytest.raises(QdrantReadError, match="does not end"):
        loaded.scroll_all("tools")


def test_a_non_qdrant_answer_is_reported(loaded: QdrantView, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    fake_qdrant.fault("status", "/collections", status=200, body="<html>proxy</html>", times=1)
    with pytest.raises(QdrantReadError, match="envelope"):
        loaded.collections()
