"""Cluster-free specs of the twin's planner (``fakes/stack/planner.py``): the tool-advertising contract, and each
bug switch breaking it, on the real fake model endpoint and the real fake Qdrant (sockets on 127.0.0.1), without a
twin. The cluster specs check the same contract end to end through ``kubectl port-forward``; these run in
``make test`` and name the planner's rule that broke.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import fakes.openai
import fakes.qdrant
from fakes.openai import OpenAIFake
from fakes.server import FakeHandle
from fakes.stack.caller_tools import CallerToolStore, cluster_qdrant, parse_tools
from fakes.stack.model import ModelClient, ModelFailed
from fakes.stack.planner import Plan, Planner
from fakes.stack.skills import SkillIndex

pytestmark = pytest.mark.timeout(60)

NS = "controller-agent"
TELEMETRY, REFUSED, READER = "skill-telemetry", "skill-refused", "skill-reader"
RULES = [
    {
        "name": "select-telemetry",
        "when": {"system": "skill selector", "last_user": "SN-4417"},
        "reply": {"text": TELEMETRY},
    },
    {"name": "select-refused", "when": {"system": "skill selector", "last_user": "SR-9"}, "reply": {"text": REFUSED}},
    {"name": "select-reader", "when": {"system": "skill selector", "last_user": "ISSUE-1"}, "reply": {"text": READER}},
    {
        "name": "forced",
        "when": {"tool_choice": "get_device_battery"},
        "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {"device_id": "SN-4417"}}]},
    },
    {
        "name": "unoffered",
        "when": {"last_user": "UNOFFERED", "last_role": "user"},
        "reply": {"tool_calls": [{"name": "get_device_temperature", "arguments": {}}]},
    },
    {
        "name": "read",
        "when": {"last_user": "ISSUE-1", "last_role": "user", "tools": ["issue-reader"]},
        "reply": {"tool_calls": [{"name": "issue-reader", "arguments": {"name": "skills"}}]},
    },
    {"name": "after-tool", "when": {"last_role": "tool"}, "reply": {"text": "done: {last_tool_result}"}},
]


def tool(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object", "properties": {}}},
    }


BATTERY = tool("get_device_battery", "Reads the battery level of a telemetry device")
FIVE = [
    BATTERY,
    tool("get_device_firmware", "Reads the firmware of a telemetry device"),
    tool("reboot_device", "Reboots a telemetry device"),
    tool("list_device_alarms", "Lists a device's alarms"),
    tool("archive_weather", "Archives weather observations"),
]


class Listed:
    """Just enough of an informer: the objects it was given, a watch that never fires."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects

    async def start(self, timeout: float) -> None:
        return None

    async def stop(self) -> None:
        return None

    def get(self, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects.get(name)

    def items(self) -> list[dict[str, Any]]:
        return list(self.objects.values())


class Catalog:
    """Just enough of a service's API client: Skills and Tools by name, informers whose watch nobody fires."""

    namespace = NS

    def __init__(self, qdrant_url: str) -> None:
        def skill(name: str, description: str, **spec: Any) -> dict[str, Any]:
            return {"metadata": {"name": name}, "spec": {"description": description, **spec}}

        self.objects: dict[str, dict[str, dict[str, Any]]] = {
            "skills.core.controller-agent.dev": {
                s["metadata"]["name"]: s
                for s in (
                    skill(TELEMETRY, "Battery level of telemetry device SN-4417", tools=["caller:get_device_battery"]),
                    skill(
                        REFUSED,
                        "State of sealed rack SR-9",
                        instructions="Reply exactly NO_TOOL",
                        allowCallerTools=False,
                    ),
                    skill(READER, "Reads issue ISSUE-1 with the issue reader", tools=["issue-reader"]),
                )
            },
            "tools.core.controller-agent.dev": {
                "issue-reader": {
                    "metadata": {"name": "issue-reader"},
                    "spec": {
                        "description": "Reads a collection",
                        "http": {"url": f"{qdrant_url}/collections/{{name}}"},
                    },
                }
            },
        }

    def informer(self, resource: str, on_event: Any = None, **params: Any) -> Listed:
        return Listed(self.objects.get(resource, {}))


@pytest.fixture(scope="module")
def model() -> Iterator[FakeHandle[OpenAIFake]]:
    with fakes.openai.serve(rules=RULES) as handle:
        yield handle


@pytest.fixture(scope="module")
def qdrant() -> Iterator[Any]:
    with fakes.qdrant.serve() as handle:
        yield handle


PlanRun = Callable[..., tuple[Plan, list[Any]]]


@pytest.fixture
def plan(model: FakeHandle[OpenAIFake], qdrant: Any) -> PlanRun:
    """``plan(text, tools, tool_choice=None, bugs=())`` -> (the Plan, the model's chat requests during it)."""

    def run(text: str, tools: list[dict[str, Any]], tool_choice: Any = None, bugs: tuple[str, ...] = ()) -> Any:
        async def main() -> Plan:
            async with httpx.AsyncClient(trust_env=False, timeout=10.0) as http:
                q = cluster_qdrant(http, qdrant.url)
                for name in ("skills", "caller_tools"):
                    await http.put(
                        f"{qdrant.url}/collections/{name}", json={"vectors": {"size": 1536, "distance": "Cosine"}}
                    )
                llm = ModelClient(http, base_url=f"{model.url}/v1", api_key="k")  # type: ignore[arg-type]
                catalog = Catalog(qdrant.url)
                skills = SkillIndex(catalog, q, llm, lambda line: None, retry=0.5)  # type: ignore[arg-type]
                await skills.start()
                await skills.stop()
                planner = Planner(
                    catalog=catalog.objects["tools.core.controller-agent.dev"].get,
                    model=llm,
                    skills=skills,
                    caller_tools=CallerToolStore(q, llm.embed),
                    http=http,  # type: ignore[arg-type]  # a plain httpx client stands in for ClusterClient
                    top_k=3,
                    bugs=frozenset(bugs),
                    log=lambda line: None,
                )
                return await planner.run([{"role": "user", "content": text}], parse_tools(tools), tool_choice)

        before = model.app.log().model_calls()[-1].seq if model.app.log().model_calls() else 0
        result = asyncio.run(main())
        return result, [c for c in model.app.log().model_calls() if c.seq > before and c.endpoint == "chat"]

    return run


def offered(calls: list[Any]) -> list[str]:
    return sorted({name for call in calls for name in call.tool_names})


def test_the_ordered_caller_tool_is_offered_forced_and_returned_bare(plan: PlanRun) -> None:
    result, calls = plan("Battery of telemetry device SN-4417?", FIVE)
    assert result.skill == TELEMETRY
    assert len(result.advertised) == 3
    assert "get_device_battery" in result.advertised
    assert calls[-1].tool_choice == {"type": "function", "function": {"name": "get_device_battery"}}
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_device_battery", '{"device_id":"SN-4417"}')]
    assert result.finish_reason == "tool_calls"


def test_tool_choice_none_offers_nothing(plan: PlanRun) -> None:
    result, calls = plan("Battery of telemetry device SN-4417?", [BATTERY], "none")
    assert offered(calls) == []
    assert result.tool_calls == []


@pytest.mark.parametrize(("bugs", "offers"), [((), []), (("refused-skill-advertises",), ["get_device_battery"])])
def test_a_refusing_skill_offers_no_caller_tools_unless_the_bug_is_on(
    plan: PlanRun, bugs: tuple[str, ...], offers: list[str]
) -> None:
    result, calls = plan("State of sealed rack SR-9?", [BATTERY], bugs=bugs)
    assert result.skill == REFUSED
    assert offered(calls) == offers


def test_the_prefix_leak_bug_offers_internal_names_and_the_model_refuses_them(plan: PlanRun) -> None:
    with pytest.raises(ModelFailed, match="planner: the model endpoint answered HTTP 400"):
        plan("Battery of telemetry device SN-4417?", [BATTERY], bugs=("caller-prefix-leak",))


@pytest.mark.parametrize(("bugs", "returned"), [((), []), (("unadvertised-tool-call",), ["get_device_temperature"])])
def test_a_call_of_an_unoffered_tool_is_dropped_unless_the_bug_is_on(
    plan: PlanRun, bugs: tuple[str, ...], returned: list[str]
) -> None:
    result, _ = plan("UNOFFERED please", [BATTERY], bugs=bugs)
    assert [c.name for c in result.tool_calls] == returned
    if not bugs:
        assert result.dropped == ["get_device_temperature"]
        assert "not offered" in result.text


def test_an_offered_catalog_tool_is_run_and_its_result_goes_back(plan: PlanRun) -> None:
    result, calls = plan("Read ISSUE-1 for me", [BATTERY])
    assert result.skill == READER
    assert "issue-reader" in result.advertised
    assert result.executed == ["issue-reader"]
    assert result.text.startswith("done: HTTP 200")
    assert [m.role for m in calls[-1].messages][-2:] == ["assistant", "tool"]
