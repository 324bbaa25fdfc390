"""The orchestrator's OpenAI-compatible chat facade: ``POST /v1/chat/completions``, streamed as server-sent events.

Open WebUI (and the specs) talk to the orchestrator as to a model named ``agent-orchestrator``:

- Request: bearer token (the orchestrator's static identities; 401 otherwise), ``x-openwebui-chat-id`` (the session:
  ``chat:<id>``; a request without it gets a fresh session of its own, failure mode 19 in specs/cluster/README.md),
  optionally ``x-openwebui-user-jwt`` (the user the turn runs as, resolved by :mod:`fakes.stack.identity`); body
  ``{"model", "messages", "stream"?, "tools"?, "tool_choice"?}``. A body the API would refuse is a 400 with an
  OpenAI-shaped ``{"error": {"message", "type": "invalid_request_error", "param", "code"}}`` and never starts a turn
  (a tool name outside ``[a-zA-Z0-9_-]{1,64}`` for one).
- Turn kinds: an Open WebUI housekeeping prompt (``### Task:``) is answered by the model with no tools; a request with
  caller tools is planned (:mod:`fakes.stack.planner`: skill, advertised tools, the model, tool calls sorted); any
  other turn goes to an agent through the orchestrator's pre-flight, exactly like ``/invoke``.
- Stream (``stream: true``): the headers and a role-only frame go out at once; while an agent works, an SSE comment
  (``: keep-alive``) every ``chat_keepalive`` seconds (the twin's timing profile); then the text as ``delta.content``
  pieces, caller tool calls as ``delta.tool_calls`` (the first delta of a call carries ``index``, ``id``, ``type`` and
  ``function.name`` with empty ``arguments``; later deltas pieces of ``arguments``), a last frame with ``finish_reason``
  (``stop`` or ``tool_calls``) and ``data: [DONE]``. A turn that fails after the stream started ends with an ``error``
  event and no ``[DONE]``, as OpenAI's streams do. Every frame is a ``chat.completion.chunk`` the ``openai`` package
  accepts.
- A parked turn (the user must link accounts first) streams the link prompt at once and keeps the stream open,
  resuming the turn if the credentials appear (the identity gate's hold), until the client goes away.
- Without ``stream: true`` the same turn is answered as one ``chat.completion`` object.

The chunk builders below are pure functions: ``specs/clients/test_chat_facade_frames.py`` feeds their frames through
the harness's chat client to prove both ends agree.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from fakes.stack import config, identity
from fakes.stack.caller_tools import BadTools, parse_tools
from fakes.stack.invocation import Invocation
from fakes.stack.model import ModelToolCall
from fakes.stack.planner import Plan, is_housekeeping, last_user_text

if TYPE_CHECKING:
    from fakes.stack.node import PodContext
    from fakes.stack.planner import Planner


class Orchestrator(Protocol):
    """What the facade uses of :class:`fakes.stack.orchestrator.Orchestrator` (which mounts the facade, so this
    module cannot import it back): its pod, drain flag, identity gate, planner and its turn steps."""

    @property
    def ctx(self) -> PodContext: ...
    @property
    def draining(self) -> bool: ...
    @property
    def gate(self) -> identity.Gate: ...
    @property
    def planner(self) -> Planner: ...
    def _caller(self, request: web.Request) -> str | None: ...
    async def _run_turn(self, inv: Invocation) -> str: ...
    async def _launch(self, inv: Invocation, launch: identity.Launch) -> str: ...
    async def _await_reply(self, inv: Invocation, run: str, reattached: bool) -> str: ...


MODEL_NAME = "agent-orchestrator"
CHAT_ID_HEADER = "x-openwebui-chat-id"
TEXT_PIECE = 24
"""Characters per ``delta.content`` frame."""
ARGUMENT_PIECE = 16
"""Characters per ``arguments`` piece of a tool-call delta."""
DELEGATE = re.compile(r"\bdelegate this to ([A-Za-z0-9][A-Za-z0-9-]*)", re.IGNORECASE)
DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


# --- the wire: chunk builders ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkHead:
    """What every chunk of one completion shares: ``id`` (``chatcmpl-...``), ``created`` (epoch seconds), ``model``."""

    id: str = field(default_factory=lambda: f"chatcmpl-{secrets.token_hex(12)}")
    created: int = field(default_factory=lambda: int(time.time()))
    model: str = MODEL_NAME

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }


def role_chunk(head: ChunkHead) -> dict[str, Any]:
    return head.chunk({"role": "assistant", "content": ""})


def text_chunks(head: ChunkHead, text: str, piece: int = TEXT_PIECE) -> Iterator[dict[str, Any]]:
    for start in range(0, len(text), piece):
        yield head.chunk({"content": text[start : start + piece]})


def tool_call_chunks(
    head: ChunkHead,
    calls: list[ModelToolCall],
    piece: int = ARGUMENT_PIECE,
) -> Iterator[dict[str, Any]]:
    for index, call in enumerate(calls):
        yield head.chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for start in range(0, len(call.arguments), piece):
            yield head.chunk(
                {"tool_calls": [{"index": index, "function": {"arguments": call.arguments[start : start + piece]}}]}
            )


def finish_chunk(head: ChunkHead, reason: str) -> dict[str, Any]:
    return head.chunk({}, reason)


def completion(head: ChunkHead, text: str, calls: list[ModelToolCall], reason: str) -> dict[str, Any]:
    """The same turn as one ``chat.completion`` (``stream`` false)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    return {
        "id": head.id,
        "object": "chat.completion",
        "created": head.created,
        "model": head.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
    }


def frames(head: ChunkHead, text: str, calls: list[ModelToolCall], reason: str) -> list[bytes]:
    """A whole answer as the stream sends it, role frame to ``[DONE]``."""
    out = [sse(role_chunk(head))]
    out += [sse(c) for c in text_chunks(head, text)]
    out += [sse(c) for c in tool_call_chunks(head, calls)]
    return [*out, sse(finish_chunk(head, reason)), DONE]


def sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def error_body(
    message: str, *, type: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def error_response(status: int, message: str, **kw: Any) -> web.Response:
    return web.json_response(error_body(message, **kw), status=status)


# --- the facade --------------------------------------------------------------------------------------------------


@dataclass
class ChatRequest:
    messages: list[dict[str, Any]]
    stream: bool
    tools: list[Any]
    tool_choice: Any
    session: str


Answer = tuple[str, list[ModelToolCall], str]
"""What a turn answers: the text still to send, tool calls for the client, the finish reason."""


class Outlet:
    """Where a turn may send text before it has its answer (a parked turn's prompt): the open stream, or nothing
    for a whole (non-streamed) answer, which then carries the text in its message."""

    def __init__(self, response: web.StreamResponse | None, head: ChunkHead) -> None:
        self.response = response
        self.head = head
        self.sent = ""

    async def text(self, text: str) -> None:
        self.sent += text
        if self.response is not None:
            for chunk in text_chunks(self.head, text):
                await self.response.write(sse(chunk))

    async def alive(self) -> bool:
        """A keep-alive now; ``False`` once the client has gone away."""
        if self.response is None:
            return False
        try:
            await self.response.write(KEEPALIVE)
        except (ConnectionResetError, ConnectionError):
            return False
        return True


class ChatFacade:
    """``POST /v1/chat/completions`` for one orchestrator instance."""

    def __init__(self, orchestrator: Orchestrator) -> None:
        self.orch = orchestrator

    async def handle(self, request: web.Request) -> web.StreamResponse:
        bearer_subject = self.orch._caller(request)
        if bearer_subject is None:
            return error_response(401, "unrecognized bearer token", code="invalid_api_key")
        if self.orch.draining:
            return error_response(503, "the orchestrator is shutting down", type="server_error")
        try:
            chat = _parse(await request.read(), request.headers.get(CHAT_ID_HEADER, ""))
        except BadTools as exc:
            return error_response(400, str(exc), param=exc.param)
        except ValueError as exc:
            return error_response(400, str(exc))
        if not chat.stream:
            return await self._whole(chat, request, bearer_subject)
        return await self._stream(chat, request, bearer_subject)

    async def _answer(self, chat: ChatRequest, request: web.Request, bearer_subject: str, outlet: Outlet) -> Answer:
        refused = identity.chat_caller(request.headers, bearer_subject, self.orch.gate.jwt_secret).refused
        if refused:  # no identity: the gate refuses, nothing is planned or launched
            return await agent_turn(
                self.orch, request, bearer_subject, chat.session, last_user_text(chat.messages), outlet
            )
        if is_housekeeping(chat.messages):
            plan = await self.orch.planner.housekeeping(chat.messages)
        elif chat.tools:
            plan = await self.orch.planner.run(chat.messages, parse_tools(chat.tools), chat.tool_choice)
        else:
            return await agent_turn(
                self.orch, request, bearer_subject, chat.session, last_user_text(chat.messages), outlet
            )
        self.orch.ctx.log(_plan_line(chat.session, plan))
        return plan.text, plan.tool_calls, plan.finish_reason

    async def _whole(self, chat: ChatRequest, request: web.Request, bearer_subject: str) -> web.Response:
        head = ChunkHead()
        outlet = Outlet(None, head)
        try:
            text, calls, reason = await self._answer(chat, request, bearer_subject, outlet)
        except Exception as exc:
            return error_response(500, _failure(exc), type="server_error")
        return web.json_response(completion(head, outlet.sent + text, calls, reason))

    async def _stream(self, chat: ChatRequest, request: web.Request, bearer_subject: str) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "content-type": "text/event-stream; charset=utf-8",
                "cache-control": "no-cache",
                "x-accel-buffering": "no",
            }
        )
        await response.prepare(request)
        head = ChunkHead()
        await response.write(sse(role_chunk(head)))
        task = asyncio.ensure_future(self._answer(chat, request, bearer_subject, Outlet(response, head)))
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=self.orch.ctx.timing.seconds("chat_keepalive"))
                if not task.done():
                    await response.write(KEEPALIVE)
            text, calls, reason = task.result()
        except (ConnectionError, asyncio.CancelledError):
            task.cancel()  # the client went away: nobody will read the answer
            raise
        except Exception as exc:
            await response.write(sse(error_body(_failure(exc), type="server_error")))
            return response
        for frame in frames(head, text, calls, reason)[1:]:
            await response.write(frame)
        return response


async def agent_turn(
    orch: Orchestrator, request: web.Request, bearer_subject: str, session: str, goal: str, outlet: Outlet
) -> Answer:
    """A chat turn for an agent: the identity gate's pre-flight, then launch and the agent's reply, exactly like an
    ``/invoke`` turn. A parked turn streams its prompt at once and is held open (:meth:`identity.Gate.hold`) for the
    user to link; the owner's parked request on this session is what their next turn resumes."""
    caller = identity.chat_caller(request.headers, bearer_subject, orch.gate.jwt_secret)
    agent = await chosen_agent(orch, goal)
    pending = None if caller.refused else orch.gate.resumable(session, caller)
    if pending is not None:
        agent, goal = pending.agent, pending.text
    inv = Invocation(
        secrets.token_hex(8), session, caller.subject or bearer_subject, bearer_subject, goal, agent, identity=caller
    )
    text = await orch._run_turn(inv)
    if not inv.parked:
        return text, [], "stop"
    await outlet.text(text)
    verdict = await orch.gate.hold(caller, inv.agent, inv.goal, inv.session, alive=outlet.alive)
    if isinstance(verdict, identity.Launch):
        inv.parked = False
        run = await orch._launch(inv, verdict)
        return "\n\n" + await orch._await_reply(inv, run, False), [], "stop"
    if isinstance(verdict, identity.Refuse):
        return "\n\n" + verdict.text, [], "stop"
    return "", [], "stop"


async def chosen_agent(orch: Orchestrator, goal: str) -> str:
    """The agent a chat turn goes to: the Agent the request names ("Delegate this to <agent>: ...") when the
    catalog has it, else the stub agent *(twin's reading: upstream's planner asks the model to pick; the specs
    name the agent they need, so the pick is deterministic)*."""
    named = DELEGATE.search(goal)
    if named and await orch.ctx.api.get(config.AGENTS, named.group(1).lower()) is not None:
        return named.group(1).lower()
    return config.STUB_AGENT


def _parse(raw: bytes, chat_id: str) -> ChatRequest:
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError("We could not parse the JSON body of your request.") from None
    if not isinstance(body, dict):
        raise ValueError("The request body must be a JSON object.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise ValueError("Invalid 'messages': expected a non-empty array of message objects.")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ValueError("Invalid type for 'stream': expected a boolean.")
    tools = body.get("tools") or []
    parse_tools(tools)  # raises BadTools
    tool_choice = body.get("tool_choice")
    _check_tool_choice(tool_choice, [t["function"]["name"] for t in tools])
    session = f"chat:{chat_id.strip()}" if chat_id.strip() else f"chat:ephemeral-{secrets.token_hex(8)}"
    return ChatRequest(messages, stream, tools, tool_choice, session)


def _check_tool_choice(choice: Any, names: list[str]) -> None:
    if choice is None or choice in ("none", "auto", "required"):
        return
    name = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or not isinstance(name, str):
        raise ValueError(
            "Invalid 'tool_choice': expected 'none', 'auto', 'required' or {type: 'function', function: {name}}."
        )
    if name not in names:
        raise ValueError(f"Invalid 'tool_choice': function {name!r} is not one of the tools sent.")


def _failure(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _plan_line(session: str, plan: Plan) -> str:
    return (
        f"chat {session}: skill={plan.skill} advertised={plan.advertised} dropped={plan.dropped} "
        f"executed={plan.executed} repeated={plan.repeated} returned={[c.name for c in plan.tool_calls]} "
        f"finish={plan.finish_reason}"
    )
