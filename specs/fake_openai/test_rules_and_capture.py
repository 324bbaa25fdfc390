"""Scripting the fake model (Python, admin API, rules file; the default rule; tool_choice honoured) and reading back
what each turn advertised, what tool_choice it sent and which request a tool call answered."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.chat_completion import Choice

from fakes.openai import CallLog, OpenAIFake, RuleSpecError, Script
from fakes.server import FakeHandle
from specs.fake_openai.conftest import BATTERY_PARAMETERS, BATTERY_TOOL, KEY, WEATHER_TOOL, Rig, function_calls

AUTH = {"authorization": f"Bearer {KEY}"}
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "battery of SN-4417?"}]
BATTERY = {
    "name": "battery",
    "when": {"last_user": "battery", "tools": ["get_device_battery"]},
    "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {"device": "SN-4417"}}]},
}


def _ask(rig: Rig, messages: Sequence[Any] = USER, **kwargs: Any) -> Choice:
    answer: ChatCompletion = rig.sync.chat.completions.create(model="gpt-4o", messages=messages, **kwargs)
    return answer.choices[0]


def test_first_matching_rule_answers_and_the_default_answers_the_rest(rig: Rig) -> None:
    rig.app.add_rules(
        BATTERY, {"name": "weather", "when": {"last_user": {"regex": r"^weather in \w+"}}, "reply": {"text": "sunny"}}
    )
    assert function_calls(_ask(rig, tools=[BATTERY_TOOL]).message)[0].function.name == "get_device_battery"
    assert _ask(rig, [{"role": "user", "content": "weather in Oslo"}]).message.content == "sunny"
    assert _ask(rig, [{"role": "user", "content": "hi"}]).message.content == "fake reply to: hi"
    assert [c.rule for c in rig.app.log()] == ["battery", "weather", "default"]


def test_rule_conditions_on_system_prompt_tool_result_and_no_tools(rig: Rig) -> None:
    rig.app.add_rules(
        {"when": {"system": "SEALED_RACK"}, "reply": {"text": "SEALED_RACK_NO_TOOL"}},
        {"when": {"last_role": "tool"}, "reply": {"text": "The battery reads {last_tool_result}."}},
        {"when": {"no_tools": True}, "reply": {"text": "no tools here"}},
    )
    sealed = [{"role": "system", "content": "skill SEALED_RACK"}, *USER]
    assert _ask(rig, sealed, tools=[BATTERY_TOOL]).message.content == "SEALED_RACK_NO_TOOL"
    resumed = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_device_battery", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "37% remaining"},
    ]
    answer = _ask(rig, resumed, tools=[BATTERY_TOOL])
    assert (answer.message.content, answer.finish_reason) == ("The battery reads 37% remaining.", "stop")
    assert _ask(rig).message.content == "no tools here"


def test_tool_choice_none_skips_tool_call_rules(rig: Rig) -> None:
    rig.app.add_rules(BATTERY)
    answer = _ask(rig, tools=[BATTERY_TOOL], tool_choice="none")
    assert answer.message.tool_calls is None
    assert answer.finish_reason == "stop"
    assert rig.app.log().last().choice == "none"
    assert rig.app.log().last().callable_names == ()


def test_tool_choice_required_or_forced_makes_the_default_call_a_tool(rig: Rig) -> None:
    rig.app.add_rules({"when": {}, "reply": {"text": "words only"}})
    required = _ask(rig, tools=[WEATHER_TOOL, BATTERY_TOOL], tool_choice="required")
    assert function_calls(required.message)[0].function.name == "get_weather"
    forced = _ask(
        rig,
        tools=[WEATHER_TOOL, BATTERY_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_device_battery"}},
    )
    assert function_calls(forced.message)[0].function.name == "get_device_battery"
    assert rig.app.log().last().choice == "get_device_battery"


def test_a_rule_may_call_a_tool_that_was_not_advertised(rig: Rig) -> None:
    rig.app.add_rules({"when": {}, "reply": {"tool_calls": [{"name": "delete_everything", "arguments": {}}]}})
    answer = _ask(rig, tools=[BATTERY_TOOL])
    assert function_calls(answer.message)[0].function.name == "delete_everything"
    call = rig.app.log().last()
    assert call.emitted_names == ["delete_everything"]
    assert "delete_everything" not in call.tool_names


def test_ignore_tool_choice_lets_a_rule_break_the_contract_on_purpose(rig: Rig) -> None:
    rig.app.add_rules({**BATTERY, "ignore_tool_choice": True})
    answer = _ask(rig, tools=[BATTERY_TOOL], tool_choice="none")
    assert function_calls(answer.message)[0].function.name == "get_device_battery"


def test_times_spends_a_rule(rig: Rig) -> None:
    rig.app.add_rules({"when": {}, "reply": {"text": "once"}, "times": 1})
    assert _ask(rig).message.content == "once"
    assert (_ask(rig).message.content or "").startswith("fake reply to:")


def test_error_reply_with_status_and_headers(rig: Rig) -> None:
    rig.app.add_rules(
        {"when": {"last_user": "busy"}, "reply": {"error": {"status": 429, "headers": {"retry-after": "7"}}}}
    )
    import openai

    with pytest.raises(openai.RateLimitError) as caught:
        _ask(rig, [{"role": "user", "content": "busy?"}])
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.code == "rate_limit_exceeded"
    error = rig.app.log().last().error
    assert error is not None
    assert error["code"] == "rate_limit_exceeded"


def test_capture_of_tools_schemas_tool_choice_and_messages(rig: Rig) -> None:
    rig.app.add_rules(BATTERY)
    choice = {
        "type": "allowed_tools",
        "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_device_battery"}}]},
    }
    _ask(rig, [{"role": "system", "content": "sys"}, *USER], tools=[BATTERY_TOOL, WEATHER_TOOL], tool_choice=choice)
    call = rig.app.log().last()
    assert call.tool_names == ["get_device_battery", "get_weather"]
    assert call.tools[0].parameters == BATTERY_PARAMETERS
    assert call.tools[0].description == "Battery level of a device by serial number"
    assert call.tool_choice == choice
    assert call.callable_names == ("get_device_battery",)
    assert [(m.role, m.text) for m in call.messages] == [("system", "sys"), ("user", USER[0]["content"])]
    assert call.body["messages"][1] == USER[0]


def test_which_request_a_tool_call_answered_and_where_its_result_went(rig: Rig) -> None:
    rig.app.add_rules({"when": {"last_role": "tool"}, "reply": {"text": "done"}}, BATTERY)
    first = _ask(rig, tools=[BATTERY_TOOL])
    call_id = function_calls(first.message)[0].id
    _ask(rig, [{"role": "user", "content": "unrelated"}])
    _ask(
        rig,
        [
            *USER,
            first.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call_id, "content": "37%"},
        ],
        tools=[BATTERY_TOOL],
    )
    log = rig.app.log()
    assert log.answered_with(call_id).seq == log[0].seq
    assert [c.seq for c in log.results_for(call_id)] == [log[2].seq]
    with pytest.raises(LookupError, match="call_nope.*get_device_battery"):
        log.answered_with("call_nope")


def test_rules_and_capture_through_the_admin_api(served: Rig) -> None:
    with served.handle.client() as http:
        added = http.post("/_fake/openai/rules", json=[BATTERY, {"when": {}, "reply": {"text": "fallback"}}])
        assert added.status_code == 201
        assert [r["name"] for r in added.json()["added"]] == ["battery", "rule #2"]
        bad = http.post("/_fake/openai/rules", json={"when": {"bogus": 1}, "reply": {"text": "x"}})
        assert bad.status_code == 400
        assert "bogus" in bad.json()["error"]
        assert http.put("/_fake/openai/default", json={"text": "from admin"}).status_code == 200
        answer = served.sync.chat.completions.create(model="gpt-4o", messages=USER, tools=[BATTERY_TOOL])
        listed = http.get("/_fake/openai/rules").json()
        assert listed["rules"][0]["hits"] == 1
        assert listed["default"] == {"text": "from admin"}
        log = CallLog.from_admin(http.get("/_fake/openai/calls").json())
        assert log.last().tool_names == ["get_device_battery"]
        assert log.answered_with(function_calls(answer.choices[0].message)[0].id).rule == "battery"
        replaced = http.put("/_fake/openai/rules", json=[]).json()
        assert replaced["rules"] == []
        assert replaced["default"] == {"text": "from admin"}  # a bare list replaces the rules, not the default
        assert http.delete("/_fake/openai/rules").status_code == 200
        assert http.get("/_fake/openai/nope").status_code == 404


def test_reset_returns_to_the_rules_the_fake_started_with(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [BATTERY], "default": {"text": "file default"}}))
    fake = OpenAIFake(rules=Script.load(path))
    fake.add_rules({"when": {}, "reply": {"text": "added later"}})
    fake.set_default({"text": "changed"})
    fake.reset()
    assert [r["name"] for r in fake.rules.to_spec()["rules"]] == ["battery"]
    assert fake.rules.to_spec()["default"] == {"text": "file default"}


@pytest.mark.parametrize(
    "spec, complaint",
    [
        ({"reply": {}}, "needs 'text', 'tool_calls' or 'error'"),
        ({"when": {"last_user": {"regex": "("}}, "reply": {"text": "x"}}, "does not compile"),
        ({"when": {"tools": "x"}, "reply": {"text": "x"}}, "list of tool names"),
        ({"reply": {"text": "x", "pace": -1}}, "pace"),
        ({"reply": {"error": {"status": 200}}}, "400..599"),
        ({"reply": {"tool_calls": [{"arguments": {}}]}}, "name"),
        ({"reply": {"text": "x"}, "times": 0}, "times"),
        ({"when": {"endpoint": "embeddings"}, "reply": {"text": "x"}}, "endpoint"),
        ("not a rule", "give an object"),
    ],
)
def test_bad_rules_are_refused_naming_the_key(spec: Any, complaint: str) -> None:
    fake = OpenAIFake()
    with pytest.raises(RuleSpecError, match=complaint):
        fake.add_rules(spec)
    assert fake.rules.to_spec()["rules"] == []


def test_a_bad_rules_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text("{not json")
    with pytest.raises(RuleSpecError, match="rules.json"):
        Script.load(path)


def test_the_fake_openai_fixture_serves_on_a_socket_with_any_key(fake_openai: FakeHandle[OpenAIFake]) -> None:
    import openai

    assert fake_openai.served
    with openai.OpenAI(base_url=fake_openai.url + "/v1", api_key="whatever", max_retries=0, timeout=10.0) as client:
        answer = client.chat.completions.create(model="gpt-4o", messages=USER)
    assert answer.choices[0].message.content == "fake reply to: battery of SN-4417?"
    assert fake_openai.app.log().last().status == 200
