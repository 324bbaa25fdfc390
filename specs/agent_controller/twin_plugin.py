"""Pytest plugin of the agent-controller stack layer: its twin as the harness's stand-in target, its options.

This repository's ``pyproject.toml`` names it as ``[tool.harness] twin``; the generic harness imports it by name when
pytest starts and calls :func:`make_stand_in` when the session's target is the twin (:mod:`harness.targets` chooses).
Options:

- ``--twin-bug NAME`` (repeatable): switch a known product bug back on in the twin (``fakes/stack/bugs.py``); a
  usage error with any other target;
- ``--stack-source DIR``: the upstream stack's source tree, for the specs that read it (they skip without it).

Marker ``twin``: specs that start stack twins of their own (the product-bug switch specs): ``make e2e`` runs them,
``make test`` does not. The ``evidence`` marker's ``"agentruns"`` target keeps the AgentRuns of the spec's window
(:mod:`specs.agent_controller.evidence`). A violated timing relation is said once at the end of the run
(:mod:`specs.agent_controller.headroom`). Fixtures: ``stack_target`` (the session's
:class:`harness.targets.TargetChoice`) and ``stack_source``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.diagnostics_plugin import register_window_evidence
from harness.targets import TargetChoice, target_choice
from specs.agent_controller.evidence import MARKER_TARGET, agent_runs_evidence
from specs.agent_controller.headroom import HeadroomSummary
from specs.agent_controller.twin import TwinSession

register_window_evidence(MARKER_TARGET, agent_runs_evidence)
_HEADROOM_SUMMARY = "agent-controller-headroom-summary"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "end-to-end harness")
    group.addoption(
        "--twin-bug",
        action="append",
        default=[],
        metavar="NAME",
        help="switch a known product bug back on in the stack twin (repeatable; fakes/stack/bugs.py)",
    )
    group.addoption(
        "--stack-source",
        default=None,
        metavar="DIR",
        help="the upstream stack's source tree, for specs that read it (they skip without it)",
    )


@pytest.hookimpl(trylast=True)  # after harness.targets chose the target
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "twin: starts stack twins of its own (bug-switch specs): in e2e, not in test")
    if not config.pluginmanager.has_plugin(_HEADROOM_SUMMARY):
        config.pluginmanager.register(HeadroomSummary(), _HEADROOM_SUMMARY)
    bugs = tuple(config.getoption("--twin-bug") or ())
    if not bugs:
        return
    choice = target_choice(config)
    if choice is None or choice.kind != "twin":
        why = choice.reason if choice is not None else "-m deselects every cluster spec"
        raise pytest.UsageError(f"--twin-bug applies to the stack twin only, but the target is not the twin ({why})")
    _check_bugs(bugs)


def make_stand_in(config: pytest.Config) -> TwinSession:
    """The :class:`harness.targets.StandIn` for this session: the stack twin, with ``--twin-bug`` switched on.

    Raises :class:`~harness.errors.KubectlNotFound` without kubectl (the twin is deployed and reached with it)."""
    bugs = tuple(config.getoption("--twin-bug") or ())
    _check_bugs(bugs)
    return TwinSession(bugs=bugs)


def _check_bugs(bugs: tuple[str, ...]) -> None:
    if not bugs:
        return
    from fakes.stack.bugs import UnknownBug, parse

    try:
        parse(list(bugs))
    except UnknownBug as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture(scope="session")
def stack_target(harness_target: TargetChoice) -> TargetChoice:
    """The session's :class:`~harness.targets.TargetChoice` (``kind`` ``cluster`` or ``twin``, and why)."""
    return harness_target


@pytest.fixture(scope="session")
def stack_source(request: pytest.FixtureRequest) -> Path:
    """``--stack-source DIR`` as a path; skips the spec (with that reason) when the option is absent."""
    value = request.config.getoption("--stack-source")
    if not value:
        pytest.skip("needs the upstream stack's source tree: pass --stack-source DIR")
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"--stack-source {value}: not a directory", pytrace=False)
    return path
