"""The harness's diagnostics in pytest: evidence of failed specs, cleanup that keeps it, progress, the run's report.

Registered by :mod:`harness.pytest_plugin` once a run uses the harness (which declares its options, marker and
fixtures). What it adds:

- Options ``--artifacts DIR`` (default ``artifacts/`` under the rootdir; checked writable at session start, a
  usage error otherwise), ``--keep-resources``, ``--evidence-budget SECONDS`` (60), ``--progress
  {auto,live,lines,off}``, ``--harness-report``.
- A run id per session, shared by pytest-xdist workers (``harness_run_id`` fixture), used for folder names and as
  the label value of everything the harness creates (``stack-harness.dev/run``).
- Evidence: when a spec that touched a cluster or a fake (or asked for evidence) fails, in set-up, call or teardown,
  its folder ``DIR/<run id>/<spec>/`` is filled by :func:`harness.evidence.collect` right then (before the teardown of
  its fixtures, so fakes and forwards are still there). A running pytest-timeout alarm (the ``signal`` method) is
  paused during collection and resumed after it, so collection is not cut by the spec's own timeout and runs even when
  that timeout stopped the spec. The terminal summary prints each folder on one line, and each failed spec without
  one and why (:mod:`harness.evidence_summary`); the JUnit XML carries it as the property ``harness.evidence``.
  What to collect: the marker ``@pytest.mark.evidence("deployment/web", "pods:app=web")``
  (and the names a stack layer registered with :func:`register_window_evidence`), the ``evidence`` fixture
  (:class:`EvidenceRequest`), objects the spec created through ``cleanup``/``module_cleanup``, and workloads it
  rolled out or waited on.
- Cleanup: fixtures ``cleanup`` (per spec) and ``module_cleanup`` (per module), :class:`harness.cleanup.Ledger`\\s.
  When their scope ends, after the spec's reports are all in, the plugin deletes what they recorded (newest first,
  bounded), unless a spec of the module failed (set-up and teardown included; pytest-xdist workers share this
  through marker files) or ``--keep-resources`` was given: then it keeps everything and the terminal summary says
  what, with the commands to inspect and to delete it. An interrupted session (Ctrl-C, or SIGTERM, made the same
  interrupt once a ledger exists) keeps and lists every ledger still open; the open ledgers of processes that died
  (a worker, an earlier run's pytest) are listed from their journals (:mod:`harness.cleanup_journal`).
- Progress of long waits on the terminal (in place) or as periodic lines (CI logs, xdist workers).
- ``DIR/<run id>/report.html``: one self-contained page with a shared time axis (:mod:`harness.report`).
- Inert until used: ``DIR/<run id>/`` is created only when there is something to put in it (a failed spec's
  evidence, the record of a spec that is marked ``cluster``, used a harness or fakes fixture, touched a cluster or
  opened a port-forward, or ``--harness-report``, which records every spec). A run that wrote one removes the
  oldest run folders beyond ``[tool.harness] keep_runs`` (default 20).

PYTEST_DONT_REWRITE: it has no assert a spec reads (pytest still compiles it itself where no byte-code is cached).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy
import pytest

from harness import artifacts, evidence_summary, progress, timeline
from harness.errors import RolloutFailed
from harness.evidence_summary import EVIDENCE_PROPERTY, NO_EVIDENCE_PROPERTY, no_evidence_reason
from harness.evidence_summary import shown as _shown

if TYPE_CHECKING:  # imported where used: a run that never uses the harness never loads them
    from harness.cleanup import Ledger
    from harness.evidence import ExtraEvidence, Interest, Sources
    from harness.kube import Kube
    from harness.rollout import Explanation

_RUN = pytest.StashKey["_Run"]()
_SPEC = pytest.StashKey["_SpecState"]()
_UNWRITTEN = "harness_unwritten"


@dataclass
class _Run:
    run_id: str
    base: Path  # the --artifacts folder
    keep: bool
    budget: float
    worker: str | None
    progress_fd: int | None = None
    progress_before: progress.Settings | None = None
    pending: list[tuple[Ledger, str]] = field(default_factory=list)
    failed_modules: set[str] = field(default_factory=set)
    ledger_modules: set[str] = field(default_factory=set)  # modules with a spec using cleanup or module_cleanup
    ready: bool = False
    report_all: bool = False  # --harness-report: record every spec and write report.html
    unwritten: list[tuple[Any, ...]] = field(default_factory=list)  # plain specs' records, kept until a folder exists
    journal: Any = None  # harness.cleanup_journal.Journal, made with the first ledger
    ledgers: list[Ledger] = field(default_factory=list)  # every ledger opened here, to settle any left open

    @property
    def folder(self) -> Path:
        return self.base / self.run_id


@dataclass
class _SpecState:
    started: float
    phases: dict[str, tuple[float, float, str]] = field(default_factory=dict)
    fixtures: dict[str, Any] = field(default_factory=dict)
    interest_: Interest | None = None  # made on first use (harness.evidence is not loaded before)
    evidence: str | None = None
    failure: str | None = None  # the first failure's message, for the report
    lead: str | None = None  # a rollout failure's message: it opens failure.txt, headline first
    index_counts: dict[str, int] = field(default_factory=dict)
    explanations: list[Explanation] = field(default_factory=list)
    forwards: list[Any] = field(default_factory=list)
    touches_cluster: bool = False

    @property
    def interest(self) -> Interest:
        if self.interest_ is None:
            from harness.evidence import Interest

            self.interest_ = Interest()
        return self.interest_

    uses_harness: bool = False  # marked cluster, or uses a fixture of the harness or the fakes


class EvidenceRequest:
    """The ``evidence`` fixture: declare what to keep if this spec fails.

    ``watch("deployment/web", "pod/x", "secret/s")`` (any ``kind/name``; deployments and statefulsets bring their
    ReplicaSets, pods, logs and a rollout explanation), ``watch_pods("app=web")`` (pods by label selector),
    ``add(extra)`` (an :class:`~harness.evidence.ExtraEvidence` a stack layer builds: its own file).
    """

    def __init__(self, interest: Interest) -> None:
        self.interest = interest

    def watch(self, *refs: str) -> None:
        self.interest.add(*refs)

    def watch_pods(self, selector: str) -> None:
        self.interest.add_selector(selector)

    def add(self, extra: ExtraEvidence) -> None:
        self.interest.add_extra(extra)


_WINDOW_EVIDENCE: dict[str, Callable[[datetime], ExtraEvidence]] = {}


def register_window_evidence(name: str, build: Callable[[datetime], ExtraEvidence]) -> None:
    """Let ``@pytest.mark.evidence(name)`` keep ``build(since)``: evidence of the spec's window, from its ``since``
    fixture (a spec without one gets nothing for ``name``). A stack layer's plugin calls this when it loads; a
    ``name`` containing ``/`` or ``:`` would shadow a ref or a selector and raises ``ValueError``."""
    if "/" in name or ":" in name:
        raise ValueError(f"evidence name {name!r}: '/' and ':' are kept for refs and selectors")
    _WINDOW_EVIDENCE[name] = build


_TARGET_EVIDENCE: list[Callable[[], list[ExtraEvidence]]] = []


def register_target_evidence(build: Callable[[], list[ExtraEvidence]]) -> None:
    """Keep ``build()`` for every failed spec that reached a cluster: evidence of the target itself (a stand-in's
    control plane logs, say), whatever the spec asked for. A stack layer's plugin calls this when it loads."""
    _TARGET_EVIDENCE.append(build)


# --- options and session ----------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    run_id = (workerinput or {}).get("harness_run_id") or artifacts.new_run_id()
    base = Path(config.getoption("--artifacts") or config.rootpath / "artifacts")
    budget = config.getoption("--evidence-budget")
    if not budget or budget <= 0:
        raise pytest.UsageError(f"--evidence-budget must be a positive number of seconds, got {budget}")
    run = _Run(
        run_id, base, bool(config.getoption("--keep-resources")), float(budget), (workerinput or {}).get("workerid")
    )
    run.report_all = bool(config.getoption("--harness-report"))
    config.stash[_RUN] = run
    _configure_progress(config, run)


def _configure_progress(config: pytest.Config, run: _Run) -> None:
    try:
        fd = os.dup(2)  # the real stderr: pytest's capture swaps descriptor 2 during tests, not this copy
    except OSError:
        return
    run.progress_fd = fd
    mode = config.getoption("--progress")
    terminal = os.isatty(fd) and run.worker is None
    run.progress_before = progress.configure(
        mode=mode,
        write=lambda text: _write_fd(fd, text),
        terminal=terminal,
        prefix=f"[{run.worker}] " if run.worker else "",
    )


def _write_fd(fd: int, text: str) -> None:
    data = text.encode(errors="replace")
    while data:
        data = data[os.write(fd, data) :]


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    if _SIGTERM_BEFORE in config.stash:
        signal.signal(signal.SIGTERM, config.stash[_SIGTERM_BEFORE])
    if run.progress_before is not None:
        progress.restore(run.progress_before)
    if run.progress_fd is not None:
        with contextlib.suppress(OSError):
            os.close(run.progress_fd)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker uses the controller's run id."""
    node.workerinput["harness_run_id"] = node.config.stash[_RUN].run_id


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check that the artifacts folder could be written, creating nothing (the run folder comes when needed)."""
    run = session.config.stash[_RUN]
    try:
        artifacts.check_creatable(run.base)
    except artifacts.ArtifactsNotWritable as exc:
        raise pytest.UsageError(str(exc)) from None
    run.ready = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Note the modules whose specs keep cleanup ledgers: only their failures need a marker shared by workers."""
    run = config.stash[_RUN]
    for item in items:
        _check_evidence_marker(item)
        if {"cleanup", "module_cleanup"} & set(getattr(item, "fixturenames", ())):
            run.ledger_modules.add(_module_id(item))


def _check_evidence_marker(item: pytest.Item) -> None:
    """``@pytest.mark.evidence`` takes ``kind/name``, ``pods:<selector>`` or a registered name: anything else is a
    usage error at collection, not a ref quietly read as a Deployment."""
    for marker in item.iter_markers("evidence"):
        for target in marker.args:
            text = str(target)
            if text in _WINDOW_EVIDENCE or (text.startswith("pods:") and text[5:]) or _is_kind_name(text):
                continue
            known = ", ".join(sorted(_WINDOW_EVIDENCE)) or "none registered"
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.evidence({target!r}) names nothing to keep: give kind/name "
                f"(deployment/web, pod/x, configmap/c), pods:<label selector> (pods:app=web), or a registered "
                f"name ({known})"
            )


def _is_kind_name(text: str) -> bool:
    kind, slash, name = text.partition("/")
    return bool(slash and kind and name and "/" not in name)


# --- the fixtures' bodies (declared in harness.pytest_plugin) ------------------------------------------------------


def run_id(request: pytest.FixtureRequest) -> str:
    """The ``harness_run_id`` fixture's value: this run's id, shared by xdist workers."""
    return str(request.config.stash[_RUN].run_id)


def evidence_request(request: pytest.FixtureRequest) -> EvidenceRequest:
    """The ``evidence`` fixture's value: an :class:`EvidenceRequest` for this spec."""
    state = _spec_state(request.node)
    state.touches_cluster = True
    return EvidenceRequest(state.interest)


def ledger_for(request: pytest.FixtureRequest, kube: Kube, scope: str) -> Iterator[Ledger]:
    """The ``cleanup`` and ``module_cleanup`` fixtures' body: a :class:`harness.cleanup.Ledger` for ``scope`` (a node
    id), settled once the scope's reports are all in."""
    run = request.config.stash[_RUN]
    issue = request.getfixturevalue("issue_number") if "issue_number" in request.fixturenames else None
    from harness.cleanup import Ledger

    if run.journal is None:
        from harness.cleanup_journal import Journal

        run.journal = Journal(run.folder, run.worker)
        _interrupt_on_sigterm(request.config)
    number = run.journal.new_ledger()
    ledger = Ledger(kube, run.run_id, scope=scope, issue=issue, record=lambda e, d: run.journal.write(number, e, **d))
    run.ledgers.append(ledger)
    yield ledger
    run.pending.append((ledger, _module_id(request.node)))  # decided once the spec's reports are all in


# --- per spec ---------------------------------------------------------------------------------------------------


def spec_interest(item: pytest.Item) -> Interest:
    """What a failure of ``item`` keeps as evidence (:class:`~harness.evidence.Interest`): another plugin of the
    harness adds to it (the control plane's component logs)."""
    return _spec_state(item).interest


def _spec_state(item: pytest.Item) -> _SpecState:
    state = item.stash.get(_SPEC, None)
    if state is None:
        state = item.stash[_SPEC] = _SpecState(time.time())
    return state


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    run = item.config.stash[_RUN]
    timeline.take()  # what happened between specs belongs to none
    state = _spec_state(item)
    state.uses_harness = _uses_harness(item)
    _add_marker_interest(item, state)
    try:
        yield
    finally:
        record = timeline.take()
        if run.ready:
            _settle_ledgers(run)
            _write_timeline(item, run, state, record)


def _uses_harness(item: pytest.Item) -> bool:
    """Marked ``cluster``, or asks for a fixture the harness's or the fakes' modules define (autouse ones aside)."""
    if item.get_closest_marker("cluster") is not None:
        return True
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    for name, defs in definitions.items():
        if name.startswith("_") or not defs:
            continue
        module = str(getattr(getattr(defs[-1], "func", None), "__module__", "") or "")
        if module.split(".")[0] in ("harness", "fakes"):
            return True
    return False


def _add_marker_interest(item: pytest.Item, state: _SpecState) -> None:
    for marker in item.iter_markers("evidence"):
        state.touches_cluster = True
        for target in marker.args:
            if target in _WINDOW_EVIDENCE:
                continue  # needs the spec's since: taken from its `since` fixture at collection time
            if str(target).startswith("pods:"):
                state.interest.add_selector(str(target)[5:])
            else:
                state.interest.add(str(target))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    run = item.config.stash[_RUN]
    state = _spec_state(item)
    state.phases[call.when] = (call.start, call.stop, report.outcome)
    if call.when == "setup" or not state.fixtures:
        state.fixtures = dict(getattr(item, "funcargs", None) or {})
    found = _find_forwards(state) + timeline.peek().forwards  # pool forwards, and port_forward() used directly
    state.forwards += [f for f in found if all(f is not seen for seen in state.forwards)]
    if not report.failed:
        return
    if state.failure is None:
        state.failure = _failure_message(report, call.excinfo)
        state.lead = state.failure if call.excinfo is not None and _is_rollout(call.excinfo.value) else None
    run.failed_modules.add(_module_id(item))
    if run.ready and _module_id(item) in run.ledger_modules:
        artifacts.append_line(run.folder / ".failed" / artifacts.safe_name(_module_id(item)), call.when)
    if not run.ready:
        return
    if not _qualifies(item, state):
        cluster_spec = item.get_closest_marker("cluster") is not None
        report.user_properties.append((NO_EVIDENCE_PROPERTY, no_evidence_reason(cluster_spec)))
        return
    if state.evidence is None:
        _collect_evidence(item, run, state, call.when, report)
    else:
        _note_later_failure(state, call.when, report)
    entry = (EVIDENCE_PROPERTY, state.evidence)
    if entry not in item.user_properties:
        item.user_properties.append(entry)
    if entry not in report.user_properties:
        report.user_properties.append(entry)


def _qualifies(item: pytest.Item, state: _SpecState) -> bool:
    """A spec that reached a cluster or a fake, or asked for evidence (a cluster spec refused by the context guard
    before it got its ``kube`` has nothing to show)."""
    if state.touches_cluster or timeline.peek().touched or timeline.peek().forwards:
        return True
    return any(_is_kube(v) or _is_fake(v) or _is_ledger(v) for v in state.fixtures.values())


def _collect_evidence(item: pytest.Item, run: _Run, state: _SpecState, phase: str, report: pytest.TestReport) -> None:
    folder = run.folder / artifacts.spec_folder_name(item.nodeid)
    suffix = 2
    while folder.exists():
        folder = run.folder / f"{artifacts.spec_folder_name(item.nodeid)}-{suffix}"
        suffix += 1
    state.evidence = str(folder)
    sources = _sources(item, state, phase, report)
    with _alarm_paused():
        from harness.evidence import collect

        index, explanations = collect(folder, sources, budget=run.budget)
    state.explanations = explanations
    state.index_counts = {s: index.count(s) for s in ("ok", "failed", "cut", "not-found", "not-started")}


def _is_rollout(error: BaseException) -> bool:
    return isinstance(error, RolloutFailed)


def _failure_message(report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None = None) -> str:
    """The failure as pytest's short summary gives it (the exception's message), else the report's last lines. A
    rollout failure is its own message, without the exception's type before it: the explanation's headline first."""
    if excinfo is not None and _is_rollout(excinfo.value):
        return str(excinfo.value)
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if isinstance(message, str) and message.strip():
        return message
    return "\n".join(report.longreprtext.strip().splitlines()[-8:])


def _note_later_failure(state: _SpecState, phase: str, report: pytest.TestReport) -> None:
    assert state.evidence is not None
    with contextlib.suppress(OSError):
        artifacts.write_text(
            Path(state.evidence) / f"failure-{phase}.txt", f"also failed in {phase}\n\n{report.longreprtext}\n"
        )


def _sources(item: pytest.Item, state: _SpecState, phase: str, report: pytest.TestReport) -> Sources:
    record = timeline.peek()
    interest = state.interest
    from harness.evidence import Sources

    for ledger in (v for v in state.fixtures.values() if _is_ledger(v)):
        interest.add(*ledger.refs)
    kube = _find_kube(state.fixtures)
    for touched_kube, ref in record.touched:
        if kube is None or touched_kube is kube or touched_kube.context == kube.context:
            interest.add(ref)
            kube = kube or touched_kube
    since = state.fixtures.get("since")
    if isinstance(since, datetime):
        for marker in item.iter_markers("evidence"):
            for target in marker.args:
                if target in _WINDOW_EVIDENCE:
                    interest.add_extra(_WINDOW_EVIDENCE[target](since))
    if kube is not None:
        for build in _TARGET_EVIDENCE:
            for extra in build():
                interest.add_extra(extra)
    return Sources(
        spec=item.nodeid,
        phase=phase,
        failure=report.longreprtext,
        lead=state.lead,
        kube=kube,
        interest=interest,
        record=record,
        fakes={name: v for name, v in state.fixtures.items() if _is_fake(v)},
        forwards=state.forwards,
        started=state.started,
    )


def _is_kube(value: Any) -> bool:
    return isinstance(value, _loaded("harness.kube", "Kube")) or (
        hasattr(value, "kubeconfig") and hasattr(value, "double")
    )


def _is_ledger(value: Any) -> bool:
    return isinstance(value, _loaded("harness.cleanup", "Ledger"))


def _loaded(module: str, name: str) -> tuple[type, ...]:
    """``(module.name,)`` when that module is loaded, else ``()``: no instance of a class never imported exists,
    and ``isinstance(x, ())`` is False, so checking costs no import."""
    found = getattr(sys.modules.get(module), name, None)
    return (found,) if isinstance(found, type) else ()


def _is_fake(value: Any) -> bool:
    return callable(getattr(value, "requests", None)) and hasattr(value, "runtime")


def _find_kube(fixtures: dict[str, Any]) -> Kube | None:
    from harness.kube import Kube

    found = fixtures.get("kube")
    if isinstance(found, Kube):
        return found
    for value in fixtures.values():
        if isinstance(value, Kube):
            return value
    for value in fixtures.values():
        if hasattr(value, "double") and callable(getattr(value, "kube", None)):
            try:
                kube = value.kube()  # a fakes.kube handle
            except Exception:
                return None
            return kube if isinstance(kube, Kube) else None
    return None


def _find_forwards(state: _SpecState) -> list[Any]:
    found: list[Any] = []
    for value in state.fixtures.values():
        if callable(getattr(value, "forwards", None)):  # a harness.ForwardPool
            with contextlib.suppress(Exception):
                found += list(value.forwards())
        elif hasattr(value, "stderr_tail") and hasattr(value, "remote_port"):  # a harness.PortForward
            found.append(value)
    return found


@contextlib.contextmanager
def _alarm_paused() -> Iterator[None]:
    """Hold a pending SIGALRM timer (pytest-timeout's ``signal`` method) while evidence is collected."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    remaining, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if remaining > 0:
            signal.setitimer(signal.ITIMER_REAL, remaining)


# --- cleanup decisions ------------------------------------------------------------------------------------------


def _settle_ledgers(run: _Run) -> None:
    pending, run.pending = run.pending, []
    for ledger, module in pending:
        failed = module in run.failed_modules or (run.folder / ".failed" / artifacts.safe_name(module)).exists()
        if run.keep or failed:
            _keep(run, ledger, "--keep-resources" if run.keep else f"a spec in {module} failed")
            continue
        result = ledger.delete()
        if result.failed:
            _append_json(
                run.folder / ".cleanup.jsonl", {"kind": "failed", "scope": ledger.scope, "failed": result.failed}
            )


def _settle_left_open(run: _Run, *, interrupted: bool) -> None:
    """Ledgers whose scope ended only with the session (an interrupt, ``-x``), or never (the session stopped inside
    it): settled by the usual rules, or all kept when the run was interrupted."""
    if interrupted:
        for ledger, _module in run.pending:
            _keep(run, ledger, "the run was interrupted")
        run.pending = []
    else:
        _settle_ledgers(run)
    for ledger in run.ledgers:
        if not ledger.closed:
            _keep(run, ledger, "the run ended inside its scope" + (" (interrupted)" if interrupted else ""))


def _keep(run: _Run, ledger: Ledger, why: str) -> None:
    _append_json(run.folder / ".cleanup.jsonl", {"kind": "kept", **ledger.keep(), "why": why})


def _list_orphans(run: _Run) -> None:
    """Open ledgers of processes that died (a worker, or an earlier run's pytest), listed as kept in this run's
    summary; each is claimed, so no later run lists it again (:mod:`harness.cleanup_journal`)."""
    try:
        folders = sorted(p for p in run.base.iterdir() if (p / ".ledgers").is_dir())
    except OSError:
        return
    from harness.cleanup_journal import claim_orphans

    for orphan in claim_orphans(folders):
        orphan.check()
        if not orphan.refs and not orphan.sweeps and not orphan.unchecked:
            continue  # nothing of it is left: another ledger deleted it, or it was never created
        earlier = f"; run {orphan.run_id}" if orphan.run_id != run.run_id else ""
        unchecked = f"; {orphan.unchecked}" if orphan.unchecked else ""
        why = f"its process ({orphan.worker}, pid {orphan.pid}) died inside the scope{earlier}{unchecked}"
        entry = {"scope": orphan.scope, "run": orphan.run_id, "refs": orphan.refs, "sweeps": orphan.sweeps}
        _append_json(
            run.folder / ".cleanup.jsonl", {"kind": "kept", **entry, "commands": orphan.commands(), "why": why}
        )


_SIGTERM_BEFORE = pytest.StashKey[Any]()


def _interrupt_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM (a CI job cancelled, ``kill``) becomes the interrupt Ctrl-C is, so pytest tears down and the ledgers
    are settled and listed; only where nothing else handles SIGTERM, in the main thread, restored at unconfigure."""
    if threading.current_thread() is not threading.main_thread() or _SIGTERM_BEFORE in config.stash:
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    config.stash[_SIGTERM_BEFORE] = signal.signal(signal.SIGTERM, _raise_interrupt)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _append_json(path: Path, data: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        artifacts.append_line(path, json.dumps(data, default=str))


def _module_id(node: pytest.Item | pytest.Collector) -> str:
    return node.nodeid.split("::", 1)[0]


# --- the run's timeline and report ------------------------------------------------------------------------------


def _write_timeline(item: pytest.Item, run: _Run, state: _SpecState, record: timeline.SpecRecord) -> None:
    entry = (
        item.nodeid,
        state.phases,
        state.evidence,
        record,
        state.forwards,
        state.explanations,
        state.failure,
        run.worker,
    )
    # A spec whose body never ran (a cluster spec skipped for want of a cluster, or refused by the context guard)
    # touched nothing: alone, it leaves no run folder and no report.
    ran = "call" in state.phases
    used = (
        state.evidence or record.touched or record.forwards or (ran and (state.uses_harness or state.touches_cluster))
    )
    if not (used or record.waits or record.rollouts or run.report_all):
        run.unwritten.append(entry)  # on the page only if the run writes one: a plain run leaves nothing behind
        return
    _flush_timeline(run, [*run.unwritten, entry])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist controller: a worker's plain specs, for the page if the run writes one."""
    run = node.config.stash.get(_RUN, None)
    worker = getattr(node, "workerinput", {}).get("workerid")  # the worker that ran them, not this controller
    for nodeid, phases, failure in getattr(node, "workeroutput", {}).get(_UNWRITTEN, []) if run else []:
        stamps = {when: tuple(value) for when, value in phases.items()}
        run.unwritten.append((nodeid, stamps, None, timeline.SpecRecord(), [], [], failure, worker))


def _flush_timeline(run: _Run, entries: list[tuple[Any, ...]]) -> None:
    from harness import report

    run.unwritten = []
    for nodeid, phases, evidence, record, forwards, explanations, failure, worker in entries:
        spec = report.spec_entry(
            nodeid, phases, evidence, record, forwards, explanations, failure=failure, worker=worker
        )
        _append_json(run.folder / ".timeline" / f"{run.worker or 'main'}.jsonl", spec)


@pytest.hookimpl(trylast=True)  # after pytest's own teardown of what is still set up (an interrupt, -x)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(_RUN, None)
    if run is None or not run.ready:
        return
    _settle_left_open(run, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    if run.worker is None:
        _list_orphans(run)
    if run.worker is not None:  # the controller writes them if the run has a folder by then (xdist: the page shows all)
        config: Any = session.config
        config.workeroutput[_UNWRITTEN] = [[e[0], e[1], e[6]] for e in run.unwritten if not e[3].waits]
        return
    if run.unwritten and run.folder.is_dir():  # another spec made the run folder: the page shows every spec
        _flush_timeline(run, run.unwritten)
    if not (run.folder.is_dir() or run.report_all):
        return  # nothing was recorded: no folder, no report, nothing pruned
    with contextlib.suppress(OSError):
        from harness import report

        run.folder.mkdir(parents=True, exist_ok=True)
        report.write(run.folder, run.run_id)
    artifacts.prune_runs(run.base, keep=_keep_runs(session.config), current=run.run_id)


def _keep_runs(config: pytest.Config) -> int:
    from harness.config import DEFAULT_KEEP_RUNS, HarnessConfigError, load_config

    try:
        return load_config(config.rootpath).keep_runs
    except HarnessConfigError:  # the harness plugin has already refused this table at start
        return DEFAULT_KEEP_RUNS


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if run is None or not run.ready:
        return
    _summarise_evidence(terminalreporter)
    _summarise_cleanup(terminalreporter, run)
    page = run.folder / "report.html"
    if page.exists():
        terminalreporter.write_line(f"harness report: {_shown(page)}")


def _summarise_evidence(terminalreporter: Any) -> None:
    summary = evidence_summary.lines(terminalreporter.stats)
    if summary is not None:
        terminalreporter.write_sep("-", summary[0])
        for row in summary[1]:
            terminalreporter.write_line(row)


def _summarise_cleanup(terminalreporter: Any, run: _Run) -> None:
    try:
        lines = (run.folder / ".cleanup.jsonl").read_text().splitlines()
    except OSError:
        return
    entries = [json.loads(line) for line in lines if line.strip()]
    kept = [e for e in entries if e.get("kind") == "kept" and (e.get("refs") or e.get("sweeps"))]
    failed = [e for e in entries if e.get("kind") == "failed"]
    if kept:
        terminalreporter.write_sep("-", f"cluster resources kept ({len(kept)} scope(s), run {run.run_id})")
        for entry in kept:
            what = ", ".join(entry["refs"]) or "(no objects)"
            if entry.get("sweeps"):
                what += f"; not swept: {', '.join(entry['sweeps'])}"
            terminalreporter.write_line(f"{entry['scope']}: kept {what} ({entry['why']})")
            for command in entry.get("commands") or []:
                terminalreporter.write_line(f"    {command}")
    if failed:
        terminalreporter.write_sep("-", "cleanup failures")
        for entry in failed:
            for target, error in entry["failed"]:
                terminalreporter.write_line(f"{entry['scope']}: could not delete {target}: {error}")
