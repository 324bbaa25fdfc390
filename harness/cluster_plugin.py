"""The kube context guard, the cluster lock and the waits in reports: the bulk of the harness's pytest plugin.

Registered by :mod:`harness.pytest_plugin` (the ``pytest11`` entry point) once a run uses the harness; the markers
``cluster`` and ``disruptive``, the options (``--kube-context``, repeatable: xdist worker ``i`` uses context ``i`` mod
their number, and the cluster specs are split over them by :mod:`harness.shard_plugin`; ``--namespace``,
``--cluster-lock-timeout``, ``--harness-waits``) and the fixtures are declared there, and call in here.

- The context guard runs once per session and context, in the main process (each xdist worker receives the verdict
  for its own context): no kubectl,
  no kubeconfig or no current context skips every cluster spec with a one-line reason; a context outside
  ``[tool.harness] allowed_contexts`` fails every cluster spec before it touches anything, each with one line;
  the reason and the fix come once, in the terminal summary. The session header says which context, API server
  and namespace the cluster specs will touch, or why none.
- Before the first cluster spec, the API server is checked once (:meth:`harness.Kube.check_api_server`, 5 s per
  request): when it cannot be used (refused, no answer, TLS, an error status, unauthorized, no namespace), every
  cluster spec errors at set-up at once with that one line, instead of each spec running its own retry loop.
- Cluster specs on one context never overlap, whatever ``-n`` and ``--dist`` are: each holds an exclusive
  cross-process lock (``flock`` on a file in the harness state directory, one per context) from before its set-up
  to after its teardown, so a ``disruptive`` spec runs alone among the cluster specs of its target and plain ones
  run one at a time. They also carry an ``xdist_group`` (``cluster``, or ``cluster-<i>`` for shard ``i`` of
  several targets: :mod:`harness.shard_plugin`), so under ``--dist loadgroup`` (``make e2e``) each target's specs
  go to one worker and the lock is never contended; cluster-free specs spread over every worker. In a pod
  (``--in-cluster``: :mod:`harness.incluster`) the lock is a Lease in the guarded namespace instead
  (:mod:`harness.lease`), so specs in several pods against one stack never overlap either.
- The ``kube`` fixture's guarded :class:`harness.Kube` (:func:`kube_fixture`) and the ``since`` anchor on the API
  server's clock (:func:`since_anchor`).
- Every ``wait_for`` a test ran is added to the JUnit report as properties ``harness.wait.N``; the terminal
  summary lists the waits of failed specs and of cluster specs (``--harness-waits=all`` lists every one).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import sys
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import pytest

from harness import worker_collection
from harness.config import HarnessConfig, HarnessConfigError, load_config
from harness.errors import (
    ApiServerUnusable,
    ContextNotAllowed,
    ContextNotDefined,
    HarnessError,
    KubectlNotFound,
    NoKubeContext,
)
from harness.ids import state_dir
from harness.markexpr import cluster_specs_selectable

if TYPE_CHECKING:  # the rest is imported where it is used: a run that never reaches a cluster never loads it
    from harness import waiting
    from harness.kube import Kube
    from harness.lease import LeaseLock

Verdict = tuple[str, Any]  # ("ok", Kube) | ("skip", reason) | ("fail", message)

_GUARD = pytest.StashKey[Verdict]()  # this process's
_GUARDS = pytest.StashKey[dict[str | None, Verdict]]()  # the main process's, per context (None: the current one)
_CONFIG = pytest.StashKey[HarnessConfig]()
_API = pytest.StashKey[Verdict]()  # ("ok", ApiServerInfo) | ("fail", message)
_LOCK_FAILED = pytest.StashKey[str]()
LEASE_NAME = "harness-cluster-lock"
"""The in-cluster mode's cluster lock: a Lease of this name in the guarded namespace (:mod:`harness.lease`)."""
_WAIT_PREFIX = "harness.wait."
_WORKER_GUARD = "harness_guard"
_HEADER_SHOWN = pytest.StashKey[bool]()
_UNUSABLE = "cluster unusable: "
_GUARD_FAILED = "kube context guard: "


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_CONFIG] = _read_config(config)
    if config.getoption("--in-cluster", False):
        _pin_in_cluster(config)


def _pin_in_cluster(config: pytest.Config) -> None:
    """``--in-cluster``: the pod's service account as this session's only context (a usage error, once, when it
    cannot be read or another context or kubeconfig was asked for)."""
    import tempfile

    from harness import incluster

    if config.getoption("--kube-context") or config.getoption("--kubeconfig"):
        raise pytest.UsageError("--in-cluster brings its own context and kubeconfig: drop --kube-context/--kubeconfig")
    try:
        account = incluster.service_account()
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    folder = Path(tempfile.mkdtemp(prefix="harness-in-cluster-"))
    config.add_cleanup(lambda: _remove(folder))
    config.option.kubeconfig = str(incluster.write_kubeconfig(account, folder / "kubeconfig"))
    config.option.kube_context = [incluster.CONTEXT]


def _remove(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def _read_config(config: pytest.Config) -> HarnessConfig:
    """``[tool.harness]`` of the project (the nearest ``pyproject.toml`` at or above the rootdir), checked once at
    session start: a wrong table is one usage error (file, key, the known keys), not a traceback per spec."""
    try:
        return load_config(config.rootpath)
    except HarnessConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def harness_config(config: pytest.Config) -> HarnessConfig:
    """The session's checked ``[tool.harness]`` (:class:`harness.config.HarnessConfig`)."""
    if _CONFIG not in config.stash:
        config.stash[_CONFIG] = _read_config(config)
    return config.stash[_CONFIG]


# --- the guard: once per session --------------------------------------------------------------------------


def guard_verdict(config: pytest.Config) -> Verdict:
    """This process's guard verdict, computed once (in the main process; xdist workers get theirs from there, for
    their own context: :func:`worker_context`; against a twin each process has its own)."""
    if _GUARD not in config.stash:
        from harness import targets  # registered with this module

        workerinput = getattr(config, "workerinput", None)
        shipped = workerinput.get(_WORKER_GUARD) if workerinput else None
        twin = targets.guard_verdict(config)
        contexts = kube_contexts(config)
        mine = contexts[0] if contexts else None
        config.stash[_GUARD] = twin if twin is not None else _from_wire(shipped) if shipped else _guard_of(config, mine)
    return config.stash[_GUARD]


def kube_contexts(config: pytest.Config) -> list[str]:
    """The ``--kube-context`` values in the order given, repeats dropped (``[]``: none given)."""
    return list(dict.fromkeys(config.getoption("--kube-context") or []))


def worker_context(contexts: list[str], workerid: str) -> str | None:
    """The context of the xdist worker ``workerid`` (``gw<i>``): ``contexts[i % len(contexts)]``; ``None`` when no
    ``--kube-context`` was given (kubectl's current context, for every worker)."""
    if not contexts:
        return None
    digits = workerid.removeprefix("gw")
    return contexts[(int(digits) if digits.isdigit() else 0) % len(contexts)]


def _guard_of(config: pytest.Config, context: str | None) -> Verdict:
    """The guard's verdict for one context (``None``: kubectl's current one), run once per context per session."""
    verdicts = config.stash.setdefault(_GUARDS, {})
    if context not in verdicts:
        verdicts[context] = _run_guard(config, context)
    return verdicts[context]


def _run_guard(config: pytest.Config, context: str | None) -> Verdict:
    from harness.kube import Kube

    settings = harness_config(config)
    given = config.getoption("--kubeconfig") or settings.kubeconfig
    if given and not os.path.isfile(given):  # chosen on purpose: a typo fails loudly instead of skipping quietly
        where = "--kubeconfig" if config.getoption("--kubeconfig") else f"[tool.harness] kubeconfig, {settings.source}"
        return "fail", f"kubeconfig {given!r} does not exist (from {where}): fix the path or drop the setting"
    try:
        kube = Kube.connect(
            context,
            config.getoption("--namespace"),
            config=settings,
            kubeconfig=config.getoption("--kubeconfig"),
        )
    except KubectlNotFound as exc:
        return "skip", f"no cluster: {exc}"
    except ContextNotDefined as exc:
        if context is not None:  # asked for by name: a skip would leave a run that tested nothing green
            return "fail", str(exc)
        return "skip", f"no cluster: {exc}"
    except NoKubeContext as exc:
        twin = "" if settings.twin else "; or pass --kube-context NAME, or configure a twin ([tool.harness] twin)"
        return "skip", f"no cluster: {exc}{twin}"
    except ContextNotAllowed as exc:
        return "fail", str(exc)
    except (HarnessError, ValueError) as exc:
        return "fail", f"kube context guard could not run: {exc}"
    return "ok", kube


def _to_wire(verdict: Verdict) -> dict[str, Any]:
    state, detail = verdict
    if state == "ok":
        kube: Kube = detail
        return {
            "state": "ok",
            "context": kube.context,
            "namespace": kube.namespace,
            "allowed": list(kube.allowed),
            "kubectl": kube.kubectl_path,
            "kubeconfig": kube.kubeconfig,
            "kubeconfig_path": kube.kubeconfig_path,
            "allowed_origin": kube.allowed_origin,
        }
    return {"state": state, "detail": str(detail)}


def _from_wire(data: dict[str, Any]) -> Verdict:
    if data["state"] != "ok":
        return data["state"], data["detail"]
    from harness.kube import Kube

    try:
        kube = Kube(
            data["context"],
            data["namespace"],
            allowed=tuple(data["allowed"]),
            kubectl_path=data["kubectl"],
            kubeconfig=data["kubeconfig"],
            allowed_origin=data.get("allowed_origin"),
        )
    except (HarnessError, ValueError) as exc:
        return "fail", f"kube context guard could not run: {exc}"
    kube.kubeconfig_path = data["kubeconfig_path"]  # the files the main process resolved, not this worker's env
    kube.env["KUBECONFIG"] = data["kubeconfig_path"]
    return "ok", kube


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: ship each worker the guard's verdict for its own context (:func:`worker_context`), so
    kubectl's config is read once per context per session."""
    config = node.config
    if not cluster_specs_selectable(config):
        return
    from harness import targets  # registered with this module

    worker_collection.open_channel(node)  # for the header: the worker's collection has the markers this one lacks
    if targets.guard_verdict(config) is not None:  # against a twin, each worker has its own
        return
    context = worker_context(kube_contexts(config), str(node.workerinput.get("workerid", "")))
    node.workerinput[_WORKER_GUARD] = _to_wire(_guard_of(config, context))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What the cluster specs will touch, once collection found some, before anything runs: a run that collects
    none prints nothing of the harness. Under xdist the main process prints it from the workers' collections
    (:func:`pytest_xdist_node_collection_finished`)."""
    config = session.config
    if hasattr(config, "workerinput") or not any(item.get_closest_marker("cluster") for item in session.items):
        return
    _write_lines(config, target_lines(config))


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_finish")  # before xdist's own sends `collectionfinish`
def pytest_collection_finish_worker(session: pytest.Session) -> None:
    """xdist worker: hand its cluster specs and its header lines to the main process
    (:mod:`harness.worker_collection`)."""
    config = session.config
    if hasattr(config, "workerinput"):
        cluster = [item.nodeid for item in session.items if item.get_closest_marker("cluster")]
        worker_collection.send(config, cluster, target_lines(config) if cluster else [])


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # first: harness.shard_plugin's split line reads what it took
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist main process: the header, once every worker has said what its collection found."""
    config = node.config
    worker_collection.receive(node)
    collected = worker_collection.complete(config)
    if collected is None or _HEADER_SHOWN in config.stash or not worker_collection.cluster_nodeids(collected):
        return
    config.stash[_HEADER_SHOWN] = True
    _write_lines(config, worker_collection.merged_lines(collected) + _unused_context_lines(config, len(collected)))


def _write_lines(config: pytest.Config, lines: list[str]) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in lines:
            reporter.write_line(line)


def target_lines(config: pytest.Config) -> list[str]:
    """What the cluster specs will touch: the target (when a twin is configured) and the twin's own lines, or the
    context, API server and namespace, or why none."""
    from harness import targets  # registered with this module

    return targets.target_lines(config) + _guard_lines(config)


def _guard_lines(config: pytest.Config) -> list[str]:
    from harness import targets  # registered with this module

    if targets.stand_in(config) is not None:  # started before the first cluster spec: no API server yet
        return []  # harness.targets prints the target line and the twin's own lines
    state, detail = guard_verdict(config)
    if state == "skip":
        return [f"harness: cluster specs will be skipped: {detail}"]
    if state == "fail":  # the whole reason and the fix come once, in the terminal summary
        return [f"harness: cluster specs will fail at set-up: {_headline(str(detail))} (reason and fix at the end)"]
    kube: Kube = detail
    used = (
        f"harness: cluster specs use kube context {kube.context!r}, API server {kube.kubeconfig_server()}, "
        f"namespace {kube.namespace!r} (kubectl {kube.kubectl_path})"
    )
    if hasattr(config, "workerinput"):  # the main process says which contexts no worker took
        return [used]
    return [used, *_unused_context_lines(config, None)]


def _unused_context_lines(config: pytest.Config, workers: int | None) -> list[str]:
    """The ``--kube-context`` values no process takes: beyond the first in a run of one process (``workers``
    None), beyond the number of workers under xdist (worker ``i`` takes context ``i`` mod their number)."""
    unused = kube_contexts(config)[workers or 1 :]
    if not unused:
        return []
    names = ", ".join(repr(c) for c in unused)
    if workers is None:
        return [
            f"harness: --kube-context {names} not used: the cluster specs run in one process here; with xdist "
            "(-n 2 or more, --dist loadgroup) each worker takes one context"
        ]
    return [f"harness: --kube-context {names} not used: {workers} worker(s) take the first {workers} context(s)"]


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")  # before `-m` deselection
def pytest_collection_modifyitems_kube_users(items: list[pytest.Item]) -> None:
    """A spec that uses the harness's own ``kube`` fixture is a cluster spec, marked or not: it gets the cluster
    lock, the header and ``-m`` selection of one (a conftest's own ``kube`` fixture is left alone)."""
    for item in items:
        if item.get_closest_marker("cluster") is None and _uses_harness_kube(item):
            item.add_marker(pytest.mark.cluster)


def _uses_harness_kube(item: pytest.Item) -> bool:
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    defs: Any = definitions.get("kube") or []
    return bool(defs) and getattr(defs[-1].func, "__module__", "") == "harness.pytest_plugin"  # where it is declared


@pytest.hookimpl(trylast=True)  # after `-m` deselection: no guard at all when no cluster spec is left
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    cluster_items = [item for item in items if item.get_closest_marker("cluster")]
    if not cluster_items:
        return
    verdict, detail = guard_verdict(config)
    if verdict == "skip":
        # A skip marker on each item (not one raised from this plugin) gives `-rs` one line per spec.
        for item in cluster_items:
            item.add_marker(pytest.mark.skip(reason=str(detail)))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("cluster") is None:
        return
    if _LOCK_FAILED in item.stash:
        pytest.fail(item.stash[_LOCK_FAILED], pytrace=False)
    verdict, detail = guard_verdict(item.config)
    if verdict == "skip":
        pytest.skip(str(detail))
    if verdict == "fail":
        pytest.fail(_guard_failed_line(str(detail)), pytrace=False)
    api_state, api_detail = _api_verdict(item.config, detail)
    if api_state == "fail":
        pytest.fail(str(api_detail), pytrace=False)


def _guard_failed_line(detail: str) -> str:
    """A cluster spec's one-line set-up error when the guard failed: what happened, pointing at the one place
    (the terminal summary) that gives the whole reason and the fix, instead of repeating them for every spec."""
    return f"{_GUARD_FAILED}{_headline(detail)} (reason and fix once, under 'cluster specs not run' at the end)"


def _headline(detail: str) -> str:
    """``"refusing kube context 'x'"`` of ``"refusing kube context 'x': the harness may only touch ..."``."""
    return detail.split(": ", 1)[0]


def _api_verdict(config: pytest.Config, kube: Kube) -> Verdict:
    """Check the API server once per process, before the first cluster spec; remember the answer."""
    if _API not in config.stash:
        try:
            config.stash[_API] = ("ok", kube.check_api_server())
        except (ApiServerUnusable, NoKubeContext) as exc:
            config.stash[_API] = ("fail", f"{_UNUSABLE}{exc}")
    return config.stash[_API]


def kube_fixture(request: pytest.FixtureRequest) -> Iterator[Kube]:
    """The ``kube`` fixture's body: the guard's :class:`harness.Kube` (the twin's, started first, against a twin);
    skips or fails as the guard's verdict says."""
    from harness import targets  # registered with this module
    from harness.kube import Kube

    verdict, detail = guard_verdict(request.config)
    if verdict == "skip":
        pytest.skip(str(detail))
    if verdict == "fail":
        pytest.fail(_guard_failed_line(str(detail)), pytrace=False)
    twin = targets.stand_in(request.config)
    if twin is not None:
        try:
            twin.start()
        except HarnessError as exc:
            pytest.fail(str(exc), pytrace=False)
    assert isinstance(detail, Kube)
    yield detail
    detail.close()


def since_anchor(request: pytest.FixtureRequest) -> datetime:
    """The ``since`` fixture's value: the API server's clock for a cluster spec with a guarded cluster (raises
    :class:`harness.ApiServerUnusable` when that server cannot be used), else the host's UTC clock."""
    verdict, detail = request.config.stash.get(_GUARD, ("skip", None))
    if verdict == "ok" and _is_kube(detail) and request.node.get_closest_marker("cluster") is not None:
        return detail.server_time()
    return datetime.now(UTC)


# --- the test's own budget: its waits end before its timeout (the timer hooks are in harness.pytest_plugin) ---


def _loaded_waiting() -> Any:
    """:mod:`harness.waiting` when something imported it, else ``None`` (then no wait ran, and none is recorded)."""
    return sys.modules.get("harness.waiting")


def _is_kube(value: Any) -> TypeGuard[Kube]:
    kube = sys.modules.get("harness.kube")
    return kube is not None and isinstance(value, kube.Kube)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Cluster specs hold the cluster lock for their whole protocol (taken before pytest-timeout starts the
    test's timer, so waiting for the lock does not eat the test's budget)."""
    lock = _ClusterLock.for_item(item)
    try:
        if lock is not None:
            failure = lock.acquire(item.config.getoption("--cluster-lock-timeout"))
            if failure:
                item.stash[_LOCK_FAILED] = failure
        yield
    finally:
        if lock is not None:
            lock.release()
        if (waiting := _loaded_waiting()) is not None:
            waiting.set_test_deadline(None)


class _ClusterLock:
    """An exclusive ``flock`` on ``<state dir>/cluster-<context>.lock``, shared by every process on the machine.

    The holder writes its pid and node id into the file, so a spec that gives up waiting can say who held it.
    The kernel releases the lock when the holder exits by any path. The holder removes the file before it lets go,
    so no lock file outlives a run; a waiter that got the lock on a file removed meanwhile (its inode is no longer
    the path's) tries again on the new one, the usual ``flock``-and-unlink protocol.
    """

    def __init__(self, path: Path, nodeid: str) -> None:
        self.path, self.nodeid = path, nodeid
        self.fd: int | None = None

    @classmethod
    def for_item(cls, item: pytest.Item) -> _ClusterLock | LeaseLock | None:
        """The lock for a cluster spec: this file lock, or in a pod (``--in-cluster``) a Lease in the guarded
        namespace, which every pod against that namespace takes."""
        if item.get_closest_marker("cluster") is None:
            return None
        state, detail = guard_verdict(item.config)
        if state != "ok":
            return None  # nothing will touch a cluster: the spec skips or fails at set-up
        if item.config.getoption("--in-cluster", False):
            from harness.lease import LeaseLock

            return LeaseLock(detail, LEASE_NAME, f"{socket.gethostname()}/{os.getpid()} {item.nodeid}"[:128])
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", detail.context)
        return cls(state_dir() / f"cluster-{name}.lock", item.nodeid)

    def acquire(self, timeout: float) -> str | None:
        """Take the lock within ``timeout`` seconds; ``None`` on success, else why not (for the spec's error)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _same_file(fd, self.path):
                    break
                os.close(fd)  # the holder removed this file as it let go: lock the one at the path now
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                continue
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(self.path)
                    os.close(fd)
                    return (
                        f"cluster lock {self.path} still held after {timeout:.1f}s by {holder}: cluster specs run "
                        f"one at a time; raise --cluster-lock-timeout or run fewer cluster specs at once"
                    )
                time.sleep(0.05)  # polling the lock itself, bounded by the deadline
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "nodeid": self.nodeid, "since": time.time()}).encode(), 0)
        self.fd = fd
        return None

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # while still held: a waiter sees the inode change and starts over
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _read_holder(path: Path) -> str:
    try:
        data = json.loads(path.read_text() or "{}")
        return f"pid {data['pid']} ({data['nodeid']}, for {time.time() - float(data['since']):.0f}s)"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


# --- recording waits -----------------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    waiting = _loaded_waiting()
    summaries = waiting.take_recorded() if waiting is not None else []
    if not summaries:
        return
    report = outcome.get_result()
    start = sum(1 for name, _ in item.user_properties if name.startswith(_WAIT_PREFIX))
    for offset, summary in enumerate(summaries):
        entry = (f"{_WAIT_PREFIX}{start + offset}", json.dumps(_compact(summary)))
        item.user_properties.append(entry)
        report.user_properties.append(entry)


def _compact(summary: waiting.WaitSummary) -> dict[str, object]:
    return {
        "what": summary.describe,
        "outcome": summary.outcome,
        "elapsed": round(summary.elapsed, 3),
        "attempts": len(summary.attempts),
        "hung": summary.count("hung"),
        "failed": summary.count("failed"),
        "budget": summary.budget,
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Release the guard's kubernetes client (its pooled keep-alive connections) at the end of the session."""
    state, detail = session.config.stash.get(_GUARD, ("skip", None))
    if state == "ok" and _is_kube(detail):
        detail.close()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    _summarise_skipped_cluster_specs(terminalreporter)
    _summarise_failed_guard(terminalreporter, config)
    _summarise_unusable_cluster(terminalreporter)
    _summarise_waits(terminalreporter, config.getoption("--harness-waits"))
    _summarise_interrupted_waits(terminalreporter)


def _summarise_interrupted_waits(terminalreporter: Any) -> None:
    """After Ctrl-C: the waits that were running, with their spec (no report of that spec exists to carry them)."""
    waiting = _loaded_waiting()
    interrupted = [s for s in waiting.take_recorded() if s.outcome == "interrupted"] if waiting is not None else []
    if not interrupted:
        return
    terminalreporter.write_sep("-", f"interrupted while waiting ({len(interrupted)})")
    for s in interrupted:
        counts = f"{s.count('not-yet')} not yet, {s.count('failed')} failed, {s.count('hung')} hung"
        terminalreporter.write_line(
            f"{s.spec or '(outside a spec)'}: waiting for {s.describe}: {waiting.seconds(s.elapsed)}s of "
            f"{waiting.seconds(s.budget)}s, {waiting.plural(len(s.attempts), 'attempt')} ({counts})"
        )


def _summarise_skipped_cluster_specs(terminalreporter: Any) -> None:
    """One line per skipped cluster spec, with its reason (``-rs`` folds them by location)."""
    rows = []
    for report in terminalreporter.stats.get("skipped", []):
        if "cluster" not in getattr(report, "keywords", {}) or not isinstance(report.longrepr, tuple):
            continue
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        rows.append(f"{report.nodeid}: {reason}")
    if rows:
        terminalreporter.write_sep("-", f"cluster specs skipped ({len(rows)})")
        for row in rows:
            terminalreporter.write_line(row)


def _summarise_failed_guard(terminalreporter: Any, config: pytest.Config) -> None:
    """Per refused context: the guard's whole reason and fix, once, then the cluster specs it stopped."""
    stopped: dict[str, list[str]] = {}
    for report in terminalreporter.stats.get("error", []):
        text = str(getattr(report, "longrepr", "") or "")
        if text.startswith(_GUARD_FAILED):
            stopped.setdefault(text, []).append(report.nodeid)
    verdicts = [*config.stash.get(_GUARDS, {}).values(), config.stash.get(_GUARD, ("fail", None))]
    details = [str(detail) for state, detail in verdicts if state == "fail" and detail]
    for line, nodeids in stopped.items():
        terminalreporter.write_sep("-", f"cluster specs not run ({len(nodeids)}): the kube context guard stopped them")
        detail = next((d for d in details if _guard_failed_line(d) == line), None)
        if detail:
            terminalreporter.write_line(detail)
        for nodeid in nodeids:
            terminalreporter.write_line(f"  {nodeid}")


def _summarise_unusable_cluster(terminalreporter: Any) -> None:
    """Each cause that kept cluster specs from running, once, on one line, then the specs it stopped."""
    stopped: dict[str, list[str]] = {}
    for report in terminalreporter.stats.get("error", []):
        text = str(getattr(report, "longrepr", "") or "")
        if text.startswith(_UNUSABLE):
            stopped.setdefault(text.removeprefix(_UNUSABLE), []).append(report.nodeid)
    for cause, nodeids in stopped.items():
        terminalreporter.write_sep("-", f"cluster specs not run ({len(nodeids)}): the cluster is unusable")
        terminalreporter.write_line(cause)
        for nodeid in nodeids:
            terminalreporter.write_line(f"  {nodeid}")


def _summarise_waits(terminalreporter: Any, which: str) -> None:
    """The waits of failed specs and of cluster specs (``which="failed"``), of every spec (``"all"``), or none."""
    if which == "none":
        return
    reports = [report for kind in terminalreporter.stats.values() for report in kind if hasattr(report, "nodeid")]
    failed = {r.nodeid for r in reports if getattr(r, "outcome", "") == "failed"}
    rows: list[str] = []
    seen: set[tuple[str, str]] = set()
    for report in reports:
        shown = which == "all" or report.nodeid in failed or "cluster" in getattr(report, "keywords", {})
        for name, value in getattr(report, "user_properties", ()):
            if not shown or not name.startswith(_WAIT_PREFIX) or (report.nodeid, name) in seen:
                continue
            seen.add((report.nodeid, name))
            wait = json.loads(value)
            from harness import waiting  # recorded waits exist: something ran wait_for (in this process or a worker)

            rows.append(
                f"{report.nodeid}: {wait['outcome']:<8} {wait['elapsed']:7.2f}s of {wait['budget']:.1f}s  "
                f"{waiting.plural(wait['attempts'], 'attempt')} ({wait['hung']} hung, {wait['failed']} failed)  "
                f"{wait['what']}"
            )
    if rows:
        scope = "every spec" if which == "all" else "failed and cluster specs; --harness-waits=all lists every one"
        terminalreporter.write_sep("-", f"harness waits ({scope})")
        for row in rows:
            terminalreporter.write_line(row)
