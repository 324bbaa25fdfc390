"""What the chat, caller-tool and tool-advertising specs share: forwards, turns, fixture skills, and the contract.

Reached like everything else in a cluster spec: ``kubectl port-forward`` to ``svc/agent-orchestrator-invoke:8081``
(chat and ``/invoke``), ``svc/agent-controller-qdrant:6333`` (read-only counts and payloads, and the store block's
throwaway collection) and, where it is deployed, ``svc/fake-openai:80`` (the fake model endpoint: its capture and
rules). On the stack twin the fake model is always the orchestrator's model; on minikube it is there only when it
was deployed as the model (fakes/README.md), otherwise the specs keep upstream's assertions through the real
model and skip the ones that need the capture, saying so.

The tool-advertising contract (checked on every turn these specs make, from the fake model's capture): the tools
offered to the model on a turn are exactly the expected set: names as the client sent them (never the
orchestrator's internal ``caller:`` namespace), at most ``K`` caller tools (``callerToolTopK``, 3 in e2e) and the
active skill's catalog tools, and none at all for ``tool_choice: "none"`` or a skill that refuses caller tools.

Budgets (failure-path, :mod:`specs.cluster.stack`): a turn that plans with tools (no agent) gets
:data:`~specs.cluster.stack.TOOL_TURN`; one that may launch an agent keeps upstream's chat budget (420 s); a Skill
is indexed within 120 s (README §6), polled as often as the orchestrator retries indexing one (the profile's
``skill_index_retry``, upstream's 3 s).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from harness import wait_for_sync
from harness.chat import ChatError, ChatTurn
from harness.qdrant import QdrantView
from harness.targets import TargetChoice
from specs.agent_controller.chat import facade_turn_sync
from specs.agent_controller.invoke import Invocation, InvokeClient
from specs.agent_controller.model_journal import ModelJournal, ModelRequest
from specs.cluster.stack import CHAT_LAUNCH as CHAT_LAUNCH
from specs.cluster.stack import SKILL_INDEXED as SKILL_INDEXED
from specs.cluster.stack import TOOL_TURN as TOOL_TURN
from specs.cluster.stack import Stack

ORCHESTRATOR = ("svc/agent-orchestrator-invoke", 8081)
QDRANT = ("svc/agent-controller-qdrant", 6333)
MODEL = ("svc/fake-openai", 80)
BEARER = "e2e-gateway-token"
TOP_K = 3
SKILL_GROUP = "skills.core.controller-agent.dev"
FIXTURE_LABEL = "e2e.controller-agent.dev/fixture"

RUN_TOKEN = f"run-{os.getpid()}-{int(time.time() * 1000)}"
"""Put into every caller-tool description: the orchestrator caches definitions by content hash, so fixed
definitions would be a permanent hit and "indexing happened" would pass once per Qdrant volume (failure mode 21)."""


# --- the model's capture --------------------------------------------------------------------------------------------


def model_capture(stack: Stack, target: TargetChoice) -> ModelJournal | None:
    """The fake model's capture when it is the orchestrator's model (always on the twin), else ``None``."""
    if target.kind == "cluster":
        found = stack.kube.kubectl("get", "service", "fake-openai", "--ignore-not-found", "-o", "name").stdout
        if not found.strip():
            return None
    return ModelJournal(stack.forwards.get(stack.kube, *MODEL))


def require_capture(journal: ModelJournal | None) -> ModelJournal:
    if journal is None:
        pytest.skip(
            "needs the fake model endpoint (fakes/openai) deployed as the orchestrator's model, to read "
            "what each turn offered the model: see fakes/README.md 'Pointing the orchestrator at the fake "
            "model' (always the case on the stack twin)"
        )
    return journal


@dataclass(frozen=True)
class Expect:
    """What a turn must have offered the model: ``sent`` (caller tool names in the request), ``catalog`` (the
    active skill's catalog tools), ``include`` (caller tools that must be among them: the one a skill orders),
    ``none`` (why nothing at all may be offered, or ``None``)."""

    sent: tuple[str, ...] = ()
    catalog: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    none: str | None = None


def offered(requests: Sequence[ModelRequest]) -> list[str]:
    """Every tool name offered to the model over ``requests``, first appearance first."""
    names: list[str] = []
    for request in requests:
        names += [n for n in request.tools if n not in names]
    return names


def check_advertised(requests: Sequence[ModelRequest], expect: Expect, turn: str) -> list[str]:
    """Assert the contract of the module docstring on one turn's model requests; returns the names offered."""
    names = offered(requests)
    trail = "; ".join(r.line() for r in requests) or "no model request"
    leaked = [n for n in names if ":" in n]
    assert not leaked, (
        f"{turn}: the model was offered {leaked}: the orchestrator's internal 'caller:' prefix leaked "
        f"into the advertised tool names (the client sent {list(expect.sent)}). Model requests: "
        f"{trail}"
    )
    if expect.none is not None:
        assert not names, (
            f"{turn}: the model was offered {names} on a turn that must offer none ({expect.none}). "
            f"Model requests: {trail}"
        )
        return names
    callers = [n for n in names if n in expect.sent]
    others = [n for n in names if n not in expect.sent]
    assert len(callers) <= TOP_K, (
        f"{turn}: {len(callers)} caller tools offered, more than K={TOP_K}: {callers}. Model requests: {trail}"
    )
    assert len(callers) == min(TOP_K, len(expect.sent)), (
        f"{turn}: {len(callers)} of the {len(expect.sent)} caller tools sent were offered ({callers}); expected "
        f"{min(TOP_K, len(expect.sent))} (at most K={TOP_K}). Model requests: {trail}"
    )
    missing = [n for n in expect.include if n not in callers]
    assert not missing, f"{turn}: {missing} not offered although the skill orders it. Model requests: {trail}"
    assert sorted(others) == sorted(expect.catalog), (
        f"{turn}: catalog tools offered {others}, expected exactly the skill's {list(expect.catalog)}. "
        f"Model requests: {trail}"
    )
    return names


# --- turns ------------------------------------------------------------------------------------------------------------


@dataclass
class Turn:
    """One turn and what the model saw: ``chat`` or ``invocation`` (the one that ran), ``requests`` (chat requests
    to the model during it, empty without a capture), ``offered`` (names offered), ``error`` (a chat turn that
    failed: raised by :meth:`ToolTurns.chat` after the advertising check)."""

    requests: list[ModelRequest]
    offered: list[str]
    chat: ChatTurn | None = None
    invocation: Invocation | None = None


class ToolTurns:
    """Turns through the orchestrator's forward, each checked against the tool-advertising contract when the fake
    model's capture is there (``journal``)."""

    def __init__(self, stack: Stack, journal: ModelJournal | None) -> None:
        self.stack = stack
        self.journal = journal

    def chat(
        self,
        messages: list[dict[str, Any]],
        expect: Expect,
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        chat_id: str | None = None,
        timeout: float = TOOL_TURN,
        what: str = "chat turn",
        **kwargs: Any,
    ) -> Turn:
        mark = self.journal.mark() if self.journal else 0
        error: ChatError | None = None
        try:
            chat = self.stack.through(
                ORCHESTRATOR,
                lambda fwd: facade_turn_sync(
                    fwd,
                    messages,
                    chat_id=chat_id or f"e2e-chat-{uuid.uuid4().hex[:12]}",
                    token=BEARER,
                    tools=tools,
                    tool_choice=tool_choice,
                    timeout=timeout,
                    **kwargs,
                ),
            )
        except ChatError as exc:
            error, chat = exc, exc.partial
        turn = self._checked(mark, expect, what)
        turn.chat = chat
        if error is not None:
            raise error
        return turn

    def invoke(
        self,
        request: str,
        expect: Expect,
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        what: str = "/invoke turn",
        timeout: float = TOOL_TURN,
    ) -> Turn:
        mark = self.journal.mark() if self.journal else 0
        invocation = self.stack.through(
            ORCHESTRATOR,
            lambda fwd: InvokeClient(fwd, bearer=BEARER).turn(
                request, tools=tools, **({} if tool_choice is None else {"tool_choice": tool_choice}), timeout=timeout
            ),
        )
        turn = self._checked(mark, expect, what)
        turn.invocation = invocation
        return turn

    def invoke_post(self, body: dict[str, Any]) -> Any:
        return self.stack.through(ORCHESTRATOR, lambda fwd: InvokeClient(fwd, bearer=BEARER).post(body))

    def _checked(self, mark: int, expect: Expect, what: str) -> Turn:
        if self.journal is None:
            return Turn([], [])
        requests = self.journal.since(mark)
        return Turn(requests, check_advertised(requests, expect, what))


def qdrant(stack: Stack) -> QdrantView:
    return QdrantView(stack.forwards.get(stack.kube, *QDRANT))


# --- fixture skills -------------------------------------------------------------------------------------------------


def skill_manifest(name: str, fixture: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "core.controller-agent.dev/v1alpha1",
        "kind": "Skill",
        "metadata": {"name": name, "labels": {FIXTURE_LABEL: fixture}},
        "spec": spec,
    }


def skills_applied(stack: Stack, fixture: str, skills: list[dict[str, Any]]) -> Iterator[list[str]]:
    """Apply the fixture ``skills`` (label ``FIXTURE_LABEL=fixture``), wait until every one is indexed in the
    ``skills`` collection (a Skill that exists is not yet indexed: failure mode 23), yield their names, delete them
    at the end (broad fixture descriptions would win retrieval in unrelated specs: failure mode 24)."""
    names = [s["metadata"]["name"] for s in skills]
    stack.kube.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": skills}))
    try:

        def indexed() -> bool | None:
            stored = qdrant(stack).payload_values("skills", "name") or []
            return True if all(name in stored for name in names) else None

        wait_for_sync(
            f"skills {names} to be indexed in Qdrant's skills collection",
            indexed,
            timeout=SKILL_INDEXED,
            interval=stack.profile.skill_index_retry,
        )
        yield names
    finally:
        stack.kube.kubectl(
            "delete", SKILL_GROUP, "-l", f"{FIXTURE_LABEL}={fixture}", "--ignore-not-found", "--wait=false"
        )


def function_tool(name: str, description: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenAI function tool whose description carries :data:`RUN_TOKEN`."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{description} [{RUN_TOKEN}]",
            "parameters": {"type": "object", "properties": properties or {}},
        },
    }
