"""The chat client reads the stream shapes OpenAI-compatible providers send, not only OpenAI's: each shape comes from
the fake model endpoint's own quirks (``fakes.openai.quirks``), on a socket and in-process, and must give the same
turn OpenAI's shape gives. A stream it cannot read is a ``ChatStreamMalformed`` that names the frame and keeps the turn
before it; nothing else comes out of the client, whatever JSON a chunk holds (a hypothesis spec)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fakes.openai
from fakes.server import FakeHandle
from fakes.testing import examples, fuzzing
from harness import ChatError, ChatRejected, ChatStreamMalformed, ChatTurn, chat_turn_sync
from harness.chat import MAX_FRAME_SHOWN, feed
from harness.sse import SSEDecoder, SSEFrame

PATH = "/v1/chat/completions"
USER = [{"role": "user", "content": "battery of SN-4417?"}]
CALLS = [
    {"name": "get_device_battery", "arguments": {"device": "SN-4417", "unit": "%", "note": "ünï"}},
    {"name": "list_rack_alarms", "arguments": {"rack": "R-12", "severity": ["major", "critical"]}},
]
EXPECTED_CALLS = [(c["name"], c["arguments"]) for c in CALLS]


@pytest.fixture(params=["socket", "in-process"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeHandle[fakes.openai.OpenAIFake]]:
    context = (
        fakes.openai.serve(models=["chat-model"])
        if request.param == "socket"
        else fakes.openai.in_process(models=["chat-model"])
    )
    with context as handle:
        yield handle


def _chat(handle: FakeHandle[Any], **kwargs: Any) -> ChatTurn:
    kwargs.setdefault("model", "chat-model")
    kwargs.setdefault("token", "t")
    kwargs.setdefault("timeout", 20.0)
    if not handle.served:
        kwargs.setdefault("transport", handle.async_transport())
    return chat_turn_sync(handle.url, USER, **kwargs)


def _reply(handle: FakeHandle[Any], *quirks: str, text: str | None = "Checking.", calls: bool = True) -> None:
    reply: dict[str, Any] = {"quirks": list(quirks)}
    if text is not None:
        reply["text"] = text
    if calls:
        reply["tool_calls"] = CALLS
    handle.app.set_rules([{"when": {}, "reply": reply, "ignore_tool_choice": True}])


def _calls(turn: ChatTurn) -> list[tuple[str, Any]]:
    return [(c.name, c.parsed_arguments()) for c in turn.tool_calls]


@pytest.mark.parametrize(
    "quirks",
    [
        ("no_index",),
        ("no_index", "repeat_ids"),
        ("no_index", "explicit_nulls"),
        ("explicit_nulls",),
        ("repeat_ids",),
        ("arguments_object",),
        ("arguments_object", "no_index"),
        ("error_null",),
        ("error_empty",),
        ("delta_null",),
        ("null_frame",),
        ("no_index", "repeat_ids", "explicit_nulls", "error_null", "delta_null", "null_frame"),
    ],
)
def test_every_provider_shape_gives_the_turn_openais_shape_gives(
    fake: FakeHandle[Any], quirks: tuple[str, ...]
) -> None:
    _reply(fake, *quirks)
    turn = _chat(fake)
    emitted = fake.app.log().last().emitted
    assert turn.text == "Checking."
    assert _calls(turn) == EXPECTED_CALLS
    assert [(c.index, c.id) for c in turn.tool_calls] == [(0, emitted[0].id), (1, emitted[1].id)]
    assert (turn.finish_reason, turn.done) == ("tool_calls", True)


def test_tool_calls_without_index_are_never_dropped_even_when_the_answer_is_only_calls(fake: FakeHandle[Any]) -> None:
    _reply(fake, "no_index", text=None)
    turn = _chat(fake)
    assert turn.finish_reason == "tool_calls"
    assert _calls(turn) == EXPECTED_CALLS  # before: tool_calls == [] with finish_reason "tool_calls"


def test_arguments_sent_as_an_object_become_compact_json_text(fake: FakeHandle[Any]) -> None:
    _reply(fake, "arguments_object")
    turn = _chat(fake)
    assert turn.tool_calls[0].arguments == '{"device":"SN-4417","unit":"%","note":"ünï"}'
    assert json.loads(turn.tool_calls[1].arguments) == CALLS[1]["arguments"]


@pytest.mark.parametrize("quirk", ["error_null", "error_empty"])
def test_an_empty_error_field_on_healthy_chunks_is_no_error(fake: FakeHandle[Any], quirk: str) -> None:
    _reply(fake, quirk, calls=False, text="all is well")
    turn = _chat(fake)
    assert (turn.text, turn.done, turn.finish_reason) == ("all is well", True, "stop")


def test_a_stream_without_done_is_returned_whole_with_done_false(fake: FakeHandle[Any]) -> None:
    _reply(fake, "no_done")
    turn = _chat(fake)
    assert (turn.text, _calls(turn), turn.finish_reason, turn.done) == (
        "Checking.",
        EXPECTED_CALLS,
        "tool_calls",
        False,
    )
    assert "no [DONE]" in turn.describe()


def test_a_usage_only_last_chunk_gives_the_usage(fake: FakeHandle[Any]) -> None:
    _reply(fake, calls=False, text="counted")
    turn = _chat(fake, extra_body={"stream_options": {"include_usage": True}})
    assert turn.text == "counted"
    assert turn.usage is not None
    assert turn.usage["total_tokens"] == turn.usage["prompt_tokens"] + turn.usage["completion_tokens"]


def test_only_choice_zero_is_read_when_several_are_streamed(fake: FakeHandle[Any]) -> None:
    _reply(fake, text="one answer")
    turn = _chat(fake, extra_body={"n": 2})
    assert turn.text == "one answer"
    assert _calls(turn) == EXPECTED_CALLS


def test_keepalives_and_a_null_frame_are_skipped(fake: FakeHandle[Any]) -> None:
    fake.app.set_rules([{"when": {}, "reply": {"text": "a b", "keepalive": True, "quirks": ["null_frame"]}}])
    turn = _chat(fake)
    assert (turn.text, turn.done, turn.role_frames) == ("a b", True, 1)
    assert turn.keepalives >= 4


def test_a_byte_order_mark_before_the_first_event_does_not_lose_it() -> None:
    decoder = SSEDecoder()
    raw = b"\xef\xbb\xbf" + _sse(_text("first"), _text(" second \ufeff")).encode()
    frames = decoder.feed(raw[:2]) + decoder.feed(raw[2:]) + decoder.close()
    turn = ChatTurn(status=200)
    for frame in frames:
        feed(turn, frame)
    assert turn.text == "first second \ufeff"  # only the stream's leading mark is dropped


# --- what cannot be read: ChatStreamMalformed, over the real fake ------------------------------------------------


def _sse(*chunks: Any) -> str:
    return "".join(f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks)


def _text(piece: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}


def _calls_chunk(*pieces: Any, content: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"tool_calls": list(pieces)}
    if content is not None:
        delta["content"] = content
    return {"choices": [{"index": 0, "delta": delta}]}


def test_a_malformed_frame_from_the_service_names_the_frame_and_keeps_the_turn_before_it(fake: FakeHandle[Any]) -> None:
    bad = _calls_chunk({"index": "0", "function": {"arguments": "{}"}}, content=" lost")
    body = _sse(_text("kept"), _calls_chunk({"index": 0, "id": "call_a", "function": {"name": "a"}}), bad, "[DONE]")
    fake.fault("status", PATH, status=200, headers=[("content-type", "text/event-stream")], body=body, times=1)
    with pytest.raises(ChatStreamMalformed) as caught:
        _chat(fake)
    error = caught.value
    assert error.frame_number == 3
    assert error.frame == json.dumps(bad)
    assert "data frame 3 has choices[0].delta.tool_calls[0].index of type str, not int" in str(error)
    assert PATH in str(error)
    assert (error.partial.text, error.partial.frames) == ("kept", 3)  # the bad frame's content is not half-applied
    assert [(c.id, c.name) for c in error.partial.tool_calls] == [("call_a", "a")]
    assert any("partial chat turn: HTTP 200, 3 data frames" in note for note in error.__notes__)


def test_a_long_malformed_frame_is_clipped(fake: FakeHandle[Any]) -> None:
    body = _sse({"choices": [{"index": 0, "delta": {"content": 7, "pad": "x" * 5000}}]})
    fake.fault("status", PATH, status=200, headers=[("content-type", "text/event-stream")], body=body, times=1)
    with pytest.raises(ChatStreamMalformed, match="content of type int, not str") as caught:
        _chat(fake)
    assert caught.value.frame.startswith('{"choices"')
    assert caught.value.frame.endswith("characters)")
    assert len(caught.value.frame) < MAX_FRAME_SHOWN + 40


def _fed(*chunks: Any) -> ChatTurn:
    turn = ChatTurn(status=200)
    for chunk in chunks:
        feed(turn, SSEFrame(data=chunk if isinstance(chunk, str) else json.dumps(chunk)))
    return turn


@pytest.mark.parametrize(
    "bad, says",
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "is not a JSON object (a list)"),
        ({"choices": {"0": {}}}, "choices of type dict, not list"),
        ({"choices": ["text"]}, "choices[0] that is not an object"),
        ({"choices": [{"index": 0, "delta": "hi"}]}, "choices[0].delta of type str, not dict"),
        ({"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]}, "finish_reason of type int"),
        ({"choices": [{"index": 0, "delta": {"content": ["a"]}}]}, "content of type list, not str"),
        ({"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]}, "tool_calls of type dict, not list"),
        (_calls_chunk("call"), "tool_calls[0] that is not an object"),
        (_calls_chunk({"index": True}), "index of type bool, not int"),
        (_calls_chunk({"index": -1}), "index -1, a negative slot"),
        (_calls_chunk({"index": 0, "id": 5}), "id of type int, not str"),
        (_calls_chunk({"index": 0, "function": {"name": ["f"]}}), "function.name of type list, not str"),
        (_calls_chunk({"index": 0, "function": "f"}), "function of type str, not dict"),
        (_calls_chunk({"index": 0, "function": {"arguments": 3}}), "neither JSON text nor a JSON object"),
        (_calls_chunk({"index": 0, "function": {"arguments": [1]}}), "neither JSON text nor a JSON object"),
    ],
)
def test_frames_of_the_wrong_shape_are_malformed_and_the_turn_stays_as_before(bad: Any, says: str) -> None:
    turn = _fed(
        _text("so far"), _calls_chunk({"index": 0, "id": "call_a", "function": {"name": "a", "arguments": "{"}})
    )
    with pytest.raises(ChatStreamMalformed, match=f"data frame 3 .*{re.escape(says)}") as caught:
        feed(turn, SSEFrame(data=bad if isinstance(bad, str) else json.dumps(bad)))
    assert caught.value.partial is turn
    assert (turn.text, turn.frames, [(c.id, c.arguments) for c in turn.tool_calls]) == ("so far", 3, [("call_a", "{")])


def test_arguments_text_after_a_whole_object_and_an_object_after_text_are_malformed() -> None:
    head = _calls_chunk({"index": 0, "id": "call_a", "function": {"name": "a", "arguments": {"k": 1}}})
    with pytest.raises(ChatStreamMalformed, match="after its arguments came whole"):
        _fed(head, _calls_chunk({"index": 0, "function": {"arguments": "}"}}))
    text_first = _calls_chunk({"index": 0, "id": "call_a", "function": {"name": "a", "arguments": '{"k":'}})
    with pytest.raises(ChatStreamMalformed, match="as a JSON object after pieces of JSON text"):
        _fed(text_first, _calls_chunk({"index": 0, "function": {"arguments": {"k": 1}}}))


def test_index_less_pieces_are_assembled_by_id_and_order() -> None:
    turn = _fed(
        _calls_chunk({"id": "call_a", "function": {"name": "a", "arguments": '{"x":'}}),
        _calls_chunk({"function": {"arguments": "1}"}}),  # neither index nor id: the latest call
        _calls_chunk({"id": "call_b", "function": {"name": "b", "arguments": ""}}),  # a new id: the next slot
        _calls_chunk(
            {"id": "call_a", "function": {"arguments": ""}}, {"id": "call_b", "function": {"arguments": "{}"}}
        ),
        _calls_chunk({"function": {"name": "c", "arguments": "{}"}}),  # another function's name: the next slot
        _calls_chunk({"index": 1, "function": {"arguments": ""}}),  # an index still wins
    )
    assert [(c.index, c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        (0, "call_a", "a", '{"x":1}'),
        (1, "call_b", "b", "{}"),
        (2, "", "c", "{}"),
    ]


@pytest.mark.parametrize("error", [None, {}, "", False, []])
def test_empty_error_values_are_not_errors(error: Any) -> None:
    turn = _fed({**_text("fine"), "error": error})
    assert turn.text == "fine"


@pytest.mark.parametrize(
    "chunk, message",
    [
        ({"error": {"message": "overloaded", "code": 529}}, "overloaded"),
        ({"error": "rate limited"}, "rate limited"),
        ({"error": {"code": 500}}, "an error event without a message"),
    ],
)
def test_a_set_error_is_chat_rejected_with_its_message(chunk: dict[str, Any], message: str) -> None:
    with pytest.raises(ChatRejected, match=f"after 1 frames: {message}") as caught:
        _fed(_text("half"), chunk)
    assert caught.value.partial.text == "half"
    assert caught.value.error == chunk["error"]


def test_an_event_named_error_is_chat_rejected() -> None:
    turn = ChatTurn(status=200)
    with pytest.raises(ChatRejected, match="quota exhausted"):
        feed(turn, SSEFrame(data='{"message": "quota exhausted"}', event="error"))


# --- whatever JSON a chunk holds, only a ChatTurn or a ChatError comes out --------------------------------------

_KEYS = st.sampled_from(
    ["choices", "delta", "index", "tool_calls", "id", "function", "name", "arguments", "content", "role"]
    + ["finish_reason", "error", "usage", "message", "type", "object"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=16,
)
_PIECE = st.fixed_dictionaries(
    {},
    optional={
        "index": _JSON | st.integers(0, 2),
        "id": _JSON | st.sampled_from(["call_a", "call_b"]),
        "function": _JSON
        | st.fixed_dictionaries({}, optional={"name": _JSON | st.just("f"), "arguments": _JSON | st.just('{"a":')}),
    },
)
_CHOICE = st.fixed_dictionaries(
    {},
    optional={
        "index": _JSON | st.just(0),
        "delta": _JSON
        | st.fixed_dictionaries({}, optional={"content": _JSON, "role": _JSON, "tool_calls": st.lists(_PIECE) | _JSON}),
        "finish_reason": _JSON,
    },
)
_CHUNK = _JSON | st.fixed_dictionaries({}, optional={"choices": st.lists(_CHOICE, max_size=2) | _JSON, "error": _JSON})


@pytest.mark.fuzz
@settings(max_examples=examples(200, 5000), deadline=None, derandomize=not fuzzing())
@given(chunks=st.lists(_CHUNK, min_size=1, max_size=6), done=st.booleans())
def test_any_json_in_the_chunks_gives_a_turn_or_a_chat_error(chunks: list[Any], done: bool) -> None:
    body = _sse(*[json.dumps(c) for c in chunks]) + ("data: [DONE]\n\n" if done else "")
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())
    )
    outcome = _outcome(lambda: chat_turn_sync("http://model.test", USER, model="m", timeout=10.0, transport=transport))
    if isinstance(outcome, ChatStreamMalformed):
        assert 1 <= outcome.frame_number <= len(chunks)
        assert isinstance(outcome.partial, ChatTurn)
        return
    assert not isinstance(outcome, ChatError) or isinstance(outcome, ChatRejected)
    if isinstance(outcome, ChatError):
        return
    turn = outcome
    assert isinstance(turn.text, str)
    assert all(isinstance(v, str) for c in turn.tool_calls for v in (c.id, c.name, c.arguments))
    assert turn.finish_reason is None or isinstance(turn.finish_reason, str)


def _outcome(call: Callable[[], ChatTurn]) -> ChatTurn | ChatError:
    """The turn, or the ``ChatError`` raised; anything else propagates and fails the spec."""
    try:
        return call()
    except ChatError as exc:
        return exc


# --- answers that are not an event stream, refusals, line ends ---------------------------------------------------


def test_a_whole_completion_instead_of_a_stream_is_read_into_the_turn(fake: FakeHandle[Any]) -> None:
    completion = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "chat-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Checking.",
                    "refusal": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}}
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    headers = [("content-type", "application/json")]
    fake.fault("status", PATH, status=200, headers=headers, body=json.dumps(completion), times=1)
    turn = _chat(fake)
    assert (turn.streamed, turn.done, turn.text, turn.finish_reason) == (False, True, "Checking.", "tool_calls")
    assert [(c.id, c.name, c.parsed_arguments()) for c in turn.tool_calls] == [("call_1", "a", {"x": 1})]
    assert (turn.completion_id, turn.model, (turn.usage or {}).get("total_tokens")) == ("chatcmpl-9", "chat-model", 5)


def test_an_error_body_instead_of_a_stream_is_chat_rejected_with_its_message(fake: FakeHandle[Any]) -> None:
    body = json.dumps({"error": {"message": "the model is overloaded", "type": "server_error"}})
    fake.fault("status", PATH, status=200, headers=[("content-type", "application/json")], body=body, times=1)
    with pytest.raises(ChatRejected) as caught:
        _chat(fake)
    assert "answered HTTP 200 with an error (application/json) instead of a stream: the model is overloaded" in str(
        caught.value
    )
    assert caught.value.error == {"message": "the model is overloaded", "type": "server_error"}


def test_a_body_that_is_neither_stream_nor_completion_is_malformed_and_quoted(fake: FakeHandle[Any]) -> None:
    fake.fault("status", PATH, status=200, headers=[("content-type", "text/html")], body="<h1>gateway</h1>", times=1)
    with pytest.raises(ChatStreamMalformed) as caught:
        _chat(fake)
    assert "answered HTTP 200 with text/html, neither an event stream nor a chat completion: <h1>gateway</h1>" in str(
        caught.value
    )


def test_a_refusal_is_kept_on_the_turn_and_reported(fake: FakeHandle[Any]) -> None:
    refusal = [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't help"}}]
    body = _sse({"choices": refusal}, {"choices": [{"index": 0, "delta": {"refusal": " with that."}}]}, "[DONE]")
    fake.fault("status", PATH, status=200, headers=[("content-type", "text/event-stream")], body=body, times=1)
    turn = _chat(fake)
    assert (turn.refusal, turn.text, turn.role_frames) == ("I can't help with that.", "", 0)
    assert 'refusal: "I can\'t help with that."' in turn.describe()


@pytest.mark.parametrize("ending", [b"\r", b"\n", b"\r\n"])
def test_an_event_is_dispatched_as_soon_as_its_blank_line_is_complete(ending: bytes) -> None:
    # A server that keeps the connection open after its last event must not leave that event unread.
    decoder = SSEDecoder()
    frames = decoder.feed(b"data: last" + ending + ending)
    assert [f.data for f in frames] == ["last"]
    assert decoder.feed(b"\n") == []  # the rest of a CRLF split across chunks is no extra line


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    decoder = SSEDecoder()
    frames = decoder.feed(b"data: a\r") + decoder.feed(b"\ndata: b\r") + decoder.feed(b"\n\r") + decoder.feed(b"\n")
    assert [f.data for f in frames] == ["a\nb"]
