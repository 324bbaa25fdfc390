"""The harness's streaming chat client (``harness.chat``) against the fake model endpoint's own streams, in-process
and over a socket (and through a port-forward stand-in): assembly, headers, partial text on every failure, parking
only when allowed, every hop named."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

import fakes.openai
from fakes.server import FakeHandle
from harness import (
    ChatRejected,
    ChatStreamMalformed,
    ChatTurn,
    PortForwardDied,
    ServiceTimeout,
    ServiceUnreachable,
    chat_turn,
    chat_turn_sync,
)
from harness.chat import feed
from harness.portforward import port_forward
from harness.sse import SSEDecoder, SSEFrame
from harness.testing.standin import KubectlStandIn

USER = [{"role": "user", "content": "battery of SN-4417?"}]
MODEL = "chat-model"
TOOL = {"type": "function", "function": {"name": "get_device_battery", "parameters": {"type": "object"}}}
TWO_CALLS = {
    "when": {"last_user": "battery"},
    "reply": {
        "text": "Checking.",
        "tool_calls": [
            {"name": "get_device_battery", "arguments": {"device": "SN-4417", "unit": "%"}},
            {"name": "get_device_battery", "arguments": {"device": "SN-0001"}},
        ],
    },
}
LINK = {"when": {"last_user": "link"}, "reply": {"text": "To continue, link your GitHub account here please"}}


@pytest.fixture(params=["socket", "in-process"])
def fake(request) -> Iterator[FakeHandle]:
    context = (
        fakes.openai.serve(models=[MODEL]) if request.param == "socket" else fakes.openai.in_process(models=[MODEL])
    )
    with context as handle:
        handle.app.add_rules(TWO_CALLS, LINK)
        yield handle


def _chat(handle: FakeHandle, messages=USER, **kwargs) -> ChatTurn:
    kwargs.setdefault("model", MODEL)
    kwargs.setdefault("token", "e2e-gateway-token")
    kwargs.setdefault("timeout", 20.0)
    if not handle.served:
        kwargs.setdefault("transport", handle.async_transport())
    return chat_turn_sync(handle.url, messages, **kwargs)


def test_text_and_tool_calls_are_assembled_by_index(fake):
    turn = _chat(fake, tools=[TOOL])
    assert turn.status == 200
    assert turn.done
    assert turn.text == "Checking."
    assert turn.finish_reason == "tool_calls"
    assert [(c.index, c.name) for c in turn.tool_calls] == [(0, "get_device_battery"), (1, "get_device_battery")]
    assert [c.parsed_arguments() for c in turn.tool_calls] == [
        {"device": "SN-4417", "unit": "%"},
        {"device": "SN-0001"},
    ]
    assert turn.role_frames == 1
    log = fake.app.log()
    assert [log.answered_with(c.id).seq for c in turn.tool_calls] == [log.last().seq] * 2
    assert turn.completion_id == log.last().answer_id


def test_keepalives_are_skipped_and_counted(fake):
    fake.app.add_rules({"when": {"last_user": "keep"}, "reply": {"text": "a b c", "keepalive": True}})
    turn = _chat(fake, [{"role": "user", "content": "keep going"}])
    assert turn.text == "a b c"
    assert turn.keepalives == turn.frames + 1  # one before every data frame and before [DONE]
    assert turn.done


def test_the_request_carries_the_callers_headers_and_a_streaming_body(fake):
    _chat(fake, headers={"x-session-id": "chat-42", "x-caller": "header.payload.sig"}, tools=[TOOL], tool_choice="auto")
    (entry,) = fake.requests()
    assert entry.headers["x-session-id"] == "chat-42"
    assert entry.headers["x-caller"] == "header.payload.sig"
    assert entry.headers["authorization"] == "<redacted>"
    assert entry.headers["accept"] == "text/event-stream"
    body = entry.json()
    assert (body["model"], body["stream"], body["tool_choice"]) == (MODEL, True, "auto")
    assert fake.app.log().last().tool_names == ["get_device_battery"]


def test_no_header_of_a_services_own_unless_given(fake):
    _chat(fake)
    sent = {name.lower() for name in fake.requests()[0].headers}
    assert [name for name in sent if name.startswith("x-")] == []
    assert {"authorization", "accept", "content-type"} <= sent


@pytest.mark.parametrize("kind", ["stream_stop", "stream_reset"])
def test_a_cut_stream_is_service_unreachable_and_keeps_the_partial_text(fake, kind):
    fake.fault(kind, "/v1/chat/completions", after=3, times=1)
    with pytest.raises(ServiceUnreachable) as caught:
        _chat(fake, [{"role": "user", "content": "link"}])
    partial = caught.value.partial
    assert partial is not None
    assert partial.text == "To continue,"
    assert not partial.done
    assert "text so far: 'To continue,'" in "\n".join(caught.value.__notes__)


def test_a_stalled_stream_is_parked_only_when_allowed(fake):
    fake.fault("stream_pause", "/v1/chat/completions", after=4, delay=30.0)
    parked = _chat(fake, [{"role": "user", "content": "link"}], timeout=3.0, allow_park=True)
    assert parked.parked
    assert parked.text == "To continue, link"
    assert not parked.done
    with pytest.raises(ServiceTimeout, match="headers received") as caught:
        _chat(fake, [{"role": "user", "content": "link"}], timeout=3.0)
    assert caught.value.partial is not None
    assert caught.value.partial.text == "To continue, link"
    assert caught.value.partial is not None
    assert caught.value.partial.parked is False


def test_a_deadline_before_headers_is_never_parked(fake):
    fake.fault("hang", "/v1/chat/completions", times=1)
    with pytest.raises(ServiceTimeout, match="no response headers") as caught:
        _chat(fake, timeout=0.5, allow_park=True)
    assert caught.value.partial is None


def test_an_error_status_is_chat_rejected_with_the_openai_error(fake):
    bad = {"type": "function", "function": {"name": "not valid!"}}
    with pytest.raises(ChatRejected, match="HTTP 400") as caught:
        _chat(fake, tools=[bad])
    assert caught.value.status == 400
    assert caught.value.error["param"] == "tools[0].function.name"
    assert caught.value.partial.status == 400


def test_an_error_event_mid_stream_is_chat_rejected_after_the_text(fake):
    fake.app.add_rules(
        {
            "when": {"last_user": "fail"},
            "reply": {"text": "half an answer", "error": {"status": 500, "in_stream": True}},
        }
    )
    with pytest.raises(ChatRejected, match="error event") as caught:
        _chat(fake, [{"role": "user", "content": "fail now"}])
    assert caught.value.partial.text == "half an answer"
    assert caught.value.status == 200


def test_async_and_a_turn_resumed_with_the_tool_result(fake):
    fake.app.add_rules({"when": {"last_role": "tool"}, "reply": {"text": "It reads {last_tool_result}."}})

    async def main() -> ChatTurn:
        first = await chat_turn(
            fake.url,
            USER,
            model=MODEL,
            token="t",
            tools=[TOOL],
            timeout=20.0,
            transport=None if fake.served else fake.async_transport(),
        )
        call = first.tool_calls[0]
        messages: list[dict[str, Any]] = [
            *USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": "37% remaining"},
        ]
        return await chat_turn(
            fake.url,
            messages,
            model=MODEL,
            token="t",
            tools=[TOOL],
            timeout=20.0,
            transport=None if fake.served else fake.async_transport(),
        )

    fake.app.set_rules(
        [
            {"when": {"last_role": "tool"}, "reply": {"text": "It reads {last_tool_result}."}},
            {"when": {}, "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {}}]}},
        ]
    )
    resumed = anyio.run(main)
    assert resumed.text == "It reads 37% remaining."
    assert resumed.finish_reason == "stop"
    assert resumed.tool_calls == []


def test_caller_mistakes_are_refused_before_sending(fake):
    with pytest.raises(ValueError, match="model"):
        _chat(fake, model="")
    with pytest.raises(ValueError, match="messages"):
        _chat(fake, [])
    with pytest.raises(ValueError, match="timeout"):
        _chat(fake, timeout=0)
    assert fake.requests() == []


def test_a_dying_forward_mid_stream_is_port_forward_died_with_the_partial_text(kubectl_standin: KubectlStandIn):
    with fakes.openai.serve(models=[MODEL]) as fake:
        fake.app.add_rules(LINK)
        fake.fault("stream_pause", "/v1/chat/completions", after=3, delay=60.0)
        kubectl_standin.script(target_port=urlsplit(fake.url).port)
        with port_forward(kubectl_standin.kube(), "svc/fake-openai", 80) as fwd:
            assert fwd.proc is not None
            pid = fwd.proc.pid

            async def main() -> None:
                async def kill_when_paused() -> None:
                    while not fake.requests():
                        await anyio.sleep(0.02)
                    await anyio.sleep(3.0)  # unpaced, the first 3 chunks go out at once; then the 60 s pause
                    os.kill(pid, signal.SIGKILL)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(kill_when_paused)
                    started = time.monotonic()
                    with pytest.raises(PortForwardDied) as caught:
                        await chat_turn(
                            fwd, [{"role": "user", "content": "link"}], model=MODEL, token="t", timeout=30.0
                        )
                assert time.monotonic() - started < 20.0  # the exit ended it, not the 30 s budget
                assert caught.value.partial is not None
                assert caught.value.partial.text == "To continue,"
                assert "port-forward svc/fake-openai" in str(caught.value)

            anyio.run(main)


def _frames(*data: str) -> list[SSEFrame]:
    return [SSEFrame(data=d) for d in data]


def test_assembly_from_frames_skips_role_keepalive_and_done_and_merges_split_arguments():
    turn = ChatTurn(status=200)
    frames = [
        SSEFrame(comment="keep-alive"),
        *_frames(
            json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
            json.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "b", "arguments": ""}}]
                            },
                        }
                    ]
                }
            ),
            json.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {"index": 0, "id": "call_a", "function": {"name": "a", "arguments": '{"k":'}}
                                ]
                            },
                        }
                    ]
                }
            ),
            json.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {"index": 0, "function": {"arguments": "1}"}},
                                    {"index": 1, "function": {"arguments": "{}"}},
                                ]
                            },
                        }
                    ]
                }
            ),
            json.dumps({"choices": [{"index": 1, "delta": {"content": "other choice, ignored"}}]}),
            json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            "[DONE]",
        ),
    ]
    ended = [feed(turn, f) for f in frames]
    assert ended[-1] is True
    assert [(c.index, c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        (0, "call_a", "a", '{"k":1}'),
        (1, "call_b", "b", "{}"),
    ]
    assert (turn.text, turn.role_frames, turn.keepalives, turn.finish_reason) == ("", 1, 1, "tool_calls")


def test_content_only_stream_has_no_tool_calls_and_a_clean_end_without_done_is_reported():
    turn = ChatTurn(status=200)
    decoder = SSEDecoder()
    raw = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\r\n\r\n: ping\r\n\r\n'
    for frame in decoder.feed(raw[:17]) + decoder.feed(raw[17:]) + decoder.close():
        feed(turn, frame)
    assert (turn.text, turn.tool_calls, turn.done, turn.keepalives) == ("hi", [], False, 1)
    assert "no [DONE]" in turn.describe()


def test_a_frame_that_is_not_json_is_malformed():
    turn = ChatTurn(status=200)
    with pytest.raises(ChatStreamMalformed, match="data frame 1 is not JSON: <html>") as caught:
        feed(turn, SSEFrame(data="<html>"))
    assert caught.value.partial is turn
    assert (caught.value.frame, caught.value.frame_number) == ("<html>", 1)
