"""Cluster spec: what a turn resumed from a caller tool's result may and may not do.

Beyond upstream's caller-tools spec (which resumes one turn and checks the result reaches the answer), three
promises the product states for resumed turns (README "Promises the cluster specs guard"):

- a repeated call: when the planner re-issues, byte for byte, a caller-tool call the history already answered (a
  client's ``tool_choice: "required"``, re-applied on every resend, pushes it to), the turn finishes carrying the
  last tool's result, never an empty result or a literal ````` ```json\\nundefined``` ````` block;
- only chat resumes: ``/invoke`` has no message array to carry a ``role: "tool"`` result, so a history in its body
  never resumes a turn (the stack may refuse the body or take it as a new request; README records which);
- ``tool_choice: "none"`` holds on a resumed turn as on a fresh one: nothing offered, nothing called.

Dispatch is deterministic (failure mode 25): a fixture skill orders the caller tool, and the fake model is scripted
to repeat the call, or to call whenever it is offered a tool, so each promise is tested against the model that
would break it. The repeated call needs the fake model endpoint as the orchestrator's model (a real model cannot be
made to repeat a call byte for byte); the other two hold with any model and check the capture when it is there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.targets import TargetChoice
from specs.agent_controller.invoke import Invocation, InvokeClient, InvokeRejected
from specs.agent_controller.model_journal import ModelJournal
from specs.cluster.stack import Stack, timeout_for
from specs.cluster.tools_support import (
    BEARER,
    ORCHESTRATOR,
    SKILL_INDEXED,
    TOOL_TURN,
    Expect,
    ToolTurns,
    check_advertised,
    function_tool,
    model_capture,
    require_capture,
    skill_manifest,
    skills_applied,
)

pytestmark = [pytest.mark.cluster]

BATTERY = "get_device_battery"
DEVICE = "SN-6120"
READING = "41% remaining"
READING_MARK = "41"
ARGUMENTS = json.dumps({"device_id": DEVICE})
"""The answered call's arguments, as text: the scripted repeat sends exactly these bytes."""
ANSWERED = (BATTERY, ARGUMENTS)
SKILL = "e2e-caller-tool-resume"
MARK_REPEAT = "RS-1101"
MARK_INVOKE = "RS-1102"
MARK_NONE = "RS-1103"
NO_RESULT = "undefined"

SKILLS = [
    skill_manifest(
        SKILL,
        "caller-tool-resume",
        {
            "description": f"Reports the battery level of resumed telemetry device {DEVICE} through the caller's "
            f"{BATTERY} tool (e2e fixture).",
            "instructions": f"Call caller:{BATTERY} with the device id the user names, then report its battery level.",
            "tools": [f"caller:{BATTERY}"],
            "allowCallerTools": True,
        },
    )
]
MODEL_RULES = [
    {
        "name": "resume-select-skill",
        "when": {"system": "skill selector", "last_user": DEVICE},
        "reply": {"text": SKILL},
    },
    {
        "name": "resume-battery-call",
        "when": {"tool_choice": BATTERY, "last_user": DEVICE},
        "reply": {"tool_calls": [{"name": BATTERY, "arguments": ARGUMENTS}]},
    },
    {  # what tool_choice "required" pushes a model to after the result: the same call again, byte for byte
        "name": "resume-repeat-the-answered-call",
        "when": {"last_role": "tool", "last_user": MARK_REPEAT, "tool_choice": "required"},
        "reply": {"tool_calls": [{"name": BATTERY, "arguments": ARGUMENTS}]},
    },
    {  # a model that calls whenever it is offered a tool (a fresh reading: not a repeat)
        "name": "resume-call-whenever-offered",
        "when": {"last_role": "tool", "last_user": MARK_NONE, "no_tools": False},
        "reply": {"tool_calls": [{"name": BATTERY, "arguments": {"device_id": DEVICE, "fresh": True}}]},
    },
]


def battery_tool() -> dict[str, Any]:
    return function_tool(
        BATTERY, "Reads the battery level of a resumed telemetry device by its id", {"device_id": {"type": "string"}}
    )


def ask(mark: str) -> str:
    return f"What is the battery level of telemetry device {DEVICE}? Use my device tool. ({mark})"


def answered_history(mark: str, call_id: str) -> list[dict[str, Any]]:
    """A conversation the client resends: the question, the call it was handed, and that call's result."""
    return [
        {"role": "user", "content": ask(mark)},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": BATTERY, "arguments": ARGUMENTS}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": READING},
    ]


def invoke_with_history(stack: Stack, request: str, history: list[dict[str, Any]]) -> Invocation | InvokeRejected:
    """One whole ``/invoke`` turn whose body also carries ``messages``: the settled record, or the refusal."""
    try:
        return stack.through(
            ORCHESTRATOR,
            lambda fwd: InvokeClient(fwd, bearer=BEARER).turn(
                request, tools=[battery_tool()], extra={"messages": history}, timeout=TOOL_TURN
            ),
        )
    except InvokeRejected as refused:
        return refused


@pytest.fixture(scope="module")
def journal(stack: Stack, stack_target: TargetChoice) -> Iterator[ModelJournal | None]:
    capture = model_capture(stack, stack_target)
    if capture is None:
        yield None
        return
    with capture.scripted(MODEL_RULES):
        yield capture


@pytest.fixture(scope="module")
def skill(stack: Stack, journal: ModelJournal | None) -> Iterator[list[str]]:
    yield from skills_applied(stack, "caller-tool-resume", SKILLS)


@pytest.fixture
def turns(stack: Stack, journal: ModelJournal | None, skill: list[str]) -> ToolTurns:
    return ToolTurns(stack, journal)


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_a_repeated_call_on_a_resumed_turn_finishes_with_the_last_result(turns: ToolTurns) -> None:
    journal = require_capture(turns.journal)
    turn = turns.chat(
        answered_history(MARK_REPEAT, "call_e2e_resume_repeat"),
        Expect(sent=(BATTERY,), include=(BATTERY,)),
        tools=[battery_tool()],
        tool_choice="required",
        what="a resumed turn whose model repeats the answered call",
    )
    repeats = [r for r in turn.requests if [(e.get("name"), e.get("arguments")) for e in r.emitted] == [ANSWERED]]
    assert repeats, (
        f"the scripted model never repeated the answered call {ANSWERED}, so this turn tests nothing (is rule "
        f"resume-repeat-the-answered-call in place? {len(journal.rules()['rules'])} rules): "
        f"{[r.line() for r in turn.requests] or 'no model request'}"
    )
    chat = turn.chat
    assert chat is not None
    assert NO_RESULT not in chat.text, (
        "a repeated call on a resumed turn must finish carrying the last tool's result; the turn rendered a "
        f"literal {NO_RESULT!r} block instead: {chat.describe()}"
    )
    assert chat.tool_calls == [], (
        f"a repeated call on a resumed turn was handed back to the client instead of finishing: {chat.describe()}"
    )
    assert chat.finish_reason == "stop", f"a repeated call on a resumed turn did not finish: {chat.describe()}"
    assert READING_MARK in chat.text, (
        f"a repeated call on a resumed turn must finish carrying the last tool's result ({READING!r}); the "
        f"answer does not: {chat.describe()}"
    )


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_invoke_never_resumes_a_turn_from_a_tool_result(stack: Stack, turns: ToolTurns) -> None:
    """Only chat resumes. The body carries a history ending in the tool's result; the stack either refuses the
    body (4xx) or takes the request as a new turn, which the skill then answers with its ordered call, pending."""
    history = answered_history(MARK_INVOKE, "call_e2e_resume_invoke")
    mark = turns.journal.mark() if turns.journal else 0
    record = invoke_with_history(stack, ask(MARK_INVOKE), history)
    if isinstance(record, InvokeRejected):  # refused: a body /invoke does not take never becomes a turn
        assert 400 <= record.status < 500, f"/invoke with a history answered {record.status}: {record}"
        return
    requests = turns.journal.since(mark) if turns.journal else []
    check_advertised(requests, Expect(sent=(BATTERY,), include=(BATTERY,)), "/invoke with a tool-result history")
    seen = [r.line() for r in requests if any(READING in str(m.get("text", "")) for m in r.tool_results)]
    assert not seen, f"only chat resumes: /invoke handed the tool result in its body's history to the model: {seen}"
    assert record.status == "succeeded", f"/invoke with a history ended {record.describe()}: {record.error}"
    assert not record.has_result, (
        "only chat resumes: /invoke resumed a turn from the role: tool result in its body and carried a result "
        f"({record.describe()}: {str(record.result)[:200]!r}) instead of starting a new request"
    )
    assert [c.name for c in record.pending_tool_calls] == [BATTERY], (
        f"/invoke with a history was not answered as a new request (the skill's ordered {BATTERY} pending): "
        f"{record.describe()}, pending {record.pending_tool_calls}"
    )


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_tool_choice_none_on_a_resumed_turn_offers_nothing(turns: ToolTurns) -> None:
    turn = turns.chat(
        answered_history(MARK_NONE, "call_e2e_resume_none"),
        Expect(sent=(BATTERY,), none='tool_choice "none" on a resumed turn'),
        tools=[battery_tool()],
        tool_choice="none",
        what='tool_choice "none" on a resumed turn',
    )
    chat = turn.chat
    assert chat is not None
    assert chat.tool_calls == [], f'tool_choice "none" on a resumed turn still produced tool calls: {chat.describe()}'
    assert chat.finish_reason == "stop", f'tool_choice "none" on a resumed turn did not finish: {chat.describe()}'
    if turns.journal is not None:  # the scripted model quotes the result it was given (not a judgement call)
        assert chat.text == turn.requests[-1].text, f"the client got {chat.text!r}, the model said something else"
        assert READING_MARK in chat.text, f"the resumed turn's answer lost the tool's result: {chat.describe()}"
