"""The streaming chat client: one chat turn against an OpenAI-compatible ``POST /v1/chat/completions`` (a service's
chat endpoint, or the fake model endpoint), read as server-sent events under one total deadline.

What it does, and why:

- The body is ``{"model", "stream": true, "messages", "tools"?, "tool_choice"?}``, serialised once; headers carry
  the bearer token and whatever ``headers`` the caller gives (a service that keys its sessions or callers by a header
  of its own gets it there). ``model`` and ``timeout`` have no defaults: they are the deployed service's values.
- The stream is read as it arrives (``harness.fetch.stream_through``), so a turn a service holds open after
  streaming part of it loses nothing at the deadline: text and tool calls are kept as they come, and survive any
  failure: every error raised here carries ``partial`` (the :class:`ChatTurn` so far, ``None`` before headers) and
  a note naming it.
- Frames, as OpenAI sends them and as other OpenAI-compatible providers do: comments (keep-alives), role-only
  deltas, ``data: [DONE]``, ``data: null``, chunks with ``"choices": []`` (a usage-only last chunk), a ``delta``
  that is ``null`` or ``{}`` and ``null`` for any absent field carry no content and are skipped (comments and role
  deltas counted); ``"error": null`` or ``{}`` on a healthy chunk is no error (the ``openai`` package's ``Stream``
  also tests ``error`` for truthiness). ``delta.content`` is appended; only choice 0 is read (by ``index``, or by
  position when a provider leaves ``index`` out).
- Tool calls: pieces with ``index`` are merged by it (OpenAI: the first brings ``id`` and ``name``, later ones
  pieces of ``arguments``, concatenated in order). Pieces without ``index`` (Gemini's OpenAI-compatible endpoint,
  some proxies) are assembled by ``id`` and order: a new ``id`` opens the next slot, a known one continues its call,
  a piece with neither continues the latest call (unless it names another function: then it opens the next slot).
  ``arguments`` sent as a JSON object (not text) are serialised as compact JSON text; such a call takes no other
  piece of arguments.
- A frame that cannot be read that way is :class:`ChatStreamMalformed`: not JSON, not an object, a field of the
  wrong type (``choices`` not a list, a choice or tool-call piece not an object, ``content``/``finish_reason``/``id``
  /``name`` not text, ``index`` not a non-negative integer, ``arguments`` neither text nor an object), or arguments
  pieces after a whole arguments object. It names the frame (its number and its data, clipped to
  :data:`MAX_FRAME_SHOWN` characters) and keeps the turn as it stood before it; nothing else leaves this module
  (never a bare ``TypeError``/``KeyError``/``AttributeError``).
- A turn is *parked* when the deadline passes after the stream started but before it ended, and only when the caller
  allowed it (``allow_park=True``): for a service that holds a turn open while it waits on something outside the
  turn. Otherwise that deadline is a :class:`~harness.errors.ServiceTimeout`, never a quiet success.
- Hops, as ``fetch_through`` names them: :class:`PortForwardGone`/:class:`PortForwardBroken` before sending,
  :class:`PortForwardDied`, :class:`ServiceTimeout`, :class:`ServiceUnreachable` (a stream cut mid-body: reset or
  closed without its end), :class:`ServiceAnswerTooLarge`; plus :class:`ChatRejected` for an HTTP error status or an
  ``error`` event in the stream (a chunk whose ``error`` is set, or an ``event: error`` frame), and
:class:`ChatStreamMalformed` for a frame that is not a chunk.

A stream that ends without ``[DONE]`` (a clean end of body) is returned with ``done=False``: the spec decides. A 2xx
answer that is not ``text/event-stream`` is never an empty turn: a whole ``ChatCompletion`` is read into the turn
(``streamed=False``: text, tool calls, refusal, finish reason), an ``error`` body is :class:`ChatRejected`, anything
else :class:`ChatStreamMalformed`. ``delta.refusal`` is kept as ``ChatTurn.refusal`` and shown in ``describe``.
"""

from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Mapping
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


@dataclass
class ToolCall:
    """One tool call assembled from the stream: ``index`` (its slot: the delta's ``index``, or for a provider that
    sends none, its place in order of arrival), ``id``, ``name``, ``arguments`` (the JSON text, concatenated from its
    pieces; an ``arguments`` sent as a JSON object is serialised compactly, as the text OpenAI would have sent)."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""
    whole_arguments: bool = field(default=False, repr=False, compare=False)
    """True once ``arguments`` came as one JSON object: no further piece may follow it."""

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

    ``status``: HTTP status (``None`` before headers). ``text``: the content deltas joined. ``tool_calls``: by slot
    (see :class:`ToolCall`). ``finish_reason``: from the last choice that had one. ``done``: ``[DONE]`` was read.
    ``parked``: the deadline passed mid-stream and the caller allowed parking. Counters: ``frames`` (data frames,
    ``[DONE]`` not counted), ``role_frames`` (role-only deltas), ``keepalives`` (comments). ``completion_id``: the
    chunks' ``id``. ``usage``: the last ``usage`` object seen. ``refusal``: the ``delta.refusal`` pieces joined (the
    model declined; OpenAI's chunk type). ``model``: the chunks' ``model``. ``streamed``: False when the service
    answered one whole completion instead of a stream (read as such; ``done`` then True). ``elapsed``: seconds.

    Fields of OpenAI's ``ChatCompletionChunk`` not kept: ``object``, ``created``, ``system_fingerprint``,
    ``service_tier``, ``choices[].logprobs``, ``delta.role`` (counted as ``role_frames``) and the deprecated
    ``delta.function_call``; choices other than choice 0.
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
    refusal: str = ""
    model: str | None = None
    streamed: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    elapsed: float = 0.0
    last_call: ToolCall | None = field(default=None, repr=False, compare=False)
    """The call the latest tool-call piece went to: where a piece with neither ``index`` nor ``id`` continues."""

    def describe(self) -> str:
        """One line for error messages: how far the stream got and the text so far."""
        end = "[DONE]" if self.done else "parked" if self.parked else "no [DONE]"
        calls = ", ".join(f"{c.name}({c.arguments[:60]})" for c in self.tool_calls) or "none"
        refused = f", refusal: {self.refusal[-300:]!r}" if self.refusal else ""
        return (
            f"HTTP {self.status}, {self.frames} data frames ({self.role_frames} role-only, {self.keepalives} "
            f"keep-alives), {end}, finish_reason={self.finish_reason}, tool calls: {calls}, "
            f"text so far: {self.text[-300:]!r}{refused}"
        )

    def _call(self, index: int) -> ToolCall:
        for call in self.tool_calls:
            if call.index == index:
                return call
        call = ToolCall(index)
        self.tool_calls.append(call)
        self.tool_calls.sort(key=lambda c: c.index)
        return call

    def _new_call(self) -> ToolCall:
        return self._call(max((c.index for c in self.tool_calls), default=-1) + 1)


#: What one frame may change; restored when the frame turns out malformed, so ``partial`` is the turn before it.
_FOLDED = (
    "text",
    "tool_calls",
    "last_call",
    "finish_reason",
    "role_frames",
    "completion_id",
    "usage",
    "refusal",
    "model",
)
MAX_FRAME_SHOWN = 500
"""Characters of an offending frame kept in :class:`ChatStreamMalformed` (``frame``) and its message."""


def feed(turn: ChatTurn, frame: SSEFrame, *, where: str = "chat stream") -> bool:
    """Fold one frame into ``turn``; True once ``[DONE]`` arrived.

    Raises :class:`ChatRejected` for an error event (a frame whose ``error`` is set: ``null``, ``{}`` and other empty
    values are what healthy chunks of some providers carry, as the ``openai`` package's ``Stream`` also reads them;
    or an ``event: error`` frame), and :class:`ChatStreamMalformed` for a frame that cannot be read as a chunk (the
    shapes are in the module docstring). Either way ``turn`` is left as it was before the frame, but for its
    ``frames`` count, which includes the offending frame.
    """
    if frame.data is None:
        turn.keepalives += 1
        return False
    if frame.data.strip() == "[DONE]":
        turn.done = True
        return True
    turn.frames += 1
    try:
        chunk = json.loads(frame.data)
    except (ValueError, RecursionError):
        raise _malformed(turn, frame, where, "is not JSON") from None
    if chunk is None:
        return False  # `data: null`: some proxies send it between chunks; it carries nothing
    if not isinstance(chunk, dict):
        raise _malformed(turn, frame, where, f"is not a JSON object (a {type(chunk).__name__})")
    if chunk.get("error") or frame.event == "error":
        raise _error_event(turn, frame, where, chunk)
    saved = copy.deepcopy({name: getattr(turn, name) for name in _FOLDED})
    try:
        _chunk(turn, chunk)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        for name, value in saved.items():
            setattr(turn, name, value)
        reason = str(exc) if type(exc) is ValueError else f"could not be read ({type(exc).__name__}: {exc})"
        raise _malformed(turn, frame, where, reason) from None
    return False


def _malformed(turn: ChatTurn, frame: SSEFrame, where: str, reason: str) -> ChatStreamMalformed:
    shown = frame.data if frame.data is not None else ""
    clipped = shown[:MAX_FRAME_SHOWN] + (f"... ({len(shown)} characters)" if len(shown) > MAX_FRAME_SHOWN else "")
    return ChatStreamMalformed(
        f"{where}: data frame {turn.frames} {reason}: {clipped}",
        partial=turn,
        frame=clipped,
        frame_number=turn.frames,
    )


def _error_event(turn: ChatTurn, frame: SSEFrame, where: str, chunk: dict[str, Any]) -> ChatRejected:
    error = chunk.get("error") or chunk
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str) or not message:
        message = f"an error event without a message: {frame.data[:MAX_FRAME_SHOWN] if frame.data else ''}"
    return ChatRejected(
        f"{where}: the stream carried an error event after {turn.frames - 1} frames: {message}",
        partial=turn,
        status=turn.status,
        body=frame.data or "",
        error=error,
    )


def _chunk(turn: ChatTurn, chunk: dict[str, Any]) -> None:
    """Fold one chunk; ``ValueError`` names the field that is not of a chunk's shape."""
    chunk_id, usage, model = chunk.get("id"), chunk.get("usage"), chunk.get("model")
    if isinstance(chunk_id, str):
        turn.completion_id = turn.completion_id or chunk_id
    if isinstance(model, str):
        turn.model = turn.model or model
    if isinstance(usage, dict):
        turn.usage = usage
    choices = _typed(chunk, "choices", list, "choices")
    for position, choice in enumerate(choices or []):
        at = f"choices[{position}]"
        if not isinstance(choice, dict):
            raise ValueError(f"has {at} that is not an object")
        index = _typed(choice, "index", int, at)
        if (position if index is None else index) == 0:  # no index: choices are in order
            _choice(turn, choice, at)


def _typed(holder: dict[str, Any], key: str, kind: type, at: str) -> Any:
    """``holder[key]`` when absent/null or of ``kind`` (bool is no int); otherwise ``ValueError`` naming it."""
    value = holder.get(key)
    if value is None or isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise ValueError(f"has {at}.{key} of type {type(value).__name__}, not {kind.__name__}: {_short(value)}")


def _short(value: Any) -> str:
    return json.dumps(value)[:80]


def _choice(turn: ChatTurn, choice: dict[str, Any], at: str) -> None:
    finish = _typed(choice, "finish_reason", str, at)
    delta = _typed(choice, "delta", dict, at)  # null: Azure's content-filter chunks and some finish chunks
    delta = delta or {}
    content = _typed(delta, "content", str, f"{at}.delta")
    refusal = _typed(delta, "refusal", str, f"{at}.delta")
    calls = _typed(delta, "tool_calls", list, f"{at}.delta")
    pieces = [_piece(p, f"{at}.delta.tool_calls[{i}]") for i, p in enumerate(calls or [])]
    if finish:
        turn.finish_reason = finish
    turn.refusal += refusal or ""
    if not content and not pieces:
        if delta.get("role") and not refusal:
            turn.role_frames += 1
        return
    turn.text += content or ""
    for index, call_id, name, arguments in pieces:
        call = _slot(turn, index, call_id, name)
        call.id, call.name = call.id or call_id, call.name or name
        _arguments(call, arguments)
        turn.last_call = call


def _piece(piece: Any, at: str) -> tuple[int | None, str, str, str | dict[str, Any] | None]:
    """One tool-call delta read: (``index`` or ``None``, ``id`` or ``""``, ``function.name`` or ``""``, arguments)."""
    if not isinstance(piece, dict):
        raise ValueError(f"has {at} that is not an object: {_short(piece)}")
    index = _typed(piece, "index", int, at)
    if index is not None and index < 0:
        raise ValueError(f"has {at}.index {index}, a negative slot")
    function = _typed(piece, "function", dict, at) or {}
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, (str, dict)):
        raise ValueError(
            f"has {at}.function.arguments of type {type(arguments).__name__}: neither JSON text nor a JSON object"
        )
    call_id = _typed(piece, "id", str, at) or ""
    name = _typed(function, "name", str, f"{at}.function") or ""
    return index, call_id, name, arguments


def _slot(turn: ChatTurn, index: int | None, call_id: str, name: str) -> ToolCall:
    """The call a piece belongs to: by ``index`` when sent (OpenAI's contract); otherwise by ``id`` (a new id opens
    the next slot), and a piece with neither continues the latest call, unless it names another function (a call
    has one name: that is the next call)."""
    if index is not None:
        return turn._call(index)
    if call_id:
        known = next((c for c in turn.tool_calls if c.id == call_id), None)
        return known or turn._new_call()
    last = turn.last_call
    if last is None or (name and last.name and name != last.name):
        return turn._new_call()
    return last


def _arguments(call: ToolCall, arguments: str | dict[str, Any] | None) -> None:
    if arguments is None or arguments == "":
        return
    if call.whole_arguments:
        raise ValueError(
            f"sends more arguments for tool call {call.name or '?'} ({call.id or 'no id'}) after its arguments came "
            f"whole as a JSON object"
        )
    if isinstance(arguments, dict):
        if call.arguments:
            raise ValueError(
                f"sends the arguments of tool call {call.name or '?'} ({call.id or 'no id'}) as a JSON object after "
                f"pieces of JSON text ({call.arguments[:80]!r})"
            )
        call.arguments = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        call.whole_arguments = True
        return
    call.arguments += arguments


async def chat_turn(
    target: Forward | str,
    messages: list[dict[str, Any]],
    *,
    model: str,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    allow_park: bool = False,
    extra_body: dict[str, Any] | None = None,
    path: str = CHAT_PATH,
    max_body: int = DEFAULT_MAX_BODY,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ChatTurn:
    """Run one streamed chat turn through ``target`` (a port-forward or a base URL) within ``timeout`` seconds.

    ``messages``: the OpenAI chat messages; ``model``: the body's ``model`` (a non-empty string); ``timeout``:
    seconds for the whole turn, body included; ``headers``: sent as given (a session or caller header of the
    service's own); ``token``: the bearer; ``tools`` / ``tool_choice`` sent when given; ``extra_body`` merged into
    the body last; ``transport``: a fake's in-process transport. Returns the :class:`ChatTurn` (``done`` when
    ``[DONE]`` came; ``parked`` only with ``allow_park``).

    Raises ``ValueError``/``TypeError`` for the caller's mistakes before sending; otherwise the hop errors of the
    module docstring, each with ``partial``.
    """
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"chat_turn: model must be a non-empty string (the body's model), got {model!r}")
    if not isinstance(messages, list) or not messages:
        raise ValueError("chat_turn: messages must be a non-empty list of chat messages")
    body: dict[str, Any] = {"model": model, "stream": True, "messages": messages}
    if tools is not None:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    body.update(extra_body or {})
    sent = {"content-type": "application/json", "accept": "text/event-stream", **dict(headers or {})}
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    turn, started = ChatTurn(), time.monotonic()
    via = target if isinstance(target, str) else f"port-forward {target.target} ({target.base_url})"
    where = f"POST {path} at {via}"

    async def consume(response: httpx.Response) -> ChatTurn:
        turn.status, turn.headers = response.status_code, dict(response.headers)
        if not 200 <= response.status_code < 300:
            await _rejected(response, turn, where)
        if not _is_event_stream(response):
            await _whole_answer(response, turn, where)
            return turn
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
            headers=sent,
        )
    except ServiceTimeout as exc:
        turn.elapsed = time.monotonic() - started
        if allow_park and turn.status is not None and 200 <= turn.status < 300 and not turn.done:
            turn.parked = True
            return turn
        _annotate(exc, turn)
        raise
    except ChatError as exc:
        turn.elapsed = time.monotonic() - started
        exc.add_note(f"partial chat turn: {turn.describe()}")
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
    except (ValueError, AttributeError, RecursionError):
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


def _is_event_stream(response: httpx.Response) -> bool:
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return media in ("text/event-stream", "")  # no content type at all: read it as the stream that was asked for


async def _whole_answer(response: httpx.Response, turn: ChatTurn, where: str) -> None:
    """A 2xx answer that is not an event stream: one whole completion (OpenAI's non-streamed ``ChatCompletion``)
    is read into ``turn`` (``streamed=False``, ``done=True``); an ``error`` body is :class:`ChatRejected` with its
    message; anything else :class:`ChatStreamMalformed`, quoting the body."""
    raw = (await response.aread()).decode("utf-8", "replace")
    kind = response.headers.get("content-type", "")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict) and body.get("error"):
        error = body["error"]
        message = (error.get("message") if isinstance(error, dict) else None) or json.dumps(error)[:MAX_FRAME_SHOWN]
        raise ChatRejected(
            f"{where}: the service answered HTTP {response.status_code} with an error ({kind}) instead of a stream: "
            f"{message}",
            partial=turn,
            status=response.status_code,
            body=raw,
            error=error,
        )
    message = _completion_message(body)
    if message is None:
        clipped = raw[:MAX_FRAME_SHOWN] + (f"... ({len(raw)} characters)" if len(raw) > MAX_FRAME_SHOWN else "")
        raise ChatStreamMalformed(
            f"{where}: the service answered HTTP {response.status_code} with {kind or 'no content type'}, neither "
            f"an event stream nor a chat completion: {clipped}",
            partial=turn,
            frame=clipped,
            frame_number=0,
        )
    assert isinstance(body, dict)
    saved = copy.deepcopy({name: getattr(turn, name) for name in _FOLDED})
    try:
        _choice(turn, {"finish_reason": body["choices"][0].get("finish_reason"), "delta": message}, "choices[0]")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        for name, value in saved.items():  # ``partial`` is the turn before it, as for a malformed frame
            setattr(turn, name, value)
        raise ChatStreamMalformed(
            f"{where}: the service answered one whole chat completion that cannot be read: {exc}",
            partial=turn,
            frame=raw[:MAX_FRAME_SHOWN],
            frame_number=0,
        ) from None
    turn.streamed, turn.done = False, True
    turn.completion_id = body.get("id") if isinstance(body.get("id"), str) else None
    turn.model = body.get("model") if isinstance(body.get("model"), str) else None
    turn.usage = body.get("usage") if isinstance(body.get("usage"), dict) else None


def _completion_message(body: Any) -> dict[str, Any] | None:
    """``choices[0].message`` of a ``ChatCompletion`` (its ``tool_calls`` given the stream's ``index``), or None."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        message = {**message, "tool_calls": [{"index": i, **c} for i, c in enumerate(calls) if isinstance(c, dict)]}
    return message


def _annotate(exc: HopFailure, turn: ChatTurn) -> None:
    exc.partial = turn if turn.status is not None else None
    exc.add_note(
        f"partial chat turn: {turn.describe()}"
        if turn.status is not None
        else "partial chat turn: none (no response headers)"
    )
