"""One ``/invoke`` (or chat) turn as the twin's orchestrator tracks it, and its ``GET /invoke/<id>`` answer.

Apart from :mod:`fakes.stack.orchestrator` so the chat facade, which the orchestrator mounts, can build one without
importing the orchestrator back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from fakes.stack.caller_tools import CallerTool
from fakes.stack.identity import Caller
from fakes.stack.model import ModelToolCall


@dataclass
class Invocation:
    id: str
    session: str
    subject: str
    caller: str
    goal: str
    agent: str
    status: str = "pending"
    text: str | None = None
    error: str | None = None
    parked: bool = False
    run: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    #: Who sent it, resolved on arrival (:mod:`fakes.stack.identity`); ``None``: from ``subject``/``caller``.
    identity: Caller | None = None
    #: The repository a webhook event came from (``owner/name``), for agents that work in one.
    repository: str | None = None
    #: Caller tools sent with the request (a planned turn) and its ``tool_choice``.
    tools: list[CallerTool] = field(default_factory=list)
    tool_choice: Any = None
    #: Tool calls the client must run (a planned turn that ended in them).
    pending: list[ModelToolCall] = field(default_factory=list)
    #: A conversation the body carried (``messages``): never read, unless the ``invoke-resumes`` bug is on.
    history: list[dict[str, Any]] = field(default_factory=list)

    def answer(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "parked": self.parked,
            "pendingToolCalls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.pending],
        }
        if self.status == "succeeded" and not self.pending:
            body["result"] = {"text": self.text}
        if self.status == "failed":
            body["error"] = self.error
        if self.run:
            body["agentRun"] = self.run
        return body
