"""Faults as the real ``openai`` client sees them (retries off): each stream fault mid-stream, the shared kinds, and
an error event inside a stream; on a socket and in-process."""

from __future__ import annotations

import time
from collections.abc import Iterable

import anyio
import openai
import pytest
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from specs.fake_openai.conftest import Rig, sync_client

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "tell me"}]
TEXT = {"when": {}, "reply": {"text": "one two three four five six"}}


def _read(stream: Iterable[ChatCompletionChunk]) -> list[ChatCompletionChunk]:
    seen = []
    for chunk in stream:
        seen.append(chunk)
    return seen


@pytest.mark.parametrize("kind", ["stream_stop", "stream_reset"])
def test_a_stream_cut_mid_body_is_an_api_connection_error_after_the_chunks_sent(rig: Rig, kind: str) -> None:
    rig.app.add_rules(TEXT)
    rig.handle.fault(kind, "/v1/chat/completions", after=3, times=1)
    seen: list[str | None] = []
    with (
        pytest.raises(openai.APIConnectionError),
        rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True) as stream,
    ):
        for chunk in stream:
            seen.append(chunk.choices[0].delta.content)
    assert seen == ["", "one", " two"]
    (entry,) = rig.handle.requests()
    assert (entry.status, entry.fault) == (200, kind)
    assert _read(rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True))  # once only


def test_a_long_pause_mid_stream_is_a_timeout_for_a_client_with_a_shorter_one(rig: Rig) -> None:
    rig.handle.fault("stream_pause", "/v1/chat/completions", after=2, delay=20.0, times=1)
    client = sync_client(rig.handle, timeout=1.0)
    started = time.monotonic()
    with client, pytest.raises(openai.APITimeoutError):
        _read(client.chat.completions.create(model="gpt-4o", messages=USER, stream=True))
    assert time.monotonic() - started < 15.0  # generous: the pause is 20 s, the client's read timeout 1 s


def test_a_short_pause_is_only_a_delay(rig: Rig) -> None:
    rig.app.add_rules(TEXT)
    rig.handle.fault("stream_pause", "/v1/chat/completions", after=2, delay=0.3, times=1)
    chunks = _read(rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "one two three four five six"


def test_responses_stream_cut_is_seen_by_the_async_client(rig: Rig) -> None:
    rig.handle.fault("stream_stop", "/v1/responses", after=2, times=1)

    async def main() -> list[str]:
        seen: list[str] = []
        async with rig.async_client() as client:
            stream = await client.responses.create(model="gpt-4o", input="x", stream=True)
            with pytest.raises(openai.APIConnectionError):
                async for event in stream:
                    seen.append(event.type)
        return seen

    assert anyio.run(main) == ["response.created", "response.in_progress"]


@pytest.mark.parametrize(
    "status, error",
    [(429, openai.RateLimitError), (500, openai.InternalServerError), (503, openai.InternalServerError)],
)
def test_status_faults_carry_openai_error_bodies(rig: Rig, status: int, error: type[openai.APIStatusError]) -> None:
    rig.handle.fault("status", "/v1/chat/completions", status=status, times=1)
    with pytest.raises(error) as caught:
        rig.sync.chat.completions.create(model="gpt-4o", messages=USER)
    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict)
    assert set(caught.value.body) == {"message", "type", "param", "code"}
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "1"


def test_hang_is_a_timeout_and_reset_a_connection_error(rig: Rig) -> None:
    client = sync_client(rig.handle, timeout=0.5)
    rig.handle.fault("hang", "/v1/chat/completions", times=1)
    with client, pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="gpt-4o", messages=USER)
    rig.handle.fault("reset", "/v1/embeddings", times=1)
    with pytest.raises(openai.APIConnectionError):
        rig.sync.embeddings.create(model="text-embedding-3-small", input="x")


def test_latency_and_drip_on_the_model_routes(rig: Rig) -> None:
    rig.handle.fault("latency", "/v1/chat/completions", delay=5.0, times=1)
    client = sync_client(rig.handle, timeout=0.5)
    with client, pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="gpt-4o", messages=USER)
    # A two-word reply: the drip sends the stream a byte at a time, each chunk's JSON envelope included, so every word
    # costs a few hundred sleeps; two words already make a stream of several chunks.
    rig.app.add_rules({"when": {}, "reply": {"text": "one two"}})
    rig.handle.fault("drip", "/v1/chat/completions", interval=0.0005, times=1)
    chunks = _read(rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True))
    assert len(chunks) > 2
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "one two"
    assert [e.fault for e in rig.handle.requests()] == ["latency", "drip"]


def test_an_error_event_inside_the_stream_raises_api_error_after_the_text(rig: Rig) -> None:
    rig.app.add_rules(
        {
            "when": {},
            "reply": {
                "text": "partial answer",
                "error": {
                    "status": 500,
                    "message": "The server had an error while processing your request.",
                    "in_stream": True,
                },
            },
        }
    )
    seen: list[str | None] = []
    with pytest.raises(openai.APIError, match="The server had an error"):
        for chunk in rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True):
            seen.append(chunk.choices[0].delta.content)
    assert "".join(s or "" for s in seen) == "partial answer"
    whole = rig.sync.chat.completions.create  # the same rule on a non-streamed request is a plain HTTP error
    with pytest.raises(openai.InternalServerError):
        whole(model="gpt-4o", messages=USER)


def test_paced_streams_arrive_chunk_by_chunk(rig: Rig) -> None:
    rig.app.add_rules({"when": {}, "reply": {"text": "a b c", "pace": 0.15}})
    started = time.monotonic()
    arrivals = [
        time.monotonic() - started for _ in rig.sync.chat.completions.create(model="gpt-4o", messages=USER, stream=True)
    ]
    assert arrivals[-1] >= 0.15 * 4 * 0.9  # 5 chunks, 4 pauses between them
    assert arrivals[0] < arrivals[-1]
