"""Cluster specs: one reply comment per turn, also across gateway restarts.

The gateway answers a turn with one comment on the issue (``<!-- agent-controller:reply -->`` and the reply), then
deletes the trigger label. The comments are counted on the fake GitHub once the label's DELETE shows the turn
ended, and again through a window in which nothing more may come (:mod:`specs.cluster.turn_support`):

- a plain turn: exactly one comment, the reply;
- disruptive: the gateway rolled during a narration (:func:`~specs.cluster.pacing.roll_narration`: the shutdown
  drain and two readiness periods, upstream's 20 s; its start-up sweep resumes the turn from the durable outbox and
  posts the reply, inside the poll budget), then rolled once more after the turn ended (the restarted gateway must
  not post the reply again from what its outbox kept): exactly one comment.

The window after the turn is :func:`~specs.cluster.pacing.nothing_more` (half the trigger spacing).
"""

from __future__ import annotations

import pytest

from specs.agent_controller.pacing import pace_stub_agent
from specs.cluster.pacing import AT_SCALE_1, nothing_more, roll_cadence, roll_narration
from specs.cluster.stack import (
    LABEL_AFTER_ROLL,
    LABEL_REMOVAL,
    REPLY_MARKER,
    ROLLOUT,
    RUN_CREATED,
    STUB_REPLY,
    Stack,
    Trigger,
    timeout_for,
)
from specs.cluster.turn_support import nothing_within, wait_turn_ended

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs", "linked_user")]

GATEWAY = "agent-controller-integration-gateway"


def _roll_gateway(stack: Stack) -> None:
    stack.kube.rollout_restart(GATEWAY)
    assert "successfully rolled out" in stack.kube.rollout_status(GATEWAY, timeout=ROLLOUT)


def _one_reply(trigger: Trigger, when: str) -> str | None:
    """``None`` while the issue has exactly one comment since the trigger and it is the reply; else what is wrong."""
    posted = trigger.new_comments()
    if len(posted) == 1 and REPLY_MARKER in posted[0] and STUB_REPLY in posted[0]:
        return None
    return (
        f"one reply comment per turn: issue #{trigger.issue} has {len(posted)} comment(s) since its trigger "
        f"{when}: {[c[:160] for c in posted]}"
    )


@pytest.mark.timeout(timeout_for(RUN_CREATED, LABEL_REMOVAL, nothing_more(AT_SCALE_1)))
def test_one_reply_comment_per_turn(stack: Stack, issue: int) -> None:
    trigger = stack.trigger(issue, title=f"one reply per turn {issue}")
    trigger.wait_run_created(RUN_CREATED)
    wait_turn_ended(stack, trigger, LABEL_REMOVAL)
    nothing_within(stack, lambda: _one_reply(trigger, "after the turn ended"))


@pytest.mark.disruptive
@pytest.mark.timeout(timeout_for(RUN_CREATED, ROLLOUT, LABEL_AFTER_ROLL, ROLLOUT, nothing_more(AT_SCALE_1)))
def test_one_reply_comment_across_gateway_restarts(stack: Stack, issue: int) -> None:
    p = stack.profile
    with pace_stub_agent(stack.kube, narrate_for=roll_narration(p), narrate_every=roll_cadence(p)):
        trigger = stack.trigger(issue, title=f"one reply across gateway restarts {issue}")
        trigger.wait_run_created(RUN_CREATED)
        _roll_gateway(stack)
        wait_turn_ended(stack, trigger, LABEL_AFTER_ROLL)
    said = _one_reply(trigger, "after the gateway restarted during the turn and its sweep finished it")
    assert said is None, said
    _roll_gateway(stack)
    nothing_within(stack, lambda: _one_reply(trigger, "after the gateway restarted once more, with the turn answered"))
