"""Pytest plugin: what the cluster specs run against (a kube context, or a twin this session starts), and budgets
that do not fit.

Registered by :mod:`harness.pytest_plugin` once a run uses the harness (``--target`` is declared there). A twin (a
stand-in for the cluster: something that serves the Kubernetes API with the project's system deployed) exists only
where committed configuration names one: ``[tool.harness] twin = "<module>"`` names a pytest plugin module whose
``make_stand_in(config)`` returns a :class:`StandIn`. The harness imports that module by name when pytest starts
(before options are parsed, so it may add its own), and knows the twin only through :class:`StandIn`; it imports
nothing of any stack itself.

- ``--target auto|cluster|twin|control-plane`` (default ``auto``): :func:`choose_target`; ``control-plane`` is a
  real control plane this run starts (:mod:`harness.controlplane.target`), never chosen by ``auto``. ``auto``
  picks the cluster when ``--kube-context`` is given, kubectl has a current context, or no twin is configured
  (then, with no context, the cluster specs skip with the reason and the fix); the configured twin otherwise.
- Where a twin is configured, one line ``target: cluster|twin (why)`` in the session header and in the terminal
  summary (when a cluster spec ran), plus the lines the twin adds (:meth:`StandIn.header`, :meth:`StandIn.describe`).
- With the twin, the guard's verdict is the twin's own :class:`~harness.kube.Kube` (one context, allowed for this
  session only), and the twin starts (once per process: each xdist worker has its own) before the first cluster
  spec's set-up; a twin that cannot start fails every cluster spec with its reason. An unmarked spec's ``kube``
  fixture never gets a twin that was never started: it gets the same verdict only through a cluster spec's start.
- Budgets: a wait whose budget was clamped to fit the test's pytest-timeout is listed under "budgets that do not fit"
  in the summary; against the twin, the cluster spec that ran it fails even when the wait succeeded, because on a
  slower cluster the clamp would cut it short.

PYTEST_DONT_REWRITE: it has no assert a spec reads (pytest still compiles it itself where no byte-code is cached).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pytest

from harness.config import load_config
from harness.errors import HarnessError
from harness.markexpr import cluster_specs_selectable

if TYPE_CHECKING:  # imported where used: a run with no cluster spec and no twin never loads them
    from harness import waiting
    from harness.kube import Kube

TARGETS = ("auto", "cluster", "twin", "control-plane")
CONFIG_KEY = "[tool.harness] twin"
CLAMPED = "harness.budget_does_not_fit"
"""Report property (``user_properties``: it crosses from xdist workers) naming a clamped wait."""
CLAMP_NOTE = "budget clamped"
WORKER_KEY = "harness_twin"
CONTEXT_TIMEOUT = 10.0
"""Seconds ``kubectl config current-context`` may take (it reads local files only)."""

TWIN_MODULE = pytest.StashKey[ModuleType]()
TARGET = pytest.StashKey["TargetChoice"]()
STAND_IN = pytest.StashKey["StandIn"]()
NO_TWIN = pytest.StashKey[str]()
REPORTS = pytest.StashKey[list[dict[str, Any]]]()  # what each process's twin reported (xdist workers' included)


class StandIn(Protocol):
    """A twin, as the harness sees it. ``make_stand_in(config)`` in the configured module builds one (not started;
    a :class:`~harness.errors.HarnessError` there, e.g. no kubectl, skips the cluster specs with its message)."""

    @property
    def kube(self) -> Kube:
        """A :class:`~harness.kube.Kube` for the twin's own context (allowing that one only); usable once started."""
        ...

    def start(self) -> None:
        """Start once; later calls return at once, or raise the first failure again (a ``HarnessError``)."""
        ...

    def stop(self) -> None:
        """Stop and remove what it made; idempotent, bounded."""
        ...

    def report(self) -> dict[str, Any] | None:
        """JSON-ready facts about this process's twin (``None``: never started); xdist workers send them home."""
        ...

    def header(self) -> list[str]:
        """Session header lines of its own (``[]`` for none)."""
        ...

    def describe(self, reports: list[dict[str, Any]]) -> str:
        """Text appended to the summary's target line, from every process's :meth:`report` (may be ``""``)."""
        ...


@dataclass(frozen=True)
class TargetChoice:
    """``kind`` is ``cluster``, ``twin`` or ``control-plane``; ``reason`` says why, in a few words."""

    kind: Literal["cluster", "twin", "control-plane"]
    reason: str

    def line(self) -> str:
        return f"target: {self.kind} ({self.reason})"


def current_kube_context(timeout: float = CONTEXT_TIMEOUT) -> tuple[str | None, str]:
    """kubectl's current context, or ``None`` and why not (no kubectl, no kubeconfig, none set)."""
    from harness import process
    from harness.kube import resolve_kubectl

    try:
        kubectl = resolve_kubectl()
    except Exception as exc:
        return None, str(exc)
    try:
        done = process.run_bounded([kubectl, "config", "current-context"], timeout=timeout)
    except process.Timeout:
        return None, f"`kubectl config current-context` did not answer within {timeout:.0f}s"
    name = done.stdout.strip()
    if done.returncode != 0 or not name:
        return None, process.tail(done.stderr, 1) or "no current context"
    return name, ""


def choose_target(
    option: str,
    kube_context: str | None,
    *,
    twin: str | None = None,
    current: Callable[[], tuple[str | None, str]] = current_kube_context,
) -> TargetChoice:
    """The session's target. ``option`` is ``auto``, ``cluster`` or ``twin``; ``kube_context`` the ``--kube-context``
    given (several joined by ``, ``; ``None``: none); ``twin`` the configured twin module
    (``None``: none configured); ``current()`` -> ``(name, why)``.

    Raises ``ValueError`` for an unknown option, for ``twin`` together with ``--kube-context`` (a twin has its own
    context: it would silently ignore the one asked for), and for ``twin`` with no twin configured.
    """
    if option not in TARGETS:
        raise ValueError(f"--target must be one of {', '.join(TARGETS)}, got {option!r}")
    if option == "twin":
        if twin is None:
            raise ValueError(
                f"--target twin, but this project configures no twin: name the pytest plugin module that provides "
                f'one as {CONFIG_KEY} = "<module>" in pyproject.toml, or use --target cluster'
            )
        if kube_context:
            raise ValueError(
                f"--target twin with --kube-context {kube_context}: the twin has its own context; drop one of them"
            )
        return TargetChoice("twin", "forced by --target twin")
    if option == "control-plane":
        if kube_context:
            raise ValueError(
                f"--target control-plane with --kube-context {kube_context}: the control plane has its own context; "
                "drop one of them"
            )
        return TargetChoice("control-plane", "forced by --target control-plane")
    if option == "cluster":
        context = f", context {kube_context}" if kube_context else ""
        return TargetChoice("cluster", f"forced by --target cluster{context}")
    if kube_context:
        return TargetChoice("cluster", f"--kube-context {kube_context} given")
    if twin is None:
        return TargetChoice("cluster", "no twin configured")
    name, why = current()
    if name:
        return TargetChoice("cluster", f"kubectl's current context is {name!r}")
    return TargetChoice("twin", f"no --kube-context and no current kube context: {why}")


def load_twin_module(name: str) -> ModuleType:
    """Import the configured twin module; ``pytest.UsageError`` naming the key when it cannot be imported or has no
    ``make_stand_in``."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise pytest.UsageError(f'{CONFIG_KEY} = "{name}": cannot import it ({exc})') from None
    if not callable(getattr(module, "make_stand_in", None)):
        raise pytest.UsageError(f'{CONFIG_KEY} = "{name}": the module has no make_stand_in(config) function')
    return module


# --- hooks ------------------------------------------------------------------------------------------------------


def load_twin_plugin(early_config: pytest.Config) -> None:
    """Import the configured twin module as a plugin, before options are parsed (so its options exist): called by
    :mod:`harness.pytest_plugin`'s ``pytest_load_initial_conftests`` (trylast: after pytest's own ``pythonpath`` ini
    handling, so a module beside the project's specs imports)."""
    try:
        name = load_config(early_config.rootpath).twin
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not name:
        return
    module = load_twin_module(name)
    if not early_config.pluginmanager.is_registered(module):
        early_config.pluginmanager.register(module, name)
    early_config.stash[TWIN_MODULE] = module


def pytest_configure(config: pytest.Config) -> None:
    if not cluster_specs_selectable(config):  # `-m "not cluster"`: no target to choose, no kube context touched
        return
    module = config.stash.get(TWIN_MODULE, None)
    try:
        choice = choose_target(
            config.getoption("--target"),
            ", ".join(dict.fromkeys(config.getoption("--kube-context") or [])) or None,
            twin=module.__name__ if module is not None else None,
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[TARGET] = choice
    config.stash[REPORTS] = []
    if choice.kind == "control-plane":  # harness.controlplane.fixtures makes its stand-in (trylast)
        return
    if choice.kind != "twin" or module is None:
        return
    try:
        config.stash[STAND_IN] = module.make_stand_in(config)
    except HarnessError as exc:  # e.g. no kubectl: a twin is deployed and reached with the real one
        config.stash[NO_TWIN] = f"no cluster, and the twin cannot run here: {exc}"


def set_stand_in(config: pytest.Config, stand_in: StandIn | None, *, why_not: str = "") -> None:
    """Another harness plugin provides this session's stand-in (the control plane does): ``stand_in``, or ``None``
    and ``why_not`` (the cluster specs then skip with it)."""
    if stand_in is not None:
        config.stash[STAND_IN] = stand_in
    else:
        config.stash[NO_TWIN] = why_not


def target_choice(config: pytest.Config) -> TargetChoice | None:
    """The session's choice (``None`` when ``-m`` deselects every cluster spec)."""
    return config.stash.get(TARGET, None)


def stand_in(config: pytest.Config) -> StandIn | None:
    """The twin this process starts for its cluster specs (``None`` when the target is not the twin)."""
    return config.stash.get(STAND_IN, None)


def guard_verdict(config: pytest.Config) -> tuple[str, Any] | None:
    """The twin's guard verdict when the target is the twin, else ``None`` (the kube context guard runs)."""
    if NO_TWIN in config.stash:
        return "skip", config.stash[NO_TWIN]
    twin = stand_in(config)
    return ("ok", twin.kube) if twin is not None else None


def target_lines(config: pytest.Config) -> list[str]:
    """The ``target: ...`` line and the twin's own lines, for the harness's lines after collection (none when no
    twin is configured: there is nothing to choose between)."""
    choice = target_choice(config)
    if choice is None or (TWIN_MODULE not in config.stash and choice.kind != "control-plane"):
        return []  # no twin configured and no control plane asked for: nothing to choose between
    twin = stand_in(config)
    return [choice.line(), *(twin.header() if twin is not None else [])]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start the twin (once) before the first cluster spec's set-up touches it."""
    twin = stand_in(item.config)
    if twin is None or item.get_closest_marker("cluster") is None:
        return
    try:
        twin.start()
    except HarnessError as exc:
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
    choice = target_choice(item.config)
    if choice is not None and choice.kind == "twin" and report.passed:
        what, note = clamped[0]
        report.outcome = "failed"
        report.longrepr = (
            f"budget does not fit: the wait for {what} had its {note}, which passed against the twin but would cut "
            "the wait short on a slower cluster; raise the spec's timeout marker or shorten its budgets"
        )


def _peek_waits() -> list[waiting.WaitSummary]:
    waiting = sys.modules.get("harness.waiting")  # not loaded: no wait ran
    lock = getattr(waiting, "_recorded_lock", None)
    recorded = getattr(waiting, "_recorded", None)
    if lock is None or recorded is None:
        return []
    with lock:
        return list(recorded)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Record this process's twin (measured while it still runs); an xdist worker sends it to the controller."""
    config = session.config
    twin = stand_in(config)
    report = twin.report() if twin is not None else None
    if report is None:
        return
    if hasattr(config, "workeroutput"):
        config.workeroutput[WORKER_KEY] = report
    else:
        config.stash[REPORTS].append(report)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    report = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if report is not None and REPORTS in node.config.stash:
        node.config.stash[REPORTS].append(report)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    choice = target_choice(config)
    if choice is None:
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
    # no twin configured and no control plane asked for: nothing to choose between, no target line
    configured = TWIN_MODULE in config.stash or choice.kind == "control-plane"
    if configured and (config.stash[REPORTS] or any("cluster" in getattr(r, "keywords", {}) for r in reports)):
        terminalreporter.write_sep("-", "target")
        terminalreporter.write_line(summary_line(choice, stand_in(config), config.stash[REPORTS]))


def summary_line(choice: TargetChoice, twin: StandIn | None, reports: list[dict[str, Any]]) -> str:
    """``target: KIND (why)`` and, for the twin, what it says of the runs this session started."""
    line = choice.line()
    if choice.kind == "cluster":
        return line
    if not reports and choice.kind == "twin":
        return line + "; no cluster spec ran, so no twin was started"
    if not reports:
        return line + "; no control plane got ready (the skipped or failed cluster specs say why)"
    described = twin.describe(reports) if twin is not None else ""
    return f"{line}; {described}" if described else line


def pytest_unconfigure(config: pytest.Config) -> None:
    twin = stand_in(config)
    if twin is not None:
        twin.stop()


def session_target(request: pytest.FixtureRequest) -> TargetChoice:
    """The ``harness_target`` fixture's value: the session's :class:`TargetChoice`; skips when ``-m`` left no
    cluster spec to choose a target for."""
    choice = target_choice(request.config)
    if choice is None:
        pytest.skip("no target was chosen: -m deselects every cluster spec")
    return choice
