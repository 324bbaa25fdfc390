"""Pytest plugin of the agent-controller stack layer: its twin as the harness's stand-in target, its options.

This repository's ``pyproject.toml`` names it as ``[tool.harness] twin``; the generic harness imports it by name when
pytest starts and calls :func:`make_stand_in` when the session's target is the twin (:mod:`harness.targets` chooses).
Options:

- ``--twin-bug NAME`` (repeatable): switch a known product bug back on in the twin (``fakes/stack/bugs.py``); a
  usage error with any other target;
- ``--stack-source DIR``: the upstream stack's source tree, for the specs that read it (they skip without it);
- ``--time-scale K`` (a number >= 1): the twin runs every stack timing divided by K (floors kept) and deploys the
  scaled values, which the cluster specs read back; default :data:`~specs.agent_controller.twin.DEFAULT_TIME_SCALE`
  on the twin, 1 on a cluster (which runs at its own cadence: any other K there is a usage error). ``--time-scale 1``
  runs the twin at the stack's real cadence;
- ``--twin-set NAME=SECONDS`` (repeatable): deploy the twin with one deployed profile value as given (``python -m
  fakes.stack --set``): a mis-set stack, for the spec that the headroom check refuses it; a usage error with any
  other target;
- ``--twin-on double|control-plane``: what the session's twins run on (``STACK_TWIN_ON`` for the pytest runs its
  specs start): the API double, or this machine's real control plane with a local node (:mod:`fakes.stack.on_plane`);
- ``--twin-attach PATH``: run the cluster specs against a stack twin another session on this machine runs, named by
  the ready file its :class:`~specs.agent_controller.twin.TwinSession` wrote (``ready_file``): a usage error unless
  that file names a live twin process (:class:`~specs.agent_controller.twin.AttachedTwin`), and with
  ``--twin-bug``/``--twin-set`` (switch bugs on the running twin: :mod:`specs.agent_controller.twin_bugs`) or a
  ``--time-scale`` other than the twin's. This session never stops that twin.

Marker ``twin``: specs that start stack twins of their own (the product-bug switch specs): ``make e2e`` runs them,
``make test`` does not. The ``evidence`` marker's ``"agentruns"`` target keeps the AgentRuns of the spec's window
(:mod:`specs.agent_controller.evidence`). A violated timing relation is said once at the end of the run
(:mod:`specs.agent_controller.headroom`). Fixtures: ``stack_target`` (the session's
:class:`harness.targets.TargetChoice`) and ``stack_source``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.diagnostics_plugin import register_target_evidence, register_window_evidence
from harness.evidence import ExtraEvidence
from harness.targets import TargetChoice, target_choice
from specs.agent_controller.evidence import MARKER_TARGET, agent_runs_evidence
from specs.agent_controller.headroom import HeadroomSummary
from specs.agent_controller.twin import (
    DEFAULT_TIME_SCALE,
    ON_ENV,
    AttachedTwin,
    TwinAttachRefused,
    TwinSession,
)

register_window_evidence(MARKER_TARGET, agent_runs_evidence)
_STARTED: list[TwinSession] = []
"""This process's twin sessions, for :func:`control_plane_logs`."""
LOG_TAIL_BYTES = 256 * 1024
"""How much of each control-plane component's log a failed spec keeps (its end)."""


def control_plane_logs() -> list[ExtraEvidence]:
    """``control-plane-<component>.log``: the end of each component's log, for a twin on the control plane."""
    extras = []
    for session in _STARTED:
        for component, path in sorted((session.info.logs if session.info else {}).items()):

            def read(_kube: Any, _timeout: float, path: str = path) -> str | None:
                try:
                    with open(path, "rb") as log:
                        log.seek(0, os.SEEK_END)
                        log.seek(max(0, log.tell() - LOG_TAIL_BYTES))
                        return log.read().decode("utf-8", "replace") or None
                except OSError:
                    return None

            extras.append(ExtraEvidence(f"the control plane's {component} log", f"control-plane-{component}.log", read))
    return extras


register_target_evidence(control_plane_logs)
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
    group.addoption(
        "--time-scale",
        default=None,
        metavar="K",
        help=f"run the stack twin's timings divided by K >= 1 (default {DEFAULT_TIME_SCALE:g} on the twin; 1 is the "
        "stack's own cadence, and the only scale of a cluster)",
    )
    group.addoption(
        "--twin-set",
        action="append",
        default=[],
        metavar="NAME=SECONDS",
        help="deploy the stack twin with this profile value set as given, in seconds (repeatable): a mis-set stack, "
        "which the cluster specs' headroom check must refuse",
    )
    group.addoption(
        "--twin-on",
        choices=("double", "control-plane"),
        default=None,
        help="what the stack twins of this run (and of the pytest runs its specs start) run on: the API double "
        "(default) or this machine's real control plane with a local node (make control-plane builds it)",
    )
    group.addoption(
        "--twin-attach",
        default=None,
        metavar="PATH",
        help="run the cluster specs against the running stack twin whose ready file this is (another session's "
        "TwinSession.ready_file; only a live twin process of this user is accepted; never stopped here)",
    )


@pytest.hookimpl(trylast=True)  # after harness.targets chose the target
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "twin: starts stack twins of its own (bug-switch specs): in e2e, not in test")
    if not config.pluginmanager.has_plugin(_HEADROOM_SUMMARY):
        config.pluginmanager.register(HeadroomSummary(), _HEADROOM_SUMMARY)
    on = config.getoption("--twin-on")
    if on:
        os.environ[ON_ENV] = on  # inherited by the pytest runs the bug-switch specs start
    if os.environ.get(ON_ENV) == "control-plane":
        from harness.controlplane.build import cache_root

        # The pytest runs the bug-switch specs start have a HOME of their own: name the binaries' cache for them.
        os.environ.setdefault("HARNESS_CONTROL_PLANE_CACHE", str(cache_root()))
    time_scale(config)  # a usage error now, not at the first cluster spec
    twin_settings(config)
    bugs = tuple(config.getoption("--twin-bug") or ())
    if not bugs:
        return
    choice = target_choice(config)
    if choice is None or choice.kind != "twin":
        why = choice.reason if choice is not None else "-m deselects every cluster spec"
        raise pytest.UsageError(f"--twin-bug applies to the stack twin only, but the target is not the twin ({why})")
    _check_bugs(bugs)


def twin_settings(config: pytest.Config) -> dict[str, float]:
    """``--twin-set NAME=SECONDS`` as ``{name: seconds}``. Raises ``pytest.UsageError`` for one that is not
    ``NAME=SECONDS``, names no deployed value of the profile, or is not a positive number of seconds, and for any
    when the target is not the twin (a cluster is set by its own objects)."""
    from fakes.stack.profile import ProfileError, effective

    raw = list(config.getoption("--twin-set") or ())
    settings: dict[str, float] = {}
    for text in raw:
        name, sep, seconds = text.partition("=")
        try:
            settings[name.strip()] = float(seconds) if sep else float("nan")
        except ValueError:
            raise pytest.UsageError(f"--twin-set {text}: give NAME=SECONDS (seconds a number)") from None
    try:
        effective(1.0, settings)
    except ProfileError as exc:
        raise pytest.UsageError(f"--twin-set: {exc}") from None
    choice = target_choice(config)
    if settings and choice is not None and choice.kind != "twin":
        raise pytest.UsageError(
            f"--twin-set applies to the stack twin only, but the target is not the twin ({choice.reason})"
        )
    return settings


def pytest_report_header(config: pytest.Config) -> list[str]:
    choice = target_choice(config)
    if choice is None or choice.kind == "twin":
        return []  # the twin's header line names its scale
    return ["harness: the cluster runs at its own cadence (time scale 1); its timing profile is read from its objects"]


def make_stand_in(config: pytest.Config) -> TwinSession | AttachedTwin:
    """The :class:`harness.targets.StandIn` for this session: the stack twin, with ``--twin-bug`` switched on, or
    the running one ``--twin-attach`` names.

    Raises :class:`~harness.errors.KubectlNotFound` without kubectl (the twin is deployed and reached with it) and
    ``pytest.UsageError`` for a ``--twin-attach`` that names no live twin or comes with options only a new twin
    takes."""
    attach = config.getoption("--twin-attach")
    if attach:
        return _attach(config, attach)
    bugs = tuple(config.getoption("--twin-bug") or ())
    _check_bugs(bugs)
    session = TwinSession(bugs=bugs, time_scale=time_scale(config), overrides=twin_settings(config))
    _STARTED.append(session)
    return session


def _attach(config: pytest.Config, path: str) -> AttachedTwin:
    for option in ("--twin-bug", "--twin-set"):
        if config.getoption(option):
            raise pytest.UsageError(
                f"{option} starts a new twin, but --twin-attach runs against a running one: switch its bugs with "
                "specs.agent_controller.twin_bugs.switch_bugs, or drop --twin-attach"
            )
    try:
        twin = AttachedTwin.open(path)
    except TwinAttachRefused as exc:
        raise pytest.UsageError(str(exc)) from None
    asked = config.getoption("--time-scale")
    if asked is not None and asked != f"{twin.time_scale:g}" and _number(asked) != twin.time_scale:
        twin.stop()
        raise pytest.UsageError(f"--time-scale {asked}: the attached twin runs at time scale {twin.time_scale:g}")
    return twin


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def time_scale(config: pytest.Config) -> float:
    """The session's time scale: ``--time-scale``, else :data:`DEFAULT_TIME_SCALE` on the twin and 1 on a cluster.

    Raises ``pytest.UsageError`` for a value that is not a number >= 1, and for any K other than 1 when the target
    is a cluster (a cluster runs at its own cadence; only the twin can be scaled)."""
    raw = config.getoption("--time-scale")
    choice = target_choice(config)
    on_twin = choice is not None and choice.kind == "twin"
    if raw is None:
        return DEFAULT_TIME_SCALE if on_twin else 1.0
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value >= 1 and value != float("inf")):
        raise pytest.UsageError(f"--time-scale {raw}: give a number >= 1 (1 is the stack's own cadence)")
    if value != 1 and choice is not None and not on_twin:
        raise pytest.UsageError(
            f"--time-scale {raw} applies to the stack twin only; the target is a cluster ({choice.reason}), which "
            "runs at its own cadence: drop the option or pass --time-scale 1"
        )
    return value


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
