"""Cluster specs: an agent that acts on GitHub launches only into a repository its caller can read.

Ported from upstream's repo-read-gate spec, every assertion with its budget. The rule: an agent that works in a
GitHub repository reads as the person who asked (and writes as the App); if that person cannot read the repository,
nothing launches. ``stub-swe-agent`` declares the providers of ``claude-code-swe-agent``, ``github`` included, so
its turns take a production SWE run's path. The fake GitHub has ``e2e-org/e2e-repo`` and answers 404 for
``e2e-org/e2e-private`` to ``e2e-user`` (how GitHub answers a token that cannot see a private repository). A read
check is a recorded ``GET /repos/<owner>/<name>``; the journal keeps each call's credential as a fingerprint, so
"checked with the user's own token" is a comparison with the fingerprint of ``Bearer gho_e2e-seeded`` (the token the
seeded link holds), never a token in a log.

Each spec starts from nothing, then links the chat user to ``e2e-user`` and seeds the Claude credentials at
``github:e2e-user``, so the only thing that can stop a launch is the read gate itself.

- Chat, readable repository: ``stub-swe-agent`` launches (420 s) with ``AGENT_TARGET_REPOSITORY`` and
  ``GITHUB_TOKEN``, and the read check used the user's token.
- Chat, private repository: the answer says ``can't see `e2e-org/e2e-private` ``, exactly one read check was made
  with the user's token, and nothing launches (five resumes of a parked turn, upstream's 20 s).
- Chat, no repository named: ``Which GitHub repository`` or ``can't see `e2e-org/...` `` (upstream's model may
  mistake a word for a repository name; the twin's extraction is deterministic and must ask), nothing launches.
- Chat, a bare name: resolved against the deployment's default owner; launches, checked with the user's token.
- Webhook ``ai-review`` (900 s): ``stub-swe-agent`` with ``AGENT_TARGET_REPOSITORY`` and no ``GITHUB_TOKEN`` (a
  webhook's subject must never hand a run a user's token), and no ``/login/`` call was made.

"Nothing launches" waits out a window after the answer (:func:`~specs.cluster.pacing.nothing_launched`, upstream's
20 s): a refused chat turn has ended (the answer is the stack's own sign), and the window is kept because the turn's
session could still be resumed by a regression, which would happen at one of the resumes inside it.
"""

from __future__ import annotations

import re

import pytest

from harness import unique_issue_number
from harness.targets import TargetChoice
from harness.timestamps import DEFAULT_SKEW
from specs.agent_controller.credentials import SEEDED_GITHUB_TOKEN
from specs.agent_controller.github_journal import GitHubJournal, credential_fingerprint
from specs.cluster.identity_support import (
    CANONICAL,
    GATED_AGENT,
    Chat,
    Identities,
    Launches,
    agent_ref,
    chat_subject,
    chat_user,
    label_issue,
    secret_env,
    session_id,
    timeout_for,
)
from specs.cluster.pacing import AT_SCALE_1, nothing_launched
from specs.cluster.stack import CHAT_LAUNCH, GITHUB, POSITIVE_LAUNCH, REFUSED_CHAT, SENDER, Stack

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs")]

GATE_CHAT = REFUSED_CHAT
"""Upstream's client budget for these chat turns (a refusal answers at once; a launch waits for the run)."""
SEEDED_USER_TOKEN = credential_fingerprint(f"Bearer {SEEDED_GITHUB_TOKEN}")
REVIEW_LABEL = "ai-review"


@pytest.fixture
def gate_user(stack: Stack) -> str:
    """A chat user linked to ``e2e-user``, with the Claude credentials at ``github:e2e-user``."""
    stack.seed_github()
    identities = Identities(stack)
    identities.reset()
    user = chat_user("gate")
    identities.seed_link(chat_subject(user), SENDER)
    identities.seed_claude(CANONICAL)
    return user


@pytest.fixture(scope="module")
def chat(stack: Stack) -> Chat:
    return Chat(stack)


def read_checks(stack: Stack, repo: str, since: float) -> list[str | None]:
    """Whose credential each read check of ``repo`` since ``since`` (epoch seconds) used."""
    return stack.through(GITHUB, lambda fwd: GitHubJournal(fwd).repo_reads(repo, since=since))


def journal_now(stack: Stack) -> float:
    """A ``since`` for the fake GitHub's journal (epoch seconds): the API server's clock, the harness's skew
    allowance early (the fake stamps entries with the clock of the node it runs on)."""
    return stack.kube.server_time().timestamp() - DEFAULT_SKEW


@pytest.mark.timeout(timeout_for(GATE_CHAT, CHAT_LAUNCH))
def test_chat_launches_into_a_readable_repository_checked_with_the_callers_token(
    stack: Stack, chat: Chat, gate_user: str
) -> None:
    launches, since = Launches.start(stack), journal_now(stack)

    turn = chat.turn(
        gate_user,
        f"Delegate this to {GATED_AGENT}: fix the failing test in e2e-org/e2e-repo",
        session=session_id("readable"),
        allow_park=True,
        timeout=GATE_CHAT,
    )

    run = launches.wait(f"{GATED_AGENT} to launch into a readable repository", CHAT_LAUNCH, answered=lambda: turn.text)
    assert agent_ref(run) == GATED_AGENT, f"{run.name} runs {agent_ref(run)}, not {GATED_AGENT}"
    names = secret_env(run)
    assert "AGENT_TARGET_REPOSITORY" in names, f"the run is not told which repository was checked: {names}"
    assert "GITHUB_TOKEN" in names, f"reads must run as the caller, the run has no GITHUB_TOKEN: {names}"
    checks = read_checks(stack, "e2e-org/e2e-repo", since)
    assert SEEDED_USER_TOKEN in checks, (
        f"no read check of e2e-org/e2e-repo used the caller's own token "
        f"({SEEDED_USER_TOKEN}); checks made with: {checks}"
    )


@pytest.mark.timeout(timeout_for(GATE_CHAT, nothing_launched(AT_SCALE_1)))
def test_chat_launches_nothing_into_a_repository_the_caller_cannot_read(
    stack: Stack, chat: Chat, gate_user: str
) -> None:
    launches, since = Launches.start(stack), journal_now(stack)

    turn = chat.turn(
        gate_user,
        f"Delegate this to {GATED_AGENT}: fix the failing test in e2e-org/e2e-private",
        session=session_id("private"),
        allow_park=True,
        timeout=GATE_CHAT,
    )

    assert re.search(r"can't see `e2e-org/e2e-private`", turn.text), f"no refusal naming the repo: {turn.describe()}"
    checks = read_checks(stack, "e2e-org/e2e-private", since)
    assert checks.count(SEEDED_USER_TOKEN) == 1, (
        f"the refusal must come from one read check with the caller's "
        f"token ({SEEDED_USER_TOKEN}); checks made with: {checks}"
    )
    launches.none_within(nothing_launched(stack.profile), "the caller cannot read e2e-org/e2e-private")


@pytest.mark.timeout(timeout_for(GATE_CHAT, nothing_launched(AT_SCALE_1)))
def test_chat_refuses_rather_than_launching_when_no_repository_is_named(
    stack: Stack, chat: Chat, gate_user: str, stack_target: TargetChoice
) -> None:
    launches = Launches.start(stack)

    turn = chat.turn(
        gate_user,
        f"Delegate this to {GATED_AGENT}: fix the failing test",
        session=session_id("unnamed"),
        allow_park=True,
        timeout=GATE_CHAT,
    )

    assert re.search(r"Which GitHub repository|can't see `e2e-org/", turn.text), f"not refused: {turn.describe()}"
    if stack_target.kind == "twin":  # no model in the extraction: it must ask, not guess
        assert "Which GitHub repository" in turn.text, f"the twin guessed a repository: {turn.text[-300:]!r}"
    launches.none_within(nothing_launched(stack.profile), "the request names no repository")


@pytest.mark.timeout(timeout_for(GATE_CHAT, CHAT_LAUNCH))
def test_chat_resolves_a_bare_repository_name_against_the_default_owner(
    stack: Stack, chat: Chat, gate_user: str
) -> None:
    launches, since = Launches.start(stack), journal_now(stack)

    turn = chat.turn(
        gate_user,
        f"Delegate this to {GATED_AGENT}: fix the failing test in the e2e-repo repository",
        session=session_id("bare"),
        allow_park=True,
        timeout=GATE_CHAT,
    )

    run = launches.wait(
        f"{GATED_AGENT} to launch into e2e-org/e2e-repo from its bare name", CHAT_LAUNCH, answered=lambda: turn.text
    )
    assert agent_ref(run) == GATED_AGENT, f"{run.name} runs {agent_ref(run)}, not {GATED_AGENT}"
    checks = read_checks(stack, "e2e-org/e2e-repo", since)
    assert SEEDED_USER_TOKEN in checks, (
        f"the bare name was not checked as e2e-org/e2e-repo with the caller's token; checks made with: {checks}"
    )


@pytest.mark.timeout(timeout_for(POSITIVE_LAUNCH))
def test_review_webhook_launches_into_the_events_repository_without_a_user_token(stack: Stack, gate_user: str) -> None:
    since = journal_now(stack)

    trigger = label_issue(stack, unique_issue_number(), sender=SENDER, label=REVIEW_LABEL)

    run = trigger.wait_run_created(POSITIVE_LAUNCH)
    assert agent_ref(run) == GATED_AGENT, f"the review route launched {agent_ref(run)}, not {GATED_AGENT}"
    names = secret_env(run)
    assert "AGENT_TARGET_REPOSITORY" in names, f"the run is not told the event's repository: {names}"
    assert "GITHUB_TOKEN" not in names, f"a shared webhook subject must never hand a run a user's token: {names}"
    logins = [
        call.path
        for call in stack.through(GITHUB, lambda fwd: GitHubJournal(fwd).calls(path_prefix="/login/", since=since))
    ]
    assert logins == [], f"a GitHub link was started under the webhook's subject: {logins}"
