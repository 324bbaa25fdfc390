"""The stack's three load-bearing shapes (``fakes/qdrant/README.md``, "What the stack sends"): has_id isolation,
payload-only touch, TTL by range."""

from __future__ import annotations

import uuid

import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as m

from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle

DIM = 8


def _tool_id(i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"tool-{i}"))


@pytest.fixture
def caller_tools(client: QdrantClient) -> QdrantClient:
    client.create_collection("caller_tools", vectors_config=m.VectorParams(size=DIM, distance=m.Distance.COSINE))
    points = [
        m.PointStruct(
            id=_tool_id(i),
            vector=[float((i * 7 + j) % 5 + 1) for j in range(DIM)],
            payload={"name": f"t{i}", "lastSeenAt": 1_000 + i},
        )
        for i in range(20)
    ]
    client.upsert("caller_tools", points, wait=True)
    return client


def test_has_id_returns_only_the_supplied_ids_whatever_the_uuid_case(caller_tools: QdrantClient) -> None:
    mine = [_tool_id(i) for i in (3, 8, 15)]
    sent: list[m.ExtendedPointId] = [mine[0].upper(), mine[1], mine[2].replace("-", "").upper()]
    hits = caller_tools.query_points(
        "caller_tools", query=[1.0] * DIM, limit=10, query_filter=m.Filter(must=[m.HasIdCondition(has_id=sent)])
    ).points
    assert sorted(h.id for h in hits) == sorted(mine)
    assert (
        len(
            caller_tools.query_points(
                "caller_tools", query=[1.0] * DIM, limit=2, query_filter=m.Filter(must=[m.HasIdCondition(has_id=sent)])
            ).points
        )
        == 2
    )


def test_payload_only_touch_leaves_vectors_untouched(
    caller_tools: QdrantClient, fake_qdrant: FakeHandle[QdrantFake]
) -> None:
    ids: list[m.ExtendedPointId] = [_tool_id(i) for i in (1, 2)]
    before = {r.id: r.vector for r in caller_tools.retrieve("caller_tools", ids, with_vectors=True)}
    caller_tools.set_payload("caller_tools", {"lastSeenAt": 99_999}, points=ids, wait=False)
    (touch,) = fake_qdrant.requests(path_prefix="/collections/caller_tools/points/payload")
    assert touch.query == "wait=false"
    assert touch.json() == {"payload": {"lastSeenAt": 99_999}, "points": ids}
    after = caller_tools.retrieve("caller_tools", ids, with_vectors=True)
    assert {r.id: r.vector for r in after} == before
    assert all(r.payload == {"name": (r.payload or {})["name"], "lastSeenAt": 99_999} for r in after)


def test_delete_by_range_lt_cutoff_with_wait_removes_exactly_the_older_points(caller_tools: QdrantClient) -> None:
    cutoff = 1_010
    result = caller_tools.delete(
        "caller_tools",
        wait=True,
        points_selector=m.FilterSelector(
            filter=m.Filter(must=[m.FieldCondition(key="lastSeenAt", range=m.Range(lt=cutoff))])
        ),
    )
    assert result.status == m.UpdateStatus.COMPLETED
    left = []
    offset = None
    while True:
        page, offset = caller_tools.scroll("caller_tools", limit=7, offset=offset)
        left.extend(page)
        if offset is None:
            break
    assert sorted((r.payload or {})["lastSeenAt"] for r in left) == list(range(cutoff, 1_020))
    assert caller_tools.count("caller_tools", exact=True).count == 10
