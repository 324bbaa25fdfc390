"""The fake's provider quirks put on the wire exactly the shape each one names (read raw, over a socket), leave every
other frame as OpenAI's, and are refused by name when unknown, from Python and the admin API alike."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from fakes.openai import RuleSpecError
from fakes.openai.quirks import QUIRKS
from specs.fake_openai.conftest import KEY, Rig

CALLS = [
    {"name": "get_device_battery", "arguments": {"device": "SN-4417"}},
    {"name": "get_weather", "arguments": {"city": "Oslo"}},
]


def _raw(rig: Rig, *quirks: str, calls: bool = True) -> list[str]:
    """The data lines of one streamed answer with ``quirks``, as sent."""
    reply: dict[str, Any] = {"text": "Checking.", "quirks": list(quirks)}
    if calls:
        reply["tool_calls"] = CALLS
    rig.app.set_rules([{"when": {}, "reply": reply, "ignore_tool_choice": True}])
    body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    with httpx.Client(base_url=rig.handle.url, timeout=10.0, trust_env=False) as http:
        response = http.post("/v1/chat/completions", json=body, headers={"authorization": f"Bearer {KEY}"})
    assert response.status_code == 200
    return [line[len("data: ") :] for line in response.text.split("\n\n") if line.startswith("data: ")]


def _chunks(lines: list[str]) -> list[Any]:
    return [json.loads(line) for line in lines if line != "[DONE]"]


def _pieces(chunks: list[Any]) -> list[dict[str, Any]]:
    return [p for c in chunks if c for ch in c["choices"] if ch["delta"] for p in ch["delta"].get("tool_calls") or []]


def test_without_quirks_every_piece_has_an_index_and_only_the_first_an_id(served: Rig) -> None:
    lines = _raw(served)
    pieces = _pieces(_chunks(lines))
    assert all("index" in p for p in pieces)
    assert len([p for p in pieces if "id" in p]) == 2
    assert lines[-1] == "[DONE]"


def test_no_index_drops_the_index_of_every_piece_and_nothing_else(served: Rig) -> None:
    pieces = _pieces(_chunks(_raw(served, "no_index")))
    assert pieces
    assert not any("index" in p for p in pieces)
    assert len([p for p in pieces if "id" in p]) == 2


def test_repeat_ids_puts_the_call_id_on_every_piece(served: Rig) -> None:
    pieces = _pieces(_chunks(_raw(served, "repeat_ids")))
    ids = {p["index"]: p["id"] for p in pieces if p["function"].get("name")}
    assert all(p["id"] == ids[p["index"]] and p["type"] == "function" for p in pieces)


def test_explicit_nulls_send_absent_fields_as_null(served: Rig) -> None:
    chunks = _chunks(_raw(served, "explicit_nulls"))
    continuation = [p for p in _pieces(chunks) if not p["function"].get("name")]
    assert continuation
    assert all((p["id"], p["type"], p["function"]["name"]) == (None, None, None) for p in continuation)
    text = [c["choices"][0]["delta"] for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert all(d["tool_calls"] is None and "role" in d for d in text)


def test_arguments_object_sends_each_call_whole_as_an_object(served: Rig) -> None:
    pieces = _pieces(_chunks(_raw(served, "arguments_object")))
    assert [(p["function"]["name"], p["function"]["arguments"]) for p in pieces] == [
        (c["name"], c["arguments"]) for c in CALLS
    ]


@pytest.mark.parametrize("quirk, value", [("error_null", None), ("error_empty", {})])
def test_error_quirks_put_an_empty_error_on_every_chunk(served: Rig, quirk: str, value: Any) -> None:
    chunks = _chunks(_raw(served, quirk))
    assert all(c["error"] == value for c in chunks)


def test_delta_null_on_the_finishing_chunk(served: Rig) -> None:
    last = _chunks(_raw(served, "delta_null"))[-1]["choices"][0]
    assert (last["delta"], last["finish_reason"]) == (None, "tool_calls")


def test_null_frame_and_no_done(served: Rig) -> None:
    lines = _raw(served, "null_frame", "no_done", calls=False)
    assert lines[1] == "null"
    assert lines.count("null") == 1
    assert "[DONE]" not in lines


def test_the_real_openai_client_reads_the_empty_error_quirks(rig: Rig) -> None:
    rig.app.set_rules([{"when": {}, "reply": {"text": "a b", "quirks": ["error_null", "error_empty"]}}])
    stream = rig.sync.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "a b"


def test_an_unknown_quirk_is_refused_by_name(served: Rig) -> None:
    with pytest.raises(RuleSpecError, match=r"quirks: unknown \['no_indexes'\]"):
        served.app.add_rules({"when": {}, "reply": {"text": "x", "quirks": ["no_indexes"]}})
    with pytest.raises(RuleSpecError, match="quirks: give a list"):
        served.app.add_rules({"when": {}, "reply": {"text": "x", "quirks": "no_index"}})
    with httpx.Client(base_url=served.handle.url, timeout=10.0, trust_env=False) as http:
        refused = http.post("/_fake/openai/rules", json={"reply": {"text": "x", "quirks": ["bogus"]}})
        added = http.post("/_fake/openai/rules", json={"reply": {"text": "x", "quirks": list(QUIRKS)}})
    assert refused.status_code == 400
    assert "bogus" in refused.json()["error"]
    assert added.status_code == 201
    assert added.json()["added"][0]["reply"]["quirks"] == list(QUIRKS)
