"""Mutation differential (``fakes/qdrant/README.md``, "Payload mutation"): the same payload updates, deletes and
upserts, sent to the fake through qdrant-client over REST and to local mode directly, leave identical collections
(payloads and vectors). Also the top-k differential for the Dot and Euclid distances (Cosine is in
``test_differential.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient
from qdrant_client import models as m
from qdrant_client.http.exceptions import UnexpectedResponse

import fakes.qdrant
from fakes.testing import examples, fuzzing

IDS: list[m.ExtendedPointId] = [1, 2, 3, 4, "c9a52f54-99c2-d5b7-bd1f-61da14ebe68d"]
SEED: list[tuple[m.ExtendedPointId, list[float], dict[str, Any]]] = [
    (1, [1.0, 0.0, 2.0], {"a": 1, "meta": {"k": 1, "z": "q"}, "arr": [{"x": 1}, {"x": 2}], "tags": ["a"]}),
    (2, [0.0, 1.0, 0.5], {"a": 1.0, "meta": {"k": 2}, "tags": []}),
    (3, [2.0, 2.0, 0.0], {"a": "1", "arr": [{"x": 3, "y": 1}]}),
    ("c9a52f54-99c2-d5b7-bd1f-61da14ebe68d", [0.5, -1.0, 1.0], {"meta": "scalar", "n": None}),
]
values = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["v", "w"]), st.just({"k": 9}), st.just([1, None]))
payloads = st.dictionaries(st.sampled_from(["a", "b", "meta", "tags", "n"]), values, min_size=1, max_size=3)
filters = st.sampled_from(
    [
        {"must": [{"key": "a", "match": {"value": 1}}]},
        {"must": [{"key": "meta.k", "range": {"gte": 1}}]},
        {"must_not": [{"is_empty": {"key": "tags"}}]},
        {"must": [{"has_id": [2, "c9a52f54-99c2-d5b7-bd1f-61da14ebe68d"]}]},
        {"should": [{"key": "arr[].x", "match": {"any": [2, 3]}}]},
        {"must": [{"is_null": {"key": "n"}}]},
    ]
)
selector = st.one_of(st.sampled_from(IDS).map(lambda i: ("ids", [i])), filters.map(lambda f: ("filter", f)))
ops = st.one_of(
    st.tuples(st.just("set"), payloads, selector, st.sampled_from([None, "meta", "new.deep", "arr[]"])),
    st.tuples(st.just("overwrite"), payloads, selector, st.none()),
    st.tuples(
        st.just("delete_keys"),
        st.lists(st.sampled_from(["a", "meta.k", "arr[].x", "tags", "meta", "zz"]), min_size=1, max_size=2),
        selector,
        st.none(),
    ),
    st.tuples(st.just("clear"), st.none(), selector, st.none()),
    st.tuples(st.just("delete"), st.none(), selector, st.none()),
    st.tuples(st.just("upsert"), payloads, st.sampled_from(IDS).map(lambda i: ("ids", [i])), st.none()),
)


#: One generated operation: (name, argument, (selector kind, value), key).
Op = tuple[str, Any, tuple[str, Any], str | None]


def _selector(kind_value: tuple[str, Any]) -> list[m.ExtendedPointId] | m.Filter:
    kind, value = kind_value
    if kind == "ids":
        ids: list[m.ExtendedPointId] = value
        return ids
    return m.Filter.model_validate(value)


def _apply(client: QdrantClient, op: Op) -> str:
    name, arg, sel, key = op
    target = _selector(sel)
    try:
        if name == "set":
            client.set_payload("mut", arg, points=target, key=key)
        elif name == "overwrite":
            client.overwrite_payload("mut", arg, points=target)
        elif name == "delete_keys":
            client.delete_payload("mut", arg, points=target)
        elif name == "clear":
            client.clear_payload("mut", points_selector=target)
        elif name == "delete":
            client.delete("mut", points_selector=target)
        else:
            (pid,) = sel[1]
            client.upsert("mut", [m.PointStruct(id=pid, vector=[float(len(arg)), 1.0, -1.0], payload=arg)])
    except UnexpectedResponse as exc:  # the fake: 404 for a missing id
        return f"http {exc.status_code}"
    except KeyError:  # local mode's way of saying the same (it raises where the server answers 404)
        return "http 404"
    return "ok"


def _snapshot(client: QdrantClient) -> list[tuple[str, dict[str, Any] | None, list[float]]]:
    records, _ = client.scroll("mut", limit=100, with_payload=True, with_vectors=True)
    return [(str(r.id), r.payload, [round(x, 5) for x in _unnamed(r.vector)]) for r in records]


def _unnamed(vector: object) -> list[float]:
    """A record's vector in a collection with one unnamed dense vector."""
    assert isinstance(vector, list), vector
    return [float(x) for x in vector]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[QdrantClient, QdrantClient]]:
    with fakes.qdrant.serve() as fq:
        yield QdrantClient(url=fq.url, timeout=10, check_compatibility=False), QdrantClient(":memory:")


def _known_disagreement(sequence: list[Op]) -> bool:
    """A ``set`` carrying a null after a ``clear``: pinned by ``test_known_disagreement_null_after_clear``."""
    cleared = False
    for name, arg, _, _ in sequence:
        cleared = cleared or name == "clear"
        if cleared and name == "set" and None in arg.values():
            return True
    return False


@pytest.mark.fuzz
@settings(
    max_examples=examples(40, 2000),
    deadline=None,
    derandomize=not fuzzing(),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sequence=st.lists(ops, min_size=1, max_size=5))
def test_same_updates_same_collection(pair: tuple[QdrantClient, QdrantClient], sequence: list[Op]) -> None:
    assume(not _known_disagreement(sequence))
    fake, local = pair
    for client in (fake, local):
        client.delete_collection("mut")
        client.create_collection("mut", vectors_config=m.VectorParams(size=3, distance=m.Distance.EUCLID))
        client.upsert("mut", [m.PointStruct(id=i, vector=v, payload=p) for i, v, p in SEED])
    for op in sequence:
        assert _apply(fake, op) == _apply(local, op), op
        assert _snapshot(fake) == _snapshot(local), op


@pytest.mark.parametrize("distance", [m.Distance.DOT, m.Distance.EUCLID, m.Distance.MANHATTAN])
def test_top_k_scores_and_thresholds_agree_per_distance(
    pair: tuple[QdrantClient, QdrantClient], distance: m.Distance
) -> None:
    fake, local = pair
    points = [
        m.PointStruct(id=i, vector=[((i * 37) % 11) / 3 - 1.5, ((i * 13) % 7) / 2 - 1.0, (i % 5) / 4], payload={})
        for i in range(1, 40)
    ]
    for client in (fake, local):
        client.delete_collection("dist")
        client.create_collection("dist", vectors_config=m.VectorParams(size=3, distance=distance))
        client.upsert("dist", points)
    query = [0.3, -0.7, 0.2]
    got = [(p.id, p.score) for p in fake.query_points("dist", query=query, limit=8).points]
    want = [(p.id, p.score) for p in local.query_points("dist", query=query, limit=8).points]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    assert {i for i, _ in got[:-1]} <= {i for i, _ in want}
    threshold = (got[3][1] + got[4][1]) / 2  # between the 4th and 5th: the direction of the cut per distance
    cut_fake = [p.id for p in fake.query_points("dist", query=query, limit=8, score_threshold=threshold).points]
    cut_local = [p.id for p in local.query_points("dist", query=query, limit=8, score_threshold=threshold).points]
    assert sorted(cut_fake) == sorted(cut_local) == sorted(i for i, _ in got[:4])


def test_known_disagreement_null_after_clear(pair: tuple[QdrantClient, QdrantClient]) -> None:
    """``set_payload`` merges and a null deletes the key (``fakes/qdrant/README.md``, "Payload mutation"), in both
    engines. But on a point whose payload was *cleared*, the engine stores ``{"a": null}`` as sent (no stored payload
    to merge into), while local mode drops the null. The fake follows the engine; ``upsert`` with ``payload: {}`` does
    not trigger it."""
    fake, local = pair
    results = []
    for client in (fake, local):
        client.delete_collection("mut")
        client.create_collection("mut", vectors_config=m.VectorParams(size=3, distance=m.Distance.EUCLID))
        client.upsert(
            "mut",
            [
                m.PointStruct(id=1, vector=[1.0, 0.0, 0.0], payload={"a": 1}),
                m.PointStruct(id=2, vector=[1.0, 0.0, 0.0], payload={}),
            ],
        )
        client.clear_payload("mut", points_selector=[1])
        client.set_payload("mut", {"a": None, "c": 1}, points=[1, 2])
        results.append({r.id: r.payload for r in client.retrieve("mut", [1, 2])})
    assert results[0] == {1: {"a": None, "c": 1}, 2: {"c": 1}}
    assert results[1] == {1: {"c": 1}, 2: {"c": 1}}
