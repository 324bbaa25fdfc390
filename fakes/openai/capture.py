"""What the fake model was asked and what it answered, in the form specs ask about.

Every request to ``/v1/`` becomes a :class:`ModelCall` (besides its raw journal entry): the tools advertised (names and
schemas), ``tool_choice`` as sent and as it took effect, the conversation, the rule that answered, and the answer's
tool calls with their ids. A :class:`CallLog` answers the usual questions:

- ``log.last()`` / ``log.model_calls()``: the latest model request / every chat and responses request, oldest first;
- ``call.tool_names``, ``call.tools`` (each ``Tool`` with ``parameters``), ``call.tool_choice``, ``call.choice``,
  ``call.messages``, ``call.callable_names``;
- ``log.answered_with(call_id)``: the request whose answer carried tool call ``call_id`` (raises ``LookupError``
  naming the ids that were emitted, when none did), ``log.results_for(call_id)``: later requests that sent its result.

In-process: ``handle.app.log()``; for a fake in its own process or pod: ``CallLog.from_admin(json)`` on the body of
``GET /_fake/openai/calls``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from fakes.openai.answer import EmittedCall
from fakes.openai.turn import Message, Tool, Turn


@dataclass(frozen=True)
class ModelCall:
    """One request to the fake's ``/v1/`` routes and its answer.

    ``endpoint`` is ``chat``, ``responses``, ``embeddings``, ``models`` or ``unserved`` (a route the fake does not
    model); ``status`` the HTTP status answered; ``body`` the parsed JSON body (``None`` when empty or not JSON);
    ``rule`` the name of the rule that answered (``default`` for the default rule, ``None`` for refusals);
    ``emitted`` the tool calls in the answer; ``answer_id`` its ``chatcmpl-``/``resp_`` id; ``error`` the ``error``
    object of a refusal. ``time`` is epoch seconds; ``seq`` counts from 1 per fake (kept across ``reset``).
    """

    seq: int
    time: float
    endpoint: str
    method: str
    path: str
    status: int
    request_id: str
    body: Any = None
    model: str | None = None
    stream: bool = False
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None
    choice: str | None = None
    callable_names: tuple[str, ...] = ()
    messages: tuple[Message, ...] = ()
    rule: str | None = None
    emitted: tuple[EmittedCall, ...] = ()
    answer_id: str | None = None
    text: str | None = None
    error: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools advertised on this request, in the order sent (built-in Responses tools excluded)."""
        return [t.name for t in self.tools if t.name]

    @property
    def emitted_names(self) -> list[str]:
        return [c.name for c in self.emitted]

    @classmethod
    def of(
        cls,
        seq: int,
        time: float,
        method: str,
        path: str,
        endpoint: str,
        status: int,
        request_id: str,
        body: Any,
        turn: Turn | None = None,
        **answer: Any,
    ) -> ModelCall:
        """A record for a request (``turn`` when it validated) and its answer fields."""
        if turn is None:
            model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
            return cls(seq, time, endpoint, method, path, status, request_id, body, model, **answer)
        return cls(
            seq,
            time,
            endpoint,
            method,
            path,
            status,
            request_id,
            body,
            turn.model,
            turn.stream,
            turn.tools,
            turn.tool_choice,
            turn.forced or turn.choice,
            tuple(turn.callable_names),
            turn.messages,
            **answer,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time,
            "endpoint": self.endpoint,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "request_id": self.request_id,
            "body": self.body,
            "model": self.model,
            "stream": self.stream,
            "tools": [t.to_dict() for t in self.tools],
            "tool_choice": self.tool_choice,
            "choice": self.choice,
            "callable_names": list(self.callable_names),
            "messages": [
                {
                    "role": m.role,
                    "text": m.text,
                    "tool_call_id": m.tool_call_id,
                    "tool_calls": [list(c) for c in m.tool_calls],
                }
                for m in self.messages
            ],
            "rule": self.rule,
            "emitted": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.emitted],
            "answer_id": self.answer_id,
            "text": self.text,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCall:
        messages = tuple(
            Message(
                m["role"], m.get("text", ""), m.get("tool_call_id"), tuple(tuple(c) for c in m.get("tool_calls") or ())
            )
            for m in data.get("messages", [])
        )
        return cls(
            data["seq"],
            data["time"],
            data["endpoint"],
            data["method"],
            data["path"],
            data["status"],
            data["request_id"],
            data.get("body"),
            data.get("model"),
            data.get("stream", False),
            tuple(Tool.from_dict(t) for t in data.get("tools", [])),
            data.get("tool_choice"),
            data.get("choice"),
            tuple(data.get("callable_names", [])),
            messages,
            data.get("rule"),
            tuple(EmittedCall(c["id"], c["name"], c["arguments"]) for c in data.get("emitted", [])),
            data.get("answer_id"),
            data.get("text"),
            data.get("error"),
        )


class CallLog(Sequence[ModelCall]):
    """An ordered, read-only list of :class:`ModelCall` with the questions specs ask of it."""

    def __init__(self, calls: Sequence[ModelCall]) -> None:
        self._calls = tuple(calls)

    @overload
    def __getitem__(self, index: int) -> ModelCall: ...

    @overload
    def __getitem__(self, index: slice) -> CallLog: ...

    def __getitem__(self, index: int | slice) -> ModelCall | CallLog:
        if isinstance(index, slice):
            return CallLog(self._calls[index])
        return self._calls[index]

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[ModelCall]:
        return iter(self._calls)

    def __repr__(self) -> str:
        return f"CallLog({[(c.seq, c.endpoint, c.status, c.rule) for c in self._calls]})"

    def model_calls(self) -> CallLog:
        """The chat and responses requests (what the model was asked), oldest first."""
        return CallLog([c for c in self._calls if c.endpoint in ("chat", "responses")])

    def last(self, endpoint: str | None = None) -> ModelCall:
        """The newest model request (or the newest of ``endpoint``). Raises ``LookupError`` when there is none."""
        pool = [c for c in self._calls if c.endpoint == endpoint] if endpoint else list(self.model_calls())
        if not pool:
            raise LookupError(
                f"the fake model received no {endpoint or 'chat or responses'} request "
                f"({len(self._calls)} requests in all)"
            )
        return pool[-1]

    def answered_with(self, call_id: str) -> ModelCall:
        """The request whose answer carried tool call ``call_id``. Raises ``LookupError`` listing the emitted ids."""
        for call in self._calls:
            if any(c.id == call_id for c in call.emitted):
                return call
        emitted = [f"{c.id} ({c.name}) in #{call.seq}" for call in self._calls for c in call.emitted]
        raise LookupError(
            f"no answer of the fake model carried tool call {call_id!r}; it emitted: "
            f"{', '.join(emitted) or 'no tool calls at all'}"
        )

    def results_for(self, call_id: str) -> CallLog:
        """Requests that sent back a result for tool call ``call_id`` (``tool`` message or ``function_call_output``)."""
        return CallLog([c for c in self._calls if any(m.tool_call_id == call_id for m in c.messages)])

    def unserved(self) -> CallLog:
        """Requests to routes the fake does not model (answered 404 ``Invalid URL``)."""
        return CallLog([c for c in self._calls if c.endpoint == "unserved"])

    @classmethod
    def from_admin(cls, payload: dict[str, Any]) -> CallLog:
        """From the JSON body of ``GET /_fake/openai/calls``."""
        return cls([ModelCall.from_dict(c) for c in payload["calls"]])
