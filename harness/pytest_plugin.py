"""The harness's pytest plugin (loaded through the ``pytest11`` entry point ``harness``).

- Markers ``cluster`` (needs the pinned kube context) and ``disruptive`` (restarts or deletes shared
  infrastructure; never overlaps another spec).
- Options ``--kube-context`` and ``--namespace``.
- The context guard runs once at session start, when a cluster spec is selected: no kubectl, no kubeconfig
  or no current context skips every cluster spec with a one-line reason; a context outside
  ``[tool.harness] allowed_contexts`` fails every cluster spec before it touches anything, with the fix.
- Fixtures ``kube`` (session), ``since`` (anchored on the API server's clock), ``issue_number``,
  ``forwards`` (the session's :class:`harness.ForwardPool`) and ``kubectl_standin`` (a scripted kubectl on
  PATH, for cluster-free specs: :class:`harness.testing.standin.KubectlStandIn`).
- Every ``wait_for`` a test ran is listed in the terminal summary and added to the JUnit report as
  properties ``harness.wait.N``.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from harness import process, target_plugin, waiting
from harness.config import load_config
from harness.errors import ContextNotAllowed, HarnessError, KubectlNotFound, NoKubeContext
from harness.forward_fixtures import forwards, kubectl_standin  # noqa: F401 (fixtures: session ForwardPool, kubectl stand-in)
from harness.ids import unique_issue_number
from harness.kube import Kube

pytest_plugins = ["harness.target_plugin"]  # --target cluster|twin, the twin's lifetime, budgets that do not fit
_GUARD = pytest.StashKey[tuple[str, object]]()  # ("ok", Kube) | ("skip", reason) | ("fail", message)
_WAIT_PREFIX = "harness.wait."


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "end-to-end harness")
    group.addoption("--kube-context", default=None, help="kube context for cluster specs (must be in [tool.harness] allowed_contexts)")
    group.addoption("--namespace", default=None, help="namespace for cluster specs (default: [tool.harness] namespace, controller-agent)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster: needs the pinned minikube context; skipped with a reason when there is none")
    config.addinivalue_line("markers", "disruptive: restarts or deletes shared infrastructure; runs alone, never in parallel")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    cluster_items = [item for item in items if item.get_closest_marker("cluster")]
    if not cluster_items:
        return
    config.stash[_GUARD] = verdict, detail = _run_guard(config)
    if verdict == "skip":
        # A skip marker on each item (not one raised from this plugin) gives `-rs` one line per spec.
        for item in cluster_items:
            item.add_marker(pytest.mark.skip(reason=str(detail)))


def _run_guard(config: pytest.Config) -> tuple[str, object]:
    if (twin := target_plugin.guard_verdict(config)) is not None:
        return twin
    try:
        harness_config = load_config(config.rootpath)
        kube = Kube.connect(config.getoption("--kube-context"), config.getoption("--namespace"), config=harness_config)
    except (KubectlNotFound, NoKubeContext) as exc:
        return "skip", f"no cluster: {exc}"
    except ContextNotAllowed as exc:
        return "fail", str(exc)
    except (HarnessError, ValueError) as exc:
        return "fail", f"kube context guard could not run: {exc}"
    return "ok", kube


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("cluster") is None:
        return
    verdict, detail = item.config.stash.get(_GUARD, ("skip", "no cluster: guard did not run"))
    if verdict == "skip":
        pytest.skip(str(detail))
    if verdict == "fail":
        pytest.fail(str(detail), pytrace=False)


@pytest.fixture(scope="session")
def kube(request: pytest.FixtureRequest) -> Kube:
    """The guarded :class:`harness.Kube`, pinned to the allowed context and namespace (cluster specs only)."""
    verdict, detail = request.config.stash.get(_GUARD, ("skip", "no cluster: no spec marked cluster was selected"))
    if verdict == "skip":
        pytest.skip(str(detail))
    if verdict == "fail":
        pytest.fail(str(detail), pytrace=False)
    assert isinstance(detail, Kube)
    yield detail
    detail.close()


@pytest.fixture
def since(request: pytest.FixtureRequest) -> datetime:
    """An aware UTC anchor for "created since" windows.

    With a guarded cluster in this session: the API server's clock (``Kube.server_time()``, floored to the
    second); if that server does not answer, the fixture errors with :class:`harness.ApiServerUnreachable`
    rather than silently anchoring on a clock that may be skewed. Without a cluster (cluster-free specs):
    the host's clock, ``datetime.now(timezone.utc)``.
    """
    verdict, detail = request.config.stash.get(_GUARD, ("skip", None))
    if verdict == "ok" and isinstance(detail, Kube):
        return detail.server_time()
    return datetime.now(timezone.utc)


@pytest.fixture
def issue_number() -> int:
    """A GitHub issue number never used before on this machine (see :func:`harness.unique_issue_number`)."""
    return unique_issue_number()


# --- the test's own budget ------------------------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Every wait in the test ends before the test's pytest-timeout fires (see ``waiting.set_test_deadline``)."""
    timeout = _test_timeout(item)
    waiting.set_test_deadline(time.monotonic() + timeout if timeout else None, timeout or 0.0)
    try:
        yield
    finally:
        waiting.set_test_deadline(None)


def _test_timeout(item: pytest.Item) -> float | None:
    """The item's pytest-timeout in seconds (marker, option or ini), or ``None`` when there is none."""
    try:
        import pytest_timeout

        value = pytest_timeout._get_item_settings(item).timeout  # the plugin's own resolution of marker > option > ini
    except Exception:  # pytest-timeout absent or its private helper changed: no clamp rather than a wrong one
        return None
    return float(value) if value and value > 0 else None


# --- recording waits -----------------------------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    summaries = waiting.take_recorded()
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


@pytest.fixture(scope="session", autouse=True)
def _harness_leak_audit():
    """At session end, any child the harness spawned and never reaped is killed and fails the session loudly
    (an error on the session's last test, which pytest-xdist reports from every worker). Children that were alive
    before the session began are not its own (an in-process pytester session inside another one) and are left alone."""
    before = set(process.LIVE_CHILDREN)
    yield
    survivors = {pid: argv for pid, argv in list(process.LIVE_CHILDREN.items())
                 if pid not in before and process.group_alive(pid)}
    for pid in survivors:
        process.kill_pid_group(pid)
    if survivors:
        listing = "; ".join(f"pid {pid}: {' '.join(argv)}" for pid, argv in survivors.items())
        pytest.fail(f"harness leak audit: child processes outlived their tests and were killed now: {listing}", pytrace=False)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    _summarise_skipped_cluster_specs(terminalreporter)
    _summarise_waits(terminalreporter)


def _summarise_skipped_cluster_specs(terminalreporter) -> None:
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


def _summarise_waits(terminalreporter) -> None:
    rows: list[str] = []
    seen: set[tuple[str, str]] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            for name, value in getattr(report, "user_properties", ()):
                if not name.startswith(_WAIT_PREFIX) or (report.nodeid, name) in seen:
                    continue
                seen.add((report.nodeid, name))
                wait = json.loads(value)
                rows.append(
                    f"{report.nodeid}: {wait['outcome']:<8} {wait['elapsed']:7.2f}s of {wait['budget']:.1f}s  "
                    f"{wait['attempts']} attempts ({wait['hung']} hung, {wait['failed']} failed)  {wait['what']}"
                )
    if rows:
        terminalreporter.write_sep("-", "harness waits")
        terminalreporter.write_line("every wait_for each test ran; a timeout here may be what that test expected (failures are reported above)")
        for row in rows:
            terminalreporter.write_line(row)
