"""Bad input gets OpenAI's exact error shape and status (``{"error": {"message", "type", "param", "code"}}``), seen
through the real client's exception types and on the raw wire; never a 500."""

from __future__ import annotations

from typing import Any, cast

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from specs.fake_openai.conftest import BATTERY_TOOL, KEY, Rig, sync_client

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
AUTH = {"authorization": f"Bearer {KEY}"}


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    error: dict[str, Any] = body["error"]
    return error


def test_missing_key_is_401_with_the_real_message(rig: Rig) -> None:
    with rig.handle.client() as http:
        response = http.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": USER})
    assert response.status_code == 401
    error = _error(response)
    assert error["message"].startswith("You didn't provide an API key.")
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", None, None)


def test_wrong_key_is_401_invalid_api_key_with_the_key_masked(rig: Rig) -> None:
    client = sync_client(rig.handle, key="sk-wrong-key-123456789")
    with pytest.raises(openai.AuthenticationError) as caught, client:
        client.chat.completions.create(model="gpt-4o", messages=USER)
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"
    assert "sk-wrong**********6789" in caught.value.message


def test_unknown_model_is_404_model_not_found(rig: Rig) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        rig.sync.chat.completions.create(model="gpt-7-ultra", messages=USER)
    assert caught.value.code == "model_not_found"
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == "The model `gpt-7-ultra` does not exist or you do not have access to it."


def test_an_embedding_model_is_not_a_chat_model(rig: Rig) -> None:
    with pytest.raises(openai.NotFoundError):
        rig.sync.chat.completions.create(model="text-embedding-3-small", messages=USER)


@pytest.mark.parametrize(
    "name, message",
    [
        (
            "not valid!",
            "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches "
            "the pattern '^[a-zA-Z0-9_-]+$'.",
        ),
        ("caller:get_device_battery", "string does not match pattern"),
        (
            "x" * 65,
            "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but "
            "got a string with length 65 instead.",
        ),
    ],
)
def test_an_invalid_tool_name_is_400(rig: Rig, name: str, message: str) -> None:
    tool: Any = {  # deliberately outside the client's types
        "type": "function",
        "function": {"name": name},
    }
    with pytest.raises(openai.BadRequestError) as caught:
        rig.sync.chat.completions.create(model="gpt-4o", messages=USER, tools=[tool])
    assert caught.value.status_code == 400
    assert message in caught.value.message
    assert caught.value.param == "tools[0].function.name"
    assert caught.value.code in ("invalid_value", "string_above_max_length")


def test_an_invalid_tool_name_on_responses_names_its_param(rig: Rig) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        rig.sync.responses.create(
            model="gpt-4o",
            input="x",
            tools=[cast(Any, {"type": "function", "name": "a b", "parameters": {"type": "object"}})],
        )
    assert caught.value.param == "tools[0].name"


def test_a_non_object_parameter_schema_is_400_invalid_function_parameters(rig: Rig) -> None:
    tool: Any = {"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        rig.sync.chat.completions.create(model="gpt-4o", messages=USER, tools=[tool])
    assert caught.value.code == "invalid_function_parameters"
    assert caught.value.param == "tools[0].function.parameters"
    assert "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"string\"'" in caught.value.message


@pytest.mark.parametrize(
    "body, status, param, code, fragment",
    [
        ({"messages": USER}, 400, None, None, "you must provide a model parameter"),
        ({"model": 4, "messages": USER}, 400, "model", "invalid_type", "expected a string, but got an integer"),
        ({"model": "gpt-4o"}, 400, "messages", "missing_required_parameter", "Missing required parameter: 'messages'."),
        ({"model": "gpt-4o", "messages": "hi"}, 400, "messages", "invalid_type", "expected an array, but got a string"),
        ({"model": "gpt-4o", "messages": []}, 400, "messages", "empty_array", "empty array"),
        (
            {"model": "gpt-4o", "messages": [{"role": "robot", "content": "x"}]},
            400,
            "messages[0].role",
            "invalid_value",
            "Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
        ),
        (
            {"model": "gpt-4o", "messages": [{"content": "x"}]},
            400,
            "messages[0].role",
            "missing_required_parameter",
            "",
        ),
        (
            {"model": "gpt-4o", "messages": USER, "temprature": 1},
            400,
            None,
            None,
            "Unrecognized request argument supplied: temprature",
        ),
        (
            {"model": "gpt-4o", "messages": USER, "tool_choice": "auto"},
            400,
            "tool_choice",
            None,
            "'tool_choice' is only allowed when 'tools' are specified.",
        ),
        (
            {"model": "gpt-4o", "messages": USER, "tools": [BATTERY_TOOL], "tool_choice": "always"},
            400,
            "tool_choice",
            "invalid_value",
            "Supported values are: 'none', 'auto', and 'required'.",
        ),
        (
            {
                "model": "gpt-4o",
                "messages": USER,
                "tools": [BATTERY_TOOL],
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            },
            400,
            "tool_choice.function.name",
            "invalid_value",
            "get_weather",
        ),
        ({"model": "gpt-4o", "messages": USER, "tools": []}, 400, "tools", "empty_array", "empty array"),
        (
            {"model": "gpt-4o", "messages": USER, "tools": [{"type": "function", "function": {"name": "f"}}] * 129},
            400,
            "tools",
            "array_above_max_length",
            "maximum length 128",
        ),
        (
            {"model": "gpt-4o", "messages": USER, "stream_options": {"include_usage": True}},
            400,
            "stream_options",
            None,
            "only allowed when 'stream' is enabled",
        ),
        (
            {"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "call_x", "content": "37"}]},
            400,
            "messages.[0].role",
            None,
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (
            {
                "model": "gpt-4o",
                "messages": [
                    *USER,
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                    *USER,
                ],
            },
            400,
            "messages.[2].role",
            None,
            "did not have response messages: call_a",
        ),
        ({"model": "gpt-4o", "messages": USER, "n": 0}, 400, "n", "integer_below_min_value", "Expected a value >= 1"),
    ],
)
def test_chat_validation_errors_on_the_wire(
    rig: Rig, body: dict[str, Any], status: int, param: str | None, code: str | None, fragment: str
) -> None:
    with rig.handle.client() as http:
        response = http.post("/v1/chat/completions", json=body, headers=AUTH)
    assert response.status_code == status
    error = _error(response)
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert fragment in error["message"]


@pytest.mark.parametrize(
    "raw", [b"{", b"", b"[1, 2]", b'"text"', b"\xff\xfe", b"{" * 200 + b"}" * 200, b'{"model": NaN}']
)
def test_bodies_that_are_not_a_json_object_get_the_parse_error(rig: Rig, raw: bytes) -> None:
    with rig.handle.client() as http:
        response = http.post("/v1/chat/completions", content=raw, headers={**AUTH, "content-type": "application/json"})
    assert response.status_code == 400
    assert _error(response)["message"].startswith("We could not parse the JSON body of your request.")


def test_responses_unknown_parameter_and_unknown_previous_response(rig: Rig) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        rig.sync.responses.create(model="gpt-4o", input="x", extra_body={"inputs": "typo"})
    assert (caught.value.code, caught.value.param) == ("unknown_parameter", "inputs")
    with pytest.raises(openai.NotFoundError) as missing:
        rig.sync.responses.create(model="gpt-4o", input="x", previous_response_id="resp_" + "0" * 48)
    assert missing.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError, match="No tool call found"):
        rig.sync.responses.create(
            model="gpt-4o", input=[{"type": "function_call_output", "call_id": "call_nowhere", "output": "x"}]
        )


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"model": "text-embedding-3-small", "input": ""}, "'$.input' is invalid"),
        ({"model": "text-embedding-3-small", "input": [""]}, "'$.input' is invalid"),
        ({"model": "text-embedding-3-small", "input": {"a": 1}}, "'$.input' is invalid"),
        ({"model": "text-embedding-3-small", "input": ["x"] * 2049}, "maximum length 2048"),
        ({"model": "text-embedding-ada-002", "input": "x", "dimensions": 8}, "does not support specifying dimensions"),
        ({"model": "text-embedding-3-small", "input": "x", "dimensions": 4000}, "Must be between 1 and 1536"),
        ({"model": "text-embedding-3-small", "input": "x", "encoding_format": "hex"}, "'float' and 'base64'"),
        ({"model": "gpt-4o", "input": "x"}, "not allowed to generate embeddings"),
        ({"model": "text-embedding-3-small"}, "Missing required parameter: 'input'."),
    ],
)
def test_embedding_validation(rig: Rig, body: dict[str, Any], fragment: str) -> None:
    with rig.handle.client() as http:
        response = http.post("/v1/embeddings", json=body, headers=AUTH)
    assert response.status_code == 400
    assert fragment in _error(response)["message"]


def test_unmodelled_routes_are_the_real_invalid_url_404_and_recorded(rig: Rig) -> None:
    with rig.handle.client() as http:
        response = http.get("/v1/files", headers=AUTH)
        assert http.get("/healthz").text == "ok"
    assert response.status_code == 404
    assert _error(response)["message"] == "Invalid URL (GET /v1/files)"
    assert [(c.method, c.path) for c in rig.app.log().unserved()] == [("GET", "/v1/files")]
    assert [e.path for e in rig.handle.requests()] == ["/v1/files"]  # the health probe is never journaled
