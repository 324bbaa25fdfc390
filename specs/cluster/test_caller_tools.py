"""Cluster spec: caller ("consumer") tools, from the store to the round trip through chat and ``/invoke``.

Ported from upstream's caller-tools spec, every assertion (README §1; the store's contract is in
``fakes/stack/caller_tools.py``). Tool ``get_device_battery``, device ``SN-4417``, reading ``37% remaining``; every
description carries the run token (failure mode 21). Two fixture skills with deliberately narrow descriptions
(failure mode 24), waited for in the ``skills`` collection before any turn (120 s, every 3 s: failure mode 23):
``e2e-caller-tool-telemetry`` orders ``caller:get_device_battery``; ``e2e-caller-tool-refused`` refuses caller
tools (``allowCallerTools: false``) and must answer exactly ``SEALED_RACK_NO_TOOL``.

Dispatch is deterministic (failure mode 25): the skill forces the tool call; the assertions never rest on a model's
judgement. Where upstream asserts through the real model (the call, its arguments, the text after the tool result,
the refusal token), the same user-visible assertion is kept, and where the fake model is the orchestrator's model
(always on the stack twin) the fake is scripted as a real model answers these fixtures, and the spec also asserts
through its capture: what the model was offered (the tool-advertising contract, on every turn), what it was forced
to, and that the stack relayed the model's own call and the tool result unchanged.

The store block drives the orchestrator's store (``fakes.stack.caller_tools.CallerToolStore``, the twin's port of
the product's) in a throwaway collection through the Qdrant forward: on the twin it checks the twin's store; on
minikube it checks that the deployment's Qdrant honours every operation the store relies on (``has_id``
restriction, payload-only ``set_payload``, delete by a ``range`` filter, all with ``wait=true``), since the product's
own store is TypeScript and cannot be driven from here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from harness.chat import ChatRejected
from harness.fetch import fetch_through
from harness.targets import TargetChoice
from specs.agent_controller.invoke import InvokeRejected
from specs.agent_controller.model_journal import ModelJournal
from specs.agent_controller.qdrant_collections import COLLECTIONS
from specs.cluster.stack import FETCH, STORE_BLOCK, Stack, timeout_for
from specs.cluster.tools_support import (
    QDRANT,
    SKILL_INDEXED,
    TOOL_TURN,
    Expect,
    ToolTurns,
    function_tool,
    model_capture,
    qdrant,
    skill_manifest,
    skills_applied,
)

pytestmark = [pytest.mark.cluster]

BATTERY = "get_device_battery"
DEVICE = "SN-4417"
READING = "37% remaining"
TELEMETRY = "e2e-caller-tool-telemetry"
REFUSED = "e2e-caller-tool-refused"
REFUSAL = "SEALED_RACK_NO_TOOL"
ASK_BATTERY = f"What is the battery level of telemetry device {DEVICE}? Use my device tool."
ASK_RACK = "What is the state of sealed rack SR-9? Do not use any tool."
HOUSEKEEPING = (
    "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
    "### Guidelines:\n- The title should clearly represent the main theme of the conversation.\n"
    f"### Chat History:\n<chat_history>\nUSER: {ASK_BATTERY}\n</chat_history>"
)
CATALOG = ("tools", "skills", "agents")

SKILLS = [
    skill_manifest(
        TELEMETRY,
        "caller-tools",
        {
            "description": f"Reports the battery level of rack telemetry device {DEVICE} through the caller's "
            f"{BATTERY} tool (e2e fixture).",
            "instructions": f"Call caller:{BATTERY} with the device id the user names, then report its battery level.",
            "tools": [f"caller:{BATTERY}"],
            "allowCallerTools": True,
        },
    ),
    skill_manifest(
        REFUSED,
        "caller-tools",
        {
            "description": "Answers about the state of sealed rack SR-9, which has no tools (e2e fixture).",
            "instructions": f"Reply exactly {REFUSAL} and nothing else.",
            "tools": [],
            "allowCallerTools": False,
        },
    ),
]
MODEL_RULES = [  # what a real model answers for these fixtures (used where the fake model is the orchestrator's)
    {
        "name": "caller-tools-select-telemetry",
        "when": {"system": "skill selector", "last_user": DEVICE},
        "reply": {"text": TELEMETRY},
    },
    {
        "name": "caller-tools-select-refused",
        "when": {"system": "skill selector", "last_user": "SR-9"},
        "reply": {"text": REFUSED},
    },
    {
        "name": "caller-tools-battery-call",
        "when": {"tool_choice": BATTERY},
        "reply": {"tool_calls": [{"name": BATTERY, "arguments": {"device_id": DEVICE}}]},
    },
    {"name": "caller-tools-refusal", "when": {"system": REFUSAL}, "reply": {"text": REFUSAL}},
]


def battery_tool(variant: str = "") -> dict[str, Any]:
    return function_tool(
        BATTERY, f"Reads the battery level of a telemetry device by its id{variant}.", {"device_id": {"type": "string"}}
    )


def other_tools(variant: str) -> list[dict[str, Any]]:
    return [
        function_tool(name, f"{text}{variant}.", {"id": {"type": "string"}})
        for name, text in (
            ("get_device_firmware", "Reads the firmware version of a device"),
            ("reboot_device", "Reboots a device"),
            ("list_rack_alarms", "Lists the open alarms of a rack"),
            ("get_room_temperature", "Reads the temperature of a server room"),
        )
    ]


@pytest.fixture(scope="module")
def journal(stack: Stack, stack_target: TargetChoice) -> Iterator[ModelJournal | None]:
    capture = model_capture(stack, stack_target)
    if capture is None:
        yield None
        return
    with capture.scripted(MODEL_RULES):
        yield capture


@pytest.fixture(scope="module")
def world(stack: Stack, journal: ModelJournal | None) -> Iterator[dict[str, int | None]]:
    """The fixture skills, indexed; then the baseline counts of the stack's collections."""
    for _ in skills_applied(stack, "caller-tools", SKILLS):
        yield qdrant(stack).point_counts(COLLECTIONS)


@pytest.fixture
def turns(stack: Stack, journal: ModelJournal | None, world: dict[str, int | None]) -> ToolTurns:
    return ToolTurns(stack, journal)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


TELEMETRY_TURN = Expect(sent=(BATTERY,), include=(BATTERY,))


# --- the store block ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(timeout_for(STORE_BLOCK))
def test_the_store_caches_by_content_restricts_search_to_the_supplied_tools_and_prunes_by_age(stack: Stack) -> None:
    from fakes.stack.caller_tools import CallerTool, CallerToolStore

    collection = f"e2e_caller_tools_probe_{os.getpid()}"
    forward = stack.forwards.get(stack.kube, *QDRANT)
    embed_calls: list[list[str]] = []
    clock = [1_000_000.0]  # the store's own clock (ms), handed to it: an instant, no timing of the stack

    async def request(method: str, path: str, body: dict[str, Any] | None) -> Any:
        answer = await fetch_through(forward, method, path, timeout=FETCH, json=body)
        assert answer.status_code == 200, f"qdrant {method} {path} answered {answer.status_code}: {answer.text[:300]}"
        return answer.json()["result"]

    async def embed(texts: list[str]) -> list[list[float]]:
        embed_calls.append(texts)
        return [char_hash(text) for text in texts]

    def tool(name: str, description: str) -> CallerTool:
        return CallerTool(name, f"{description} [{collection}]", {"type": "object", "properties": {}})

    alpha, beta = tool("alpha_search", "Searches alpha records"), tool("beta_lookup", "Looks up beta entries")
    gamma, delta = tool("gamma_fetch", "Fetches gamma blobs"), tool("delta_recent", "Lists recent delta events")
    store = CallerToolStore(request, embed, collection=collection, clock=lambda: clock[0])
    view = qdrant(stack)

    def run(step: Any, *args: Any) -> Any:  # each store call on its own loop: the view's reads are blocking
        return anyio.run(step, *args)

    try:
        run(store.ensure)
        assert collection in view.collections(), f"{collection} not listed after the store created it"
        ids = run(store.index, [alpha, beta])
        assert sorted(view.payload_values(collection) or []) == ["alpha_search", "beta_lookup"]
        embed_calls.clear()
        run(store.index, [alpha, beta])
        assert (view.payload_values(collection) or []).count("alpha_search") == 1, "re-indexing duplicated alpha"
        assert embed_calls == [], f"re-indexing unchanged definitions embedded again: {embed_calls}"
        run(store.index, [gamma])
        found = run(store.search, char_hash("Fetches gamma blobs"), ids, 3)
        assert "gamma_fetch" not in found, f"a search over alpha and beta returned the unsupplied gamma: {found}"
        assert sorted(found) == ["alpha_search", "beta_lookup"], f"search over alpha and beta found {found}"
        assert len(run(store.search, char_hash("alpha"), ids, 1)) == 1, "k=1 did not give exactly one result"
        clock[0] += 60_000  # a minute later on the store's clock, then prune what is older than half of that
        run(store.index, [delta])
        run(store.prune, 30_000)
        assert view.payload_values(collection) == ["delta_recent"], "prune(30 s) kept or dropped the wrong points"
    finally:
        run(store.drop)


def char_hash(text: str) -> list[float]:
    """A 1536-dimension character-hash embedding (the store block's own embedder, counting nothing but calls)."""
    vector = [0.0] * 1536
    for index, char in enumerate(text):
        vector[(ord(char) * 31 + index) % 1536] += 1.0
    return vector


# --- the round trip ----------------------------------------------------------------------------------------------


@pytest.mark.timeout(timeout_for(SKILL_INDEXED))
def test_the_caller_tool_and_catalog_collections_exist(stack: Stack, world: dict[str, int | None]) -> None:
    view = qdrant(stack)
    assert view.exists("caller_tools"), "the orchestrator never created the caller_tools collection"
    assert view.exists("tools"), "the orchestrator never created the tools collection"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_one_caller_tool_comes_back_as_a_tool_call(turns: ToolTurns) -> None:
    turn = turns.chat(ask(ASK_BATTERY), TELEMETRY_TURN, tools=[battery_tool()], what="one caller tool")
    chat = turn.chat
    assert chat is not None
    assert chat.finish_reason == "tool_calls", f"expected the turn to end in a tool call: {chat.describe()}"
    assert [c.name for c in chat.tool_calls] == [BATTERY], f"expected exactly one call of {BATTERY}: {chat.describe()}"
    call = chat.tool_calls[0]
    assert call.id, f"the tool call has no id: {chat.describe()}"
    assert DEVICE in call.arguments, f"the call's arguments do not name {DEVICE}: {call.arguments!r}"
    if turns.journal is not None:  # the stack relayed the model's own call: forced by the skill, unchanged
        planner = [r for r in turn.requests if r.emitted]
        assert planner, f"no model request answered with a tool call: {[r.line() for r in turn.requests]}"
        assert planner[-1].tool_choice == {"type": "function", "function": {"name": BATTERY}}, (
            f"the skill's ordered tool was not forced: {planner[-1].line()}"
        )
        emitted = planner[-1].emitted[0]
        assert (emitted.get("id"), emitted.get("arguments")) == (call.id, call.arguments), (
            f"the client got {call.id}/{call.arguments}, the model answered {emitted}"
        )


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_the_catalog_collections_are_untouched_by_caller_tools(
    stack: Stack, turns: ToolTurns, world: dict[str, int | None]
) -> None:
    turns.chat(ask(ASK_BATTERY), TELEMETRY_TURN, tools=[battery_tool()], what="one caller tool, again")
    view = qdrant(stack)
    now = view.point_counts(CATALOG)
    for name in CATALOG:
        assert now[name] == world[name], f"the {name} collection went from {world[name]} to {now[name]} points"
    names = view.payload_values("tools") or []
    assert BATTERY not in names, f"the caller tool {BATTERY} landed in the catalog's tools collection: {names}"
    assert not [n for n in names if str(n).startswith("caller:")], f"caller: names in the tools collection: {names}"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_the_turn_resumes_with_the_tool_result(turns: ToolTurns) -> None:
    call_id = "call_e2e_battery_1"
    messages = [
        *ask(ASK_BATTERY),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": BATTERY, "arguments": json.dumps({"device_id": DEVICE})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": READING},
    ]
    turn = turns.chat(messages, TELEMETRY_TURN, tools=[battery_tool()], what="resumed with the tool result")
    chat = turn.chat
    assert chat is not None
    assert chat.finish_reason == "stop", f"expected the resumed turn to finish: {chat.describe()}"
    assert chat.tool_calls == [], f"the resumed turn called a tool again: {chat.describe()}"
    assert "37" in chat.text, f"the answer does not carry the tool's reading: {chat.describe()}"
    if turns.journal is not None:  # the result reached the model with its call id, and its answer reached the client
        last = turn.requests[-1]
        assert {"call": call_id, "text": READING} in [
            {"call": m.get("tool_call_id"), "text": m.get("text")} for m in last.tool_results
        ], last.line()
        assert last.tool_choice is None, f"the ordered tool was forced again after its result: {last.line()}"
        assert chat.text == last.text, f"the client got {chat.text!r}, the model said {last.text!r}"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN * 3))
def test_more_tools_than_k_still_call_the_ordered_one_and_the_cache_counts_exactly(
    stack: Stack, turns: ToolTurns
) -> None:
    variant = " (five-tool set)"
    tools = [battery_tool(variant), *other_tools(variant)]
    sent = tuple(t["function"]["name"] for t in tools)
    expect = Expect(sent=sent, include=(BATTERY,))
    view = qdrant(stack)
    before = view.point_counts(("caller_tools", "tools"))
    chat = turns.chat(ask(ASK_BATTERY), expect, tools=tools, what="five caller tools").chat
    assert chat is not None
    assert chat.tool_calls, f"no tool call with five tools: {chat.describe()}"
    assert chat.tool_calls[0].name == BATTERY, f"the first call is not {BATTERY}: {chat.describe()}"
    after = view.point_counts(("caller_tools", "tools"))
    assert after["caller_tools"] == (before["caller_tools"] or 0) + 5, (
        f"caller_tools went from {before['caller_tools']} to {after['caller_tools']}, expected +5"
    )
    assert after["tools"] == before["tools"], f"the tools collection changed: {before['tools']} -> {after['tools']}"

    turns.chat(ask(ASK_BATTERY), expect, tools=tools, what="the same five tools resent")
    resent = view.point_count("caller_tools")
    assert resent == after["caller_tools"], f"resending identical definitions: {after['caller_tools']} -> {resent}"

    edited = [
        *tools[:-1],
        function_tool(sent[-1], "Reads the temperature of a server room, edited" + variant, {"id": {"type": "string"}}),
    ]
    turns.chat(ask(ASK_BATTERY), expect, tools=edited, what="one description edited")
    assert view.point_count("caller_tools") == after["caller_tools"] + 1, "editing one description did not add one"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_tool_choice_none_offers_nothing_and_calls_nothing(turns: ToolTurns) -> None:
    chat = turns.chat(
        ask(ASK_BATTERY),
        Expect(sent=(BATTERY,), none='tool_choice "none"'),
        tools=[battery_tool()],
        tool_choice="none",
        what='tool_choice "none"',
    ).chat
    assert chat is not None
    assert chat.tool_calls == [], f'tool_choice "none" still produced tool calls: {chat.describe()}'
    assert chat.finish_reason == "stop", chat.describe()


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_a_skill_that_refuses_caller_tools_offers_none(turns: ToolTurns) -> None:
    chat = turns.chat(
        ask(ASK_RACK),
        Expect(sent=(BATTERY,), none=f"skill {REFUSED} refuses caller tools"),
        tools=[battery_tool()],
        what=f"the refusing skill {REFUSED}",
    ).chat
    assert chat is not None
    assert chat.tool_calls == [], f"the refusing skill's turn called a tool: {chat.describe()}"
    assert REFUSAL in chat.text, f"the refusing skill did not answer {REFUSAL}: {chat.describe()}"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_an_open_webui_housekeeping_prompt_offers_no_tools(turns: ToolTurns) -> None:
    chat = turns.chat(
        ask(HOUSEKEEPING),
        Expect(sent=(BATTERY,), none="an Open WebUI housekeeping prompt"),
        tools=[battery_tool()],
        what="housekeeping prompt",
    ).chat
    assert chat is not None
    assert chat.tool_calls == [], f"the housekeeping prompt produced tool calls: {chat.describe()}"
    assert chat.finish_reason == "stop", chat.describe()


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_invoke_with_tools_hands_back_the_pending_call_without_a_result(turns: ToolTurns) -> None:
    turn = turns.invoke(ASK_BATTERY, TELEMETRY_TURN, tools=[battery_tool()], what="/invoke with a caller tool")
    record = turn.invocation
    assert record is not None
    assert record.status == "succeeded", f"/invoke with tools ended {record.describe()}: {record.error}"
    assert [c.name for c in record.pending_tool_calls] == [BATTERY], f"pending calls: {record.pending_tool_calls}"
    assert not record.has_result, f"a turn waiting for its tool result also carried a result: {record.describe()}"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_an_invalid_tool_name_is_refused_on_both_entry_points(turns: ToolTurns) -> None:
    bad = [{"type": "function", "function": {"name": "not valid!", "parameters": {"type": "object"}}}]
    answer = turns.invoke_post({"request": ASK_BATTERY, "tools": bad})
    assert answer.status_code == 400, f"/invoke took the tool name 'not valid!' with {answer.status_code}"
    with pytest.raises(ChatRejected, match="400") as refused:
        turns.chat(ask(ASK_BATTERY), Expect(sent=(), none="the request is refused"), tools=bad, what="bad tool name")
    assert refused.value.status == 400


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_submit_refuses_the_same_bad_name_through_the_client(turns: ToolTurns) -> None:
    """The harness's own client reports the refusal as InvokeRejected with the status (not a pending turn)."""
    with pytest.raises(InvokeRejected) as refused:
        turns.invoke(
            ASK_BATTERY,
            Expect(none="the request is refused"),
            tools=[{"type": "function", "function": {"name": "not valid!"}}],
        )
    assert refused.value.status == 400
