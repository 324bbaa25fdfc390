"""Cluster spec: a tool the model was not offered is never run and never handed to the client.

Beyond upstream (its specs assert what the model *did* call; this one asserts what the stack does with a call it
should not have received). Every turn here is checked against the tool-advertising contract
(``specs/cluster/tools_support.py``: exactly the expected names, bare, at most K caller tools), and then the fake
model is scripted to call something that was *not* offered:

- a caller tool the client never sent (``get_device_temperature``): the chat turn ends without a ``tool_calls``
  delta and ``/invoke`` without a pending call;
- a caller tool the client sent but that was not among the K offered (5 sent, K = 3): not returned either;
- a catalog Tool (``github-issue-reader``, which reads an issue from GitHub) on a turn whose skill does not list it:
  not run, so the fake GitHub never sees the read.

The positive counterpart proves the last check can fail: a fixture skill that lists ``github-issue-reader`` gets it
offered, the scripted model calls it, the stack runs it (the fake GitHub records the read of that issue) and the
model's next request carries the result.

Needs the fake model endpoint as the orchestrator's model (always so on the stack twin): a real model cannot be made
to call a tool it was not offered.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.targets import TargetChoice
from specs.agent_controller import github_seed
from specs.agent_controller.github_journal import GitHubJournal
from specs.agent_controller.model_journal import ModelJournal
from specs.cluster.stack import GITHUB, OWNER, REPO, SENDER, Stack, timeout_for
from specs.cluster.tools_support import (
    SKILL_INDEXED,
    TOOL_TURN,
    Expect,
    ToolTurns,
    function_tool,
    model_capture,
    require_capture,
    skill_manifest,
    skills_applied,
)

pytestmark = [pytest.mark.cluster]

READER = "github-issue-reader"
READER_SKILL = "e2e-tool-advertising-reader"
MARK_READ = "TA-7781"
MARK_NEVER_SENT = "TA-9905"
MARK_OUTSIDE_K = "TA-9906"
MARK_CATALOG = "TA-9904"
NEVER_SENT = "get_device_temperature"
OUTSIDE_K = "zz_archive_weather_records"
DROPPED = "not offered"

SKILLS = [
    skill_manifest(
        READER_SKILL,
        "tool-advertising",
        {
            "description": f"Reads GitHub issue {MARK_READ} of the e2e repository with {READER} (e2e fixture).",
            "instructions": f"Read the issue with {READER}, then summarise it.",
            "tools": [READER],
            "allowCallerTools": True,
        },
    )
]


def battery() -> dict[str, Any]:
    return function_tool(
        "get_device_battery",
        "Reads the battery level of a telemetry device by its id",
        {"device_id": {"type": "string"}},
    )


def five_tools() -> list[dict[str, Any]]:
    related = [
        ("get_device_battery", "Reads the battery level of a telemetry device"),
        ("get_device_firmware", "Reads the firmware version of a telemetry device"),
        ("reboot_device", "Reboots a telemetry device"),
        ("list_device_alarms", "Lists the open alarms of a telemetry device"),
        (OUTSIDE_K, "Archives yesterday's weather observations into cold storage"),
    ]
    return [function_tool(name, f"{text} (advertising set)", {"id": {"type": "string"}}) for name, text in related]


def call(name: str, arguments: dict[str, Any], mark: str) -> dict[str, Any]:
    return {
        "name": f"advertising-{mark}",
        "when": {"last_user": mark, "last_role": "user", "no_tools": False},
        "reply": {"tool_calls": [{"name": name, "arguments": arguments}]},
    }


@pytest.fixture(scope="module")
def journal(stack: Stack, stack_target: TargetChoice) -> ModelJournal:
    return require_capture(model_capture(stack, stack_target))


@pytest.fixture(scope="module")
def reader_skill(stack: Stack, journal: ModelJournal) -> Iterator[list[str]]:
    yield from skills_applied(stack, "tool-advertising", SKILLS)


@pytest.fixture
def turns(stack: Stack, journal: ModelJournal, reader_skill: list[str]) -> ToolTurns:
    return ToolTurns(stack, journal)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def issue_reads(stack: Stack, issue: int) -> list[str]:
    path = f"/repos/{OWNER}/{REPO}/issues/{issue}"
    calls = stack.through(GITHUB, lambda fwd: GitHubJournal(fwd).calls(path_prefix=path, method="GET"))
    return [c.line() for c in calls if c.path == path]


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN * 2))
def test_a_call_of_a_tool_the_client_never_sent_is_not_returned(turns: ToolTurns, journal: ModelJournal) -> None:
    expect = Expect(sent=("get_device_battery",))
    with journal.scripted([call(NEVER_SENT, {"device_id": "SN-4417"}, MARK_NEVER_SENT)]):
        chat_turn = turns.chat(
            ask(f"Check the device for {MARK_NEVER_SENT}."),
            expect,
            tools=[battery()],
            what="chat, the model calls a tool never sent",
        )
        invoke_turn = turns.invoke(
            f"Check the device for {MARK_NEVER_SENT}.",
            expect,
            tools=[battery()],
            what="/invoke, the model calls a tool never sent",
        )
    assert NEVER_SENT in [e.get("name") for r in chat_turn.requests for e in r.emitted], (
        "precondition: the scripted model did not call the unoffered tool"
    )
    chat = chat_turn.chat
    assert chat is not None
    assert chat.tool_calls == [], (
        f"the stack handed the client a call of {[c.name for c in chat.tool_calls]}, a "
        f"tool the model was never offered (offered: {chat_turn.offered}): "
        f"{chat.describe()}"
    )
    assert chat.finish_reason == "stop", chat.describe()
    assert DROPPED in chat.text, f"the turn did not say the call was not run: {chat.describe()}"
    record = invoke_turn.invocation
    assert record is not None
    assert record.status == "succeeded", f"/invoke ended {record.describe()}: {record.error}"
    assert not record.pending_tool_calls, (
        f"/invoke returned pending calls {record.pending_tool_calls} of a tool "
        f"the model was never offered (offered: {invoke_turn.offered})"
    )


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_a_sent_caller_tool_outside_the_top_k_is_not_returned(turns: ToolTurns, journal: ModelJournal) -> None:
    tools = five_tools()
    expect = Expect(sent=tuple(t["function"]["name"] for t in tools))
    with journal.scripted([call(OUTSIDE_K, {"id": "SN-4417"}, MARK_OUTSIDE_K)]):
        turn = turns.chat(
            ask(f"What is the battery level of telemetry device SN-4417? ({MARK_OUTSIDE_K})"),
            expect,
            tools=tools,
            what="five tools, the model calls one not offered",
        )
    assert OUTSIDE_K not in turn.offered, (
        f"precondition: {OUTSIDE_K} (unrelated to the request) was among the K offered: {turn.offered}"
    )
    chat = turn.chat
    assert chat is not None
    assert chat.tool_calls == [], (
        f"the stack handed the client {[c.name for c in chat.tool_calls]}, outside the "
        f"{len(turn.offered)} tools offered ({turn.offered}): {chat.describe()}"
    )


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_an_unoffered_catalog_tool_is_not_run(
    stack: Stack, turns: ToolTurns, journal: ModelJournal, issue: int
) -> None:
    stack.through(GITHUB, lambda fwd: github_seed.open_issue(fwd, issue, title=f"advertising {issue}", user=SENDER))
    arguments = {"owner": OWNER, "repo": REPO, "number": issue}
    with journal.scripted([call(READER, arguments, MARK_CATALOG)]):
        turn = turns.chat(
            ask(f"Look at the device for {MARK_CATALOG}."),
            Expect(sent=("get_device_battery",)),
            tools=[battery()],
            what=f"the model calls {READER}, not offered",
        )
    chat = turn.chat
    assert chat is not None
    assert READER not in turn.offered, f"precondition: {READER} was offered: {turn.offered}"
    reads = issue_reads(stack, issue)
    assert not reads, f"the stack ran {READER}, which the model was never offered on this turn: GitHub saw {reads}"
    assert chat.tool_calls == [], f"the stack handed the client {READER}: {chat.describe()}"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_an_offered_catalog_tool_is_run_and_its_result_goes_back_to_the_model(
    stack: Stack, turns: ToolTurns, journal: ModelJournal, issue: int
) -> None:
    stack.through(GITHUB, lambda fwd: github_seed.open_issue(fwd, issue, title=f"advertising {issue}", user=SENDER))
    arguments = {"owner": OWNER, "repo": REPO, "number": issue}
    rules = [
        {
            "name": "advertising-select-reader",
            "when": {"system": "skill selector", "last_user": MARK_READ},
            "reply": {"text": READER_SKILL},
        },
        call(READER, arguments, MARK_READ),
    ]
    with journal.scripted(rules):
        turn = turns.chat(
            ask(f"Read GitHub issue {MARK_READ} of the e2e repository and summarise it."),
            Expect(sent=("get_device_battery",), catalog=(READER,)),
            tools=[battery()],
            what=f"skill {READER_SKILL} offers {READER}",
        )
    chat = turn.chat
    assert chat is not None
    reads = issue_reads(stack, issue)
    assert len(reads) == 1, f"{READER} was offered and called, so GitHub should have seen one read: {reads}"
    results = turn.requests[-1].tool_results
    assert results, f"the tool's result never went back to the model: {[r.line() for r in turn.requests]}"
    assert f"advertising {issue}" in str(results[-1].get("text")), f"the result is not the issue: {results[-1]}"
    assert chat.tool_calls == [], f"a catalog tool's call leaked to the client: {chat.describe()}"
