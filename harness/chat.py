"""The streaming chat client: one chat turn against an OpenAI-compatible ``POST /v1/chat/completions`` (the stack's
chat facade, or the fake model endpoint), read as server-sent events under one total deadline.

What it does, and why:

- The body is ``{"model", "stream": true, "messages", "tools"?, "tool_choice"?}``, serialised once; headers carry
  the bearer token, ``x-openwebui-chat-id`` (the facade keys its session by it: under any other header name every
  call silently gets a fresh, empty session) and, when given, ``x-openwebui-user-jwt`` (the Open WebUI user the turn
  runs as).
- The stream is read as it arrives (``harness.fetch.stream_through``): the facade flushes its headers at once, so a
  client that waits for the whole body and gives up at a timeout loses the text already streamed (a parked turn's
  "link your account" prompt, for one). Text and tool calls are kept as they come, and survive any failure: every
  error raised here carries ``partial`` (the :class:`ChatTurn` so far, ``None`` before headers) and a note naming it.
- Frames: role-only deltas, comments (keep-alives) and ``data: [DONE]`` carry no content and are skipped (counted);
  ``delta.content`` is appended; ``delta.tool_calls`` are merged by ``index`` (the first delta of a call brings its
  ``id`` and ``name``, later ones pieces of ``arguments``, concatenated in order); only choice 0 is read.
- A turn is *parked* when the deadline passes after the stream started but before it ended, and only when the caller
  allowed it (``allow_park=True``): the facade holds a turn open while it waits for the user (to link an account).
  Otherwise that deadline is a :class:`~harness.errors.ServiceTimeout`, never a quiet success.
- Hops, as ``fetch_through`` names them: :class:`PortForwardGone`/:class:`PortForwardBroken` before sending,
  :class:`PortForwardDied`, :class:`ServiceTimeout`, :class:`ServiceUnreachable` (a stream cut mid-body: reset or
  closed without its end), :class:`ServiceAnswerTooLarge`; plus :class:`ChatRejected` for an HTTP error status or an
  ``error`` event in the stream, and :class:`ChatStreamMalformed` for a data frame that is not JSON.

A stream that ends without ``[DONE]`` (a clean end of body) is returned with ``done=False``: the spec decides.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.blocking import run_blocking
from harness.errors import ChatError as ChatError  # re-exported: defined in harness.errors
from harness.errors import ChatRejected as ChatRejected  # re-exported: defined in harness.errors
from harness.errors import ChatStreamMalformed as ChatStreamMalformed  # re-exported: defined in harness.errors
from harness.errors import HopFailure, ServiceTimeout
from harness.fetch import DEFAULT_MAX_BODY, Forward, stream_through
from harness.sse import SSEDecoder, SSEFrame

CHAT_PATH = "/v1/chat/completions"
CHAT_ID_HEADER = "x-openwebui-chat-id"
USER_JWT_HEADER = "x-openwebui-user-jwt"
DEFAULT_MODEL = "agent-orchestrator"
DEFAULT_CHAT_TIMEOUT = 420.0
"""Seconds for one whole chat turn (the upstream suite's chat budget: a turn may launch an agent run)."""


@dataclass
class ToolCall:
    """One tool call assembled from the stream: ``index`` (its slot in the deltas), ``id``, ``name``, ``arguments``
    (the JSON text, concatenated from its pieces)."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""

    def parsed_arguments(self) -> Any:
        """``arguments`` parsed as JSON. Raises ``ValueError`` naming the call when they are not JSON."""
        try:
            return json.loads(self.arguments) if self.arguments else {}
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"tool call {self.name or '?'} ({self.id or 'no id'}): arguments are not JSON "
                f"({exc}): {self.arguments[:200]!r}"
            ) from None


@dataclass
class ChatTurn:
    """What one chat turn streamed back.

    ``status``: HTTP status (``None`` before headers). ``text``: the content deltas joined. ``tool_calls``: by index.
    ``finish_reason``: from the last choice that had one. ``done``: ``[DONE]`` was read. ``parked``: the deadline
    passed mid-stream and the caller allowed parking. Counters: ``frames`` (data frames), ``role_frames`` (role-only
    deltas), ``keepalives`` (comments). ``completion_id``: the chunks' ``id``. ``elapsed``: seconds.
    """

    status: int | None = None
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    done: bool = False
    parked: bool = False
    frames: int = 0
    role_frames: int = 0
    keepalives: int = 0
    completion_id: str | None = None
    usage: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    elapsed: float = 0.0

    def describe(self) -> str:
        """One line for error messages: how far the stream got and the text so far."""
        end = "[DONE]" if self.done else "parked" if self.parked else "no [DONE]"
        calls = ", ".join(f"{c.name}({c.arguments[:60]})" for c in self.tool_calls) or "none"
        return (
            f"HTTP {self.status}, {self.frames} data frames ({self.role_frames} role-only, {self.keepalives} "
            f"keep-alives), {end}, finish_reason={self.finish_reason}, tool calls: {calls}, "
            f"text so far: {self.text[-300:]!r}"
        )

    def _call(self, index: int) -> ToolCall:
        for call in self.tool_calls:
            if call.index == index:
                return call
        call = ToolCall(index)
        self.tool_calls.append(call)
        self.tool_calls.sort(key=lambda c: c.index)
        return call


def feed(turn: ChatTurn, frame: SSEFrame, *, where: str = "chat stream") -> bool:
    """Fold one frame into ``turn``; True once ``[DONE]`` arrived. Raises :class:`ChatRejected` for an error event,
    :class:`ChatStreamMalformed` for a frame that is not a JSON object."""
    if frame.data is None:
        turn.keepalives += 1
        return False
    if frame.data.strip() == "[DONE]":
        turn.done = True
        return True
    turn.frames += 1
    try:
        chunk = json.loads(frame.data)
    except json.JSONDecodeError:
        chunk = None
    if not isinstance(chunk, dict):
        raise ChatStreamMalformed(
            f"{where}: data frame {turn.frames} is not a JSON object: {frame.data[:200]!r}", partial=turn
        )
    if "error" in chunk:
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ChatRejected(
            f"{where}: the stream carried an error event after {turn.frames - 1} frames: {message}",
            partial=turn,
            status=turn.status,
            body=frame.data,
            error=error,
        )
    turn.completion_id = turn.completion_id or chunk.get("id")
    if isinstance(chunk.get("usage"), dict):
        turn.usage = chunk["usage"]
    for choice in chunk.get("choices") or []:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            _choice(turn, choice)
    return False


def _choice(turn: ChatTurn, choice: dict[str, Any]) -> None:
    delta = choice.get("delta") or {}
    if choice.get("finish_reason"):
        turn.finish_reason = choice["finish_reason"]
    content, calls = delta.get("content"), delta.get("tool_calls")
    if not content and not calls:
        if delta.get("role"):
            turn.role_frames += 1
        return
    if isinstance(content, str):
        turn.text += content
    for piece in calls or []:
        if not isinstance(piece, dict) or not isinstance(piece.get("index"), int):
            continue
        call = turn._call(piece["index"])
        function = piece.get("function") or {}
        call.id = call.id or piece.get("id") or ""
        call.name = call.name or function.get("name") or ""
        call.arguments += function.get("arguments") or ""


async def chat_turn(
    target: Forward | str,
    messages: list[dict[str, Any]],
    *,
    chat_id: str,
    token: str | None = None,
    user_jwt: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    model: str = DEFAULT_MODEL,
    timeout: float = DEFAULT_CHAT_TIMEOUT,
    allow_park: bool = False,
    extra_body: dict[str, Any] | None = None,
    path: str = CHAT_PATH,
    max_body: int = DEFAULT_MAX_BODY,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ChatTurn:
    """Run one streamed chat turn through ``target`` (a port-forward or a base URL) within ``timeout`` seconds.

    ``messages``: the OpenAI chat messages; ``chat_id``: the session (``x-openwebui-chat-id``, required, non-empty);
    ``token``: the bearer; ``user_jwt``: ``x-openwebui-user-jwt``; ``tools`` / ``tool_choice`` sent when given;
    ``extra_body`` merged into the body last; ``transport``: a fake's in-process transport. Returns the
    :class:`ChatTurn` (``done`` when ``[DONE]`` came; ``parked`` only with ``allow_park``).

    Raises ``ValueError``/``TypeError`` for the caller's mistakes before sending; otherwise the hop errors of the
    module docstring, each with ``partial``.
    """
    if not isinstance(chat_id, str) or not chat_id.strip():
        raise ValueError(f"chat_turn: chat_id must be a non-empty string (it keys the session), got {chat_id!r}")
    if not isinstance(messages, list) or not messages:
        raise ValueError("chat_turn: messages must be a non-empty list of chat messages")
    body: dict[str, Any] = {"model": model, "stream": True, "messages": messages}
    if tools is not None:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    body.update(extra_body or {})
    headers = {"content-type": "application/json", "accept": "text/event-stream", CHAT_ID_HEADER: chat_id}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if user_jwt is not None:
        headers[USER_JWT_HEADER] = user_jwt
    turn, started = ChatTurn(), time.monotonic()
    via = target if isinstance(target, str) else f"port-forward {target.target} ({target.base_url})"
    where = f"POST {path} at {via} (chat {chat_id})"

    async def consume(response: httpx.Response) -> ChatTurn:
        turn.status, turn.headers = response.status_code, dict(response.headers)
        if not 200 <= response.status_code < 300:
            await _rejected(response, turn, where)
        decoder = SSEDecoder()
        async for chunk in response.aiter_bytes():
            for frame in decoder.feed(chunk):
                if feed(turn, frame, where=where):
                    return turn
        for frame in decoder.close():
            if feed(turn, frame, where=where):
                break
        return turn

    try:
        await stream_through(
            target,
            "POST",
            path,
            consume,
            timeout=timeout,
            max_body=max_body,
            transport=transport,
            content=json.dumps(body).encode(),
            headers=headers,
        )
    except ServiceTimeout as exc:
        turn.elapsed = time.monotonic() - started
        if allow_park and turn.status is not None and 200 <= turn.status < 300 and not turn.done:
            turn.parked = True
            return turn
        _annotate(exc, turn)
        raise
    except ChatError:
        turn.elapsed = time.monotonic() - started
        raise
    except HopFailure as exc:
        turn.elapsed = time.monotonic() - started
        _annotate(exc, turn)
        raise
    turn.elapsed = time.monotonic() - started
    return turn


def chat_turn_sync(target: Forward | str, messages: list[dict[str, Any]], **kwargs: Any) -> ChatTurn:
    """The blocking twin of :func:`chat_turn` (same arguments, result and errors), on a private event loop.
    Raises :class:`harness.errors.SyncCallInEventLoop` from a thread already running an event loop: await
    :func:`chat_turn` there. A failure is raised without the event loop's frames (the caller's line shows)."""
    __tracebackhide__ = True
    return run_blocking(
        functools.partial(chat_turn, target, messages, **kwargs), entry="chat_turn_sync", instead="chat_turn"
    )


async def _rejected(response: httpx.Response, turn: ChatTurn, where: str) -> None:
    raw = (await response.aread()).decode("utf-8", "replace")
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        error = None
    detail = error.get("message") if isinstance(error, dict) else raw[:300]
    raise ChatRejected(
        f"{where}: the service answered HTTP {response.status_code} instead of a stream: {detail}",
        partial=turn,
        status=response.status_code,
        body=raw,
        error=error,
        target=str(response.url),
        path=response.request.url.path,
    )


def _annotate(exc: HopFailure, turn: ChatTurn) -> None:
    exc.partial = turn if turn.status is not None else None
    exc.add_note(
        f"partial chat turn: {turn.describe()}"
        if turn.status is not None
        else "partial chat turn: none (no response headers)"
    )
