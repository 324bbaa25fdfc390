"""The chat facade's own frames, read back by the harness's chat client: both ends of the stream agree.

Upstream's chat-harness spec fed frames built by the orchestrator's own chunk builders through the harness's SSE
assembly. Here the builders are the stack twin's facade (``fakes/stack/chat.py``); every chunk is also checked
against the ``openai`` package's ``ChatCompletionChunk`` (and the whole answer against ``ChatCompletion``), so a
builder that drifts from OpenAI's wire shape fails here, cluster-free, before any cluster spec reads it.
"""

from __future__ import annotations

import json
import random

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from fakes.stack.chat import DONE, KEEPALIVE, ChunkHead, completion, error_body, frames, sse
from fakes.stack.model import ModelToolCall
from harness.chat import ChatRejected, ChatTurn, feed
from harness.sse import SSEDecoder

CALLS = [
    ModelToolCall("call_a", "get_device_battery", json.dumps({"device_id": "SN-4417", "unit": "percent"})),
    ModelToolCall("call_b", "list_rack_alarms", json.dumps({"rack": "R-12", "severity": ["major", "critical"]})),
]


def read(stream: bytes, *, seed: int = 0) -> ChatTurn:
    """The harness's assembly of ``stream``, delivered in random-sized pieces."""
    turn, decoder, rng, at = ChatTurn(status=200), SSEDecoder(), random.Random(seed), 0
    while at < len(stream):
        size = rng.randint(1, 40)
        for frame in decoder.feed(stream[at : at + size]):
            feed(turn, frame)
        at += size
    for frame in decoder.close():
        feed(turn, frame)
    return turn


def chunks_of(stream: list[bytes]) -> list[ChatCompletionChunk]:
    return [ChatCompletionChunk.model_validate_json(f[len(b"data: ") :]) for f in stream if f != DONE]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_text_frames_round_trip(seed: int) -> None:
    text = "stub-agent-reply: the battery of SN-4417 is at 37% remaining, nothing else to report."
    stream = frames(ChunkHead(), text, [], "stop")
    turn = read(b"".join(stream), seed=seed)
    assert turn.text == text
    assert turn.tool_calls == []
    assert turn.finish_reason == "stop"
    assert turn.done
    assert turn.role_frames == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tool_call_frames_round_trip_by_index_with_split_arguments(seed: int) -> None:
    stream = frames(ChunkHead(), "Checking.", CALLS, "tool_calls")
    turn = read(b"".join(stream), seed=seed)
    assert [(c.index, c.id, c.name) for c in turn.tool_calls] == [
        (0, "call_a", "get_device_battery"),
        (1, "call_b", "list_rack_alarms"),
    ]
    assert [c.arguments for c in turn.tool_calls] == [c.arguments for c in CALLS]
    assert turn.text == "Checking."
    assert turn.finish_reason == "tool_calls"
    pieces = [c for c in chunks_of(stream) if c.choices[0].delta.tool_calls]
    assert len(pieces) > len(CALLS), "the arguments were not split over several deltas: the merge went untested"


def test_every_frame_is_an_openai_chunk_of_one_completion() -> None:
    head = ChunkHead()
    chunks = chunks_of(frames(head, "hello there", CALLS, "tool_calls"))
    assert {c.id for c in chunks} == {head.id}
    assert head.id.startswith("chatcmpl-")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks].count("tool_calls") == 1
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_keepalives_between_frames_are_skipped_and_counted() -> None:
    stream = frames(ChunkHead(), "ok", [], "stop")
    turn = read(stream[0] + KEEPALIVE * 3 + b"".join(stream[1:]))
    assert (turn.text, turn.keepalives, turn.done) == ("ok", 3, True)


def test_an_error_event_after_text_is_rejected_with_the_text_kept() -> None:
    head = ChunkHead()
    stream = frames(head, "partial answer", [], "stop")[:-2] + [
        sse(error_body("the model endpoint is unreachable", type="server_error"))
    ]
    with pytest.raises(ChatRejected, match="the model endpoint is unreachable") as caught:
        read(b"".join(stream))
    assert caught.value.partial.text == "partial answer"


def test_the_whole_answer_is_an_openai_chat_completion() -> None:
    answer = ChatCompletion.model_validate(completion(ChunkHead(), "", CALLS, "tool_calls"))
    calls = answer.choices[0].message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls if c.type == "function"] == [
        (c.id, c.name, c.arguments) for c in CALLS
    ]
    assert answer.choices[0].message.content is None
