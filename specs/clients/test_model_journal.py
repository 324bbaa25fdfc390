"""``specs.agent_controller.model_journal`` against the real fake model endpoint on a socket: what a turn offered,
per request, and
rules scripted for a spec and put back exactly.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import fakes.openai
from fakes.openai import OpenAIFake
from fakes.server import FakeHandle
from specs.agent_controller.model_journal import ModelJournal, ModelJournalUnreadable, advertised_names

pytestmark = pytest.mark.timeout(60)

BATTERY: dict[str, object] = {
    "type": "function",
    "function": {"name": "get_device_battery", "parameters": {"type": "object"}},
}


@pytest.fixture
def model() -> Iterator[FakeHandle[OpenAIFake]]:
    with fakes.openai.serve(
        rules=[{"name": "base", "when": {"last_user": "base"}, "reply": {"text": "from base"}}]
    ) as handle:
        yield handle


def ask(handle: FakeHandle[OpenAIFake], text: str, tools: list[dict[str, object]] | None = None) -> httpx.Response:
    body: dict[str, object] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    if tools:
        body["tools"] = tools
    return httpx.post(
        f"{handle.url}/v1/chat/completions", json=body, headers={"authorization": "Bearer k"}, timeout=10.0
    )


def test_requests_after_a_mark_carry_what_was_offered(model: FakeHandle[OpenAIFake]) -> None:
    journal = ModelJournal(model.url)
    ask(model, "before")
    mark = journal.mark()
    ask(model, "one", [BATTERY])
    ask(model, "two")
    after = journal.since(mark)
    assert [r.tools for r in after] == [("get_device_battery",), ()]
    assert all(r.seq > mark for r in after)
    assert "offered ['get_device_battery']" in after[0].line()


def test_a_refused_request_still_shows_the_names_it_offered(model: FakeHandle[OpenAIFake]) -> None:
    journal = ModelJournal(model.url)
    leaked: dict[str, object] = {
        "type": "function",
        "function": {"name": "caller:get_device_battery", "parameters": {"type": "object"}},
    }
    assert ask(model, "leak", [leaked]).status_code == 400
    request = journal.since(0)[-1]
    assert request.tools == ("caller:get_device_battery",)
    assert request.status == 400
    assert "refused" in request.line()


def test_scripted_rules_come_first_and_the_old_ones_come_back(model: FakeHandle[OpenAIFake]) -> None:
    journal = ModelJournal(model.url)
    before = journal.rules()
    with journal.scripted([{"name": "spec", "when": {"last_user": "base"}, "reply": {"text": "from spec"}}]):
        assert ask(model, "base").json()["choices"][0]["message"]["content"] == "from spec"
    assert journal.rules() == before
    assert ask(model, "base").json()["choices"][0]["message"]["content"] == "from base"


def test_a_bad_rule_is_the_fakes_400_named() -> None:
    with fakes.openai.serve() as handle, pytest.raises(ModelJournalUnreadable, match="HTTP 400"):
        ModelJournal(handle.url).set_rules([{"when": {"nonsense": 1}, "reply": {"text": "x"}}])


def test_names_come_from_chat_and_responses_shapes() -> None:
    body = {"tools": [BATTERY, {"type": "function", "name": "flat_tool"}, {"type": "web_search"}, "junk"]}
    assert advertised_names(body) == ("get_device_battery", "flat_tool")
