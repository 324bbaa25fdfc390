"""Hostile bodies never crash the fake: any JSON to any route gets either a well-formed answer or OpenAI's error
shape with a 4xx, never a 500 (every answer the fake builds is also checked against the ``openai`` types, so a
shape bug would surface here as a 500)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fakes.openai
from fakes.testing import examples, fuzzing

ROUTES = ["/v1/chat/completions", "/v1/responses", "/v1/embeddings"]
#: The one 500 the specs script (a rule's error, in the stream when streamed, the whole answer otherwise): any other
#: 500 is the fake crashing.
SCRIPTED_500 = "scripted failure for a last user message of 'ünï'"
KEYS = [
    "model",
    "messages",
    "tools",
    "tool_choice",
    "stream",
    "stream_options",
    "n",
    "parallel_tool_calls",
    "input",
    "instructions",
    "previous_response_id",
    "role",
    "content",
    "type",
    "function",
    "name",
    "parameters",
    "arguments",
    "tool_calls",
    "id",
    "tool_call_id",
    "call_id",
    "output",
    "include_usage",
    "mode",
    "allowed_tools",
    "dimensions",
    "encoding_format",
    "text",
    "properties",
    "strict",
    "description",
]
WORDS = [
    "",
    "gpt-4o",
    "text-embedding-3-small",
    "user",
    "assistant",
    "tool",
    "system",
    "developer",
    "function",
    "auto",
    "none",
    "required",
    "get_x",
    "not valid!",
    "object",
    "call_1",
    "function_call_output",
    "function_call",
    "message",
    "base64",
    "allowed_tools",
    "{}",
    "resp_x",
    "ünï©ødé",
]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 200), st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from(WORDS)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=10,
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(WORDS[3:9])},
        optional={"content": values, "tool_calls": values, "tool_call_id": scalars},
    ),
    max_size=4,
)
tools = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function", "custom", "web_search", 3])},
        optional={
            "function": st.fixed_dictionaries({"name": scalars}, optional={"parameters": values}),
            "name": scalars,
            "parameters": values,
        },
    ),
    max_size=3,
)
bodies = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), values, max_size=5),
    st.fixed_dictionaries(
        {"model": st.sampled_from(["gpt-4o", "text-embedding-3-small", 7])},
        optional={
            "messages": messages,
            "input": st.one_of(values, messages),
            "tools": tools,
            "tool_choice": values,
            "stream": st.booleans(),
            "stream_options": values,
            "n": scalars,
            "parallel_tool_calls": scalars,
            "dimensions": scalars,
            "encoding_format": scalars,
        },
    ),
)

texts = st.one_of(st.text(max_size=20), st.sampled_from(WORDS))
good_messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "developer"]), "content": texts}),
    min_size=1,
    max_size=3,
)
good_tools = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {"name": st.sampled_from(["get_x", "other", "a-b_1"])},
                optional={"parameters": st.one_of(st.just({"type": "object"}), values), "description": texts},
            ),
        }
    ),
    min_size=1,
    max_size=3,
)
choices = st.one_of(
    st.sampled_from(["auto", "none", "required"]),
    values,
    st.fixed_dictionaries(
        {"type": st.just("function"), "function": st.fixed_dictionaries({"name": st.sampled_from(["get_x", "zzz"])})}
    ),
)
near_valid = st.one_of(
    st.tuples(
        st.just("/v1/chat/completions"),
        st.fixed_dictionaries(
            {"model": st.just("gpt-4o"), "messages": good_messages},
            optional={
                "tools": good_tools,
                "tool_choice": choices,
                "stream": st.booleans(),
                "n": st.integers(0, 3),
                "stream_options": st.one_of(st.just({"include_usage": True}), values),
                "parallel_tool_calls": st.booleans(),
            },
        ),
    ),
    st.tuples(
        st.just("/v1/responses"),
        st.fixed_dictionaries(
            {"model": st.just("gpt-4o"), "input": st.one_of(texts, good_messages)},
            optional={
                "tools": st.lists(
                    st.fixed_dictionaries(
                        {
                            "type": st.just("function"),
                            "name": st.sampled_from(["get_x", "other"]),
                            "parameters": st.just({"type": "object"}),
                        }
                    ),
                    max_size=2,
                ),
                "tool_choice": st.one_of(st.sampled_from(["auto", "none", "required"]), values),
                "stream": st.booleans(),
                "instructions": texts,
            },
        ),
    ),
    st.tuples(
        st.just("/v1/embeddings"),
        st.fixed_dictionaries(
            {
                "model": st.sampled_from(["text-embedding-3-small", "text-embedding-ada-002"]),
                "input": st.one_of(texts, st.lists(texts, max_size=3), st.lists(st.integers(0, 50_000), max_size=5)),
            },
            optional={
                "dimensions": st.integers(-1, 2000),
                "encoding_format": st.sampled_from(["float", "base64", "x"]),
            },
        ),
    ),
)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with (
        fakes.openai.in_process() as fo,
        httpx.Client(
            base_url=fo.url, transport=fo.transport(), timeout=10, headers={"authorization": "Bearer k"}
        ) as client,
    ):
        fo.app.add_rules(
            {
                "when": {"last_user": "ünï"},
                "reply": {"text": "x", "error": {"status": 500, "message": SCRIPTED_500, "in_stream": True}},
            },
            {
                "when": {"tool_choice": "auto"},
                "reply": {
                    "text": "t",
                    "tool_calls": [
                        {"name": "get_x", "arguments": {"a": [1, None]}},
                        {"name": "other", "arguments": "not json"},
                    ],
                },
            },
        )
        yield client


def _crashed(response: httpx.Response) -> bool:
    """A 500 that is not the scripted rule's error (the rule answers only a last user message of ``ünï``)."""
    if response.status_code != 500:
        return False
    try:
        return bool(response.json()["error"]["message"] != SCRIPTED_500)
    except (ValueError, KeyError, TypeError):
        return True


@pytest.mark.fuzz
@settings(
    max_examples=examples(150, 5000),
    deadline=None,
    derandomize=not fuzzing(),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(route=st.sampled_from(ROUTES), body=bodies)
def test_garbage_bodies_get_an_openai_error_never_a_crash(http: httpx.Client, route: str, body: Any) -> None:
    response = http.post(route, json=body)
    assert not _crashed(response), f"{route} {body}: {response.text}"
    if response.status_code == 200:
        assert response.content
        return
    assert response.status_code in (400, 404, 500), response.text  # 500: the scripted one (_crashed says)
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str)
    assert error["message"]


@pytest.mark.fuzz
@settings(
    max_examples=examples(150, 5000),
    deadline=None,
    derandomize=not fuzzing(),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=near_valid)
def test_near_valid_requests_are_answered_or_refused_never_a_crash(
    http: httpx.Client, case: tuple[str, dict[str, Any]]
) -> None:
    route, body = case
    response = http.post(route, json=body)
    assert not _crashed(response), f"{route} {body}: {response.text}"
    if response.status_code != 200:
        assert response.status_code in (400, 404, 500), response.text  # 500: the scripted one (_crashed says)
        assert set(response.json()["error"]) == {"message", "type", "param", "code"}


@pytest.mark.fuzz
@settings(
    max_examples=examples(100, 2000),
    deadline=None,
    derandomize=not fuzzing(),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_are_a_parse_error_or_a_validation_error(http: httpx.Client, raw: bytes) -> None:
    response = http.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert response.status_code in (400, 404), response.text
    assert "message" in response.json()["error"]
