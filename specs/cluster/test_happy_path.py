"""Cluster spec: a labelled issue becomes an AgentRun whose Job gets the requested credentials, and a reply comment.

Ported from upstream's happy-path spec, every assertion with its budget: the webhook is accepted (2xx); an
AgentRun appears within 420 s; its ``spec.secretEnv`` requests ``AGENT_ACTOR_LOGIN`` and each requested name is in
the Job's env exactly once; the run is terminal within 300 s; within 120 s a comment carries the reply marker, the
issue number and ``AGENT_ACTOR_LOGIN`` (the stub agent names what it was given); and no request the stack sent
GitHub was answered 501 (an endpoint the fake does not model). Credentials are linked at ``github:e2e-user``
first, so a gate keyed by any other subject parks the turn and the spec says so at once.
"""

from __future__ import annotations

import pytest

from harness import Done, wait_for_sync
from specs.cluster.stack import (
    HAPPY_COMMENT,
    JOB_CREATED,
    LABEL_REMOVED,
    REPLY_MARKER,
    RUN_CREATED,
    RUN_TERMINAL,
    Stack,
    job_env_names,
    timeout_for,
    wait_phase,
)

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("clean_agent_runs")]


@pytest.mark.timeout(timeout_for(RUN_CREATED, JOB_CREATED, RUN_TERMINAL, HAPPY_COMMENT, LABEL_REMOVED))
def test_labelled_issue_launches_an_agent_and_gets_its_reply(stack: Stack, linked_user: str, issue: int) -> None:
    trigger = stack.trigger(issue, title=f"happy path {issue}")

    run = trigger.wait_run_created(RUN_CREATED)
    requested = list((run.raw.get("spec") or {}).get("secretEnv") or [])
    assert "AGENT_ACTOR_LOGIN" in requested, f"AgentRun {run.name} requests {requested}, not AGENT_ACTOR_LOGIN"

    env = wait_for_sync(
        f"the Job of AgentRun {run.name}",
        lambda: _job_env(stack, run.name),
        timeout=JOB_CREATED,
        interval=stack.interval,
    )
    for name in requested:
        assert env.count(name) == 1, (
            f"{name} appears {env.count(name)} time(s) in Job {run.name}'s env, not exactly "
            f"once: the run requested {requested}, the Job has {env}"
        )

    wait_phase(stack, run.name, ("Succeeded", "Failed"), RUN_TERMINAL)

    comment = trigger.wait_comment(HAPPY_COMMENT, "the reply comment")
    assert REPLY_MARKER in comment, f"the gateway posted no reply but: {comment!r}"
    assert str(issue) in comment, f"the reply does not mention issue {issue}: {comment!r}"
    assert "AGENT_ACTOR_LOGIN" in comment, f"the agent did not get AGENT_ACTOR_LOGIN, its reply says: {comment!r}"

    # The label removal is the gateway's last step: after it, every GitHub call of the turn is in the journal.
    wait_for_sync(
        f"the trigger label's removal from issue #{issue}",
        lambda: stack.label_removals(issue) or None,
        timeout=LABEL_REMOVED,
        interval=stack.interval,
    )
    unstubbed = stack.unstubbed()
    assert not unstubbed, "the stack called GitHub endpoints the fake does not model (answered 501): " + "; ".join(
        call.line() for call in unstubbed
    )


def _job_env(stack: Stack, job: str) -> Done[list[str]] | None:
    found = stack.kube.kubectl("get", "job", job, "--ignore-not-found", "-o", "name").stdout.strip()
    return Done(job_env_names(stack.kube, job)) if found else None  # an empty env is an answer too
