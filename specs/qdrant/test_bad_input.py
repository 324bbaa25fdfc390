"""Bad input never crashes the fake: any JSON body to any route gets Qdrant's error envelope with a 4xx (or 501 for
an unmodelled feature), never a 500, and the collection is unchanged: bad input gets a clear error and loses nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fakes.qdrant
from fakes.testing import examples, fuzzing

ROUTES = [
    ("PUT", "/collections/c/points"),
    ("POST", "/collections/c/points"),
    ("POST", "/collections/c/points/query"),
    ("POST", "/collections/c/points/search"),
    ("POST", "/collections/c/points/scroll"),
    ("POST", "/collections/c/points/count"),
    ("POST", "/collections/c/points/payload"),
    ("PUT", "/collections/c/points/payload"),
    ("POST", "/collections/c/points/payload/delete"),
    ("POST", "/collections/c/points/payload/clear"),
    ("POST", "/collections/c/points/delete"),
    ("PUT", "/collections/c/index"),
    ("PUT", "/collections/other"),
]
KEYS = [
    "points",
    "batch",
    "ids",
    "vectors",
    "vector",
    "payload",
    "payloads",
    "filter",
    "must",
    "should",
    "key",
    "match",
    "value",
    "range",
    "limit",
    "offset",
    "query",
    "nearest",
    "using",
    "with_payload",
    "with_vector",
    "keys",
    "field_name",
    "field_schema",
    "id",
    "has_id",
    "score_threshold",
    "exact",
    "size",
    "distance",
    "nested",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", "a", "Cosine", "keyword", "c9a52f54-99c2-d5b7-bd1f-61da14ebe68d", "1"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=8,
)
bodies = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=4)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with fakes.qdrant.serve() as fq, httpx.Client(base_url=fq.url, timeout=10) as client:
        client.put("/collections/c", json={"vectors": {"size": 2, "distance": "Cosine"}})
        client.put(
            "/collections/c/points?wait=true", json={"points": [{"id": 1, "vector": [1, 0], "payload": {"a": 1}}]}
        )
        yield client


@pytest.mark.fuzz
@settings(
    max_examples=examples(150, 5000),
    deadline=None,
    derandomize=not fuzzing(),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(route=st.sampled_from(ROUTES), body=bodies)
def test_garbage_bodies_get_a_qdrant_error_never_a_crash(http: httpx.Client, route: tuple[str, str], body: Any) -> None:
    method, path = route
    response = http.request(method, path + "?wait=true", json=body)
    assert response.status_code != 500, f"{method} {path} {body}: {response.text}"
    if response.status_code != 200:
        assert response.status_code in (400, 404, 409, 422, 501), response.text
        error = response.json()["status"]["error"]
        assert error.split(":")[0] in (
            "Format error in JSON body",
            "Validation error in JSON body",
            "Wrong input",
            "Bad request",
            "Not found",
            "Service internal error",
        ), error
    http.delete("/collections/other")


def test_non_json_and_non_object_bodies(http: httpx.Client) -> None:
    for content in (b"[1,2]", b"42", b"nul", b"\xff\xfe"):
        response = http.post(
            "/collections/c/points/scroll", content=content, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, content
        assert response.json()["status"]["error"].startswith("Format error in JSON body: ")


def _raw(http: httpx.Client, method: str, path: str, content: bytes) -> httpx.Response:
    return http.request(method, path, content=content, headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    "method,path,content,gist",
    [
        (
            "PUT",
            "/collections/c/points?wait=true",
            b'{"points":[{"id":9,"vector":[1,0],"payload":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}]}",
            "recursion limit exceeded",
        ),
        (
            "POST",
            "/collections/c/points/scroll",
            b'{"filter":' + b'{"must":' * 5000 + b"{}" + b"}" * 5000 + b"}",
            "recursion limit exceeded",
        ),
        ("PUT", "/collections/c/points?wait=true", b'{"points":[{"id":9,"vector":[NaN,0]}]}', "expected value"),
        ("PUT", "/collections/c/points?wait=true", b'{"points":[{"id":9,"vector":[Infinity,0]}]}', "expected value"),
        ("PUT", "/collections/c/points?wait=true", b'{"points":[{"id":9,"vector":[1e400,0]}]}', "number out of range"),
        ("PUT", "/collections/c/points?wait=true", b'{"points":[{"id":9,"vector":[1e39,0]}]}', "out of range for f32"),
        (
            "POST",
            "/collections/c/points/query",
            b'{"query":[1,0],"limit":100000000000000000000}',
            "limit: invalid type",
        ),
        (
            "POST",
            "/collections/c/points/count",
            b'{"filter":{"must":[{"key":"a","match":{"value":18446744073709551615}}]}}',
            "did not match any variant",
        ),
    ],
)
def test_hostile_json_is_a_qdrant_400_never_a_500(
    http: httpx.Client, method: str, path: str, content: bytes, gist: str
) -> None:
    """Deep nesting, NaN/Infinity and overflowing numbers get Qdrant's 400 Format error (``fakes/qdrant/README.md``,
    "Malformed and hostile JSON")."""
    response = _raw(http, method, path, content)
    assert response.status_code == 400, response.text
    error = response.json()["status"]["error"]
    assert error.startswith("Format error in JSON body: "), error
    assert gist in error, error
    assert http.post("/collections/c/points/count", json={"exact": True}).json()["result"]["count"] == 1


def test_a_score_past_f32_is_a_clear_qdrant_500_not_invalid_json() -> None:
    """A Dot score of two in-range f32 vectors can overflow; the fake never sends ``Infinity`` on the wire."""
    with fakes.qdrant.in_process() as fq, fq.client() as client:
        client.put("/collections/d", json={"vectors": {"size": 2, "distance": "Dot"}})
        client.put("/collections/d/points?wait=true", json={"points": [{"id": 1, "vector": [3e38, 3e38]}]})
        response = client.post("/collections/d/points/search", json={"vector": [3e38, 3e38], "limit": 1})
    assert response.status_code == 500
    error = response.json()["status"]["error"]
    assert error.startswith("Service internal error: fake qdrant: the answer holds a NaN or infinite"), error


@pytest.mark.parametrize("size", [0, 65537, 1_000_000_000_000])
def test_vector_size_outside_qdrants_range_is_422(http: httpx.Client, size: int) -> None:
    """``VectorParams.size`` is validated 1..=65536 by Qdrant (``validate(range)``), worded by
    ``validation.rs`` ``describe_error`` for a range with both bounds."""
    response = http.put("/collections/other", json={"vectors": {"size": size, "distance": "Cosine"}})
    assert response.status_code == 422, response.text
    assert response.json()["status"]["error"] == (
        f"Validation error in JSON body: [vectors.size: value {size} invalid, must be from 1 to 65536]"
    )
    assert http.get("/collections/other/exists").json()["result"]["exists"] is False


def test_the_largest_vector_size_is_accepted(http: httpx.Client) -> None:
    assert http.put("/collections/other", json={"vectors": {"size": 65536, "distance": "Dot"}}).status_code == 200
    http.delete("/collections/other")


def test_a_body_past_qdrants_32_mb_default_is_400_and_stores_nothing() -> None:
    """Qdrant's default ``service.max_request_size_mb`` is 32 (``config/config.yaml``); the JSON
    extractor refuses a bigger body with 400 before parsing it."""
    with fakes.qdrant.in_process() as fq, fq.client() as client:
        client.put("/collections/c", json={"vectors": {"size": 2, "distance": "Cosine"}})
        limit = 32 * 1024 * 1024
        points = b'{"points":[{"id":1,"vector":[1,0]}]'
        big = points + b" " * (limit - len(points)) + b"}"
        response = client.put("/collections/c/points?wait=true", content=big)
        assert response.status_code == 400
        assert response.json()["status"]["error"] == (
            f"JSON payload ({limit + 1} bytes) is larger than allowed (limit: {limit} bytes)"
        )
        assert client.post("/collections/c/points/count", json={}).json()["result"]["count"] == 0
        at_limit = client.put("/collections/c/points?wait=true", content=big[:-2] + b"}")
        assert at_limit.status_code == 200, at_limit.text[:200]


@pytest.mark.parametrize(
    "method,path,body,message",
    [
        (
            "PUT",
            "/collections/other",
            {"vectors": {"size": "4", "distance": "Cosine"}},
            'vectors.size: invalid type: string "4", expected u64',
        ),
        (
            "PUT",
            "/collections/other",
            {"vectors": {"size": -3, "distance": "Cosine"}},
            "vectors.size: invalid value: integer `-3`, expected u64",
        ),
        (
            "PUT",
            "/collections/other",
            {"vectors": {"size": 4.5, "distance": "Cosine"}},
            "vectors.size: invalid type: floating point `4.5`, expected u64",
        ),
        ("POST", "/collections/c/points/scroll", {"limit": -5}, "limit: invalid value: integer `-5`, expected usize"),
        ("POST", "/collections/c/points/scroll", {"limit": "5"}, 'limit: invalid type: string "5", expected usize'),
        (
            "POST",
            "/collections/c/points/query",
            {"limit": 100000000000000000000},
            "limit: invalid type: floating point `1e20`, expected usize",
        ),
        (
            "POST",
            "/collections/c/points/query",
            {"offset": True},
            "offset: invalid type: boolean `true`, expected usize",
        ),
        ("POST", "/collections/c/points/scroll", None, "invalid type: null, expected a map at line 1 column 1"),
    ],
)
def test_type_errors_name_what_was_sent_as_serde_does(
    http: httpx.Client, method: str, path: str, body: Any, message: str
) -> None:
    """serde names the JSON value's own kind: ``"size":"4"`` is a string (not ``integer `4```), a ``null`` body is
    null (not EOF), ``limit: -5`` is an invalid value (not an invalid type); see ``fakes/qdrant/README.md``,
    "The wire"."""
    response = _raw(http, method, path, json.dumps(body).encode())
    assert response.status_code == 400, response.text
    assert response.json()["status"]["error"] == f"Format error in JSON body: {message}"


def test_an_empty_body_is_still_eof(http: httpx.Client) -> None:
    response = _raw(http, "POST", "/collections/c/points/scroll", b"")
    error = response.json()["status"]["error"]
    assert error == "Format error in JSON body: EOF while parsing a value at line 1 column 0"
