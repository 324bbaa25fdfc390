"""Cluster spec: the caller-tool index is skipped at or below the threshold, and used above it.

The product prunes caller tools to the top K (``callerToolTopK``: 3 in e2e) before the planner sees them, and skips
the index entirely when there is nothing to prune: with no more caller tools than K, a turn embeds no definition,
calls Qdrant's ``caller_tools`` collection not at all and writes no point (README "Promises the cluster specs
guard"). Above K the index is what ranks them: definitions embedded, points written, a search restricted to the
request's own tools.

What each turn did is read from three places: exact point counts of ``caller_tools`` (any Qdrant); the fake Qdrant's
request journal (``GET /_fake/requests``; always on the stack twin, skipped against a real Qdrant, which keeps none);
and the fake model endpoint's capture (the texts sent for embedding; where the fake model is the orchestrator's).
The definitions carry a run token and a set name, so they are new to the cache on every run (failure mode 21) and a
skipped index is not mistaken for a cache hit. Dispatch is deterministic (failure mode 25): a fixture skill orders
the battery tool, so both turns end in that call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from harness.fetch import fetch_through_sync
from harness.qdrant import CALLER_TOOLS
from harness.qdrant import DEFAULT_TIMEOUT as QDRANT_EXCHANGE
from harness.targets import TargetChoice
from specs.agent_controller.model_journal import ModelJournal
from specs.cluster.stack import Stack, timeout_for
from specs.cluster.tools_support import (
    QDRANT,
    SKILL_INDEXED,
    TOOL_TURN,
    TOP_K,
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
DEVICE = "SN-7730"
SKILL = "e2e-caller-tool-index"
ASK = f"What is the battery level of indexed telemetry device {DEVICE}? Use my device tool."
COLLECTION_PATH = f"/collections/{CALLER_TOOLS}"

SKILLS = [
    skill_manifest(
        SKILL,
        "caller-tool-index",
        {
            "description": f"Reports the battery level of indexed telemetry device {DEVICE} through the caller's "
            f"{BATTERY} tool (e2e fixture).",
            "instructions": f"Call caller:{BATTERY} with the device id the user names, then report its battery level.",
            "tools": [f"caller:{BATTERY}"],
            "allowCallerTools": True,
        },
    )
]
MODEL_RULES = [
    {"name": "index-select-skill", "when": {"system": "skill selector", "last_user": DEVICE}, "reply": {"text": SKILL}},
    {
        "name": "index-battery-call",
        "when": {"tool_choice": BATTERY, "last_user": DEVICE},
        "reply": {"tool_calls": [{"name": BATTERY, "arguments": {"device_id": DEVICE}}]},
    },
]
OTHERS = (
    ("get_device_firmware", "Reads the firmware version of an indexed device"),
    ("reboot_device", "Reboots an indexed device"),
    ("list_rack_alarms", "Lists the open alarms of an indexed rack"),
    ("get_room_temperature", "Reads the temperature of an indexed server room"),
)


def tool_set(count: int, set_name: str) -> list[dict[str, Any]]:
    """The battery tool and ``count - 1`` others, every description marked with ``set_name`` and the run token."""
    battery = function_tool(
        BATTERY, f"Reads the battery level of a device by its id ({set_name})", {"device_id": {"type": "string"}}
    )
    others = [function_tool(name, f"{text} ({set_name})", {"id": {"type": "string"}}) for name, text in OTHERS]
    return [battery, *others[: count - 1]]


class IndexTraffic:
    """What one turn did to the caller-tool index: ``qdrant`` (the fake Qdrant's journal of requests to the
    collection, ``None`` against a Qdrant that keeps no journal) and ``embedded`` (texts of ``set_name``'s
    definitions sent for embedding, ``None`` without the fake model's capture)."""

    def __init__(self, stack: Stack, journal: ModelJournal | None, set_name: str) -> None:
        self.stack = stack
        self.journal = journal
        self.set_name = set_name
        self.qdrant_mark = self._qdrant_seq()
        self.model_mark = journal.mark() if journal else 0

    def qdrant(self) -> list[str] | None:
        entries = self._qdrant_entries()
        if entries is None:
            return None
        return [f"{e['method']} {e['path']}" for e in entries if int(e.get("seq", 0)) > (self.qdrant_mark or 0)]

    def embedded(self) -> list[str] | None:
        if self.journal is None:
            return None
        texts: list[str] = []
        for request in self.journal.since(self.model_mark, endpoint="embeddings"):
            body = request.raw.get("body")
            given = body.get("input") if isinstance(body, dict) else None
            texts += [t for t in (given if isinstance(given, list) else [given]) if isinstance(t, str)]
        return [t for t in texts if self.set_name in t]

    def _qdrant_seq(self) -> int | None:
        entries = self._qdrant_entries()
        return None if entries is None else max((int(e.get("seq", 0)) for e in entries), default=0)

    def _qdrant_entries(self) -> list[dict[str, Any]] | None:
        forward = self.stack.forwards.get(self.stack.kube, *QDRANT)
        answer = fetch_through_sync(
            forward, "GET", "/_fake/requests", params={"path_prefix": COLLECTION_PATH}, timeout=QDRANT_EXCHANGE
        )
        if answer.status_code == 404:  # a real Qdrant: no journal to read
            return None
        assert answer.status_code == 200, (
            f"the fake Qdrant's journal answered {answer.status_code}: {answer.text[:300]}"
        )
        entries = answer.json().get("requests")
        assert isinstance(entries, list), f"the fake Qdrant's journal is not a request list: {answer.text[:300]}"
        return [e for e in entries if isinstance(e, dict) and _in_collection(str(e.get("path", "")))]


def _in_collection(path: str) -> bool:
    """The collection or below it (``path_prefix`` alone also matches a longer collection name)."""
    path = path.split("?")[0]
    return path == COLLECTION_PATH or path.startswith(COLLECTION_PATH + "/")


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
    yield from skills_applied(stack, "caller-tool-index", SKILLS)


@pytest.fixture
def turns(stack: Stack, journal: ModelJournal | None, skill: list[str]) -> ToolTurns:
    return ToolTurns(stack, journal)


def battery_turn(turns: ToolTurns, tools: list[dict[str, Any]], what: str) -> None:
    names = tuple(t["function"]["name"] for t in tools)
    chat = turns.chat(
        [{"role": "user", "content": ASK}], Expect(sent=names, include=(BATTERY,)), tools=tools, what=what
    )
    assert chat.chat is not None
    assert [c.name for c in chat.chat.tool_calls] == [BATTERY], f"{what}: expected the ordered {BATTERY} call: " + (
        chat.chat.describe()
    )


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_no_more_tools_than_k_skip_the_index(stack: Stack, turns: ToolTurns) -> None:
    set_name = f"index threshold set {uuid.uuid4().hex[:8]}, K tools"  # new to the cache on a retry too
    tools = tool_set(TOP_K, set_name)
    before = qdrant(stack).point_count(CALLER_TOOLS)
    traffic = IndexTraffic(stack, turns.journal, set_name)  # marked after the spec's own count
    battery_turn(turns, tools, f"{TOP_K} caller tools (K={TOP_K})")
    promise = f"with {len(tools)} caller tools, no more than K={TOP_K}, the caller-tool index must be skipped"
    calls = traffic.qdrant()  # read before the spec's own count below reaches the journal
    after = qdrant(stack).point_count(CALLER_TOOLS)
    assert after == before, f"{promise}; {CALLER_TOOLS} went from {before} to {after} points"
    embedded = traffic.embedded()
    assert not embedded, f"{promise}; the turn sent the definitions for embedding: {embedded}"
    assert not calls, f"{promise}; Qdrant saw {calls}"


@pytest.mark.timeout(timeout_for(SKILL_INDEXED, TOOL_TURN))
def test_more_tools_than_k_use_the_index(stack: Stack, turns: ToolTurns) -> None:
    set_name = f"index threshold set {uuid.uuid4().hex[:8]}, K+1 tools"  # new to the cache on a retry too
    tools = tool_set(TOP_K + 1, set_name)
    before = qdrant(stack).point_count(CALLER_TOOLS)
    traffic = IndexTraffic(stack, turns.journal, set_name)  # marked after the spec's own count
    battery_turn(turns, tools, f"{TOP_K + 1} caller tools (K={TOP_K})")
    promise = f"with {len(tools)} caller tools, more than K={TOP_K}, the caller-tool index ranks them"
    calls = traffic.qdrant()
    after = qdrant(stack).point_count(CALLER_TOOLS)
    assert after == (before or 0) + len(tools), f"{promise}; {CALLER_TOOLS} went from {before} to {after} points"
    embedded = traffic.embedded()
    assert embedded is None or len(embedded) == len(tools), f"{promise}; embedded for this set: {embedded}"
    searches = [c for c in calls or [] if c == f"POST {COLLECTION_PATH}/points/search"]
    assert calls is None or searches, f"{promise}; no search of {CALLER_TOOLS}, Qdrant saw {calls}"
