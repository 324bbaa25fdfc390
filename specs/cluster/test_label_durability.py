"""Cluster specs: the trigger label comes off the issue once the turn is answered, also across a gateway restart.

Ported from upstream's label-durability spec with its budgets: a turn silent for twice the idle window
(:func:`~specs.cluster.pacing.silence`, upstream's 60 s; it fails at the idle window) still has its ``ai-triage``
label deleted within 300 s; with the gateway rolled during a narration longer than the poll budget by an idle window
(:func:`~specs.cluster.pacing.long_narration`, upstream's 120 s: the turn ends with the poll's error comment), the
DELETE comes within 600 s, from the gateway's durable outbox. A label left behind re-triggers nothing but blocks the
next trigger.

The gateway posts its comment and then deletes the label, so once a comment is on the issue the DELETE is due:
the wait stops early, naming the problem, when it has not come :data:`LABEL_AFTER_COMMENT` seconds after the
comment (instead of sitting out the rest of 600 s).
"""

from __future__ import annotations

import time

import pytest

from harness import StopWaiting, wait_for_sync
from specs.agent_controller.pacing import pace_stub_agent
from specs.cluster.pacing import long_narration, narration_cadence, silence
from specs.cluster.stack import (
    LABEL,
    LABEL_AFTER_COMMENT,
    LABEL_AFTER_ROLL,
    LABEL_REMOVAL,
    ROLLOUT,
    RUN_CREATED,
    Stack,
    Trigger,
    timeout_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs", "linked_user")]

GATEWAY = "agent-controller-integration-gateway"


def wait_label_removed(stack: Stack, trigger: Trigger, timeout: float) -> None:
    commented_at: list[float] = []

    def probe() -> bool | None:
        if stack.label_removals(trigger.issue):
            return True
        if trigger.new_comments():
            if not commented_at:
                commented_at.append(time.monotonic())
            if time.monotonic() - commented_at[0] > LABEL_AFTER_COMMENT:
                labels = stack.labels(trigger.issue)
                raise StopWaiting(
                    f"the gateway answered issue #{trigger.issue} but never removed its {LABEL} label: "
                    f"{LABEL_AFTER_COMMENT:.0f}s after the comment there is no DELETE .../labels/{LABEL} "
                    f"in the fake GitHub's journal, and the issue still has the labels {labels}"
                )
        return None

    wait_for_sync(
        f"the {LABEL} label's removal from issue #{trigger.issue}", probe, timeout=timeout, interval=stack.interval
    )
    assert LABEL not in stack.labels(trigger.issue), "the DELETE was sent but the label is still there"


@pytest.mark.timeout(timeout_for(LABEL_REMOVAL))
def test_label_removed_after_a_silent_turn(stack: Stack, issue: int) -> None:
    with pace_stub_agent(stack.kube, silent_for=silence(stack.profile)):
        trigger = stack.trigger(issue, title=f"label durability, silent {issue}")
        wait_label_removed(stack, trigger, LABEL_REMOVAL)


@pytest.mark.disruptive
@pytest.mark.timeout(timeout_for(RUN_CREATED, ROLLOUT, LABEL_AFTER_ROLL))
def test_label_removed_after_gateway_rollout(stack: Stack, issue: int) -> None:
    p = stack.profile
    with pace_stub_agent(stack.kube, narrate_for=long_narration(p), narrate_every=narration_cadence(p)):
        trigger = stack.trigger(issue, title=f"label durability, gateway rollout {issue}")
        trigger.wait_run_created(RUN_CREATED)
        stack.kube.rollout_restart(GATEWAY)
        assert "successfully rolled out" in stack.kube.rollout_status(GATEWAY, timeout=ROLLOUT)
        wait_label_removed(stack, trigger, LABEL_AFTER_ROLL)
