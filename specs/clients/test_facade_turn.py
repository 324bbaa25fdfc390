"""The stack's chat turn (``specs.agent_controller.chat``): the generic ``chat_turn`` with the facade's session and
user headers, its model and its budget, against the fake model endpoint in-process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakes.openai
from fakes.server import FakeHandle
from specs.agent_controller.chat import CHAT_ID_HEADER, MODEL, USER_JWT_HEADER, facade_headers, facade_turn_sync

USER = [{"role": "user", "content": "hello"}]


@pytest.fixture
def fake() -> Iterator[FakeHandle]:
    with fakes.openai.in_process(models=[MODEL]) as handle:
        handle.app.add_rules({"when": {}, "reply": {"text": "hi there"}})
        yield handle


def test_a_turn_carries_the_session_and_user_headers_and_the_facades_model(fake: FakeHandle) -> None:
    turn = facade_turn_sync(
        fake.url, USER, chat_id="chat-42", user_jwt="h.p.s", token="t", transport=fake.async_transport()
    )
    assert (turn.text, turn.done) == ("hi there", True)
    (entry,) = fake.requests()
    assert (entry.headers[CHAT_ID_HEADER], entry.headers[USER_JWT_HEADER]) == ("chat-42", "h.p.s")
    assert entry.json()["model"] == "agent-orchestrator"


def test_no_user_header_unless_given_and_a_session_is_required() -> None:
    assert facade_headers("chat-1") == {CHAT_ID_HEADER: "chat-1"}
    with pytest.raises(ValueError, match="chat_id"):
        facade_headers(" ")
