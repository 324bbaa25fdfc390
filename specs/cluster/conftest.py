"""Fixtures of the stack's cluster specs: the stack, linked credentials, and AgentRun clean-up that keeps evidence.

- ``profile`` (session): the stack's timing profile as deployed on the target
  (:func:`specs.agent_controller.timing.read_profile`: the twin's and a cluster's objects alike): every budget,
  pacing, negative window and expected message of a cluster spec is a formula over it (:mod:`specs.cluster.pacing`).
- ``deployed_headroom`` (session, every cluster spec): the deployed ``profile`` against every relation the specs
  rely on (:data:`specs.cluster.pacing.RELATIONS`), once, before the first cluster spec: a violated one errors every
  cluster spec at set-up with one line naming both values and where each came from (README, "Headroom checked
  before the run").
- ``stack`` (session): :class:`specs.cluster.stack.Stack` on the guarded ``kube``, the session's ``forwards`` and
  the ``profile`` (``stack.profile``), with the fake GitHub seeded (users, repositories, the trigger label;
  idempotent).
- ``linked_user`` (module): Claude credentials linked to ``github:e2e-user``, the subject the gate must use.
- ``issue``: a fresh issue number (never reused: failure mode 7), after re-seeding the fake GitHub (its pod may
  have been restarted by a disruptive spec).
- ``stack_evidence`` (every cluster spec): a failed spec's evidence folder holds the stack's workloads (describe,
  pod logs with ``--previous``, a rollout explanation) and the AgentRuns created in its window.
- ``clean_agent_runs`` (module): AgentRuns (and their ``<run>-identity`` Secrets) a module created are deleted
  when it ends, unless one of its specs failed or ``E2E_KEEP_AGENT_RUNS=1`` is set: then nothing is deleted and the
  ``kubectl describe`` commands for them are printed (failure modes 8 and 9).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from datetime import datetime

import pluggy
import pytest

from harness import ForwardPool, Kube
from harness.diagnostics_plugin import EvidenceRequest
from specs.agent_controller.agentruns import AGENTRUN_RESOURCE
from specs.agent_controller.credentials import CredentialStore, decode_key
from specs.agent_controller.evidence import agent_runs_evidence
from specs.agent_controller.headroom import HeadroomViolated, mark_report
from specs.agent_controller.timing import Profile, check_headroom, read_profile
from specs.cluster.pacing import RELATIONS
from specs.cluster.stack import SUBJECT, Stack

_FAILED = pytest.StashKey[bool]()

STACK_WORKLOADS = (
    "deployment/agent-controller-integration-gateway",
    "deployment/agent-orchestrator",
    "deployment/core-controller",
)
"""The stack's own services: when a cluster spec fails, their logs usually say why."""


@pytest.fixture(autouse=True)
def stack_evidence(evidence: EvidenceRequest, since: datetime) -> None:
    evidence.watch(*STACK_WORKLOADS)
    evidence.add(agent_runs_evidence(since))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report = outcome.get_result()
    mark_report(report, call)
    if report.failed and isinstance(item, pytest.Function):
        item.module.__dict__.setdefault("_stack_failures", []).append(item.nodeid)


@pytest.fixture(scope="session")
def profile(kube: Kube) -> Profile:
    return read_profile(kube)


@pytest.fixture(scope="session", autouse=True)
def deployed_headroom(profile: Profile) -> None:
    # Session-scoped and autouse, so it runs before any other fixture of a cluster spec touches the stack; pytest
    # keeps the exception and raises it again for every later cluster spec of the session.
    violated = check_headroom(profile, RELATIONS)
    if violated:
        raise HeadroomViolated(violated)


@pytest.fixture(scope="session")
def stack(kube: Kube, forwards: ForwardPool, profile: Profile) -> Stack:
    stack = Stack(kube, forwards, profile)
    stack.seed_github()
    return stack


@pytest.fixture(scope="module")
def linked_user(stack: Stack) -> str:
    key = decode_key(stack.secret("IDENTITY_LINK_ENCRYPTION_KEY").reveal())  # the gateway's own key
    CredentialStore(stack.kube, key).seed_all_claude(SUBJECT)
    return SUBJECT


@pytest.fixture
def issue(issue_number: int, stack: Stack) -> int:
    stack.seed_github()
    return issue_number


@pytest.fixture(scope="module")
def clean_agent_runs(request: pytest.FixtureRequest, stack: Stack) -> Iterator[None]:
    before = stack.run_names()
    yield
    created = sorted(stack.run_names() - before)
    failures = request.module.__dict__.get("_stack_failures", [])
    if not created:
        return
    if failures or os.environ.get("E2E_KEEP_AGENT_RUNS") == "1":
        why = f"{len(failures)} spec(s) failed" if failures else "E2E_KEEP_AGENT_RUNS=1"
        hints = "; ".join(f"kubectl -n {stack.kube.namespace} describe {AGENTRUN_RESOURCE} {name}" for name in created)
        print(f"\nkept {len(created)} AgentRun(s) for inspection ({why}): {hints}")
        return
    stack.kube.kubectl("delete", AGENTRUN_RESOURCE, *created, "--wait=false", "--ignore-not-found")
    stack.kube.kubectl(
        "delete", "secret", *(f"{name}-identity" for name in created), "--wait=false", "--ignore-not-found"
    )
