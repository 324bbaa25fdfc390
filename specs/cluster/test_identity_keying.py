"""Cluster specs: which subject a turn's credentials are read under, from every entry point.

Ported from upstream's identity-keying spec, every assertion with its budget. The regression behind it: a user
authorised Claude in the triage flow, went to chat, and was asked again, because the webhook path and the chat path
keyed credentials by different subjects. Both must converge on the canonical ``github:<lower-cased login>``. A
real Claude link cannot be made hermetically, so each spec seeds credentials at the subject the gate should use and
requires a *launch* (specs/cluster/identity_support.py). Each spec starts from nothing (upstream's ``beforeEach``:
credentials deleted, ``sess:*`` swept, the fake GitHub re-seeded).

- Webhook: credentials at ``github:<sender>`` launch within 900 s, requesting both Claude variables and
  ``AGENT_ACTOR_LOGIN``; credentials only at the shared subject, or only at another sender's, launch nothing (three
  trigger spacings, upstream's 60 s, or until the gateway has posted its answer, see below); the sender ``E2E-User``
  launches on the lower-cased canonical credentials (900 s).
- Chat (``openwebui:<id>`` linked to ``e2e-user``): canonical credentials launch a credential agent (420 s) with
  both Claude variables and no ``GITHUB_TOKEN``; credentials still under ``openwebui:<id>`` launch and are moved
  (not copied) to the canonical subject; another human's credentials never serve (no launch while the parked turn
  is read for twenty resumes, upstream's 90 s; theirs untouched); an
  expired GitHub link does not re-prompt and still launches; no link at all prompts ``link your GitHub account``
  and launches nothing.
- The gateway's identity-link API: an expired link with a refresh token refreshes (200, a later ``expiresAt``); one
  without a refresh token is 404 for its token but still reports its login; an unknown subject has no login.
- Credentials live in Secrets, so a Redis restart keeps them, and a chat turn afterwards launches with both Claude
  variables.
- Nothing seeded: one comment (420 s) asks for both Claude accounts at once (``link your``, ``2 accounts``,
  ``Claude Remote Control``) and never says ``couldn't start``.

Where upstream waited out a bare 60 s window for "nothing launched", the webhook controls stop as soon as the
gateway has posted its comment on the issue (the stack's own sign that the turn is over: a launch would have come
first), then check; the window (:func:`~specs.cluster.pacing.keying_window`, past the gateway's resume wait) stays
the cap. Upstream's planner is a real model, so it accepts either credential
agent for a chat turn; on the twin the planner is scripted and the request names ``stub-agent``, so the twin
requires exactly that agent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from harness import unique_issue_number, wait_for_sync
from harness.targets import TargetChoice
from specs.agent_controller import github_seed
from specs.agent_controller.bounce import bounce_pod
from specs.agent_controller.credentials import SEEDED_GITHUB_REFRESH_TOKEN
from specs.agent_controller.redis_sessions import REDIS_SELECTOR
from specs.cluster.identity_support import (
    CANONICAL,
    CLAUDE_NAMES,
    CREDENTIAL_AGENTS,
    LINK_GITHUB,
    REQUEST,
    SHARED_SUBJECT,
    Chat,
    Identities,
    Launches,
    RepoTrigger,
    agent_ref,
    chat_subject,
    chat_user,
    identity_link_login,
    identity_link_token_status,
    label_issue,
    secret_env,
    timeout_for,
)
from specs.cluster.pacing import AT_SCALE_1, keying_window, park_watch
from specs.cluster.stack import BOUNCE, CHAT_LAUNCH, GITHUB, LINK_COMMENT, POSITIVE_LAUNCH, SENDER, Stack

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs")]

SOMEONE_ELSE = "github:someone-else"


@pytest.fixture(scope="module", autouse=True)
def no_shared_credentials_after(stack: Stack) -> Iterator[None]:
    yield
    Identities(stack).drop_claude(SHARED_SUBJECT)


@pytest.fixture
def identities(stack: Stack) -> Identities:
    stack.seed_github()
    return Identities(stack)


@pytest.fixture(scope="module")
def chat(stack: Stack) -> Chat:
    return Chat(stack)


def expect_credential_agent(
    stack_target: TargetChoice, launches: Launches, what: str, answered: str | None = None
) -> str:
    """The run a chat turn launched, checked to be an agent that needs the credentials under test (so a planner
    mis-pick names itself instead of surfacing as a missing variable)."""
    run = launches.wait(what, CHAT_LAUNCH, answered=lambda: answered)
    ref = agent_ref(run)
    if stack_target.kind == "twin":
        assert ref == "stub-agent", f"the request names stub-agent, the planner launched {ref} ({run.name})"
    else:
        assert ref in CREDENTIAL_AGENTS, f"planner selected {ref} ({run.name}), not one of {CREDENTIAL_AGENTS}"
    return run.name


def comment_posted(trigger: RepoTrigger) -> Callable[[], str | None]:
    """The gateway's sign that a webhook turn is over: its comment on the issue."""

    def processed() -> str | None:
        posted = trigger.new_comments()
        return posted[-1] if posted else None

    return processed


# --- the webhook entry point --------------------------------------------------------------------------------------


@pytest.mark.timeout(timeout_for(POSITIVE_LAUNCH))
def test_webhook_turn_resolves_claude_credentials_from_the_sender(stack: Stack, identities: Identities) -> None:
    identities.reset("claude-auth")
    identities.seed_claude(CANONICAL)

    trigger = label_issue(stack, unique_issue_number(), sender=SENDER)
    run = trigger.wait_run_created(POSITIVE_LAUNCH)

    names = secret_env(run)
    assert "CLAUDE_CODE_OAUTH_TOKEN" in names, f"AgentRun {run.name} requests {names}"
    assert "CLAUDE_LOGIN_CREDENTIALS_JSON" in names, f"AgentRun {run.name} requests {names}"
    assert "AGENT_ACTOR_LOGIN" in names, f"the orchestrator did not resolve who the sender is: {names}"


@pytest.mark.timeout(timeout_for(keying_window(AT_SCALE_1)))
def test_webhook_turn_never_uses_the_shared_subjects_credentials(stack: Stack, identities: Identities) -> None:
    identities.reset("claude-auth")
    identities.seed_claude(SHARED_SUBJECT)

    trigger = label_issue(stack, unique_issue_number(), sender=SENDER)
    ended = Launches(stack, trigger.since, trigger.before).none_within(
        keying_window(stack.profile),
        f"only {SHARED_SUBJECT} holds Claude credentials, which every sender would share",
        processed=comment_posted(trigger),
    )
    print(f"absence check ended: {ended}")


@pytest.mark.timeout(timeout_for(keying_window(AT_SCALE_1)))
def test_one_senders_credentials_do_not_serve_another_sender(stack: Stack, identities: Identities) -> None:
    identities.reset("claude-auth")
    identities.seed_claude(SOMEONE_ELSE)

    trigger = label_issue(stack, unique_issue_number(), sender=SENDER)
    ended = Launches(stack, trigger.since, trigger.before).none_within(
        keying_window(stack.profile),
        f"only {SOMEONE_ELSE} holds Claude credentials and {SENDER} sent the webhook",
        processed=comment_posted(trigger),
    )
    print(f"absence check ended: {ended}")


@pytest.mark.timeout(timeout_for(POSITIVE_LAUNCH))
def test_webhook_casing_and_oauth_casing_are_one_subject(stack: Stack, identities: Identities) -> None:
    identities.reset("claude-auth")
    identities.seed_claude(CANONICAL)

    trigger = label_issue(stack, unique_issue_number(), sender="E2E-User")
    trigger.wait_run_created(POSITIVE_LAUNCH)


# --- chat and triage converge on one credential -------------------------------------------------------------------


@pytest.mark.timeout(timeout_for(CHAT_LAUNCH, CHAT_LAUNCH))
def test_chat_turn_resolves_credentials_from_the_principal(
    stack: Stack, identities: Identities, chat: Chat, stack_target: TargetChoice
) -> None:
    user = chat_user("chat-user")
    identities.reset()
    identities.seed_link(chat_subject(user), SENDER)
    identities.seed_claude(CANONICAL)
    launches = Launches.start(stack)

    turn = chat.turn(user, REQUEST)

    run = launches.wait(
        "a chat-driven AgentRun on the canonically keyed credentials", CHAT_LAUNCH, answered=lambda: turn.text
    )
    ref = agent_ref(run)
    if stack_target.kind == "twin":
        assert ref == "stub-agent", f"the request names stub-agent, the planner launched {ref} ({run.name})"
    else:
        assert ref in CREDENTIAL_AGENTS, f"planner selected {ref} ({run.name}), not one of {CREDENTIAL_AGENTS}"
    names = secret_env(run)
    for name in CLAUDE_NAMES:
        assert name in names, f"AgentRun {run.name} requests {names}, not {name}"
    assert "GITHUB_TOKEN" not in names, (
        f"the principal step is link-only, yet the run was handed the user's GitHub token: {names}"
    )


@pytest.mark.timeout(timeout_for(CHAT_LAUNCH, CHAT_LAUNCH))
def test_chat_adopts_a_pre_principal_credential_instead_of_asking_again(
    stack: Stack, identities: Identities, chat: Chat, stack_target: TargetChoice
) -> None:
    user = chat_user("chat-user")
    subject = chat_subject(user)
    identities.reset()
    identities.seed_link(subject, SENDER)
    identities.seed_claude(subject)
    launches = Launches.start(stack)

    turn = chat.turn(user, REQUEST)

    expect_credential_agent(
        stack_target, launches, "the adopted credential to carry a launch with no re-authorisation", turn.text
    )
    for kind in ("setup-token", "login"):
        subjects = identities.claude_subjects(kind)
        assert CANONICAL in subjects, f"the {kind} credential was not moved to {CANONICAL}: held by {subjects}"
        assert subject not in subjects, f"the {kind} credential was copied, not moved: still under {subject}"


@pytest.mark.timeout(timeout_for(park_watch(AT_SCALE_1)))
def test_chat_principal_never_serves_another_humans_credential(
    stack: Stack, identities: Identities, chat: Chat
) -> None:
    user = chat_user("chat-user")
    identities.reset()
    identities.seed_link(chat_subject(user), SENDER)
    identities.seed_claude(SOMEONE_ELSE)
    launches = Launches.start(stack)

    turn = chat.turn(user, REQUEST, allow_park=True, timeout=park_watch(stack.profile))

    runs = launches.runs()
    assert not runs, (
        f"{SOMEONE_ELSE}'s credential served {user}'s turn: {[r.name for r in runs]} launched "
        f"(the turn said {turn.text[-300:]!r})"
    )
    owners = identities.claude_subjects("login")
    assert SOMEONE_ELSE in owners, f"the other human's credential was moved or deleted: login records {owners}"


@pytest.mark.timeout(timeout_for(CHAT_LAUNCH, CHAT_LAUNCH))
def test_chat_does_not_reprompt_a_caller_whose_github_link_expired(
    stack: Stack, identities: Identities, chat: Chat, stack_target: TargetChoice
) -> None:
    user = chat_user("chat-user")
    identities.reset()
    identities.seed_link(chat_subject(user), SENDER, expired=True)
    identities.seed_claude(CANONICAL)
    launches = Launches.start(stack)

    turn = chat.turn(user, REQUEST)

    assert not LINK_GITHUB.search(turn.text), f"an expired link re-prompted the caller: {turn.text[-400:]!r}"
    expect_credential_agent(
        stack_target, launches, "an AgentRun launched from a stale-link caller's principal", turn.text
    )


@pytest.mark.timeout(timeout_for(park_watch(AT_SCALE_1)))
def test_chat_prompts_a_caller_with_no_link_and_launches_nothing(
    stack: Stack, identities: Identities, chat: Chat
) -> None:
    user = chat_user("chat-user")
    identities.reset()
    identities.seed_claude(CANONICAL)
    launches = Launches.start(stack)

    turn = chat.turn(user, REQUEST, allow_park=True, timeout=park_watch(stack.profile))

    assert LINK_GITHUB.search(turn.text), f"an unlinked caller was not asked to link GitHub: {turn.describe()}"
    runs = launches.runs()
    assert not runs, f"an unlinked caller's turn launched {[r.name for r in runs]} on {CANONICAL}'s credentials"


# --- the gateway's identity-link API: refresh ---------------------------------------------------------------------

REFRESH_SUBJECT = "openwebui:e2e-refresh-user"


def test_expired_link_with_a_refresh_token_is_renewed(stack: Stack, identities: Identities) -> None:
    identities.store.delete_all("identity-link")
    # The fake GitHub honours the seeded refresh token as GitHub honours a real one: only with the App's secret.
    stack.through(GITHUB, lambda fwd: github_seed.register_refresh_token(fwd, SENDER, SEEDED_GITHUB_REFRESH_TOKEN))
    identities.seed_link(REFRESH_SUBJECT, SENDER, expired=True, refresh_token=True)
    before = identities.store.github_link_expiry(REFRESH_SUBJECT)
    now = stack.kube.server_time()
    assert before is not None, f"the seeded link of {REFRESH_SUBJECT} has no expiresAt"
    assert before < now, f"the seeded link expires at {before}, not before now ({now})"

    status = identity_link_token_status(stack, REFRESH_SUBJECT)
    assert status == 200, (
        f"the gateway answered {status} for an expired link that holds a refresh token: it "
        "read the link as dead instead of refreshing it (was client_secret sent?)"
    )

    after = identities.store.github_link_expiry(REFRESH_SUBJECT)
    assert after is not None, f"the refreshed link of {REFRESH_SUBJECT} has no expiresAt"
    assert after > stack.kube.server_time(), f"the refreshed link expires at {after}, already past"
    assert after > before, f"expiresAt did not move forward: {before} -> {after}"


def test_expired_link_without_a_refresh_token_still_reports_its_login(stack: Stack, identities: Identities) -> None:
    identities.store.delete_all("identity-link")
    identities.seed_link(REFRESH_SUBJECT, SENDER, expired=True)

    status = identity_link_token_status(stack, REFRESH_SUBJECT)
    assert status == 404, f"an expired link with no refresh token answered {status}, not 404 (dead token)"
    login = identity_link_login(stack, REFRESH_SUBJECT)
    assert login == SENDER, f"the identity of an expired link should still resolve to {SENDER}, got {login!r}"


def test_identity_lookup_is_404_when_nothing_is_linked(stack: Stack, identities: Identities) -> None:
    identities.store.delete_all("identity-link")
    login = identity_link_login(stack, "openwebui:nobody-at-all")
    assert login is None, f"a subject with no link resolved to {login!r}"


# --- linked credentials survive a Redis restart -------------------------------------------------------------------


@pytest.mark.disruptive
@pytest.mark.timeout(timeout_for(BOUNCE))
def test_credentials_and_link_survive_a_redis_restart(stack: Stack, identities: Identities) -> None:
    subject = chat_subject(chat_user("durability-user"))
    identities.reset()
    identities.seed_link(subject, SENDER)
    identities.seed_claude(CANONICAL)
    for kind in ("setup-token", "login"):
        assert CANONICAL in identities.claude_subjects(kind), f"the seeded {kind} credential is not stored"
    assert identities.store.has_github_link(subject), f"the seeded GitHub link of {subject} is not stored"

    bounce = bounce_pod(stack.kube, REDIS_SELECTOR, new_name=True, timeout=BOUNCE, interval=stack.interval)
    print(f"replaced Redis pod {bounce.old} with {bounce.new}; Ready in {bounce.seconds:.1f}s")

    for kind in ("setup-token", "login"):
        held = identities.claude_subjects(kind)
        assert CANONICAL in held, f"the {kind} credential did not survive the Redis restart: held by {held}"
    assert identities.store.has_github_link(subject), f"the GitHub link of {subject} did not survive the restart"


@pytest.mark.disruptive
@pytest.mark.timeout(timeout_for(BOUNCE, CHAT_LAUNCH, CHAT_LAUNCH))
def test_a_turn_after_a_redis_restart_launches_instead_of_asking_to_relink(
    stack: Stack, identities: Identities, chat: Chat, stack_target: TargetChoice
) -> None:
    user = chat_user("durability-user")
    identities.reset()
    identities.seed_link(chat_subject(user), SENDER)
    identities.seed_claude(CANONICAL)
    bounce_pod(stack.kube, REDIS_SELECTOR, new_name=True, timeout=BOUNCE, interval=stack.interval)
    launches = Launches.start(stack)

    turn = chat.turn(user, REQUEST)

    name = expect_credential_agent(
        stack_target, launches, "an AgentRun on credentials that outlived the Redis restart", turn.text
    )
    run = next(r for r in launches.runs() if r.name == name)
    for claude in CLAUDE_NAMES:
        assert claude in secret_env(run), f"AgentRun {name} requests {secret_env(run)}, not {claude}"


# --- a turn needing two credentials asks for both at once ---------------------------------------------------------


@pytest.mark.timeout(timeout_for(LINK_COMMENT))
def test_a_turn_needing_two_credentials_asks_for_both_in_one_comment(stack: Stack, identities: Identities) -> None:
    identities.reset()

    trigger = label_issue(stack, unique_issue_number(), sender=SENDER)

    def link_prompt() -> str | None:
        posted = [c for c in trigger.new_comments() if "link your" in c]
        return posted[-1] if posted else None

    body = wait_for_sync(
        f"the link-required comment on issue #{trigger.issue}",
        link_prompt,
        timeout=LINK_COMMENT,
        interval=stack.interval,
    )
    assert "2 accounts" in body, f"the prompt does not ask for both accounts at once: {body!r}"
    assert "Claude Remote Control" in body, f"the prompt does not name Claude Remote Control: {body!r}"
    assert "couldn't start" not in body, f"a link step was deferred to a later turn: {body!r}"
