"""The real ``openai`` client (sync and async, streaming and not, chat completions and responses, retries off) drives
every route of the fake, on a socket and in-process; the answers parse into the client's own types and carry ids,
timestamps and frames of the real API's shapes."""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import anyio
import numpy as np
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from openai.types.responses import (
    FunctionTool,
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
)

from specs.fake_openai.conftest import (
    BATTERY_PARAMETERS,
    BATTERY_TOOL,
    WEATHER_PARAMETERS,
    WEATHER_TOOL,
    Rig,
    function_calls,
)

CHATCMPL = re.compile(r"^chatcmpl-[A-Za-z0-9]{29}$")
CALL = re.compile(r"^call_[A-Za-z0-9]{24}$")
RESP = re.compile(r"^resp_[0-9a-f]{48}$")
FINGERPRINT = re.compile(r"^fp_[0-9a-f]{10}$")
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "what is the battery of SN-4417?"}]
BATTERY_CALL = {
    "when": {"last_user": "battery"},
    "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {"device": "SN-4417"}}]},
}


def _arguments(delta: ChoiceDeltaToolCall) -> str:
    """The piece of a streamed tool call's arguments a delta carries."""
    assert delta.function is not None
    assert delta.function.arguments is not None
    return delta.function.arguments


def test_non_streaming_completion_has_the_real_shape(rig: Rig) -> None:
    started = int(time.time())
    answer = rig.sync.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello there"}])
    assert isinstance(answer, ChatCompletion)
    assert CHATCMPL.match(answer.id)
    assert started - 1 <= answer.created <= int(time.time()) + 1
    assert FINGERPRINT.match(answer.system_fingerprint or "")
    (choice,) = answer.choices
    assert (choice.index, choice.finish_reason, choice.message.role) == (0, "stop", "assistant")
    assert choice.message.content == "fake reply to: hello there"
    assert choice.message.tool_calls is None
    assert answer.usage is not None
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert re.match(r"^req_[0-9a-f]{32}$", answer._request_id or "")


def test_tool_call_answer_and_its_capture(rig: Rig) -> None:
    rig.app.add_rules(BATTERY_CALL)
    answer = rig.sync.chat.completions.create(model="gpt-4o", messages=USER, tools=[BATTERY_TOOL])
    (call,) = function_calls(answer.choices[0].message)
    assert answer.choices[0].finish_reason == "tool_calls"
    assert answer.choices[0].message.content is None
    assert CALL.match(call.id)
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_device_battery", {"device": "SN-4417"})
    assert rig.app.log().answered_with(call.id).seq == rig.app.log().last().seq


def test_stream_frames_role_first_then_text_then_finish(rig: Rig) -> None:
    rig.app.set_default({"text": "one two three"})
    with rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True) as stream:
        chunks = list(stream)
    assert all(isinstance(c, ChatCompletionChunk) for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert len({c.created for c in chunks}) == 1
    first, *middle, last = chunks
    assert first.choices[0].delta.role == "assistant"
    assert first.choices[0].delta.content == ""
    assert [c.choices[0].delta.content for c in middle] == ["one", " two", " three"]
    assert all(c.choices[0].finish_reason is None for c in [first, *middle])
    assert last.choices[0].finish_reason == "stop"
    assert last.choices[0].delta.content is None


def test_stream_ends_with_done_on_the_wire(served: Rig) -> None:
    with served.handle.client() as http:
        raw = http.post(
            "/v1/chat/completions",
            headers={"authorization": "Bearer sk-fake-test-key-0001"},
            json={"model": "gpt-4o", "messages": USER, "stream": True},
        )
    assert raw.headers["content-type"].startswith("text/event-stream")
    events = raw.text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    assert all(e.startswith("data: {") for e in events[:-2])


def test_tool_calls_accumulated_from_a_stream_with_the_client_helper(rig: Rig) -> None:
    rig.app.add_rules(
        {
            "when": {"tools": ["get_device_battery", "get_weather"]},
            "reply": {
                "tool_calls": [
                    {"name": "get_device_battery", "arguments": {"device": "SN-4417", "unit": "percent"}},
                    {"name": "get_weather", "arguments": {"city": "Zürich"}},
                ]
            },
        }
    )
    with rig.sync.chat.completions.stream(model="gpt-4o", messages=USER, tools=[BATTERY_TOOL, WEATHER_TOOL]) as s:
        argument_deltas = sum(1 for e in s if e.type == "tool_calls.function.arguments.delta")
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_device_battery", "get_weather"]
    assert json.loads(calls[0].function.arguments) == {"device": "SN-4417", "unit": "percent"}
    assert json.loads(calls[1].function.arguments) == {"city": "Zürich"}
    assert argument_deltas > 2  # arguments really were split across chunks
    assert final.choices[0].finish_reason == "tool_calls"


def test_stream_tool_call_deltas_carry_index_and_split_arguments(rig: Rig) -> None:
    rig.app.add_rules(BATTERY_CALL)
    with rig.sync.chat.completions.create(model="gpt-4o", messages=USER, tools=[BATTERY_TOOL], stream=True) as s:
        chunks = list(s)
    header = chunks[0].choices[0].delta
    assert header.role == "assistant"
    (first,) = header.tool_calls or []
    assert first.index == 0
    assert CALL.match(first.id or "")
    assert first.function is not None
    assert first.function.name == "get_device_battery"
    pieces = [(c.choices[0].delta.tool_calls or [])[0] for c in chunks[1:-1]]
    assert all(p.index == 0 for p in pieces)
    assert all(p.id is None for p in pieces)
    assert "".join(_arguments(p) for p in pieces) == '{"device":"SN-4417"}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_include_usage_adds_a_last_chunk_without_choices(rig: Rig) -> None:
    with rig.sync.chat.completions.create(
        model="gpt-4o", messages=USER, stream=True, stream_options={"include_usage": True}
    ) as stream:
        chunks = list(stream)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_parallel_tool_calls_false_keeps_one_call(rig: Rig) -> None:
    rig.app.add_rules(
        {
            "reply": {
                "tool_calls": [
                    {"name": "get_weather", "arguments": {}},
                    {"name": "get_device_battery", "arguments": {}},
                ]
            }
        }
    )
    answer = rig.sync.chat.completions.create(
        model="gpt-4o", messages=USER, tools=[BATTERY_TOOL, WEATHER_TOOL], parallel_tool_calls=False
    )
    assert [c.function.name for c in function_calls(answer.choices[0].message)] == ["get_weather"]


def test_async_client_whole_and_streamed(rig: Rig) -> None:
    rig.app.add_rules(BATTERY_CALL)

    async def main() -> None:
        async with rig.async_client() as client:
            whole = await client.chat.completions.create(model="gpt-4o-mini", messages=USER, tools=[BATTERY_TOOL])
            assert function_calls(whole.choices[0].message)[0].function.name == "get_device_battery"
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=USER, tools=[BATTERY_TOOL], stream=True
            )
            arguments = ""
            async for chunk in stream:
                for delta in chunk.choices[0].delta.tool_calls or []:
                    arguments += _arguments(delta)
            assert json.loads(arguments) == {"device": "SN-4417"}
            text = await client.responses.create(model="gpt-4o-mini", input="hello async")
            assert text.output_text == "fake reply to: hello async"

    anyio.run(main)


def test_responses_whole_text_and_function_call(rig: Rig) -> None:
    rig.app.add_rules(
        {
            "when": {"endpoint": "responses", "tools": ["get_device_battery"]},
            "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {"device": "SN-4417"}}]},
        }
    )
    text = rig.sync.responses.create(model="gpt-4.1", input="hello", instructions="be brief")
    assert isinstance(text, Response)
    assert RESP.match(text.id)
    assert text.status == "completed"
    assert text.output_text == "fake reply to: hello"
    assert text.instructions == "be brief"
    tool: Any = {  # FunctionToolParam, but without "strict" (its type requires it; the API does not)
        "type": "function",
        "name": "get_device_battery",
        "parameters": BATTERY_PARAMETERS,
    }
    called = rig.sync.responses.create(model="gpt-4.1", input="battery?", tools=[tool])
    (item,) = called.output
    assert item.type == "function_call"
    assert CALL.match(item.call_id)
    assert (item.id or "").startswith("fc_")
    assert json.loads(item.arguments) == {"device": "SN-4417"}
    assert [t.name if isinstance(t, FunctionTool) else t.type for t in called.tools] == ["get_device_battery"]


def test_responses_stream_events_in_order_with_sequence_numbers(rig: Rig) -> None:
    rig.app.set_default({"text": "alpha beta"})
    with rig.sync.responses.create(model="gpt-4.1", input="hi", stream=True) as stream:
        events = list(stream)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent)
    assert last.response.output_text == "alpha beta"


def test_responses_stream_function_call_accumulated_by_the_client_helper(rig: Rig) -> None:
    rig.app.add_rules(
        {
            "when": {"endpoint": "responses"},
            "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "days": [1, 2, 3]}}]},
        }
    )
    tool: Any = {  # FunctionToolParam, but without "strict" (its type requires it; the API does not)
        "type": "function",
        "name": "get_weather",
        "parameters": WEATHER_PARAMETERS,
    }
    with rig.sync.responses.stream(model="gpt-4.1", input="weather?", tools=[tool]) as stream:
        deltas = sum(1 for e in stream if e.type == "response.function_call_arguments.delta")
        final = stream.get_final_response()
    (item,) = final.output
    assert isinstance(item, ResponseFunctionToolCall)
    assert json.loads(item.arguments) == {"city": "Oslo", "days": [1, 2, 3]}
    assert deltas > 1


def test_responses_previous_response_id_carries_the_conversation(rig: Rig) -> None:
    rig.app.add_rules(
        {"when": {"last_tool_result": "37%"}, "reply": {"text": "battery: {last_tool_result}"}},
        {
            "when": {"endpoint": "responses"},
            "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {"device": "SN-4417"}}]},
        },
    )
    tool: Any = {  # FunctionToolParam, but without "strict" (its type requires it; the API does not)
        "type": "function",
        "name": "get_device_battery",
        "parameters": {"type": "object"},
    }
    first = rig.sync.responses.create(model="gpt-4.1", input="battery?", tools=[tool])
    (call,) = first.output
    assert isinstance(call, ResponseFunctionToolCall)
    second = rig.sync.responses.create(
        model="gpt-4.1",
        previous_response_id=first.id,
        tools=[tool],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "37% remaining"}],
    )
    assert second.output_text == "battery: 37% remaining"
    assert second.previous_response_id == first.id


def test_embeddings_float_and_base64_agree_and_are_deterministic(rig: Rig) -> None:
    by_default = rig.sync.embeddings.create(model="text-embedding-3-small", input=["battery level", "weather"])
    as_float = rig.sync.embeddings.create(
        model="text-embedding-3-small", input=["battery level", "weather"], encoding_format="float"
    )
    assert [len(d.embedding) for d in by_default.data] == [1536, 1536]
    assert np.allclose(by_default.data[0].embedding, as_float.data[0].embedding, atol=1e-6)
    assert np.isclose(np.linalg.norm(as_float.data[0].embedding), 1.0, atol=1e-5)
    again = rig.sync.embeddings.create(model="text-embedding-3-small", input="battery level", encoding_format="float")
    assert again.data[0].embedding == as_float.data[0].embedding
    small = rig.sync.embeddings.create(
        model="text-embedding-3-large", input="x", dimensions=256, encoding_format="float"
    )
    assert len(small.data[0].embedding) == 256


def test_embedding_base64_is_little_endian_float32_on_the_wire(served: Rig) -> None:
    with served.handle.client() as http:
        raw = http.post(
            "/v1/embeddings",
            headers={"authorization": "Bearer sk-fake-test-key-0001"},
            json={"model": "text-embedding-ada-002", "input": "x", "encoding_format": "base64"},
        ).json()
    vector = np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), dtype="<f4")
    assert vector.shape == (1536,)
    assert raw["usage"]["prompt_tokens"] == raw["usage"]["total_tokens"]


def test_models_list_and_retrieve(rig: Rig) -> None:
    ids = [m.id for m in rig.sync.models.list()]
    assert "gpt-4o" in ids
    assert "text-embedding-3-small" in ids
    model = rig.sync.models.retrieve("gpt-4o")
    assert (model.id, model.object, model.owned_by) == ("gpt-4o", "model", "system")


def test_dated_snapshots_of_known_models_are_served(rig: Rig) -> None:
    answer = rig.sync.chat.completions.create(model="gpt-4o-2024-08-06", messages=USER)
    assert answer.model == "gpt-4o-2024-08-06"


@pytest.mark.parametrize("n", [1, 3])
def test_n_choices(rig: Rig, n: int) -> None:
    answer = rig.sync.chat.completions.create(model="gpt-4o", messages=USER, n=n)
    assert [c.index for c in answer.choices] == list(range(n))
