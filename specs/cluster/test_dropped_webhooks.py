"""Cluster specs: webhooks the gateway must drop start nothing, and a redelivered webhook runs at most one turn.

The gateway answers 202 to every signed delivery and works in the background (README §1). It drops, silently (no
AgentRun, no comment), the bot's own events (the login ``e2e-bot``), any sender of type ``Bot`` (here an allowlisted
login, so only its type can drop it) and any login outside the allowlist. Each dropped delivery labels an issue of
its own; then an allowed sender's turn on another issue runs to its end (the stack's sign that the gateway worked
through the deliveries before it) and for a window more (:func:`~specs.cluster.pacing.nothing_more`: half the
trigger spacing, several gateway polls) the dropped issues stay without comment and no AgentRun other than that
turn's appears.

A redelivery is what GitHub's "Redeliver" sends: the recorded delivery again, same ``X-GitHub-Delivery`` GUID, same
bytes. That the gateway runs at most one turn per delivery id is the twin's reading (README, "Promises the suite
guards": unverified against the product). The spec redelivers a turn whose AgentRun has ``Succeeded`` (so a second
turn would launch at once rather than re-attach) and checks that no second AgentRun and no second comment follow.
"""

from __future__ import annotations

import pytest

from harness import unique_issue_number
from specs.agent_controller import github_seed
from specs.cluster.pacing import AT_SCALE_1, nothing_more
from specs.cluster.stack import (
    GITHUB,
    LABEL_REMOVAL,
    RUN_CREATED,
    RUN_TERMINAL,
    SENDER,
    Stack,
    Trigger,
    timeout_for,
    wait_phase,
)
from specs.cluster.turn_support import nothing_within, wait_turn_ended

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs", "linked_user")]

BOT = "e2e-bot"
ALLOWED_OTHER = "e2e-other-user"
OUTSIDER = "e2e-outsider"
DROPPED = (
    ("the bot's own event", BOT, "User"),
    ("a sender of type Bot", ALLOWED_OTHER, "Bot"),
    ("a login outside the allowlist", OUTSIDER, "User"),
)
"""What the gateway must drop: (why, sender login, sender type)."""


def _dropped_trigger(stack: Stack, why: str, login: str, kind: str) -> Trigger:
    number = unique_issue_number()
    title = f"must be dropped: {why} ({number})"
    stack.through(GITHUB, lambda fwd: github_seed.open_issue(fwd, number, title=title, user=SENDER))
    return stack.trigger(number, title=title, sender=login, sender_type=kind, open_issue=False)


@pytest.mark.timeout(timeout_for(RUN_CREATED, LABEL_REMOVAL, nothing_more(AT_SCALE_1)))
def test_webhooks_the_gateway_must_drop_start_nothing(stack: Stack, issue: int) -> None:
    dropped = [(why, login, kind, _dropped_trigger(stack, why, login, kind)) for why, login, kind in DROPPED]
    control = stack.trigger(issue, title=f"after the dropped ones {issue}")
    kept = control.wait_run_created(RUN_CREATED).name
    wait_turn_ended(stack, control, LABEL_REMOVAL)

    def complaint() -> str | None:
        for why, login, kind, trigger in dropped:
            posted = trigger.new_comments()
            if posted:
                return (
                    f"webhooks the gateway must drop: {why} ({login}, type {kind}) on issue #{trigger.issue} was "
                    f"not dropped: the gateway posted {posted[-1][:300]!r}"
                )
        extra = sorted(r.name for r in dropped[0][3].runs() if r.name != kept)
        if extra:
            return (
                f"webhooks the gateway must drop: AgentRun(s) {extra} appeared besides {kept} (the allowed "
                f"sender's turn) after deliveries from {', '.join(login for _, login, _ in DROPPED)}"
            )
        return None

    nothing_within(stack, complaint)


@pytest.mark.timeout(timeout_for(RUN_CREATED, RUN_TERMINAL, LABEL_REMOVAL, nothing_more(AT_SCALE_1)))
def test_a_redelivered_webhook_runs_at_most_one_turn(stack: Stack, issue: int) -> None:
    trigger = stack.trigger(issue, title=f"redelivered {issue}")
    run = trigger.wait_run_created(RUN_CREATED).name
    wait_turn_ended(stack, trigger, LABEL_REMOVAL)
    wait_phase(stack, run, ("Succeeded", "Failed"), RUN_TERMINAL)
    stack.redeliver(trigger)

    def complaint() -> str | None:
        runs = sorted(r.name for r in trigger.runs())
        posted = trigger.new_comments()
        if runs == [run] and len(posted) == 1:
            return None
        return (
            f"a redelivered webhook (the same X-GitHub-Delivery {trigger.delivery}) must run at most one turn: "
            f"issue #{trigger.issue} now has AgentRuns {runs} (first {run}) and {len(posted)} comment(s): "
            f"{[c[:160] for c in posted]}"
        )

    nothing_within(stack, complaint)
