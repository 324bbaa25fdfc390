"""Cluster spec: the orchestrator's OpenAI-compatible chat facade, as Open WebUI and the specs use it.

What every other chat spec relies on, asserted once on its own (README §1, failure modes 18 and 19):

- a streamed turn is server-sent events: ``text/event-stream`` headers at once, one role-only frame first, chunks
  of one ``chatcmpl-`` completion, a finish reason, ``data: [DONE]``; without ``stream`` the same turn is one
  ``chat.completion`` object the ``openai`` package accepts;
- the bearer is checked (401, OpenAI's error shape);
- a turn for an agent streams the agent's reply, and ``x-openwebui-chat-id`` keys its session: the Redis key
  ``sess:chat:<id>`` exists afterwards (under a wrong header name every call would get a fresh, random session);
- a parked turn (the user has not linked their accounts) streams its link prompt at once and holds the stream open
  with keep-alives: the client, allowed to park, reads for four keep-alive intervals
  (:func:`~specs.cluster.pacing.parked_read`, upstream's 20 s, at least
  :data:`~specs.cluster.pacing.PROMPT_FLOOR`) and keeps the text it already received when its own deadline ends
  the read.

Every turn is also checked against the tool-advertising contract where the fake model's capture is there: these
turns bring no caller tools, so the model must be offered none.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from openai.types.chat import ChatCompletion

from harness import fetch_through_sync
from harness.chat import ChatRejected
from harness.targets import TargetChoice
from specs.agent_controller.credentials import CLAUDE_LOGIN, CLAUDE_SETUP_TOKEN, CredentialStore, decode_key
from specs.agent_controller.model_journal import ModelJournal
from specs.agent_controller.openwebui_jwt import E2E_SECRET, mint_user_jwt
from specs.agent_controller.redis_sessions import RedisSessions
from specs.cluster.pacing import AT_SCALE_1, jwt_valid, parked_read
from specs.cluster.stack import CHAT_LAUNCH, STUB_REPLY, TOOL_TURN, Stack, timeout_for
from specs.cluster.tools_support import (
    BEARER,
    ORCHESTRATOR,
    Expect,
    ToolTurns,
    model_capture,
)

pytestmark = [pytest.mark.cluster]

SHARED = "client-integration-gateway"
NO_TOOLS = Expect(none="the request brought no caller tools and no skill offers catalog tools")


@pytest.fixture(scope="module")
def turns(stack: Stack, stack_target: TargetChoice) -> ToolTurns:
    journal: ModelJournal | None = model_capture(stack, stack_target)
    return ToolTurns(stack, journal)


@pytest.fixture
def shared_subject_linked(stack: Stack) -> Iterator[str]:
    """Claude credentials at the shared subject (a chat turn without a user JWT runs as it); removed afterwards."""
    store = CredentialStore(stack.kube, decode_key(stack.secret("IDENTITY_LINK_ENCRYPTION_KEY").reveal()))
    store.seed_all_claude(SHARED)
    yield SHARED
    for record_type in (CLAUDE_SETUP_TOKEN, CLAUDE_LOGIN):
        store.delete(record_type, SHARED)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.mark.timeout(timeout_for(TOOL_TURN))
def test_a_streamed_turn_is_server_sent_events_from_a_role_frame_to_done(turns: ToolTurns) -> None:
    housekeeping = "### Task:\nSuggest 3-5 relevant tags for the chat.\n### Chat History:\nUSER: hello"
    chat = turns.chat(ask(housekeeping), NO_TOOLS, what="a streamed housekeeping turn").chat
    assert chat is not None
    assert chat.status == 200, chat.describe()
    assert chat.headers.get("content-type", "").startswith("text/event-stream"), chat.headers
    assert chat.role_frames == 1, f"expected exactly one role-only frame first: {chat.describe()}"
    assert chat.done, f"the stream did not end with [DONE]: {chat.describe()}"
    assert chat.finish_reason == "stop", chat.describe()
    assert (chat.completion_id or "").startswith("chatcmpl-"), f"completion id {chat.completion_id!r}"
    assert chat.text, f"the turn streamed no text: {chat.describe()}"


@pytest.mark.timeout(timeout_for(TOOL_TURN))
def test_without_stream_the_turn_is_one_chat_completion(stack: Stack) -> None:
    body = {"model": "agent-orchestrator", "messages": ask("### Task:\nGenerate a title.\nUSER: hi")}
    answer = stack.through(
        ORCHESTRATOR,
        lambda fwd: fetch_through_sync(
            fwd,
            "POST",
            "/v1/chat/completions",
            timeout=TOOL_TURN,
            content=json.dumps(body).encode(),
            headers={
                "authorization": f"Bearer {BEARER}",
                "content-type": "application/json",
                "x-openwebui-chat-id": f"e2e-chat-{uuid.uuid4().hex[:12]}",
            },
        ),
    )
    assert answer.status_code == 200, f"non-streamed chat answered {answer.status_code}: {answer.text[:300]}"
    completion = ChatCompletion.model_validate(answer.json())
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content, f"no text in {answer.text[:300]}"


@pytest.mark.timeout(timeout_for(TOOL_TURN))
def test_an_unknown_bearer_is_refused_with_openais_error_shape(stack: Stack) -> None:
    from specs.agent_controller.chat import facade_turn_sync

    with pytest.raises(ChatRejected) as refused:
        stack.through(
            ORCHESTRATOR,
            lambda fwd: facade_turn_sync(
                fwd, ask("hello"), chat_id="e2e-chat-bad-bearer", token="not-a-token", timeout=TOOL_TURN
            ),
        )
    assert refused.value.status == 401
    assert isinstance(refused.value.error, dict), f"401 without OpenAI's error object: {refused.value.body[:200]}"
    assert refused.value.error.get("message"), refused.value.body


@pytest.mark.usefixtures("clean_agent_runs")
@pytest.mark.timeout(timeout_for(CHAT_LAUNCH))
def test_an_agent_turn_streams_the_agents_reply_under_the_chat_session(
    stack: Stack, turns: ToolTurns, shared_subject_linked: str
) -> None:
    chat_id = f"e2e-chat-{uuid.uuid4().hex[:12]}"
    goal = f"Delegate this to stub-agent: say hello to chat {chat_id}"
    chat = turns.chat(ask(goal), NO_TOOLS, chat_id=chat_id, timeout=CHAT_LAUNCH, what="an agent turn").chat
    assert chat is not None
    assert chat.done, f"the agent turn did not end: {chat.describe()}"
    assert chat.text.startswith(STUB_REPLY), f"expected the stub agent's reply: {chat.describe()}"
    assert chat_id in chat.text, f"the reply does not echo the goal: {chat.describe()}"
    keys = RedisSessions(stack.kube).keys(f"sess:chat:{chat_id}").keys
    assert keys == [f"sess:chat:{chat_id}"], (
        f"no session keyed by the x-openwebui-chat-id header (failure mode 19): Redis has {keys}"
    )


@pytest.mark.timeout(timeout_for(parked_read(AT_SCALE_1), TOOL_TURN))
def test_a_parked_turn_streams_its_prompt_at_once_and_holds_the_stream(stack: Stack, turns: ToolTurns) -> None:
    user = f"e2e-unlinked-{uuid.uuid4().hex[:8]}"
    token = mint_user_jwt(E2E_SECRET, user, expires_in=jwt_valid(stack.profile))
    chat = turns.chat(
        ask("Delegate this to stub-agent: anything"),
        NO_TOOLS,
        user_jwt=token,
        allow_park=True,
        timeout=parked_read(stack.profile),
        what="a parked turn",
    ).chat
    assert chat is not None
    assert chat.parked, f"the stream ended instead of holding the parked turn: {chat.describe()}"
    assert "link your" in chat.text.lower(), f"the link prompt was not streamed before the hold: {chat.describe()}"
    assert chat.keepalives > 0, f"a held stream sends keep-alives: {chat.describe()}"
