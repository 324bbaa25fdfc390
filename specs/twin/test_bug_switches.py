"""The stack's specs are not a suite that passes whatever the stack does: each product bug the upstream stack
shipped, switched back on in the twin, turns the matching cluster spec red with a message that names the problem.

One twin per module (per xdist worker), at the default time scale: each case switches its bug on in that running
twin (the ConfigMap its services read at every decision, :mod:`specs.agent_controller.twin_bugs`), runs the cluster
spec in a separate pytest process (``pytester``) attached to it (``--target twin --twin-attach READY_FILE``),
checks that it failed, and why, and switches the bug off again. The passing counterpart of each is the same spec in
the main run, against a twin without bugs.

The inner run is a subprocess, not in-process: pytest-timeout's one process-wide SIGALRM timer and the harness's
process-wide registries (recorded waits, child processes, the forward pool) would be shared with the outer case.
It starts cheaply instead: bytecode cached in one directory for the module (``PYTHONPYCACHEPREFIX``; compiling
every module afresh was a large part of an inner run's start), and without the plugins it does not use (xdist
here, hypothesis in conftest.py). Every inner run shares one harness state directory, so issue numbers never repeat
on the twin and the inner cluster specs take the attached twin's per-context cluster lock; the outer case holds none.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.stack.bugs import BUGS
from specs.agent_controller.twin import DEFAULT_TIME_SCALE, TwinSession
from specs.agent_controller.twin_bugs import switch_bugs, switched_bugs

pytestmark = pytest.mark.twin

ROOT = Path(__file__).resolve().parents[2]
HAPPY = "specs/cluster/test_happy_path.py"
SILENT = "specs/cluster/test_resilience.py::test_silent_agent_is_reported_as_silent"
GATEWAY_ROLLOUT = "specs/cluster/test_label_durability.py::test_label_removed_after_gateway_rollout"
CALLER_ONE = "specs/cluster/test_caller_tools.py::test_one_caller_tool_comes_back_as_a_tool_call"
CALLER_REFUSED = "specs/cluster/test_caller_tools.py::test_a_skill_that_refuses_caller_tools_offers_none"
ADVERTISING = "specs/cluster/test_tool_advertising.py"
CONTINUITY = "specs/cluster/test_identity_continuity.py"
JWT_EXPIRY = f"{CONTINUITY}::test_a_parked_turn_is_never_resumed_as_the_shared_subject_after_its_jwt_expires"
HIJACK = f"{CONTINUITY}::test_another_caller_cannot_resume_the_owners_parked_request"
REFRESH = "specs/cluster/test_identity_keying.py::test_expired_link_with_a_refresh_token_is_renewed"
REPLY_RESTARTS = "specs/cluster/test_reply_comments.py::test_one_reply_comment_across_gateway_restarts"
ROLLOUT_PHASE = "specs/cluster/test_resilience.py::test_orchestrator_rollout_during_narration_keeps_the_run"
REOFFER = "specs/cluster/test_resilience.py::test_retrigger_after_rollout_collects_the_held_reply"
DROPPED = "specs/cluster/test_dropped_webhooks.py::test_webhooks_the_gateway_must_drop_start_nothing"
REDELIVERY = "specs/cluster/test_dropped_webhooks.py::test_a_redelivered_webhook_runs_at_most_one_turn"
RESUME = "specs/cluster/test_caller_tool_resume.py"
REPEAT = f"{RESUME}::test_a_repeated_call_on_a_resumed_turn_finishes_with_the_last_result"
INVOKE_RESUME = f"{RESUME}::test_invoke_never_resumes_a_turn_from_a_tool_result"
NONE_ON_RESUME = f"{RESUME}::test_tool_choice_none_on_a_resumed_turn_offers_nothing"
BELOW_K = "specs/cluster/test_caller_tool_index.py::test_no_more_tools_than_k_skip_the_index"

CASES = {
    "subject-keying": (HAPPY, ["no AgentRun was created: the turn was parked", "link your accounts"]),
    "job-env-missing": (HAPPY, ["AGENT_ACTOR_LOGIN appears 0 time(s) in Job"]),
    "unstubbed-github-call": (
        HAPPY,
        ["the stack called GitHub endpoints the fake does not model (answered 501)", "/assignees -> 501"],
    ),
    "legacy-no-reply-relabel": (SILENT, ["relabelled with the legacy 'produced no reply within' message"]),
    "label-kept-after-restart": (GATEWAY_ROLLOUT, ["but never removed its ai-triage label"]),
    "caller-prefix-leak": (
        CALLER_ONE,
        [
            "the orchestrator's internal 'caller:' prefix leaked into the advertised tool names",
            "offered ['caller:get_device_battery']",
        ],
    ),
    "refused-skill-advertises": (
        CALLER_REFUSED,
        ["on a turn that must offer none (skill e2e-caller-tool-refused refuses caller tools)"],
    ),
    "unadvertised-tool-call": (
        ADVERTISING,
        ["a tool the model was never offered", "which the model was never offered on this turn: GitHub saw"],
    ),
    "jwt-expiry-fallback": (
        JWT_EXPIRY,
        ["a resume ran as client-integration-gateway instead of the caller it arrived as: yet"],
    ),
    "parked-turn-hijack": (HIJACK, ["resumed the owner's parked request"]),
    "refresh-without-client-secret": (REFRESH, ["read the link as dead instead of refreshing it"]),
    "duplicate-reply-after-restart": (
        REPLY_RESTARTS,
        ["one reply comment per turn", "has 2 comment(s) since its trigger after the gateway restarted once more"],
    ),
    "rollout-fails-run-transiently": (
        ROLLOUT_PHASE,
        ["a rollout must never fail a live run, at any moment", "was Failed during the orchestrator rollout"],
    ),
    "reply-reoffer-stalls": (
        REOFFER,
        ["the held reply never reached the re-triggered turn", "did not offer it again (the reply re-offer cadence"],
    ),
    "bot-events-not-dropped": (DROPPED, ["webhooks the gateway must drop: the bot's own event (e2e-bot"]),
    "redelivery-runs-twice": (REDELIVERY, ["a redelivered webhook (the same X-GitHub-Delivery"]),
    "repeat-call-no-result": (
        REPEAT,
        ["a repeated call on a resumed turn must finish carrying the last tool's result", "literal 'undefined'"],
    ),
    "index-below-threshold": (
        BELOW_K,
        ["with 3 caller tools, no more than K=3, the caller-tool index must be skipped; caller_tools went from"],
    ),
    "invoke-resumes": (INVOKE_RESUME, ["only chat resumes: /invoke"]),
    "tool-choice-none-ignored-on-resume": (
        NONE_ON_RESUME,
        ['on a turn that must offer none (tool_choice "none" on a resumed turn)'],
    ),
}
INNER_TIMEOUT = 600.0
"""Seconds one inner run may take (the spec's own turns: the longest, a gateway rollout, ~2.5 min at scale 1)."""
INNER_PLUGINS_OFF = ("no:cacheprovider", "no:xdist", "no:xdist.looponfail")
"""Plugins the inner run does not use (it runs one spec file or test, in one process; the repository's conftest.py
turns hypothesis's off for every inner run)."""


@pytest.fixture(scope="module")
def twin() -> Iterator[TwinSession]:
    """One running twin at the default time scale, no bug on, for every case of this module on this worker."""
    session = TwinSession(time_scale=DEFAULT_TIME_SCALE)
    try:
        session.ensure_started()
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def inner_dirs() -> Iterator[dict[str, str]]:
    """The inner runs' shared directories: compiled bytecode, and the harness state (issue numbers, lock files)."""
    root = Path(tempfile.mkdtemp(prefix="bug-switch-runs-"))
    try:
        yield {"PYTHONPYCACHEPREFIX": str(root / "pycache"), "HARNESS_STATE_DIR": str(root / "state")}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_every_bug_switch_has_a_case() -> None:
    assert sorted(CASES) == sorted(BUGS), "a bug switch without a spec proving the suite catches it"
    for name, (spec, _) in CASES.items():
        assert BUGS[name].caught_by in (spec, spec.split("::")[0]), f"{name}: fakes/stack/bugs.py names another spec"


@pytest.mark.parametrize("bug", sorted(CASES))
@pytest.mark.timeout(INNER_TIMEOUT + 60)
def test_bug_switch_turns_its_spec_red(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    twin: TwinSession,
    inner_dirs: dict[str, str],
    bug: str,
) -> None:
    spec, expected = CASES[bug]
    for name, value in inner_dirs.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # the cache above is the point
    switch_bugs(twin.kube, [bug])
    try:
        result = pytester.runpytest_subprocess(
            str(ROOT / spec),
            "--target=twin",
            f"--twin-attach={twin.ready_file}",
            f"--rootdir={ROOT}",
            "-c",
            str(ROOT / "pyproject.toml"),
            *(arg for plugin in INNER_PLUGINS_OFF for arg in ("-p", plugin)),
            "-q",
            timeout=INNER_TIMEOUT,
        )
    finally:
        switch_bugs(twin.kube, [])
    assert switched_bugs(twin.kube) == frozenset(), "the twin kept a bug switched on after its case"
    output = result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1, f"with {bug} on, {spec} did not fail:\n{output[-3000:]}"
    assert "target: twin" in output, f"the inner run did not say it ran against the twin:\n{output[-2000:]}"
    assert f"bugs switched on: {bug}" in output, f"the inner twin did not run with {bug}:\n{output[-2000:]}"
    for text in expected:
        assert text in output, f"with {bug} on, {spec} failed without saying {text!r}:\n{output[-3000:]}"
