"""Responses API answers, as the real API shapes them, each checked against ``Response`` and ``ResponseStreamEvent``.

Whole answer: a ``response`` object (``id`` ``resp_`` + 48 hex, ``created_at`` epoch seconds, ``status:
"completed"``) whose ``output`` holds a ``message`` item (``msg_...``, one ``output_text`` part) when there is text
and one ``function_call`` item per call (``fc_...`` item id, ``call_...`` call id, ``arguments`` JSON text).
``tools`` echoes the function tools sent (built-in tools are accepted but not echoed); ``tool_choice`` echoes the
value sent (``"auto"`` when absent).

Stream: ``event: <type>`` + ``data:`` pairs numbered by ``sequence_number`` from 0, no ``[DONE]``:
``response.created``, ``response.in_progress``; per message item ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` (one per piece), ``response.output_text.done``,
``response.content_part.done``, ``response.output_item.done``; per call ``response.output_item.added``,
``response.function_call_arguments.delta`` (one per piece), ``response.function_call_arguments.done``,
``response.output_item.done``; then ``response.completed`` with the whole response.
"""

from __future__ import annotations

from typing import Any

from openai.types.responses import Response, ResponseStreamEvent

from fakes.openai import ids
from fakes.openai.answer import Answer, argument_pieces, text_pieces
from fakes.openai.rules import Reply
from fakes.openai.turn import Turn
from fakes.openai.wire import checked


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "input_tokens": answer.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": answer.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
    }


def _message(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = (
        [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if status == "completed" else []
    )
    return {"id": item_id, "type": "message", "status": status, "content": content, "role": "assistant"}


def _function_call(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


class ResponseRender:
    """One response's ids and shapes (``output`` items get their ids once, for the object and its events)."""

    def __init__(self, turn: Turn, answer: Answer, created: int, tools_sent: list[dict[str, Any]]) -> None:
        self.turn, self.answer, self.created = turn, answer, created
        self.id = ids.response_id()
        self.message_id = ids.message_item_id() if answer.text is not None else None
        self.call_item_ids = [ids.function_call_item_id() for _ in answer.calls]
        self.tools = [t for t in tools_sent if isinstance(t, dict) and t.get("type") == "function"]

    def output(self) -> list[dict[str, Any]]:
        items = [_message(self.message_id, self.answer.text or "", "completed")] if self.message_id else []
        return items + [
            _function_call(item_id, c.id, c.name, c.arguments, "completed")
            for item_id, c in zip(self.call_item_ids, self.answer.calls, strict=True)
        ]

    def response(self, status: str = "completed") -> dict[str, Any]:
        done = status == "completed"
        turn = self.turn
        return checked(
            Response,
            {
                "id": self.id,
                "object": "response",
                "created_at": self.created,
                "status": status,
                "background": False,
                "error": None,
                "incomplete_details": None,
                "instructions": turn.instructions,
                "max_output_tokens": None,
                "max_tool_calls": None,
                "model": turn.model,
                "output": self.output() if done else [],
                "parallel_tool_calls": turn.parallel_tool_calls,
                "previous_response_id": turn.previous_response_id,
                "reasoning": {"effort": None, "summary": None},
                "service_tier": "default",
                "temperature": 1.0,
                "text": {"format": {"type": "text"}, "verbosity": "medium"},
                "tool_choice": turn.tool_choice if turn.tool_choice is not None else "auto",
                "tools": self.tools,
                "top_logprobs": 0,
                "top_p": 1.0,
                "truncation": "disabled",
                "usage": _usage(self.answer) if done else None,
                "user": None,
                "metadata": {},
            },
        )

    def events(self, reply: Reply) -> list[dict[str, Any]]:
        """Every stream event, numbered, each checked as a ``ResponseStreamEvent``."""
        raw: list[dict[str, Any]] = [
            {"type": "response.created", "response": self.response("in_progress")},
            {"type": "response.in_progress", "response": self.response("in_progress")},
        ]
        index = 0
        if self.message_id is not None:
            raw += self._message_events(index, reply)
            index += 1
        for item_id, call in zip(self.call_item_ids, self.answer.calls, strict=True):
            raw += self._call_events(index, item_id, call.id, call.name, call.arguments, reply)
            index += 1
        raw.append({"type": "response.completed", "response": self.response()})
        return [checked(ResponseStreamEvent, {**event, "sequence_number": n}) for n, event in enumerate(raw)]

    def error_event(self, message: str, code: str | None, param: str | None, sequence: int) -> dict[str, Any]:
        return checked(
            ResponseStreamEvent,
            {"type": "error", "code": code, "message": message, "param": param, "sequence_number": sequence},
        )

    def _message_events(self, index: int, reply: Reply) -> list[dict[str, Any]]:
        text, item = self.answer.text or "", self.message_id
        assert item is not None  # only called when the answer has a message item
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        where = {"item_id": item, "output_index": index, "content_index": 0}
        return [
            {"type": "response.output_item.added", "output_index": index, "item": _message(item, "", "in_progress")},
            {"type": "response.content_part.added", **where, "part": part},
            *(
                {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
                for piece in text_pieces(text, reply.chunk_chars)
            ),
            {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **where, "part": {**part, "text": text}},
            {"type": "response.output_item.done", "output_index": index, "item": _message(item, text, "completed")},
        ]

    def _call_events(
        self, index: int, item_id: str, call_id: str, name: str, arguments: str, reply: Reply
    ) -> list[dict[str, Any]]:
        where = {"item_id": item_id, "output_index": index}
        return [
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": _function_call(item_id, call_id, name, "", "in_progress"),
            },
            *(
                {"type": "response.function_call_arguments.delta", **where, "delta": piece}
                for piece in argument_pieces(arguments, reply.chunk_chars)
            ),
            {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": _function_call(item_id, call_id, name, arguments, "completed"),
            },
        ]
