"""A stack deployed with a mis-set value fails fast: the cluster specs stop at set-up with one line naming both values
and the objects they were read from, before any spec body runs and without waiting on the stack.

The case runs a cluster spec module in a separate pytest process (``pytester``) against its own twin deployed with
the gateway's poll budget set too short for the narration the specs pace (``--twin-set poll_budget=...``), and reads
its JUnit report: every spec errored at set-up with the same line, none failed or passed, and beyond the twin's own
start no spec spent more than a few seconds (the module's warm-up turn alone would take minutes).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.twin

ROOT = Path(__file__).resolve().parents[2]
SPECS = "specs/cluster/test_resilience.py"
"""Its module fixtures (a linked user, a warm-up turn) and its specs (narration, silence, rollouts) wait on the stack
for minutes: none of that may start."""
TIME_SCALE = 5.0
POLL_BUDGET = 16.0
"""Seconds: at time scale 5, long enough for every relation the specs rely on but one, the narration's (12 s, two
idle windows, with one idle window of headroom), so exactly one line is expected."""
INNER_TIMEOUT = 300.0
"""Seconds the inner run may take before it counts as hung."""
NO_WAITING = 30.0
"""Seconds the inner run's specs may take together beyond the twin's start (the check is a few kubectl reads):
generous for a loaded machine, yet far under the module's warm-up turn, which would run first if the check did not
stop the module."""
LINE = (
    f"narration 12s does not fit the gateway's poll budget {POLL_BUDGET:g}s with 6s headroom (narration: ",
    "ConfigMap agent-orchestrator-config, AGENT_IDLE_TIMEOUT_SECONDS",
    "poll budget: ConfigMap agent-controller-integration-gateway-config, POLL_TIMEOUT_MS)",
)
"""What the one line must say: both values, the headroom, and the object and key each was read from."""


@pytest.mark.timeout(INNER_TIMEOUT + 60)
def test_a_twin_with_a_poll_budget_too_short_stops_every_cluster_spec_at_set_up(pytester: pytest.Pytester) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        str(ROOT / SPECS),
        "--target=twin",
        f"--time-scale={TIME_SCALE:g}",
        f"--twin-set=poll_budget={POLL_BUDGET:g}",
        f"--junitxml={junit}",
        f"--rootdir={ROOT}",
        "-c",
        str(ROOT / "pyproject.toml"),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        timeout=INNER_TIMEOUT,
    )
    output = result.stdout.str()

    cases = list(ET.parse(junit).getroot().iter("testcase"))
    # a spec its module marks skip is skipped before any fixture: it never reaches the check
    errors = {case.get("name"): case.find("error") for case in cases if case.find("skipped") is None}
    assert errors, f"the inner run collected no spec from {SPECS}:\n{output[-3000:]}"
    not_stopped = [name for name, error in errors.items() if error is None]
    assert not not_stopped, f"these specs were not stopped at set-up: {not_stopped}\n{output[-3000:]}"
    messages = {str(error.get("message")) for error in errors.values() if error is not None}
    assert all(m.startswith("failed on setup") for m in messages), f"not errors at set-up: {messages}"
    lines = {str(error.text).strip() for error in errors.values() if error is not None}
    assert len(lines) == 1, f"the specs were stopped with different words: {lines}"
    [line] = lines
    assert "\n" not in line, f"one violated relation, one line: {line!r}"
    for part in LINE:
        assert part in line, f"the line does not say {part!r}: {line!r}"

    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == outcomes.get("failed", 0) == 0, f"a spec body ran:\n{output[-3000:]}"
    # whole lines: on CI (the CI variable set) pytest's short summary does not truncate, and its ERROR lines
    # carry the same words after the node id
    assert output.count(f"\n{line}\n") == len(errors) + 1, f"each spec's error and the summary once:\n{output[-3000:]}"
    assert "headroom checked before the run" in output
    started = re.search(r"the stack twin came up in ([0-9.]+)s", output)
    assert started, f"the inner run did not say how long its twin took to start:\n{output[-2000:]}"
    took = sum(float(case.get("time") or 0) for case in cases) - float(started.group(1))
    assert took < NO_WAITING, f"the specs took {took:.0f}s beyond the twin's start: something waited on the stack"
