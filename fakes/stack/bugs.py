"""Product bugs the upstream stack really shipped (or its review caught), and breaches of the promises it states,
which the twin can put back one at a time.

A spec suite that passes whatever the stack does is worth nothing. Each switch below turns one component back
into a version that shipped a bug (or breaks one stated promise), and ``specs/twin/test_bug_switches.py`` shows the
matching cluster spec going red with a message that names the problem. Switch them on with ``python -m fakes.stack
--bug NAME`` or the pytest option ``--twin-bug NAME`` (only for the twin, never for a cluster).

The switched-on set can change while the twin runs: it lives in the ConfigMap :data:`CONFIGMAP` in the stack's
namespace (data key :data:`KEY`, names separated by commas or whitespace), which the twin's node watches through
the API and every service reads from that watch's cache each time it decides (:class:`Switches`); ``--bug`` only
seeds it. ``kubectl apply`` a new one and the next turn runs with it, no restart (the watch brings the change within
milliseconds of the apply's answer). Names the twin does not know are ignored there (:func:`configmap` builds a
checked one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bug:
    name: str
    component: str
    what: str
    caught_by: str


BUGS: dict[str, Bug] = {
    bug.name: bug
    for bug in (
        Bug(
            "subject-keying",
            "agent-orchestrator",
            "the pre-flight looks credentials up under the gateway's own subject (client-integration-gateway) instead "
            "of the sender's github:<login>, so every webhook turn is parked",
            "specs/cluster/test_happy_path.py",
        ),
        Bug(
            "label-kept-after-restart",
            "integration-gateway",
            "the start-up sweep posts the pending reply but forgets the trigger label, so a gateway restart leaves "
            "ai-triage on the issue",
            "specs/cluster/test_label_durability.py::test_label_removed_after_gateway_rollout",
        ),
        Bug(
            "legacy-no-reply-relabel",
            "agent-orchestrator",
            "every agent failure is relabelled 'produced no reply within 3660000ms' (the incident behind the "
            "resilience spec), hiding 'went silent for 30000ms'",
            "specs/cluster/test_resilience.py::test_silent_agent_is_reported_as_silent",
        ),
        Bug(
            "job-env-missing",
            "core-controller",
            "the Job's container env leaves AGENT_ACTOR_LOGIN out although the AgentRun requests it",
            "specs/cluster/test_happy_path.py",
        ),
        Bug(
            "unstubbed-github-call",
            "integration-gateway",
            "after replying the gateway also assigns the issue (POST .../assignees), an endpoint the fake GitHub "
            "does not model (501)",
            "specs/cluster/test_happy_path.py",
        ),
        Bug(
            "caller-prefix-leak",
            "agent-orchestrator",
            "caller tools are advertised to the model under their internal names (caller:get_device_battery) instead "
            "of the names the client sent",
            "specs/cluster/test_caller_tools.py::test_one_caller_tool_comes_back_as_a_tool_call",
        ),
        Bug(
            "refused-skill-advertises",
            "agent-orchestrator",
            "a skill with allowCallerTools: false still has the caller's tools advertised to the model",
            "specs/cluster/test_caller_tools.py::test_a_skill_that_refuses_caller_tools_offers_none",
        ),
        Bug(
            "unadvertised-tool-call",
            "agent-orchestrator",
            "a tool call the model makes is run or handed to the client even when that tool was not offered on the "
            "turn",
            "specs/cluster/test_tool_advertising.py",
        ),
        Bug(
            "jwt-expiry-fallback",
            "agent-orchestrator",
            "a parked chat turn's resume verifies the user's JWT again and, once it has expired, runs as the gateway "
            "bearer's shared subject (client-integration-gateway) and launches on its credentials",
            "specs/cluster/test_identity_continuity.py::"
            "test_a_parked_turn_is_never_resumed_as_the_shared_subject_after_its_jwt_expires",
        ),
        Bug(
            "parked-turn-hijack",
            "agent-orchestrator",
            "any caller in a conversation resumes the parked request found on its session, not only the request's "
            "owner",
            "specs/cluster/test_identity_continuity.py::test_another_caller_cannot_resume_the_owners_parked_request",
        ),
        Bug(
            "refresh-without-client-secret",
            "integration-gateway",
            "the identity-link API refreshes an expired GitHub link without the App's client_secret, which GitHub "
            "refuses (HTTP 200 invalid_client), so the link reads as dead",
            "specs/cluster/test_identity_keying.py::test_expired_link_with_a_refresh_token_is_renewed",
        ),
        Bug(
            "duplicate-reply-after-restart",
            "integration-gateway",
            "an answered turn stays in the outbox with its reply, and the start-up sweep resumes it from the comment "
            "step: a restarted gateway posts the reply it holds again",
            "specs/cluster/test_reply_comments.py::test_one_reply_comment_across_gateway_restarts",
        ),
        Bug(
            "rollout-fails-run-transiently",
            "agent-orchestrator",
            "a stopping orchestrator marks the AgentRuns it was waiting on Failed, and that version's core-controller "
            "re-derives the phase from the still-running Job, so the run reads Running again a moment later",
            "specs/cluster/test_resilience.py::test_orchestrator_rollout_during_narration_keeps_the_run",
        ),
        Bug(
            "reply-reoffer-stalls",
            "agent-runtime",
            "the agent offers its reply once and never again, waiting out the whole hold: a reply held through an "
            "orchestrator rollout is never collected by the re-triggered turn",
            "specs/cluster/test_resilience.py::test_retrigger_after_rollout_collects_the_held_reply",
        ),
        Bug(
            "bot-events-not-dropped",
            "integration-gateway",
            "the gateway's sender filter is gone: the bot's own events, Bot senders and logins outside the allowlist "
            "each start a turn",
            "specs/cluster/test_dropped_webhooks.py::test_webhooks_the_gateway_must_drop_start_nothing",
        ),
        Bug(
            "redelivery-runs-twice",
            "integration-gateway",
            "the gateway forgets the delivery ids it has seen, so a redelivered webhook (the same X-GitHub-Delivery) "
            "runs a second turn",
            "specs/cluster/test_dropped_webhooks.py::test_a_redelivered_webhook_runs_at_most_one_turn",
        ),
        Bug(
            "repeat-call-no-result",
            "agent-orchestrator",
            "on a resumed turn, the planner's duplicate-call guard finishes a byte-identical repeat of an answered "
            "caller-tool call with no result, and the reply renders a literal ```json undefined``` block instead of "
            "the last tool result (caught in the product's review)",
            "specs/cluster/test_caller_tool_resume.py::"
            "test_a_repeated_call_on_a_resumed_turn_finishes_with_the_last_result",
        ),
        Bug(
            "index-below-threshold",
            "agent-orchestrator",
            "the caller-tool index is used on every tool turn (definitions embedded, Qdrant searched, points written) "
            "although no more caller tools than callerToolTopK leaves nothing to prune",
            "specs/cluster/test_caller_tool_index.py::test_no_more_tools_than_k_skip_the_index",
        ),
        Bug(
            "invoke-resumes",
            "agent-orchestrator",
            "/invoke lifts a messages history from its body and resumes the turn from its role: tool result, which "
            "only the chat facade may do",
            "specs/cluster/test_caller_tool_resume.py::test_invoke_never_resumes_a_turn_from_a_tool_result",
        ),
        Bug(
            "tool-choice-none-ignored-on-resume",
            "agent-orchestrator",
            "a resumed chat turn drops the client's tool_choice: \"none\", so the caller's tools are offered and "
            "the model's call is handed back",
            "specs/cluster/test_caller_tool_resume.py::test_tool_choice_none_on_a_resumed_turn_offers_nothing",
        ),
    )
}


class UnknownBug(ValueError):
    """A bug switch name the twin does not know."""


def parse(names: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The validated set of switch names; raises :class:`UnknownBug` naming the known ones."""
    unknown = [name for name in names if name not in BUGS]
    if unknown:
        raise UnknownBug(f"unknown twin bug switch(es) {', '.join(unknown)}; known: {', '.join(sorted(BUGS))}")
    return frozenset(names)


CONFIGMAP = "stack-twin-bugs"
"""The ConfigMap, in the stack's namespace, that holds the twin's switched-on bugs while it runs."""
KEY = "bugs"


def configmap(names: list[str] | tuple[str, ...] | frozenset[str], namespace: str) -> dict[str, Any]:
    """The :data:`CONFIGMAP` object switching exactly ``names`` on; raises :class:`UnknownBug` for an unknown one."""
    switched = parse(list(names))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": namespace},
        "data": {KEY: ",".join(sorted(switched))},
    }


def names_in(obj: dict[str, Any] | None) -> frozenset[str]:
    """The known bug names a :data:`CONFIGMAP` object switches on (none for a missing object or key)."""
    text = str(((obj or {}).get("data") or {}).get(KEY) or "")
    return frozenset(name for name in re.split(r"[\s,]+", text) if name in BUGS)


class Switches:
    """The twin's switched-on bugs, read at each decision: ``"NAME" in switches``, ``iter``, :meth:`current`.

    Until :meth:`follow` (the stack's namespace does not exist before the set-up) the seed decides; after it, the
    :data:`CONFIGMAP` as its source gives it (deleted: no bug on)."""

    def __init__(self, seed: frozenset[str] = frozenset()) -> None:
        self.seed = seed
        self._source: Callable[[], dict[str, Any] | None] | None = None

    def follow(self, source: Callable[[], dict[str, Any] | None]) -> None:
        """Read the switches from ``source()`` (the :data:`CONFIGMAP` object, or ``None``) from now on."""
        self._source = source

    def current(self) -> frozenset[str]:
        if self._source is None:
            return self.seed
        return names_in(self._source())

    def __contains__(self, name: object) -> bool:
        return name in self.current()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.current()))
