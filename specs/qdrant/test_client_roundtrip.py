"""qdrant-client 1.20 drives every operation the fake serves and gets the right types and values: int and UUID ids,
named vectors, payload selectors, thresholds per distance, scroll across the int-then-UUID boundary."""

from __future__ import annotations

import json
import warnings

import httpx
import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as m
from qdrant_client.http.exceptions import UnexpectedResponse

from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle

UUID_UPPER = "C9A52F5499C2D5B7BD1F61DA14EBE68D"
UUID = "c9a52f54-99c2-d5b7-bd1f-61da14ebe68d"


@pytest.fixture
def docs(client: QdrantClient) -> QdrantClient:
    client.create_collection("docs", vectors_config=m.VectorParams(size=4, distance=m.Distance.COSINE))
    client.upsert(
        "docs",
        [
            m.PointStruct(id=1, vector=[3.0, 4.0, 0.0, 0.0], payload={"city": "Berlin", "n": 1}),
            m.PointStruct(id=2, vector=[1.0, 0.0, 0.0, 0.0], payload={"city": "Paris", "n": 2}),
            m.PointStruct(id=UUID_UPPER, vector=[0.0, 1.0, 0.0, 0.0], payload={"city": "Rome", "n": 3}),
        ],
    )
    return client


def test_version_check_passes_without_warning(fake_qdrant: FakeHandle[QdrantFake]) -> None:
    """qdrant-client's own check (the code its background thread runs) accepts the version the fake claims."""
    from importlib.metadata import version

    from qdrant_client.common.version_check import get_server_version, is_compatible

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        info = QdrantClient(url=fake_qdrant.url, timeout=5, check_compatibility=False).info()
    assert info.version == "1.20.0"
    assert info.title == "qdrant - vector search engine"
    server = get_server_version(fake_qdrant.url, {}, None, 5)
    assert server == "1.20.0"
    assert is_compatible(version("qdrant-client"), server)


def test_collections_create_get_exists_list_delete(client: QdrantClient, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    assert client.create_collection("a", vectors_config=m.VectorParams(size=4, distance=m.Distance.DOT)) is True
    with pytest.raises(UnexpectedResponse) as exists:
        client.create_collection("a", vectors_config=m.VectorParams(size=4, distance=m.Distance.DOT))
    assert exists.value.status_code == 409
    info = client.get_collection("a")
    assert isinstance(info, m.CollectionInfo)
    assert info.points_count == 0
    vectors = info.config.params.vectors
    assert isinstance(vectors, m.VectorParams)
    assert vectors.size == 4
    assert vectors.distance == m.Distance.DOT
    assert client.collection_exists("a") is True
    assert client.collection_exists("b") is False
    assert [c.name for c in client.get_collections().collections] == ["a"]
    assert client.delete_collection("a") is True
    assert client.delete_collection("a") is False
    with pytest.raises(UnexpectedResponse) as missing:
        client.get_collection("a")
    assert missing.value.status_code == 404
    assert json.loads(missing.value.content)["status"]["error"] == "Not found: Collection `a` doesn't exist!"


def test_upsert_list_and_batch_retrieve_and_get_point(docs: QdrantClient, fake_qdrant: FakeHandle[QdrantFake]) -> None:
    result = docs.upsert(
        "docs", m.Batch(ids=[3, 4], vectors=[[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 2.0]], payloads=[{"k": 3}, {"k": 4}])
    )
    assert isinstance(result, m.UpdateResult)
    assert result.status == m.UpdateStatus.COMPLETED
    records = docs.retrieve("docs", [1, UUID_UPPER, 999], with_vectors=True)
    assert all(isinstance(r, m.Record) for r in records)
    by_id = {r.id: r for r in records}
    assert set(by_id) == {1, UUID}  # missing ids left out, UUID lower-case hyphenated
    assert by_id[1].vector == pytest.approx([0.6, 0.8, 0, 0])  # Cosine normalizes at insert
    assert by_id[1].payload == {"city": "Berlin", "n": 1}
    assert docs.retrieve("docs", [4], with_payload=False)[0].payload is None
    assert docs.count("docs").count == 5
    (upsert, batch) = fake_qdrant.requests(path_prefix="/collections/docs/points", method="PUT")
    assert upsert.query == "wait=true"
    assert "points" in upsert.json()
    assert "batch" in batch.json()
    get = docs.http.points_api.get_point("docs", "1").result
    assert get is not None
    assert get.id == 1
    assert get.payload == {"city": "Berlin", "n": 1}


def test_upsert_by_named_vectors_and_query_using(client: QdrantClient) -> None:
    client.create_collection(
        "named",
        vectors_config={
            "text": m.VectorParams(size=2, distance=m.Distance.DOT),
            "img": m.VectorParams(size=3, distance=m.Distance.EUCLID),
        },
    )
    client.upsert(
        "named",
        [
            m.PointStruct(id=1, vector={"text": [1.0, 2.0], "img": [0.0, 0.0, 0.0]}),
            m.PointStruct(id=2, vector={"text": [2.0, 2.0], "img": [3.0, 4.0, 0.0]}),
        ],
    )
    dot = client.query_points("named", query=[1.0, 1.0], using="text", with_vectors=["text"]).points
    assert [(p.id, p.score) for p in dot] == [(2, 4.0), (1, 3.0)]
    assert dot[0].vector == {"text": [2.0, 2.0]}
    euclid = client.query_points("named", query=[0.0, 0.0, 0.0], using="img").points
    assert [p.id for p in euclid] == [1, 2]  # distance, lower first
    assert [p.score for p in euclid] == pytest.approx([0.0, 5.0])
    with pytest.raises(UnexpectedResponse) as bad:
        client.query_points("named", query=[1.0, 1.0], using="nope")
    assert bad.value.status_code == 400
    assert b"Not existing vector name error: nope" in bad.value.content


def test_query_by_vector_filter_threshold_and_selectors(docs: QdrantClient) -> None:
    res = docs.query_points("docs", query=[1.0, 0.0, 0.0, 0.0], limit=3, with_payload=["city"])
    assert type(res).__name__ == "QueryResponse"
    assert all(isinstance(p, m.ScoredPoint) for p in res.points)
    assert [p.id for p in res.points] == [2, 1, UUID]
    assert [p.score for p in res.points] == pytest.approx([1.0, 0.6, 0.0], abs=1e-6)
    assert res.points[0].payload == {"city": "Paris"}
    # the threshold is strict: a score of exactly 0.6 is dropped
    assert [p.id for p in docs.query_points("docs", query=[1.0, 0.0, 0.0, 0.0], score_threshold=0.6).points] == [2]
    flt = m.Filter(must=[m.FieldCondition(key="city", match=m.MatchAny(any=["Berlin", "Rome"]))])
    filtered = docs.query_points(
        "docs", query=[1.0, 0.0, 0.0, 0.0], query_filter=flt, with_payload=m.PayloadSelectorExclude(exclude=["n"])
    )
    assert [(p.id, p.payload) for p in filtered.points] == [(1, {"city": "Berlin"}), (UUID, {"city": "Rome"})]
    assert docs.query_points("docs", query=[1.0, 0.0, 0.0, 0.0], with_payload=False).points[0].payload is None


def test_query_by_point_id_excludes_itself(docs: QdrantClient) -> None:
    ids = [p.id for p in docs.query_points("docs", query=2, limit=5).points]
    assert 2 not in ids
    assert ids == [1, UUID]
    with pytest.raises(UnexpectedResponse) as missing:
        docs.query_points("docs", query=77)
    assert missing.value.status_code == 404


def test_query_without_vector_lists_by_id(docs: QdrantClient) -> None:
    assert [p.id for p in docs.query_points("docs", limit=10).points] == [1, 2, UUID]


def test_scroll_follows_next_page_offset_across_int_and_uuid(docs: QdrantClient) -> None:
    page, nxt = docs.scroll("docs", limit=2)
    assert [r.id for r in page] == [1, 2]
    assert nxt == UUID
    page, nxt = docs.scroll("docs", limit=2, offset=nxt, with_vectors=True)
    assert [r.id for r in page] == [UUID]
    assert nxt is None
    assert page[0].vector == pytest.approx([0, 1, 0, 0])
    hits, _ = docs.scroll("docs", scroll_filter=m.Filter(must=[m.FieldCondition(key="n", range=m.Range(gte=2))]))
    assert [r.id for r in hits] == [2, UUID]


def test_count_exact_with_filter(docs: QdrantClient) -> None:
    assert docs.count("docs", count_filter=m.Filter(must_not=[m.HasIdCondition(has_id=[1])])).count == 2
    assert isinstance(docs.count("docs"), m.CountResult)


def test_payload_set_overwrite_delete_clear_by_ids_and_filter(docs: QdrantClient) -> None:
    docs.set_payload("docs", {"tag": "x", "n": None}, points=[1])  # null deletes the key
    assert docs.retrieve("docs", [1])[0].payload == {"city": "Berlin", "tag": "x"}
    docs.set_payload("docs", {"inner": 5}, points=[1], key="meta.deep")
    assert (docs.retrieve("docs", [1])[0].payload or {})["meta"] == {"deep": {"inner": 5}}
    docs.overwrite_payload("docs", {"only": True}, points=[2])
    assert docs.retrieve("docs", [2])[0].payload == {"only": True}
    docs.delete_payload("docs", ["city"], points=m.Filter(must=[m.HasIdCondition(has_id=[UUID])]))
    assert docs.retrieve("docs", [UUID])[0].payload == {"n": 3}
    docs.clear_payload("docs", points_selector=[UUID])
    assert docs.retrieve("docs", [UUID])[0].payload == {}
    docs.set_payload(
        "docs", {"seen": 1}, points=m.Filter(must=[m.IsEmptyCondition(is_empty=m.PayloadField(key="city"))])
    )
    assert sorted(
        str(r.id)
        for r in docs.scroll(
            "docs", scroll_filter=m.Filter(must=[m.FieldCondition(key="seen", match=m.MatchValue(value=1))])
        )[0]
    ) == ["2", UUID]


def test_partial_application_on_a_missing_id_is_404_after_changing_the_others(docs: QdrantClient) -> None:
    with pytest.raises(UnexpectedResponse) as missing:
        docs.set_payload("docs", {"b": 2}, points=[1, 999])
    assert missing.value.status_code == 404
    assert json.loads(missing.value.content)["status"]["error"] == "Not found: No point with id 999 found"
    assert (docs.retrieve("docs", [1])[0].payload or {})["b"] == 2


def test_delete_points_by_ids_and_filter(docs: QdrantClient) -> None:
    assert docs.delete("docs", points_selector=[2, 12345]).status == m.UpdateStatus.COMPLETED  # missing id: no error
    docs.delete("docs", points_selector=m.Filter(must=[m.FieldCondition(key="city", match=m.MatchValue(value="Rome"))]))
    assert [r.id for r in docs.scroll("docs")[0]] == [1]


def test_create_field_index_shows_in_payload_schema(docs: QdrantClient) -> None:
    assert docs.create_payload_index("docs", "city", m.PayloadSchemaType.KEYWORD).status == m.UpdateStatus.COMPLETED
    docs.create_payload_index("docs", "n", m.IntegerIndexParams(type=m.IntegerIndexType.INTEGER))
    schema = docs.get_collection("docs").payload_schema
    assert schema["city"].data_type == m.PayloadSchemaType.KEYWORD
    assert schema["n"].data_type == m.PayloadSchemaType.INTEGER


def test_wait_false_is_acknowledged(docs: QdrantClient) -> None:
    result = docs.upsert("docs", [m.PointStruct(id=9, vector=[1.0, 1.0, 1.0, 1.0])], wait=False)
    assert result.status == m.UpdateStatus.ACKNOWLEDGED


def test_legacy_search_route(docs: QdrantClient, raw: httpx.Client) -> None:
    body = {"vector": [1, 0, 0, 0], "limit": 2, "with_payload": True}
    hits = raw.post("/collections/docs/points/search", json=body).json()["result"]
    assert [h["id"] for h in hits] == [2, 1]
    assert [m.ScoredPoint.model_validate(h).id for h in hits] == [2, 1]
    named = raw.post(
        "/collections/docs/points/search", json={"vector": {"name": "x", "vector": [1, 0, 0, 0]}, "limit": 1}
    )
    assert named.status_code == 400
    assert "Not existing vector name error: x" in named.json()["status"]["error"]


def test_in_process_transport_serves_the_same_client() -> None:
    import fakes.qdrant

    handle = fakes.qdrant.in_process()
    try:
        client = QdrantClient(url=handle.url, transport=handle.transport(), check_compatibility=False)
        client.create_collection("t", vectors_config=m.VectorParams(size=2, distance=m.Distance.EUCLID))
        client.upsert("t", [m.PointStruct(id=1, vector=[1.0, 1.0])])
        assert client.count("t").count == 1
        assert [e.path for e in handle.requests()][-1] == "/collections/t/points/count"
    finally:
        handle.app.close()


def test_async_client_over_the_in_process_async_transport() -> None:
    import anyio
    from qdrant_client import AsyncQdrantClient

    import fakes.qdrant

    handle = fakes.qdrant.in_process()

    async def main() -> None:
        client = AsyncQdrantClient(url=handle.url, transport=handle.async_transport(), check_compatibility=False)
        try:
            await client.create_collection("t", vectors_config=m.VectorParams(size=2, distance=m.Distance.DOT))
            await client.upsert("t", [m.PointStruct(id=1, vector=[1.0, 2.0]), m.PointStruct(id=2, vector=[2.0, 1.0])])
            hits = (await client.query_points("t", query=[1.0, 0.0])).points
            assert [(h.id, h.score) for h in hits] == [(2, 2.0), (1, 1.0)]
        finally:
            await client.close()

    try:
        anyio.run(main)
    finally:
        handle.app.close()
