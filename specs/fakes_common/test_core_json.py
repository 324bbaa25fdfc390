"""``FakeRequest.json`` parses as strictly as a real server (RFC 8259, serde_json's depth limit) and always fails as
``BadJson`` with a ``reason``; ``FakeResponse.json`` never emits NaN/Infinity, which no JSON parser accepts."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fakes.core import JSON_INT_MAX, JSON_INT_MIN, MAX_JSON_DEPTH, BadJson, FakeRequest, FakeResponse, NonJsonValue
from fakes.runtime import FakeRuntime
from fakes.transport import FakeTransport


def parse(body: bytes, **kwargs: Any) -> Any:
    return FakeRequest("POST", "/x", body=body).json(**kwargs)


@pytest.mark.parametrize(
    "body,reason",
    [
        (b"[" * 100_000 + b"]" * 100_000, "depth"),  # RecursionError in Python's parser
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "depth"),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), "depth"),
        (b"[NaN, 0]", "constant"),
        (b'{"v": Infinity}', "constant"),
        (b"[-Infinity]", "constant"),
        (b"[1e400, 0]", "range"),
        (b"-1e400", "range"),
        (b'{"limit": 100000000000000000000}', "range"),
        (str(JSON_INT_MAX + 1).encode(), "range"),
        (str(JSON_INT_MIN - 1).encode(), "range"),
        (b"1" * 5000, "range"),  # Python's int digit limit is a ValueError
        (b'{"a": 1', "syntax"),
        (b"\xff\xfe\xff", "encoding"),
    ],
)
def test_malformed_bodies_raise_bad_json_with_a_reason(body: bytes, reason: str) -> None:
    with pytest.raises(BadJson) as caught:
        parse(body)
    assert caught.value.reason == reason, caught.value.detail
    assert caught.value.detail


def test_well_formed_bodies_still_parse() -> None:
    assert parse(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None
    assert parse(b'{"s": "[[[[{{{{\\"]]]", "n": [18446744073709551615, -9223372036854775808, 1.5e300]}') == {
        "s": '[[[[{{{{"]]]',
        "n": [JSON_INT_MAX, JSON_INT_MIN, 1.5e300],
    }
    assert parse(b'"NaN"') == "NaN"
    assert parse(b"  ") is None
    with pytest.raises(BadJson):
        parse(b"[[[1]]]", max_depth=2)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_responses_never_carry_nan_or_infinity(value: float) -> None:
    with pytest.raises(NonJsonValue):
        FakeResponse.json(200, {"score": value})


class _NanFake:
    name = "nan"
    unrecorded_paths: frozenset[str] = frozenset()

    def handle(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse.json(200, {"score": float("nan")})

    def reset(self) -> None:
        pass


def test_a_fake_computing_nan_answers_a_clear_500_not_invalid_json() -> None:
    with httpx.Client(base_url="http://nan.fake", transport=FakeTransport(FakeRuntime(_NanFake()))) as client:
        response = client.get("/x")
    assert response.status_code == 500
    assert "refused to send invalid JSON" in response.text
    assert "NaN" not in response.text.split(":")[0]


def test_wide_integers_can_be_read_as_floats_like_serde_json() -> None:
    assert parse(b"[100000000000000000000]", wide_ints_as_float=True) == [1e20]
    with pytest.raises(BadJson) as caught:
        parse(b"1" * 400, wide_ints_as_float=True)
    assert caught.value.reason == "range"
