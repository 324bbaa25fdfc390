"""Pytest plugin: the stack target (minikube or the twin), the twin's lifetime, and budgets that do not fit.

Loaded by :mod:`harness.pytest_plugin`. Options:

- ``--target auto|cluster|twin`` (default ``auto``: the cluster when ``--kube-context`` is given or kubectl has a
  current context, the twin otherwise; :func:`harness.target.choose_target`);
- ``--twin-bug NAME`` (repeatable): switch a known product bug back on in the twin (``fakes/stack/bugs.py``); a
  usage error with any other target;
- ``--stack-source DIR``: the upstream stack's source tree, for the specs that read it (they skip without it).

The session header and the terminal summary each carry one line ``stack target: twin|cluster (why)``. With the
twin, the guard's verdict is the twin's own pinned :class:`~harness.kube.Kube`, and the twin is started (once per
process) before the first cluster spec's set-up; a twin that cannot start fails every cluster spec with its reason.

Budgets: a wait whose budget was clamped to fit the test's pytest-timeout (failure mode 43 in
specs/cluster/README.md) is listed under "budgets that do not fit" in the summary; against the twin, the cluster spec
that ran it fails even when the wait succeeded, because on a slower cluster the clamp would cut it short.
Marker ``twin``: specs that start stack twins of their own (the product-bug switch specs): ``make e2e`` runs them,
``make test`` does not.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness.errors import KubectlNotFound
from harness.target import TARGETS, TargetChoice, TwinSession, TwinStartFailed, choose_target

TARGET = pytest.StashKey[TargetChoice]()
TWIN = pytest.StashKey[TwinSession]()
NO_TWIN = pytest.StashKey[str]()
CLAMPED = "harness.budget_does_not_fit"
"""Report property (``user_properties``: it crosses from xdist workers) naming a clamped wait."""
TWINS = pytest.StashKey[list[dict[str, Any]]]()  # what each process's twin reported (xdist workers' included)
WORKER_KEY = "harness_twin"
CLAMP_NOTE = "budget clamped"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "end-to-end harness")
    group.addoption(
        "--target",
        choices=TARGETS,
        default="auto",
        help="stack the cluster specs run against: cluster (a kube context), twin (started here), "
        "auto (cluster if --kube-context or a current context, else twin)",
    )
    group.addoption(
        "--twin-bug",
        action="append",
        default=[],
        metavar="NAME",
        help="switch a known product bug back on in the twin (repeatable; fakes/stack/bugs.py)",
    )
    group.addoption(
        "--stack-source",
        default=None,
        metavar="DIR",
        help="the upstream stack's source tree, for specs that read it (they skip without it)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "twin: starts stack twins of its own (bug-switch specs): in e2e, not in test")
    from harness.pytest_plugin import cluster_specs_selectable

    if not cluster_specs_selectable(config):  # `-m "not cluster"`: no target to choose, no kube context touched
        return
    try:
        choice = choose_target(config.getoption("--target"), config.getoption("--kube-context"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    bugs = tuple(config.getoption("--twin-bug") or ())
    if bugs and choice.kind != "twin":
        raise pytest.UsageError(
            f"--twin-bug applies to the stack twin only, but the target is the cluster ({choice.reason})"
        )
    _check_bugs(bugs)
    config.stash[TARGET] = choice
    config.stash[TWINS] = []
    if choice.kind == "twin":
        try:
            session = TwinSession(bugs=bugs)
        except KubectlNotFound as exc:  # the twin is deployed and reached with the real kubectl
            config.stash[NO_TWIN] = f"no cluster, and no twin without kubectl: {exc}"
            _preset_guard(config, ("skip", config.stash[NO_TWIN]))
            return
        config.stash[TWIN] = session
        _preset_guard(config, ("ok", session.kube))


def _check_bugs(bugs: tuple[str, ...]) -> None:
    if not bugs:
        return
    from fakes.stack.bugs import UnknownBug, parse

    try:
        parse(list(bugs))
    except UnknownBug as exc:
        raise pytest.UsageError(str(exc)) from None


def _preset_guard(config: pytest.Config, verdict: tuple[str, Any]) -> None:
    """The guard's verdict for this process is the twin's (xdist workers decide for themselves: one twin each)."""
    from harness import pytest_plugin

    config.stash[pytest_plugin._GUARD] = verdict


def guard_verdict(config: pytest.Config) -> tuple[str, Any] | None:
    """The twin's guard verdict when the target is the twin, else ``None`` (the normal kube context guard runs)."""
    if NO_TWIN in config.stash:
        return "skip", config.stash[NO_TWIN]
    session = config.stash.get(TWIN, None)
    return ("ok", session.kube) if session is not None else None


def twin_session(config: pytest.Config) -> TwinSession | None:
    """The twin this process will start for its cluster specs (``None`` when the target is not the twin)."""
    return config.stash.get(TWIN, None)


def target_line(config: pytest.Config) -> list[str]:
    """The ``stack target: ...`` line for the harness's lines after collection (none when no target was chosen)."""
    return [config.stash[TARGET].line()] if TARGET in config.stash else []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start the twin (once) before the first cluster spec's set-up touches it."""
    session = item.config.stash.get(TWIN, None)
    if session is None or item.get_closest_marker("cluster") is None:
        return
    try:
        session.ensure_started()
    except TwinStartFailed as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Innermost wrapper: sees this phase's waits before the harness plugin collects them."""
    outcome = yield
    clamped = [(s.describe, note) for s in _peek_waits() for note in s.notes if note.startswith(CLAMP_NOTE)]
    if not clamped or item.get_closest_marker("cluster") is None:
        return
    report = outcome.get_result()
    for what, note in clamped:
        report.user_properties.append((CLAMPED, f"{what}: {note}"))
    if item.config.stash[TARGET].kind == "twin" and report.passed:
        what, note = clamped[0]
        report.outcome = "failed"
        report.longrepr = (
            f"budget does not fit (failure mode 43 in specs/cluster/README.md): the wait for {what} "
            f"had its {note}; raise the spec's timeout marker or shorten its budgets"
        )


def _peek_waits() -> list[Any]:
    waiting = sys.modules.get("harness.waiting")  # not loaded: no wait ran
    lock = getattr(waiting, "_recorded_lock", None)
    recorded = getattr(waiting, "_recorded", None)
    if lock is None or recorded is None:
        return []
    with lock:
        return list(recorded)


def _twin_report(session: TwinSession) -> dict[str, Any] | None:
    if session.info is None:
        return {"failed": session.failure} if session.failure else None
    return {
        "seconds": session.wall_start or 0.0,
        "memory": session.memory_bytes(),
        "bugs": list(session.bugs),
        "context": session.context,
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Record this process's twin (measured while it still runs); an xdist worker sends it to the controller."""
    config = session.config
    twin = config.stash.get(TWIN, None)
    report = _twin_report(twin) if twin is not None else None
    if report is None:
        return
    if hasattr(config, "workeroutput"):
        config.workeroutput[WORKER_KEY] = report
    else:
        config.stash[TWINS].append(report)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    report = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if report is not None and TWINS in node.config.stash:
        node.config.stash[TWINS].append(report)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if TARGET not in config.stash:
        return
    rows = sorted(
        {
            f"{report.nodeid}: {value}"
            for reports in terminalreporter.stats.values()
            for report in reports
            for name, value in getattr(report, "user_properties", ())
            if name == CLAMPED
        }
    )
    if rows:
        terminalreporter.write_sep("-", f"budgets that do not fit their spec's timeout ({len(rows)})")
        for row in rows:
            terminalreporter.write_line(row)
    reports = [r for reports in terminalreporter.stats.values() for r in reports if hasattr(r, "nodeid")]
    if config.stash[TWINS] or any("cluster" in getattr(r, "keywords", {}) for r in reports):
        terminalreporter.write_sep("-", "stack target")
        terminalreporter.write_line(summary_line(config.stash[TARGET], config.stash[TWINS]))


def summary_line(choice: TargetChoice, twins: list[dict[str, Any]]) -> str:
    """``stack target: KIND (why)`` and, for the twin, how each one this session started did."""
    line = choice.line()
    if choice.kind != "twin":
        return line
    if not twins:
        return line + "; no cluster spec ran, so no twin was started"
    parts = []
    for twin in twins:
        if twin.get("failed"):
            parts.append("a twin did not start")
            continue
        memory = f", {twin['memory'] / 2**20:.0f} MiB resident" if twin.get("memory") else ""
        bugs = f", bugs switched on: {', '.join(twin['bugs'])}" if twin.get("bugs") else ""
        parts.append(f"the twin came up in {twin['seconds']:.1f}s{memory}{bugs}")
    return line + "; " + "; ".join(parts)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(TWIN, None)
    if session is not None:
        session.stop()


@pytest.fixture(scope="session")
def stack_target(request: pytest.FixtureRequest) -> TargetChoice:
    """The session's :class:`~harness.target.TargetChoice` (``kind`` ``cluster`` or ``twin``, and why)."""
    return request.config.stash[TARGET]


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
