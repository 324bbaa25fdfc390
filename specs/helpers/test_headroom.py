"""The headroom check: the relations the cluster specs rely on, checked against a profile, give one line
per violated relation naming both values, the headroom and where each came from; a violation ends every spec at
set-up with that line and the run's summary says it once. Cluster-free: profiles are built here (the committed one,
or it with one value mis-set, with the sources a deployed profile carries); the spec that a mis-set twin fails fast
is specs/twin/test_headroom_mis_set.py.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
from pathlib import Path

import pytest

from fakes.stack.profile import load
from specs.agent_controller.timing import Profile, Quantity, Relation, check_headroom, committed_profile, value
from specs.agent_controller.twin import DEFAULT_TIME_SCALE
from specs.cluster.pacing import RELATIONS

ROOT = Path(__file__).resolve().parents[2]
DEPLOYED_SOURCES = {name: f"{entry.object}, {entry.field}" for name, entry in load().items() if entry.deployed}
"""Where a deployed profile says each deployed value came from (``read_profile``: its object and field)."""


def deployed(scale: float = 1.0, **values: float) -> Profile:
    """The committed profile at ``scale`` as a target deploys it, with ``values`` mis-set."""
    profile = committed_profile(scale)
    return dataclasses.replace(profile, **values, sources={**profile.sources, **DEPLOYED_SOURCES})  # type: ignore[arg-type]


@pytest.mark.parametrize("scale", [1.0, DEFAULT_TIME_SCALE])
def test_the_committed_profile_keeps_every_relation_at_the_stacks_cadence_and_the_twins_default_scale(
    scale: float,
) -> None:
    assert check_headroom(committed_profile(scale), RELATIONS) == []
    assert check_headroom(deployed(scale), RELATIONS) == []


def test_a_poll_budget_set_too_short_gives_one_line_naming_both_values_and_their_objects() -> None:
    profile = deployed(DEFAULT_TIME_SCALE, poll_budget=16.0)  # long enough for every relation but the narration's
    assert check_headroom(profile, RELATIONS) == [
        "narration 12s does not fit the gateway's poll budget 16s with 6s headroom (narration: 2 x idle window; "
        "idle_window from ConfigMap agent-orchestrator-config, AGENT_IDLE_TIMEOUT_SECONDS; poll budget: ConfigMap "
        "agent-controller-integration-gateway-config, POLL_TIMEOUT_MS) [the narration ends well inside the poll "
        "budget (the launch, up to an idle window, comes first)]"
    ]


def test_an_idle_window_set_too_long_is_named_through_the_narration_it_paces() -> None:
    [line] = check_headroom(deployed(idle_window=40.0), RELATIONS)
    assert line.startswith("narration 80s does not fit the gateway's poll budget 90s with 40s headroom (")
    assert "ConfigMap agent-orchestrator-config, AGENT_IDLE_TIMEOUT_SECONDS" in line
    assert "ConfigMap agent-controller-integration-gateway-config, POLL_TIMEOUT_MS" in line


def test_every_violated_relation_has_its_own_line_in_order() -> None:
    lines = check_headroom(deployed(poll_budget=60.0, pod_grace=20.0), RELATIONS)
    assert [line.split(" (")[0] for line in lines] == [
        "narration 60s does not fit the gateway's poll budget 60s with 30s headroom",
        "narration during a roll 29s does not fit the gateway's poll budget 60s with 40s headroom",
        "narration across a NATS bounce 44s does not fit the gateway's poll budget 60s with 30s headroom",
        "the orchestrator's shutdown drain 25s does not fit the orchestrator's pod grace 20s",
    ]
    assert "pod grace: Deployment agent-orchestrator, spec.template.spec.terminationGracePeriodSeconds)" in lines[-1]


POLL = value("poll_budget", "the gateway's poll budget")
RESUME = value("resume_every", "a parked turn's resume interval")


@pytest.mark.parametrize(
    ("relation", "line"),
    [
        (Relation("fits exactly", POLL, POLL), None),
        (Relation("fits with its headroom", RESUME, POLL, 20, headroom=lambda p: p.resume_every * 2), None),
        (
            Relation("needs a second more", POLL, POLL, headroom=lambda p: 1.0),
            "the gateway's poll budget 90s does not fit the gateway's poll budget 90s with 1s headroom",
        ),
        (
            Relation("several resumes", RESUME, POLL, 30),
            "30 x a parked turn's resume interval 4s does not fit the gateway's poll budget 90s",
        ),
    ],
)
def test_a_relation_holds_up_to_equality_and_says_its_factor(relation: Relation, line: str | None) -> None:
    found = relation.violation(committed_profile())
    assert (found.split(" (")[0] if found else None) == line
    if found:
        assert found.endswith(f"[{relation.what}]"), "the line names the relation last"


def test_a_relation_that_cannot_be_computed_is_a_line_naming_it_not_a_crash() -> None:
    missing = Quantity("a value nobody deployed", lambda p: float(p.sources["nothing"]), lambda p: "nowhere")
    lines = check_headroom(committed_profile(), [Relation("reads a missing value", missing, POLL), *RELATIONS])
    assert lines == ["cannot check [reads a missing value] against the profile: KeyError: 'nothing'"]


CONFTEST = """
    import pathlib

    import pytest
    from specs.agent_controller.headroom import HeadroomSummary, HeadroomViolated, mark_report

    def pytest_configure(config):
        config.pluginmanager.register(HeadroomSummary(), "headroom-summary")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        mark_report(outcome.get_result(), call)

    @pytest.fixture(scope="session", autouse=True)
    def deployed_headroom():
        with open(pathlib.Path(__file__).with_name("checks"), "a") as checks:
            checks.write("checked\\n")
        raise HeadroomViolated([{line!r}])
"""
SPECS = """
    import pathlib

    def test_one():
        (pathlib.Path(__file__).parent / "bodies").mkdir()

    def test_two():
        (pathlib.Path(__file__).parent / "bodies").mkdir()

    def test_three():
        (pathlib.Path(__file__).parent / "bodies").mkdir()
"""


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]])
def test_a_violation_errors_every_spec_at_set_up_and_the_summary_says_it_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    [line] = check_headroom(deployed(poll_budget=80.0), RELATIONS)
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(line=line)))
    pytester.makepyfile(test_paced=textwrap.dedent(SPECS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    result = pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider", "-rE", timeout=120)

    result.assert_outcomes(errors=3)
    output = result.stdout.str()
    assert not (pytester.path / "bodies").exists(), "a spec body ran after the headroom check failed"
    processes = 2 if "-n" in workers else 1
    assert (pytester.path / "checks").read_text().count("checked") == processes, "checked once per session"
    assert output.count(f"\n{line}\n") == 3 + 1, f"each spec's error and the summary once:\n{output}"
    assert "=== headroom checked before the run ===" in output
    assert "3 cluster spec(s) stopped at set-up" in output


def test_a_line_names_each_source_by_its_short_name() -> None:
    jwt = Quantity("the parked turn's JWT lifetime", lambda p: 6.0, lambda p: "4 x resume interval, at least 6 s")
    read = Quantity("a parked read", lambda p: 5.0, lambda p: "4 x keep-alive, at least 5 s")
    line = Relation("a read outlasts the JWT", jwt, read).violation(committed_profile())
    assert line == (
        "the parked turn's JWT lifetime 6s does not fit a parked read 5s (JWT lifetime: 4 x resume interval, at "
        "least 6 s; parked read: 4 x keep-alive, at least 5 s) [a read outlasts the JWT]"
    )
