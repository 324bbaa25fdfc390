"""The agent-controller stack's chat turn: the generic :func:`harness.chat.chat_turn` with this stack's headers,
model and budget.

The orchestrator's chat facade (``POST /v1/chat/completions`` on ``svc/agent-orchestrator-invoke``) keys its session
by ``x-openwebui-chat-id``: under any other header name every call silently gets a fresh, empty session. The Open
WebUI user a turn runs as comes in ``x-openwebui-user-jwt`` (:mod:`specs.agent_controller.openwebui_jwt` mints it).
A turn may be *parked*: the facade holds it open while it waits for the user to link an account, streaming its
"link your account" prompt first (``allow_park=True`` returns such a turn instead of raising ``ServiceTimeout``).
"""

from __future__ import annotations

import functools
from typing import Any

from harness.blocking import run_blocking
from harness.chat import ChatTurn, chat_turn
from harness.fetch import Forward

CHAT_ID_HEADER = "x-openwebui-chat-id"
USER_JWT_HEADER = "x-openwebui-user-jwt"
MODEL = "agent-orchestrator"
"""The ``model`` the facade serves."""
CHAT_TIMEOUT = 420.0
"""Seconds for one whole chat turn (the upstream suite's chat budget: a turn may launch an agent run)."""


def facade_headers(chat_id: str, user_jwt: str | None = None) -> dict[str, str]:
    """The facade's session header (``chat_id``, a non-empty string, else ``ValueError``) and, when given, the user's
    JWT header."""
    if not isinstance(chat_id, str) or not chat_id.strip():
        raise ValueError(f"facade_turn: chat_id must be a non-empty string (it keys the session), got {chat_id!r}")
    headers = {CHAT_ID_HEADER: chat_id}
    if user_jwt is not None:
        headers[USER_JWT_HEADER] = user_jwt
    return headers


async def facade_turn(
    target: Forward | str,
    messages: list[dict[str, Any]],
    *,
    chat_id: str,
    user_jwt: str | None = None,
    model: str = MODEL,
    timeout: float = CHAT_TIMEOUT,
    **kwargs: Any,
) -> ChatTurn:
    """One streamed turn against the facade as session ``chat_id`` (and user ``user_jwt``); the other keyword
    arguments, result and errors are :func:`harness.chat.chat_turn`'s."""
    headers = {**facade_headers(chat_id, user_jwt), **(kwargs.pop("headers", None) or {})}
    return await chat_turn(target, messages, model=model, timeout=timeout, headers=headers, **kwargs)


def facade_turn_sync(target: Forward | str, messages: list[dict[str, Any]], **kwargs: Any) -> ChatTurn:
    """The blocking twin of :func:`facade_turn`; ``SyncCallInEventLoop`` inside a running event loop."""
    __tracebackhide__ = True
    return run_blocking(
        functools.partial(facade_turn, target, messages, **kwargs), entry="facade_turn_sync", instead="facade_turn"
    )
