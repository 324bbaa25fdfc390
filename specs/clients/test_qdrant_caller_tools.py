"""``QdrantView``'s reads of the caller-tool store against the fake Qdrant: exact counts, "never created" (``None``)
apart from "empty" (0), and stored definition names from a scroll that never pulls vectors."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as m

from fakes.server import FakeHandle
from harness import QdrantReadError, QdrantView
from specs.agent_controller.qdrant_collections import CALLER_TOOLS, COLLECTIONS, caller_tool_names

DIMS = 8


@pytest.fixture
def client(fake_qdrant: FakeHandle) -> Iterator[QdrantClient]:
    qc = QdrantClient(url=fake_qdrant.url, timeout=5, check_compatibility=False)
    yield qc
    qc.close()


def definition(name: str, description: str) -> m.PointStruct:
    """A point shaped as the orchestrator stores a caller-tool definition (id derived from its content hash)."""
    digest = hashlib.sha256(f"{name}\n{description}".encode()).hexdigest()
    return m.PointStruct(
        id=str(uuid.UUID(digest[:32])),
        vector=[1.0] * DIMS,
        payload={
            "hash": digest,
            "name": name,
            "description": description,
            "parametersJson": "{}",
            "lastSeenAt": 1_000_000,
        },
    )


def create(client: QdrantClient, name: str) -> None:
    client.create_collection(name, vectors_config=m.VectorParams(size=DIMS, distance=m.Distance.COSINE))


def test_never_created_is_none_and_empty_is_zero(fake_qdrant: FakeHandle, client: QdrantClient) -> None:
    view = QdrantView(fake_qdrant.url, timeout=5)
    assert view.point_count(CALLER_TOOLS) is None
    assert caller_tool_names(view) is None
    create(client, CALLER_TOOLS)
    assert view.point_count(CALLER_TOOLS) == 0
    assert caller_tool_names(view) == []


def test_counts_are_exact_and_names_come_from_a_scroll_without_vectors(
    fake_qdrant: FakeHandle, client: QdrantClient
) -> None:
    create(client, CALLER_TOOLS)
    create(client, "tools")
    client.upsert(CALLER_TOOLS, [definition(f"tool_{i:03d}", "run token r-1") for i in range(205)], wait=True)
    view = QdrantView(fake_qdrant.url, timeout=5)
    assert view.point_counts(COLLECTIONS) == {"tools": 0, "skills": None, "agents": None, CALLER_TOOLS: 205}
    names = caller_tool_names(view)
    assert names is not None
    assert sorted(names) == [f"tool_{i:03d}" for i in range(205)]
    counts = fake_qdrant.requests(path_prefix=f"/collections/{CALLER_TOOLS}/points/count")
    assert {e.json()["exact"] for e in counts} == {True}
    scrolls = fake_qdrant.requests(path_prefix=f"/collections/{CALLER_TOOLS}/points/scroll")
    assert len(scrolls) == 2  # 205 points at 200 per page
    assert {(e.json()["with_vector"], tuple(e.json()["with_payload"])) for e in scrolls} == {(False, ("name",))}


def test_a_resent_definition_adds_nothing_and_an_edited_one_adds_one(
    fake_qdrant: FakeHandle, client: QdrantClient
) -> None:
    create(client, CALLER_TOOLS)
    view = QdrantView(fake_qdrant.url, timeout=5)
    battery = definition("get_device_battery", "battery of a device, run r-1")
    client.upsert(CALLER_TOOLS, [battery], wait=True)
    before = view.point_count(CALLER_TOOLS)
    client.upsert(CALLER_TOOLS, [battery], wait=True)
    assert view.point_count(CALLER_TOOLS) == before
    client.upsert(CALLER_TOOLS, [definition("get_device_battery", "battery level of a device, run r-1")], wait=True)
    assert view.point_count(CALLER_TOOLS) == (before or 0) + 1
    descriptions = view.payload_values(
        CALLER_TOOLS, "description", filter={"must": [{"key": "name", "match": {"value": "get_device_battery"}}]}
    )
    assert sorted(descriptions or []) == ["battery level of a device, run r-1", "battery of a device, run r-1"]


def test_a_404_that_is_not_qdrants_is_not_never_created(fake_qdrant: FakeHandle) -> None:
    fake_qdrant.fault("status", f"/collections/{CALLER_TOOLS}/points/count", status=404, body="404 page not found")
    with pytest.raises(QdrantReadError) as wrong:
        QdrantView(fake_qdrant.url, timeout=5).point_count(CALLER_TOOLS)
    assert wrong.value.status == 404
    assert "404 page not found" in str(wrong.value)


def test_other_errors_are_not_swallowed(fake_qdrant: FakeHandle, client: QdrantClient) -> None:
    create(client, CALLER_TOOLS)
    fake_qdrant.fault("status", f"/collections/{CALLER_TOOLS}/points/scroll", status=500, times=1)
    with pytest.raises(QdrantReadError) as failed:
        caller_tool_names(QdrantView(fake_qdrant.url, timeout=5))
    assert failed.value.status == 500
