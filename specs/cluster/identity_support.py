"""What the identity (keying, continuity) and repository-gate specs share: subjects, budgets, seeding, turns, launches.

Everything goes the way it goes on minikube: credentials are seeded as the stack stores them
(:class:`specs.agent_controller.credentials.CredentialStore`, with the gateway's own key read from the cluster),
Redis sessions are
swept in one ``kubectl exec`` (:class:`~specs.agent_controller.redis_sessions.RedisSessions`),
chat turns stream through a port-forward to ``svc/agent-orchestrator-invoke:8081``
(:func:`specs.agent_controller.chat.facade_turn_sync`, the user's JWT minted with the secret read from
``e2e-openwebui-forward-jwt``), webhooks go through the gateway's forward, and the gateway's identity-link
API is called through the same forward with the bearer ``e2e-identity-link-token``.

Why the specs assert on a *launch*: a real Claude link cannot happen hermetically, so a credential is seeded at the
subject the gate should use and the spec requires an AgentRun; a gate that looks anywhere else parks and the spec
fails (specs/cluster/README.md §1). Negative controls assert that nothing launched. Upstream waited out a bare
window for that (60 s keying, 20 s continuity and read gate, 90 s for a parked chat turn); here each window is a
formula over the stack's profile (:mod:`specs.cluster.pacing`: resumes of a parked turn, the gateway's resume
wait), and where the stack says the turn is over (the gateway posts its comment, the chat answer ends),
:meth:`Launches.none_within` stops at that positive signal and then checks, and says which of the two ended the
wait. Failure-path budgets are upstream's (:mod:`specs.cluster.stack`, README §6): 900 s for a positive webhook
launch, 420 s for a chat launch and for a comment.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness import StopWaiting, wait_for_sync
from harness.chat import ChatTurn
from harness.fetch import fetch_through_sync
from harness.webhooks import issues_labeled_payload, send_webhook
from specs.agent_controller import github_seed
from specs.agent_controller.agentruns import AgentRunRecord, agent_runs_since
from specs.agent_controller.chat import facade_turn_sync
from specs.agent_controller.cluster_secrets import read_secret_value
from specs.agent_controller.credentials import CLAUDE_LOGIN, CLAUDE_SETUP_TOKEN, CredentialStore
from specs.agent_controller.github_journal import GitHubJournal
from specs.agent_controller.openwebui_jwt import mint_user_jwt
from specs.agent_controller.redis_sessions import RedisSessions
from specs.cluster.stack import (
    CHAT_LAUNCH,
    FETCH,
    GATEWAY,
    GITHUB,
    LABEL,
    OWNER,
    REPO,
    SENDER,
    Stack,
    Trigger,
)
from specs.cluster.stack import timeout_for as timeout_for

ORCHESTRATOR = ("svc/agent-orchestrator-invoke", 8081)
BEARER = "e2e-gateway-token"
IDENTITY_LINK_BEARER = "e2e-identity-link-token"
JWT_SECRET = ("e2e-openwebui-forward-jwt", "AGENT_OPENWEBUI_USER_JWT_SECRET")

CANONICAL = f"github:{SENDER}"
SHARED_SUBJECT = "client-integration-gateway"
"""The gateway bearer's own subject: every caller who presents only that bearer (``/invoke``, chat without a JWT)."""
REQUEST = "Delegate this to stub-agent: fix the failing test in e2e-org/e2e-repo"
"""Names the agent outright, so the planner's pick is not what these specs test."""
CREDENTIAL_AGENTS = ("stub-agent", "claude-code-swe-agent")
"""Agents whose launch proves the Claude credentials resolved: the ones declaring ``claude``/``claude-remote``."""
GATED_AGENT = "stub-swe-agent"
"""The e2e agent that declares ``github``, and so passes through the repository read gate."""
LINK_GITHUB = re.compile(r"link your GitHub account", re.IGNORECASE)
CLAUDE_NAMES = ("CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_LOGIN_CREDENTIALS_JSON")


def session_id(label: str) -> str:
    """A chat session nobody used before: it keys session state (an active run, a parked request)."""
    return f"e2e-{label}-{uuid.uuid4().hex[:12]}"


def chat_user(label: str) -> str:
    """A fresh Open WebUI user id: never linked unless a spec links it."""
    return f"e2e-{label}-{uuid.uuid4().hex[:8]}"


def chat_subject(user: str) -> str:
    return f"openwebui:{user}"


# --- credentials and sessions -------------------------------------------------------------------------------------


class Identities:
    """Seeding and clearing linked credentials (Secrets, as the stack stores them) and sweeping ``sess:*``."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.store = CredentialStore.from_cluster(stack.kube)
        self.sessions = RedisSessions(stack.kube)

    def reset(self, credential: str | None = None) -> None:
        """Upstream's ``beforeEach``: no credentials (of ``credential``'s kind: ``identity-link``, ``claude-auth``;
        all when ``None``), no sessions, so a leftover record cannot pass for a correctly resolved one."""
        self.store.delete_all(credential)
        self.sessions.sweep()

    def seed_claude(self, subject: str) -> None:
        self.store.seed_all_claude(subject)

    def seed_link(self, subject: str, login: str, *, expired: bool = False, refresh_token: bool = False) -> None:
        self.store.seed_github_link(subject, login, expired=expired, refresh_token=refresh_token)

    def drop_claude(self, subject: str) -> None:
        """Delete ``subject``'s Claude records. Specs that seed the shared subject call it when their module ends:
        shared credentials left behind would let a later spec's webhook turn launch under a gate that wrongly reads
        the bearer's subject (the subject-keying bug), hiding it from every spec that checks only for a launch or a
        reply (the happy path also checks ``AGENT_ACTOR_LOGIN``, which a shared-subject launch lacks)."""
        for record_type in (CLAUDE_SETUP_TOKEN, CLAUDE_LOGIN):
            self.store.delete(record_type, subject)

    def claude_subjects(self, kind: str) -> list[str]:
        """Subjects holding a Claude record of ``kind`` (``setup-token`` or ``login``)."""
        return self.store.subjects(CLAUDE_SETUP_TOKEN if kind == "setup-token" else CLAUDE_LOGIN)


# --- turns --------------------------------------------------------------------------------------------------------


class Chat:
    """Chat turns as an Open WebUI user (or as the shared bearer alone) through the orchestrator's forward."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.secret = read_secret_value(stack.kube, *JWT_SECRET)

    def turn(
        self,
        user: str,
        request: str,
        *,
        session: str | None = None,
        jwt_expires_in: float | None = None,
        without_jwt: bool = False,
        allow_park: bool = False,
        timeout: float = CHAT_LAUNCH,
    ) -> ChatTurn:
        """One streamed turn of ``request`` as ``user`` (``x-openwebui-user-jwt`` minted now, expiring in
        ``jwt_expires_in`` seconds when given; none with ``without_jwt``), within ``timeout`` seconds."""
        jwt = None if without_jwt else mint_user_jwt(self.secret.reveal(), user, expires_in=jwt_expires_in)
        chat_id = session or session_id(f"chat-{user}")
        return self.stack.through(
            ORCHESTRATOR,
            lambda fwd: facade_turn_sync(
                fwd,
                [{"role": "user", "content": request}],
                chat_id=chat_id,
                token=BEARER,
                user_jwt=jwt,
                timeout=timeout,
                allow_park=allow_park,
            ),
        )


@dataclass
class RepoTrigger(Trigger):
    """A :class:`Trigger` on any repository (the stack's own specs use ``e2e-org/e2e-repo``)."""

    owner: str = OWNER
    repo: str = REPO

    def new_comments(self) -> list[str]:
        posted = self.stack.through(GITHUB, lambda fwd: GitHubJournal(fwd).comments(self.owner, self.repo, self.issue))
        return posted[self.comments_before :]


def label_issue(
    stack: Stack,
    issue: int,
    *,
    sender: str = SENDER,
    label: str = LABEL,
    owner: str = OWNER,
    repo: str = REPO,
    title: str | None = None,
) -> RepoTrigger:
    """Open ``owner/repo#issue`` with ``label`` and send the signed ``labeled`` webhook from ``sender``."""
    full = f"{owner}/{repo}"
    text = title or f"{label} from {sender} ({issue})"
    stack.through(
        GITHUB, lambda fwd: github_seed.open_issue(fwd, issue, title=text, user=SENDER, repo=full, labels=(label,))
    )
    since = stack.kube.server_time()
    before = stack.run_names()
    comments_before = len(stack.through(GITHUB, lambda fwd: GitHubJournal(fwd).comments(owner, repo, issue)))
    payload = issues_labeled_payload(
        owner=owner,
        repo=repo,
        number=issue,
        title=text,
        label=label,
        sender=sender,
        body=f"Opened by the harness for issue {issue}.",
    )
    delivery = str(uuid.uuid4())
    sent = stack.through(
        GATEWAY,
        lambda fwd: send_webhook(
            fwd, "issues", payload, delivery=delivery, secret=stack.secret("GITHUB_WEBHOOK_SECRET")
        ),
    )
    assert 200 <= sent.status < 300, f"the gateway answered the webhook {sent.status}: {sent.answer}"
    return RepoTrigger(stack, issue, since, before, comments_before, sent.status, owner=owner, repo=repo)


# --- launches -----------------------------------------------------------------------------------------------------


@dataclass
class Launches:
    """AgentRuns created after :meth:`start` (on the API server's clock, leaving out those that existed)."""

    stack: Stack
    since: datetime
    before: set[str]

    @classmethod
    def start(cls, stack: Stack) -> Launches:
        return cls(stack, stack.kube.server_time(), stack.run_names())

    def runs(self) -> list[AgentRunRecord]:
        return [r for r in agent_runs_since(self.since, kube=self.stack.kube) if r.name not in self.before]

    def wait(self, what: str, timeout: float, *, answered: Callable[[], str | None] | None = None) -> AgentRunRecord:
        """The first run launched, within ``timeout`` seconds. ``answered()`` returning text means the turn was
        answered without a launch (a park or a refusal): the wait ends at once, quoting it."""

        def probe() -> AgentRunRecord | None:
            runs = self.runs()
            if runs:
                return runs[-1]  # the oldest: the one this turn launched first
            said = answered() if answered is not None else None
            if said is not None:
                raise StopWaiting(
                    f"the turn was answered but no AgentRun was launched: it parked or was refused. "
                    f"It said: {said[-600:]!r}"
                )
            return None

        found: AgentRunRecord = wait_for_sync(what, probe, timeout=timeout, interval=self.stack.interval)
        return found

    def none_within(self, window: float, why: str, *, processed: Callable[[], str | None] | None = None) -> str:
        """Assert that nothing launched: poll every wait interval for at most ``window`` seconds, stopping early once
        ``processed()`` gives the stack's own sign that the turn is over (then nothing more can launch for it);
        the check runs once more after either. Returns what ended the wait."""
        deadline = time.monotonic() + window
        ended = f"the {window:g} s window passed"
        while True:
            runs = self.runs()
            assert not runs, f"{why}: yet {[f'{r.name} ({r.agent})' for r in runs]} launched"
            signal = processed() if processed is not None else None
            if signal is not None:
                ended = f"the turn was processed ({signal[:120]!r})"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(self.stack.interval, remaining))
        runs = self.runs()
        assert not runs, f"{why}: yet {[f'{r.name} ({r.agent})' for r in runs]} launched"
        return ended


def secret_env(run: AgentRunRecord) -> list[str]:
    """The env var names the orchestrator requested for the run (``spec.secretEnv``; names, never values)."""
    return [str(n) for n in (run.raw.get("spec") or {}).get("secretEnv") or []]


def agent_ref(run: AgentRunRecord) -> str:
    return str((run.raw.get("spec") or {}).get("agentRef", ""))


# --- the gateway's identity-link API ------------------------------------------------------------------------------


def _identity_link(stack: Stack, route: str, subject: str) -> Any:
    return stack.through(
        GATEWAY,
        lambda fwd: fetch_through_sync(
            fwd,
            "GET",
            f"/identity-link/github/{route}",
            params={"subject": subject},
            headers={"authorization": f"Bearer {IDENTITY_LINK_BEARER}"},
            timeout=FETCH,
        ),
    )


def identity_link_token_status(stack: Stack, subject: str) -> int:
    """The status of ``GET /identity-link/github/token`` for ``subject``, and only that: 200 is a usable link,
    404 a dead one; the body holds a live token and never reaches a message."""
    return int(_identity_link(stack, "token", subject).status_code)


def identity_link_login(stack: Stack, subject: str) -> str | None:
    """The GitHub login the gateway reports for ``subject``, ``None`` on 404. Raises ``AssertionError`` otherwise."""
    answer = _identity_link(stack, "identity", subject)
    if answer.status_code == 404:
        return None
    assert answer.status_code == 200, f"identity lookup answered {answer.status_code}: {answer.text[:300]}"
    login = answer.json().get("githubLogin")
    return str(login) if login is not None else None
