"""What the stack's cluster specs share: names, markers, failure-path budgets, and a turn from trigger to comment.

Everything is reached like on minikube: kubectl verbs through the pinned :class:`harness.Kube`, and the gateway
and the fake GitHub through session port-forwards (``forwards.get`` reopens a forward whose pod was restarted).
The :class:`Stack` carries the session's timing profile (``stack.profile``): every pacing, negative window and
wait interval is a formula over it (:mod:`specs.cluster.pacing`). The literals below are failure-path budgets only
(README §6); :func:`timeout_for` sizes a spec's pytest-timeout so that its chained waits fit (failure mode 43:
upstream chained 420 + 300 + 180 s inside 600 s tests).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from harness import (
    ForwardPool,
    Kube,
    PortForward,
    PortForwardBroken,
    PortForwardDied,
    PortForwardGone,
    StopWaiting,
    wait_for_sync,
)
from harness.webhooks import WebhookDelivery, issues_labeled_payload, send_webhook
from specs.agent_controller import github_seed
from specs.agent_controller.agentruns import AGENTRUN_RESOURCE, AgentRunRecord, agent_runs_since
from specs.agent_controller.cluster_secrets import SecretValue, read_secret_value
from specs.agent_controller.github_journal import GitHubCall, GitHubJournal
from specs.agent_controller.timing import Profile
from specs.cluster.pacing import wait_interval

OWNER, REPO = "e2e-org", "e2e-repo"
LABEL = "ai-triage"
SENDER = "e2e-user"
SUBJECT = f"github:{SENDER}"
GATEWAY = ("svc/agent-controller-integration-gateway", 8090)
GITHUB = ("svc/fake-github", 80)
GATEWAY_SECRETS = "e2e-integration-gateway-secrets"

REPLY_MARKER = "<!-- agent-controller:reply -->"
ERROR_PREFIX = "Something went wrong processing this:"
STUB_REPLY = "stub-agent-reply"
LEGACY_NO_REPLY = "produced no reply within"
WENT_SILENT = "went silent for"

# --- failure-path budgets, seconds (README §6) ----------------------------------------------------------------------
# How long to wait for something that should happen at once or soon. On the passing path a wait ends as soon as its
# answer is there, so these are generous literals (upstream's), never scaled: on a loaded machine the stack's work
# does not shrink with the twin's time scale. Every timing the stack itself sets (its poll budget, idle window,
# re-offer interval...) comes from the profile instead (specs/cluster/pacing.py).

RUN_CREATED = 420.0
"""An AgentRun to appear after a trigger."""
RUN_TERMINAL = 300.0
"""An AgentRun to reach Succeeded or Failed."""
COMMENT = 180.0
"""The gateway's comment on a turn."""
HAPPY_COMMENT = 120.0
"""The happy path's reply comment, once its run is terminal."""
JOB_CREATED = 60.0
"""An AgentRun's Job to exist."""
LABEL_REMOVED = 60.0
"""The trigger label's DELETE after a reply comment (the gateway's next call)."""
LABEL_AFTER_COMMENT = 30.0
"""The label DELETE trailing the comment, before the label-durability spec calls it missing."""
WARM_UP = 150.0
"""A fresh stack's first turn (failure mode 5)."""
ROLLOUT = 300.0
"""``kubectl rollout status`` (the set-up's own bound)."""
BOUNCE = 180.0
"""A deleted NATS or Redis pod's replacement to be Ready."""
LABEL_REMOVAL = 300.0
"""The trigger label's DELETE after a turn."""
LABEL_AFTER_ROLL = 600.0
"""The trigger label's DELETE after a gateway rollout (the outbox's sweep)."""
AVAILABLE = 300.0
"""A Deployment to be Available (the set-up's ``kubectl wait --timeout=300s``)."""
CONTROLLER_AVAILABLE = 120.0
"""The core-controller Deployment to be Available."""
PHASELESS_GRACE = 60.0
"""How old an AgentRun may be without a phase before the core-controller counts as not acting on it."""
POSITIVE_LAUNCH = 900.0
"""A positive webhook launch (identity keying, read gate): upstream measured a turn queued ~7 min behind parked
ones (failure mode 27), so it raised 420 s to 900 s; the specs' timeouts are sized for it (failure mode 43)."""
CHAT_LAUNCH = 420.0
"""A chat turn that may launch an agent (upstream's chat budget), and its launch."""
LINK_COMMENT = 420.0
"""The link-required comment on a turn with nothing seeded."""
REFUSED_CHAT = 120.0
"""A chat turn that is refused or planned without an agent (it answers at once)."""
TOOL_TURN = 120.0
"""A turn planned with tools: the planner, the selector and a few model calls, no agent run (upstream gives every
chat turn 420 s; a tool turn measured well under a second on the twin)."""
SKILL_INDEXED = 120.0
"""A fixture Skill to be indexed in Qdrant's ``skills`` collection."""
FETCH = 20.0
"""One HTTP request through a port-forward (upstream's ``fetchThrough``)."""
PROBE = 30.0
"""One attempt of a wait (upstream's ``waitFor`` attempt bound)."""
CONNECT = 5.0
"""One TCP connect through a port-forward."""
STORE_BLOCK = 120.0
"""The caller-tool store block against Qdrant (a dozen requests)."""
CLOCKS = 60.0
"""Slack between the node's and the API server's clocks, for a wait computed on the API server's clock."""
SLACK = 60.0
"""Seconds a spec's timeout keeps beyond its chained budgets, for seeding, triggers and assertions."""
JWT_EXPIRED_AGO = 60.0
"""How long ago an expired JWT expired (upstream's -60 s): the product allows no tolerance, any past ``exp`` will do."""

FAILURE_PATH_BUDGETS = frozenset(
    {
        "RUN_CREATED",
        "RUN_TERMINAL",
        "COMMENT",
        "HAPPY_COMMENT",
        "JOB_CREATED",
        "LABEL_REMOVED",
        "LABEL_AFTER_COMMENT",
        "WARM_UP",
        "ROLLOUT",
        "BOUNCE",
        "LABEL_REMOVAL",
        "LABEL_AFTER_ROLL",
        "AVAILABLE",
        "CONTROLLER_AVAILABLE",
        "PHASELESS_GRACE",
        "POSITIVE_LAUNCH",
        "CHAT_LAUNCH",
        "LINK_COMMENT",
        "REFUSED_CHAT",
        "TOOL_TURN",
        "SKILL_INDEXED",
        "FETCH",
        "PROBE",
        "CONNECT",
        "STORE_BLOCK",
        "CLOCKS",
        "SLACK",
        "JWT_EXPIRED_AGO",
        # Not budgets, but the only other literals: the floors under two pacings, for work no time scale shortens
        # (a JWT's whole-second expiry, a prompt through a port-forward); specs/cluster/pacing.py says why.
        "pacing.PROMPT_FLOOR",
        "pacing.JWT_FLOOR",
    }
)
"""The constants above (and the two floors of :mod:`specs.cluster.pacing`): the only timing literals the cluster
specs may hold (the guard spec ``specs/guard/test_cluster_timing_literals.py`` reads this list); every other timing
is a formula over the profile."""


T = TypeVar("T")


def timeout_for(*budgets: float, slack: float = SLACK) -> int:
    """A pytest-timeout (seconds) that fits ``budgets`` chained, plus ``slack``."""
    return int(sum(budgets) + slack)


@dataclass
class Stack:
    """The stack under test for one session: kube, forwards, its timing profile, the secrets the specs need (read
    once, never shown)."""

    kube: Kube
    forwards: ForwardPool
    profile: Profile
    _secrets: dict[str, SecretValue] = field(default_factory=dict)

    @property
    def interval(self) -> float:
        """Seconds between a wait's attempts on this stack (:func:`specs.cluster.pacing.wait_interval`)."""
        return wait_interval(self.profile)

    def secret(self, key: str) -> SecretValue:
        if key not in self._secrets:
            self._secrets[key] = read_secret_value(self.kube, GATEWAY_SECRETS, key)
        return self._secrets[key]

    def through(self, target: tuple[str, int], call: Callable[[PortForward], T]) -> T:
        """``call(forward)`` on the session's forward to ``target``, reopened once when it turns out dead.

        ``kubectl port-forward svc/...`` is pinned to the pod it resolved at start: after that pod was deleted or
        rolled, kubectl stays up until a connection fails, then exits. The first call then fails on the dead
        forward; the pool reopens it on the new pod and the call is made again (webhooks keep their delivery id,
        so a resend is a redelivery).
        """
        try:
            return call(self.forwards.get(self.kube, *target))
        except (PortForwardDied, PortForwardGone, PortForwardBroken):
            return call(self.forwards.get(self.kube, *target))

    def seed_github(self) -> None:
        self.through(GITHUB, lambda fwd: github_seed.seed_world(fwd, bot_token=self.secret("GITHUB_TOKEN")))

    def run_names(self) -> set[str]:
        items = self.kube.kubectl_json("get", AGENTRUN_RESOURCE).get("items") or []
        return {str(item["metadata"]["name"]) for item in items}

    def comments(self, issue: int) -> list[str]:
        return self.through(GITHUB, lambda fwd: GitHubJournal(fwd).comments(OWNER, REPO, issue))

    def label_removals(self, issue: int) -> list[GitHubCall]:
        return self.through(GITHUB, lambda fwd: GitHubJournal(fwd).label_removals(OWNER, REPO, issue, LABEL))

    def unstubbed(self) -> list[GitHubCall]:
        return self.through(GITHUB, lambda fwd: GitHubJournal(fwd).unstubbed())

    def labels(self, issue: int) -> list[str]:
        return self.through(GITHUB, lambda fwd: github_seed.issue_labels(fwd, issue))

    def relabel(self, issue: int) -> None:
        self.through(GITHUB, lambda fwd: github_seed.add_label(fwd, issue))

    def trigger(
        self,
        issue: int,
        *,
        title: str,
        sender: str = SENDER,
        sender_type: str = "User",
        open_issue: bool = True,
    ) -> Trigger:
        """Open ``issue`` (unless it exists) with the trigger label and send the signed ``labeled`` webhook from
        ``sender`` (a GitHub account of ``sender_type``: ``User`` or ``Bot``)."""
        if open_issue:
            self.through(GITHUB, lambda fwd: github_seed.open_issue(fwd, issue, title=title, user=sender))
        since = self.kube.server_time()
        before = self.run_names()
        comments_before = len(self.comments(issue))
        payload = issues_labeled_payload(
            owner=OWNER,
            repo=REPO,
            number=issue,
            title=title,
            label=LABEL,
            sender=sender,
            sender_type=sender_type,
            body=f"Opened by the harness for issue {issue}.",
        )
        sent = self._deliver(payload, str(uuid.uuid4()))
        return Trigger(self, issue, since, before, comments_before, sent.status, sent.delivery, payload, sent.body)

    def redeliver(self, trigger: Trigger) -> WebhookDelivery:
        """Send ``trigger``'s delivery again: the same ``X-GitHub-Delivery`` and the same bytes, as GitHub's
        "Redeliver" (and ``POST .../deliveries/{id}/attempts``) sends it."""
        sent = self._deliver(trigger.payload, trigger.delivery)
        assert sent.body == trigger.body, "the redelivery's bytes differ from the original delivery's"
        return sent

    def _deliver(self, payload: dict[str, Any], delivery: str) -> WebhookDelivery:
        sent = self.through(
            GATEWAY,
            lambda fwd: send_webhook(
                fwd, "issues", payload, delivery=delivery, secret=self.secret("GITHUB_WEBHOOK_SECRET")
            ),
        )
        assert 200 <= sent.status < 300, f"the gateway answered the webhook {sent.status}: {sent.answer}"
        return sent


@dataclass
class Trigger:
    """One trigger: the issue, the API server's clock at the trigger, the runs that existed before it, and the
    delivery sent (its id, payload and exact bytes, for a redelivery)."""

    stack: Stack
    issue: int
    since: datetime
    before: set[str]
    comments_before: int
    status: int
    delivery: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""

    def runs(self) -> list[AgentRunRecord]:
        """AgentRuns created since the trigger (newest first), leaving out any that existed before it."""
        return [r for r in agent_runs_since(self.since, kube=self.stack.kube) if r.name not in self.before]

    def new_comments(self) -> list[str]:
        return self.stack.comments(self.issue)[self.comments_before :]

    def wait_run_created(self, timeout: float = RUN_CREATED) -> AgentRunRecord:
        """The AgentRun this turn launched. Ends early, with what the gateway posted, when the issue got its answer
        without any run (a parked or failed turn would otherwise read as a slow launch for the whole budget)."""

        def probe() -> AgentRunRecord | None:
            runs = self.runs()
            if runs:
                return runs[0]
            answered = self.new_comments()
            if answered:
                raise StopWaiting(
                    f"the gateway answered issue #{self.issue} but no AgentRun was created: the turn "
                    f"was parked or failed before launch. It posted: {answered[-1]!r}"
                )
            return None

        return wait_for_sync(
            f"an AgentRun for issue #{self.issue} to be created", probe, timeout=timeout, interval=self.stack.interval
        )

    def wait_comment(self, timeout: float, what: str = "the gateway's comment") -> str:
        """The first comment posted on the issue after the trigger."""

        def probe() -> str | None:
            posted = self.new_comments()
            return posted[0] if posted else None

        return wait_for_sync(f"{what} on issue #{self.issue}", probe, timeout=timeout, interval=self.stack.interval)


def wait_phase(stack: Stack, run: str, phases: tuple[str, ...], timeout: float) -> str:
    """Wait until AgentRun ``run`` has one of ``phases``; returns it."""

    def probe() -> str | None:
        obj = stack.kube.kubectl_json("get", AGENTRUN_RESOURCE, run)
        phase = (obj.get("status") or {}).get("phase")
        return phase if phase in phases else None

    return wait_for_sync(
        f"AgentRun {run} to reach {' or '.join(phases)}", probe, timeout=timeout, interval=stack.interval
    )


def job_env_names(kube: Kube, job: str) -> list[str]:
    """Env var names (never values) of the Job's first container, in order (duplicates are legal; the last wins)."""
    spec: dict[str, Any] = kube.kubectl_json("get", "job", job)["spec"]["template"]["spec"]
    return [str(e["name"]) for e in (spec["containers"][0].get("env") or [])]
