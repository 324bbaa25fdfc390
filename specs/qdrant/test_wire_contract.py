"""Raw-HTTP contract: what neither engine checks (``fakes/qdrant/README.md``: "The wire", "``wait``", "Point ids")."""

from __future__ import annotations

import time

import httpx
import pytest

import fakes.qdrant
from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle

VEC = {"vectors": {"size": 2, "distance": "Cosine"}}


@pytest.fixture
def coll(raw: httpx.Client) -> httpx.Client:
    assert raw.put("/collections/c", json=VEC).status_code == 200
    raw.put(
        "/collections/c/points?wait=true",
        json={
            "points": [
                {"id": 1, "vector": [1, 0], "payload": {"a": 1}},
                {"id": 2, "vector": [0, 1], "payload": {"a": 2}},
            ]
        },
    )
    return raw


def _error(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"status", "time"}  # no result key on errors
    assert isinstance(body["time"], float)
    error: str = body["status"]["error"]
    return error


def test_success_envelope(coll: httpx.Client) -> None:
    body = coll.post("/collections/c/points/count", json={}).json()
    assert body["status"] == "ok"
    assert isinstance(body["time"], float)
    assert body["result"] == {"count": 2}
    assert set(body) == {"result", "status", "time"}


def test_root_health_and_unknown_route(raw: httpx.Client) -> None:
    root = raw.get("/").json()
    assert root["title"] == "qdrant - vector search engine"
    assert root["version"] == fakes.qdrant.QDRANT_VERSION
    for path, text in [
        ("/healthz", "healthz check passed"),
        ("/livez", "healthz check passed"),
        ("/readyz", "all shards are ready"),
    ]:
        response = raw.get(path)
        assert response.status_code == 200
        assert response.text == text
        assert response.headers["content-type"].startswith("text/plain")
    assert raw.get("/nothing/here").status_code == 404


def test_version_pin_matches_the_text_rule(coll: httpx.Client) -> None:
    """1.20.0 claims the ≥ 1.19.1 token rule: lower-cased words, any order; not a substring."""
    assert coll.get("/").json()["version"] >= "1.19.1"
    coll.post("/collections/c/points/payload?wait=true", json={"payload": {"t": "Hello big World"}, "points": [1]})
    coll.post("/collections/c/points/payload?wait=true", json={"payload": {"t": "helloworld"}, "points": [2]})

    def ids(text: str) -> list[int | str]:
        flt = {"must": [{"key": "t", "match": {"text": text}}]}
        return [
            p["id"] for p in coll.post("/collections/c/points/scroll", json={"filter": flt}).json()["result"]["points"]
        ]

    assert ids("world hello") == [1]  # tokens, any order, case-insensitive
    assert ids("llo") == []  # a substring is not a token


def test_errors_404_409_400_422(coll: httpx.Client) -> None:
    missing = coll.post("/collections/nope/points/count", json={})
    assert missing.status_code == 404
    assert _error(missing) == "Not found: Collection `nope` doesn't exist!"
    again = coll.put("/collections/c", json=VEC)
    assert again.status_code == 409
    assert _error(again) == "Wrong input: Collection `c` already exists!"
    broken = coll.post("/collections/c/points/scroll", content=b"{nope", headers={"content-type": "application/json"})
    assert broken.status_code == 400
    assert _error(broken).startswith("Format error in JSON body: ")
    zero = coll.post("/collections/c/points/scroll", json={"limit": 0})
    assert zero.status_code == 422
    assert _error(zero) == "Validation error in JSON body: [limit: value 0 invalid, must be 1 or larger]"
    key_only = coll.post("/collections/c/points/count", json={"filter": {"must": [{"key": "a"}]}})
    assert key_only.status_code == 422
    assert "At least one field condition must be specified" in _error(key_only)
    dim = coll.put("/collections/c/points?wait=true", json={"points": [{"id": 3, "vector": [1, 2, 3]}]})
    assert dim.status_code == 400
    assert _error(dim) == "Wrong input: Vector dimension error: expected dim: 2, got 3"
    point = coll.get("/collections/c/points/3")
    assert point.status_code == 404
    assert _error(point) == "Not found: No point with id 3 found"
    assert coll.get("/collections/c/points/1").json()["result"]["id"] == 1  # path "1" parses as an int
    threshold = coll.post("/collections/c/points/query", json={"score_threshold": 0.5})
    assert threshold.status_code == 400
    assert _error(threshold).startswith("Bad request: A query is needed")
    float_match = coll.post(
        "/collections/c/points/count", json={"filter": {"must": [{"key": "a", "match": {"value": 1.5}}]}}
    )
    assert float_match.status_code == 400
    assert _error(float_match).startswith("Format error in JSON body: ")


def test_unknown_filter_key_is_400_but_unknown_top_level_key_is_ignored(coll: httpx.Client) -> None:
    bad = coll.post("/collections/c/points/scroll", json={"filter": {"mus": []}})
    assert bad.status_code == 400
    assert _error(bad).startswith("Format error in JSON body: unknown field `mus`, expected one of")
    typo = coll.post("/collections/c/points/scroll", json={"filer": {"must": [{"has_id": [1]}]}})
    assert typo.status_code == 200
    assert len(typo.json()["result"]["points"]) == 2  # the typo returns everything


def test_single_object_must_bare_vector_query_and_with_vectors_alias(coll: httpx.Client) -> None:
    one = coll.post("/collections/c/points/count", json={"filter": {"must": {"has_id": [2]}}})
    assert one.json()["result"] == {"count": 1}
    bare = coll.post("/collections/c/points/query", json={"query": [0, 1], "limit": 1, "with_vectors": True})
    (point,) = bare.json()["result"]["points"]
    assert point["id"] == 2
    assert point["vector"] == [0.0, 1.0]
    assert point["payload"] is None
    by_id = coll.post("/collections/c/points/query", json={"query": 1}).json()["result"]["points"]
    assert [p["id"] for p in by_id] == [2]


@pytest.mark.parametrize("bad_id", [-1, 1.0, "42", "abc", "doc-1", True, 18446744073709551616])
def test_point_ids_are_u64_or_uuid_only(coll: httpx.Client, bad_id: object) -> None:
    response = coll.put("/collections/c/points?wait=true", json={"points": [{"id": bad_id, "vector": [1, 1]}]})
    assert response.status_code == 400
    assert "is not a valid point ID, valid values are either an unsigned integer or a UUID" in _error(response)


@pytest.mark.parametrize(
    "form",
    [
        "C9A52F5499C2D5B7BD1F61DA14EBE68D",
        "urn:uuid:c9a52f54-99c2-d5b7-bd1f-61da14ebe68d",
        "C9A52F54-99C2-D5B7-BD1F-61DA14EBE68D",
        18446744073709551615,
    ],
)
def test_accepted_ids_come_back_normalized(coll: httpx.Client, form: int | str) -> None:
    assert (
        coll.put("/collections/c/points?wait=true", json={"points": [{"id": form, "vector": [1, 1]}]}).status_code
        == 200
    )
    expected = form if isinstance(form, int) else "c9a52f54-99c2-d5b7-bd1f-61da14ebe68d"
    got = coll.post("/collections/c/points", json={"ids": [form]}).json()["result"]
    assert [p["id"] for p in got] == [expected]


def test_wait_absent_gives_acknowledged_and_true_gives_completed(coll: httpx.Client) -> None:
    ack = coll.post("/collections/c/points/payload", json={"payload": {"z": 1}, "points": [1]}).json()["result"]
    assert ack["status"] == "acknowledged"
    assert isinstance(ack["operation_id"], int)
    done = coll.post("/collections/c/points/payload?wait=true", json={"payload": {"z": 2}, "points": [1]})
    assert done.json()["result"]["status"] == "completed"
    # an acknowledged update that fails is dropped silently (qdrant/qdrant#9039)
    dropped = coll.put("/collections/c/points", json={"points": [{"id": 5, "vector": [1, 2, 3]}]})
    assert dropped.status_code == 200
    assert dropped.json()["result"]["status"] == "acknowledged"
    assert coll.post("/collections/c/points", json={"ids": [5]}).json()["result"] == []


def test_apply_delay_models_read_after_write_without_wait() -> None:
    with fakes.qdrant.serve(apply_delay=0.3) as fq, httpx.Client(base_url=fq.url, timeout=5) as http:
        http.put("/collections/c", json=VEC)
        http.put("/collections/c/points", json={"points": [{"id": 1, "vector": [1, 0]}]})
        assert http.post("/collections/c/points/count", json={}).json()["result"]["count"] == 0
        deadline = time.monotonic() + 5.0  # bounded poll of a real condition: the count the harness would read
        while http.post("/collections/c/points/count", json={}).json()["result"]["count"] == 0:
            assert time.monotonic() < deadline, "the acknowledged upsert was never applied"
            time.sleep(0.02)


def test_delete_missing_collection_is_200_false_and_exists_is_200(raw: httpx.Client) -> None:
    gone = raw.delete("/collections/nope")
    assert gone.status_code == 200
    assert gone.json()["result"] is False
    assert raw.get("/collections/nope/exists").json()["result"] == {"exists": False}


def test_api_key_plain_text_401_and_both_headers() -> None:
    with fakes.qdrant.serve(api_key="s3cret") as fq, httpx.Client(base_url=fq.url, timeout=5) as http:
        missing = http.get("/collections")
        assert missing.status_code == 401
        assert missing.text == "Must provide an API key or an Authorization bearer token"
        assert missing.headers["content-type"].startswith("text/plain")
        wrong = http.get("/collections", headers={"api-key": "nope"})
        assert wrong.status_code == 401
        assert wrong.text == "Invalid API key or JWT"
        assert http.get("/collections", headers={"api-key": "s3cret"}).status_code == 200
        assert http.get("/collections", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert http.get("/healthz").status_code == 200
        assert http.get("/").status_code == 200
        entries = fq.requests(path_prefix="/collections")
        assert entries
        assert all(e.headers.get("api-key", "<redacted>") == "<redacted>" for e in entries)


def test_injected_status_fault_carries_qdrant_error_envelope(
    fake_qdrant: FakeHandle[QdrantFake], raw: httpx.Client
) -> None:
    fake_qdrant.fault("status", "/collections", status=503, times=1)
    response = raw.get("/collections")
    assert response.status_code == 503
    assert _error(response).startswith("Shard temporarily unavailable")
