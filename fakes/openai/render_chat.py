"""Chat Completions answers, as the real API shapes them, each checked against ``ChatCompletion`` /
``ChatCompletionChunk``.

Whole answer: ``id`` (``chatcmpl-``), ``object: "chat.completion"``, ``created`` (epoch seconds, an integer),
``model``, ``choices[i].message`` ``{role, content, refusal: null, annotations: []}`` plus ``tool_calls`` when the model
calls tools, ``logprobs: null``, ``finish_reason``; ``usage`` with its token details; ``service_tier``;
``system_fingerprint``.

Stream (``data:`` events, then ``data: [DONE]``), per choice: a first delta with the role (``{"role": "assistant",
"content": "", "refusal": null}``: no text yet; when the answer is only tool calls, the role rides on the first
call's header ``{"index", "id", "type", "function": {"name", "arguments": ""}}`` with ``content: null``, as the API
sends it), text deltas ``{"content": piece}``, for each further call a header delta and then its arguments split over
``{"tool_calls": [{"index", "function": {"arguments": piece}}]}`` deltas, and a last chunk with an empty delta and the
``finish_reason``. With ``stream_options.include_usage`` every chunk carries ``"usage": null`` and one more chunk with
``"choices": []`` carries the usage. The API's ``obfuscation`` padding field is not sent (clients ignore it).
"""

from __future__ import annotations

from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from fakes.openai.answer import Answer, argument_pieces, text_pieces
from fakes.openai.rules import Reply
from fakes.openai.turn import Turn
from fakes.openai.wire import checked

SERVICE_TIER = "default"


def usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _call(index: int | None, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    out: dict[str, Any] = {} if index is None else {"index": index}
    return {**out, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(turn: Turn, answer: Answer, completion_id: str, created: int, fingerprint: str) -> dict[str, Any]:
    """The whole ``chat.completion`` object (``n`` identical choices)."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None, "annotations": []}
    if answer.calls:
        message["tool_calls"] = [_call(None, c.id, c.name, c.arguments) for c in answer.calls]
    choices = [
        {"index": i, "message": message, "logprobs": None, "finish_reason": answer.finish_reason} for i in range(turn.n)
    ]
    return checked(
        ChatCompletion,
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": turn.model,
            "choices": choices,
            "usage": usage(answer),
            "service_tier": SERVICE_TIER,
            "system_fingerprint": fingerprint,
        },
    )


def chunks(
    turn: Turn, answer: Answer, reply: Reply, completion_id: str, created: int, fingerprint: str
) -> list[dict[str, Any]]:
    """Every ``chat.completion.chunk`` of the stream, in order (without the ``[DONE]`` sentinel)."""
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": turn.model,
        "service_tier": SERVICE_TIER,
        "system_fingerprint": fingerprint,
    }
    if turn.include_usage:
        base["usage"] = None
    out = []
    for index in range(turn.n):
        for delta, finish in _deltas(answer, reply):
            choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
            out.append(checked(ChatCompletionChunk, {**base, "choices": [choice]}))
    if turn.include_usage:
        out.append(checked(ChatCompletionChunk, {**base, "choices": [], "usage": usage(answer)}))
    return out


def text_chunks(
    turn: Turn, text: str, reply: Reply, completion_id: str, created: int, fingerprint: str
) -> list[dict[str, Any]]:
    """The role chunk and the text deltas only (what precedes an error event inside a stream)."""
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": turn.model,
        "service_tier": SERVICE_TIER,
        "system_fingerprint": fingerprint,
    }
    deltas = [{"role": "assistant", "content": "", "refusal": None}] + [
        {"content": piece} for piece in text_pieces(text, reply.chunk_chars)
    ]
    return [
        checked(
            ChatCompletionChunk,
            {**base, "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": None}]},
        )
        for d in deltas
    ]


def _deltas(answer: Answer, reply: Reply) -> list[tuple[dict[str, Any], str | None]]:
    calls = list(answer.calls)
    out: list[tuple[dict[str, Any], str | None]] = []
    if answer.text is not None or not calls:
        out.append(({"role": "assistant", "content": "", "refusal": None}, None))
        out += [({"content": piece}, None) for piece in text_pieces(answer.text or "", reply.chunk_chars)]
    for index, call in enumerate(calls):
        header: dict[str, Any] = {"tool_calls": [_call(index, call.id, call.name, "")]}
        if not out:
            header = {"role": "assistant", "content": None, **header, "refusal": None}
        out.append((header, None))
        out += [
            ({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, None)
            for piece in argument_pieces(call.arguments, reply.chunk_chars)
        ]
    out.append(({}, answer.finish_reason))
    return out
