"""Cluster specs: a chat turn keeps the identity it arrived with, from the first pre-flight to the last resume.

Ported from upstream's identity-continuity spec, every assertion with its budget. The incident behind it (failure
mode 40): Open WebUI mints the user's JWT with a short expiry; a parked chat turn is resumed about every 4 s, and a
resume that re-read the expired JWT fell back to the gateway bearer's shared subject, which held credentials, and
opened a pull request the user never linked for. Here Claude credentials live only at the shared subject
``client-integration-gateway``, so any turn that ends up running as that subject launches, and a launch is the
failure.

Every window is a formula over the deployed profile (:mod:`specs.cluster.pacing`; upstream's value at scale 1 in
brackets), so the parked turn is resumed as often, relative to them, on the twin at any time scale as on minikube:

- No JWT at all: the turn is the shared subject's own, and a credential agent launches (420 s): the control that
  proves the shared credentials work.
- A JWT that expires four resumes into the parked turn [15 s], held for fifteen resumes more [75 s]: the turn
  parks with the link prompt (the user has no GitHub link), the stream is still open when the client gives up
  (``parked``), and nothing launches, then or in the five resumes after [20 s]. The JWT's lifetime has a floor of
  :data:`~specs.cluster.pacing.JWT_FLOOR`: ``exp`` counts whole seconds, and the turn must reach its first
  pre-flight through a port-forward with the JWT still valid, which no time scale shortens; at the twin's default
  scale the floor is what holds (several resumes still run before and after the expiry).
- Another caller in the same conversation (no JWT, so the shared subject that holds credentials) cannot resume the
  owner's parked request (read for two keep-alives [10 s], at least :data:`~specs.cluster.pacing.PROMPT_FLOOR`):
  their turn never carries the owner's request, in its answer or in any AgentRun.
- A JWT that expired a minute ago: ``could not resolve caller identity``, and nothing launches (five resumes, or
  until the answer ended).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from harness.targets import TargetChoice
from specs.cluster.identity_support import (
    CREDENTIAL_AGENTS,
    LINK_GITHUB,
    SHARED_SUBJECT,
    Chat,
    Identities,
    Launches,
    agent_ref,
    chat_user,
    session_id,
    timeout_for,
)
from specs.cluster.pacing import AT_SCALE_1, jwt_lifetime, nothing_launched, owner_park, parked_hold
from specs.cluster.stack import CHAT_LAUNCH, JWT_EXPIRED_AGO, REFUSED_CHAT, Stack

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs")]

NO_IDENTITY = "could not resolve caller identity"


@pytest.fixture(scope="module", autouse=True)
def no_shared_credentials_after(stack: Stack) -> Iterator[None]:
    yield
    Identities(stack).drop_claude(SHARED_SUBJECT)


@pytest.fixture
def identities(stack: Stack) -> Identities:
    """Nothing linked, no sessions, and Claude credentials at the shared subject only."""
    stack.seed_github()
    found = Identities(stack)
    found.reset()
    found.seed_claude(SHARED_SUBJECT)
    return found


@pytest.fixture(scope="module")
def chat(stack: Stack) -> Chat:
    return Chat(stack)


def request_with(marker: str) -> str:
    return f"Delegate this to stub-agent: fix the failing test in e2e-org/e2e-repo ({marker})"


@pytest.mark.timeout(timeout_for(CHAT_LAUNCH))
def test_a_turn_without_a_jwt_runs_as_the_shared_subject(
    stack: Stack, identities: Identities, chat: Chat, stack_target: TargetChoice
) -> None:
    launches = Launches.start(stack)

    turn = chat.turn(
        chat_user("no-jwt"), request_with("no jwt"), without_jwt=True, allow_park=True, timeout=CHAT_LAUNCH
    )

    run = launches.wait(
        f"a launch on {SHARED_SUBJECT}'s credentials for a turn without a JWT", CHAT_LAUNCH, answered=lambda: turn.text
    )
    expected = ("stub-agent",) if stack_target.kind == "twin" else CREDENTIAL_AGENTS  # the twin's pick is the named
    assert agent_ref(run) in expected, f"{run.name} runs {agent_ref(run)}, not one of {expected}"


@pytest.mark.timeout(timeout_for(parked_hold(AT_SCALE_1), nothing_launched(AT_SCALE_1)))
def test_a_parked_turn_is_never_resumed_as_the_shared_subject_after_its_jwt_expires(
    stack: Stack, identities: Identities, chat: Chat
) -> None:
    user = chat_user("expiring")
    expires_in, hold = jwt_lifetime(stack.profile), parked_hold(stack.profile)
    launches = Launches.start(stack)

    turn = chat.turn(
        user,
        request_with("expiring jwt"),
        session=session_id("expiring"),
        jwt_expires_in=expires_in,
        allow_park=True,
        timeout=hold,
    )

    assert LINK_GITHUB.search(turn.text), f"an unlinked caller was not asked to link GitHub: {turn.describe()}"
    launches.none_within(
        nothing_launched(stack.profile),
        f"{user}'s JWT expired {expires_in:g} s into the parked turn (resumed every "
        f"{stack.profile.resume_every:g} s), and a resume ran as {SHARED_SUBJECT} instead of the caller it arrived as",
    )
    assert turn.parked, f"the parked turn did not stay open for the {hold:g} s hold: {turn.describe()}"


@pytest.mark.timeout(timeout_for(owner_park(AT_SCALE_1), CHAT_LAUNCH))
def test_another_caller_cannot_resume_the_owners_parked_request(
    stack: Stack, identities: Identities, chat: Chat
) -> None:
    session, marker = session_id("shared-conversation"), f"owner-request-{uuid.uuid4().hex[:10]}"
    owner = chat.turn(
        chat_user("owner"), request_with(marker), session=session, allow_park=True, timeout=owner_park(stack.profile)
    )
    assert LINK_GITHUB.search(owner.text), f"the owner's turn did not park on the link prompt: {owner.describe()}"
    launches = Launches.start(stack)

    other = chat.turn(
        chat_user("other"),
        request_with("the other caller's own request"),
        session=session,
        without_jwt=True,
        allow_park=True,
        timeout=CHAT_LAUNCH,
    )

    assert other.done, f"the other caller's turn did not finish: {other.describe()}"
    assert marker not in other.text, (
        f"the other caller ({SHARED_SUBJECT}) resumed the owner's parked request "
        f"on session {session}: {other.describe()}"
    )
    carrying = [r.name for r in launches.runs() if marker in json.dumps(r.raw)]
    assert not carrying, f"the owner's parked request launched under another caller's turn: {carrying}"


@pytest.mark.timeout(timeout_for(REFUSED_CHAT, nothing_launched(AT_SCALE_1)))
def test_an_expired_jwt_resolves_no_identity_and_launches_nothing(
    stack: Stack, identities: Identities, chat: Chat
) -> None:
    launches = Launches.start(stack)

    turn = chat.turn(
        chat_user("expired"),
        request_with("expired jwt"),
        jwt_expires_in=-JWT_EXPIRED_AGO,
        allow_park=True,
        timeout=REFUSED_CHAT,
    )

    assert NO_IDENTITY in turn.text, f"an expired JWT was not refused with {NO_IDENTITY!r}: {turn.describe()}"
    launches.none_within(
        nothing_launched(stack.profile),
        f"an expired JWT must not fall back to {SHARED_SUBJECT}",
        processed=lambda: turn.text if turn.done else None,
    )
