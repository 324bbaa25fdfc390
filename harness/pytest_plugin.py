"""The harness's pytest plugin (the ``pytest11`` entry point ``harness``): what every pytest run in the venv loads.

It declares the harness's options, markers and fixtures, and nothing heavier: the plugins that do the work
(:mod:`harness.cluster_plugin`, :mod:`harness.diagnostics_plugin`, :mod:`harness.targets`, :mod:`harness.shard_plugin`,
:mod:`harness.controlplane.fixtures`) are registered the first time the run uses the harness:

- at start, when the project's ``pyproject.toml`` (the nearest at or above the rootdir) has a ``[tool.harness]``
  table (or cannot be read), or a harness option is given;
- under pytest-xdist, in the controller, and in a worker whose controller registered them;
- at collection, when a collected spec is marked ``cluster``, ``disruptive``, ``evidence`` or ``control_plane``,
  asks for a harness fixture, or a spec module or conftest holds the harness or the fakes (``import harness``, or any
  module of either loaded);
- after a spec whose body first imported a module of the harness or the fakes (what that spec itself recorded is
  dropped: it ran before the plugins were there).

Until then a run loads this module and ``harness`` alone, prints and writes nothing of the harness, and its fixtures'
bodies are never imported. The clamp of waits to the test's pytest-timeout is here too: it reads the timer
pytest-timeout actually starts, from its hooks ``pytest_timeout_set_timer`` / ``pytest_timeout_cancel_timer`` (so
``func_only`` timers, which start after the fixtures, are seen as they are); a pytest-timeout without them is a usage
error, not a silently unclamped run.
"""

from __future__ import annotations

import sys
import time
import tomllib
from collections.abc import Generator, Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.cleanup import Ledger
    from harness.controlplane.target import ControlPlaneTarget
    from harness.diagnostics_plugin import EvidenceRequest
    from harness.forward_pool import ForwardPool
    from harness.kube import Kube
    from harness.service_addresses import ServiceAddresses
    from harness.targets import TargetChoice
    from harness.testing.standin import KubectlStandIn

PLUGINS = (
    "harness.cluster_plugin",  # the kube context guard, the cluster lock, the header, waits in reports
    "harness.diagnostics_plugin",  # evidence, cleanup, progress, the run's report
    "harness.targets",  # what cluster specs run against, the twin's lifetime, budgets that do not fit
    "harness.shard_plugin",  # the cluster specs split over several targets by recorded duration
    "harness.controlplane.fixtures",  # a real control plane, started on use
)
"""The plugins registered once a run uses the harness, in this order (their hooks' order among themselves)."""
DEFAULT_CLUSTER_LOCK_TIMEOUT = 3600.0
# Copies of values whose modules this one must not import at load (they pull in the heavy ones); a guard spec
# (specs/diagnostics/test_inert_plugin.py) holds each equal to its source.
TARGETS = ("auto", "cluster", "twin", "control-plane")  # harness.targets.TARGETS
PROGRESS_MODES = ("auto", "live", "lines", "off")  # harness.progress.MODES
EVIDENCE_BUDGET = 60.0  # harness.artifacts.DEFAULT_EVIDENCE_BUDGET
"""Seconds a cluster spec waits for another worker's cluster spec to finish before it errors."""
MARKERS = ("cluster", "disruptive", "evidence", "control_plane")
"""A collected spec carrying one of these uses the harness."""
_OWN_MODULES = frozenset({"harness", __name__})  # loaded by every run: not a sign of use
_ACTIVE = pytest.StashKey[bool]()
_SESSION = pytest.StashKey[pytest.Session]()
_LATE = pytest.StashKey[bool]()  # the plugins were registered during this collection's pytest_collection_modifyitems
_DEFAULTS: dict[str, object] = {}  # option dest: default (a value other than it is a harness option given)
_pending_deadline: tuple[float, float] | None = None  # the running test's, for harness.waiting if it loads mid-test


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "end-to-end harness")

    def option(name: str, **kwargs: Any) -> None:
        _DEFAULTS[name.lstrip("-").replace("-", "_")] = kwargs.get("default")
        group.addoption(name, **kwargs)

    option(
        "--kube-context",
        action="append",
        default=None,
        metavar="NAME",
        help="kube context for cluster specs (must be in [tool.harness] allowed_contexts); given several times, "
        "xdist worker i uses context i mod their number and the cluster specs are split over them",
    )
    option(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="kubeconfig file for cluster specs (default: [tool.harness] kubeconfig, else $KUBECONFIG, else "
        "kubectl's default)",
    )
    option(
        "--in-cluster",
        action="store_true",
        default=False,
        help="running in a pod: credentials from its service account under the context harness-in-cluster (which "
        "must be allowed), the cluster lock a Lease, Services dialled at their in-cluster addresses (no "
        "port-forwards): harness.incluster",
    )
    option(
        "--namespace",
        default=None,
        help="namespace for cluster specs (default: [tool.harness] namespace, else the context's own)",
    )
    option(
        "--cluster-lock-timeout",
        type=float,
        default=DEFAULT_CLUSTER_LOCK_TIMEOUT,
        help="seconds a cluster spec waits for the cluster lock held by another worker (default 3600)",
    )
    option(
        "--harness-waits",
        choices=("failed", "all", "none"),
        default="failed",
        help="waits listed in the terminal summary: of failed and cluster specs (default), all, none",
    )
    option(
        "--target",
        choices=TARGETS,
        default="auto",
        help="what the cluster specs run against: cluster (a kube context), twin (the one [tool.harness] twin "
        "names, started here), control-plane (a real control plane this run starts: harness.controlplane), auto "
        "(cluster if --kube-context, a current context or no twin configured, else twin)",
    )
    option(
        "--artifacts",
        default=None,
        metavar="DIR",
        help="where evidence of failed specs and the run's report.html go (default: <rootdir>/artifacts)",
    )
    option(
        "--keep-resources",
        action="store_true",
        default=False,
        help="never delete what the harness created in the cluster; print how to inspect and delete it",
    )
    option(
        "--evidence-budget",
        type=float,
        default=EVIDENCE_BUDGET,
        metavar="SECONDS",
        help="total time evidence collection may take per failed spec (default 60)",
    )
    option(
        "--progress",
        choices=PROGRESS_MODES,
        default="auto",
        help="progress of long waits: live (in place), lines (every 30 s), off; auto picks by terminal",
    )
    option(
        "--job-shard",
        default=None,
        metavar="I/N",
        help="run only shard I (0-based) of N: the cluster specs split as the main job splits them over N targets, "
        "the other specs by the same rule (a shard of an Indexed Job: harness.jobrun)",
    )
    option(
        "--harness-report",
        action="store_true",
        default=False,
        help="write DIR/<run id>/report.html with every spec, even when no spec used the harness",
    )


# --- when the run uses the harness -------------------------------------------------------------------------------


def used(config: pytest.Config) -> bool:
    """Whether this run registered the harness's plugins (:data:`PLUGINS`)."""
    return config.stash.get(_ACTIVE, False)


def use(config: pytest.Config) -> None:
    """Register the harness's plugins now (once): each gets the hooks already historic (``pytest_configure``), and
    ``pytest_sessionstart`` when the session has started."""
    if used(config):
        return
    config.stash[_ACTIVE] = True
    for name in PLUGINS:
        config.pluginmanager.import_plugin(name)
    session = config.stash.get(_SESSION, None)
    if session is not None:
        from harness import diagnostics_plugin

        try:
            diagnostics_plugin.pytest_sessionstart(session)
        except pytest.UsageError as exc:  # raised from a later hook, a usage error would be an internal error
            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def _asked_for(config: pytest.Config) -> bool:
    """A ``[tool.harness]`` table in the project's ``pyproject.toml`` (or one that cannot be read), or an option."""
    options = vars(config.known_args_namespace)
    if any(options.get(dest, default) != default for dest, default in _DEFAULTS.items()):
        return True
    here = config.rootpath.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                with candidate.open("rb") as f:
                    return tomllib.load(f).get("tool", {}).get("harness") is not None
            except (OSError, tomllib.TOMLDecodeError, AttributeError):
                return True  # harness.config says what is wrong with it
    return False


def _harness_loaded() -> bool:
    """A module of the harness or the fakes beyond this one: something imported them (a spec, a conftest)."""
    return any(
        name.startswith(("harness.", "fakes.")) or name == "fakes" for name in sys.modules if name not in _OWN_MODULES
    )


def _holds_harness(module: object) -> bool:
    """``import harness`` (or ``import fakes``) in a spec module or a conftest: loads nothing until used."""
    return any(isinstance(v, ModuleType) and v.__name__ in ("harness", "fakes") for v in vars(module).values())


def _collected_use(config: pytest.Config, items: list[pytest.Item]) -> bool:
    if _harness_loaded():
        return True
    fixtures = set(_FIXTURES)
    modules: dict[int, object] = {}
    for item in items:
        if fixtures.intersection(getattr(item, "fixturenames", ())):
            return True
        if any(mark.name in MARKERS for mark in item.iter_markers()):
            return True
        module = getattr(item, "module", None)
        if module is not None:
            modules[id(module)] = module
    conftests = [
        p for p in config.pluginmanager.get_plugins() if str(getattr(p, "__file__", "")).endswith("conftest.py")
    ]
    return any(_holds_harness(module) for module in [*modules.values(), *conftests])


@pytest.hookimpl(trylast=True)  # where harness.targets loads the twin: after pytest's own `pythonpath` ini handling
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    if _asked_for(early_config):
        use(early_config)
        from harness import targets

        targets.load_twin_plugin(early_config)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: needs the pinned kube context (or the configured twin); skipped with a reason without one"
    )
    config.addinivalue_line(
        "markers", "disruptive: restarts or deletes shared infrastructure; never overlaps another cluster spec"
    )
    config.addinivalue_line(
        "markers",
        "evidence(*targets): what to keep if the spec fails: 'deployment/NAME', "
        "'statefulset/NAME', 'pod/NAME', any 'kind/NAME', 'pods:SELECTOR', or a name a stack layer registered",
    )
    config.addinivalue_line(
        "markers",
        "control_plane: needs the real control plane's binaries (harness.controlplane); skipped, naming the build "
        "command, without them",
    )
    _require_timer_hooks(config)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if any(str(key).startswith("harness") for key in workerinput):  # the controller registered them
            use(config)
    elif getattr(config.option, "dist", "no") != "no":  # an xdist controller: its workers' specs are not known here
        use(config)


def _require_timer_hooks(config: pytest.Config) -> None:
    """A pytest-timeout whose timer the harness cannot see would leave waits unclamped: refuse to run."""
    if config.pluginmanager.hasplugin("timeout") and not hasattr(config.hook, "pytest_timeout_set_timer"):
        raise pytest.UsageError(
            "the harness reads each test's deadline from pytest-timeout's hooks pytest_timeout_set_timer and "
            "pytest_timeout_cancel_timer, which this pytest-timeout lacks (they came in 2.1): upgrade pytest-timeout, "
            "or waits could outlive the test's timeout"
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")  # before `-m` deselection
def pytest_collection_modifyitems_first(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Register the plugins when a collected spec uses the harness; this once, run their part of this hook here
    (they were not registered when it started)."""
    if used(config) or not _collected_use(config, items):
        return
    use(config)
    config.stash[_LATE] = True
    from harness import cluster_plugin

    cluster_plugin.pytest_collection_modifyitems_kube_users(items)


@pytest.hookimpl(trylast=True)  # after `-m` deselection
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.stash.get(_LATE, False):
        return
    del config.stash[_LATE]
    from harness import cluster_plugin, diagnostics_plugin, shard_plugin

    diagnostics_plugin.pytest_collection_modifyitems(session, config, items)
    cluster_plugin.pytest_collection_modifyitems(session, config, items)
    shard_plugin.split_cluster_specs(config, items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """A spec whose body imported the harness: the plugins are there from the next spec on."""
    yield
    config = item.config
    if used(config) or not _harness_loaded():
        return
    use(config)
    timeline, waiting = sys.modules.get("harness.timeline"), sys.modules.get("harness.waiting")
    if timeline is not None:
        timeline.take()  # this spec's, recorded before the plugins that read them were there
    if waiting is not None:
        waiting.take_recorded()


# --- the test's own budget ---------------------------------------------------------------------------------------


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """pytest-timeout starts the test's timer now (before set-up, or before the body with ``func_only``):
    every wait in the test ends before it fires (see ``waiting.set_test_deadline``; a test may call ``wait_for``
    without any harness fixture, and import it only then: :func:`pending_deadline`). Returns ``None`` so that
    pytest-timeout's own implementation still sets the timer."""
    global _pending_deadline
    seconds = float(settings.timeout)
    _pending_deadline = (time.monotonic() + seconds, seconds)
    if used(item.config):  # imported here, not by a spec, it stays for the session (pytester drops what its runs load)
        import harness.waiting  # noqa: F401 (loaded, read below through sys.modules)
    if (loaded := sys.modules.get("harness.waiting")) is not None:
        loaded.set_test_deadline(*_pending_deadline)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    global _pending_deadline
    _pending_deadline = None
    if (waiting := sys.modules.get("harness.waiting")) is not None:
        waiting.set_test_deadline(None)


def pending_deadline() -> tuple[float, float] | None:
    """The running test's ``(monotonic deadline, timeout in seconds)`` from pytest-timeout's timer, or ``None``:
    what :mod:`harness.waiting` starts with when a test first imports it."""
    return _pending_deadline


# --- fixtures: declared here, their bodies imported when a spec asks for one --------------------------------------


@pytest.fixture(scope="session")
def kube(request: pytest.FixtureRequest) -> Iterator[Kube]:
    """The guarded :class:`harness.Kube`, pinned to the allowed context and namespace (cluster specs only). Against
    the configured twin it is the twin's, started first (an unmarked spec asking for it too): never a twin's Kube
    whose twin was never started."""
    use(request.config)
    from harness import cluster_plugin

    yield from cluster_plugin.kube_fixture(request)


@pytest.fixture
def since(request: pytest.FixtureRequest) -> datetime:
    """An aware UTC anchor for "created since" windows.

    With a guarded cluster in this session: the API server's clock (``Kube.server_time()``, floored to the
    second); if that server cannot be used, the fixture errors with :class:`harness.ApiServerUnusable`
    rather than silently anchoring on a clock that may be skewed. Without a cluster (cluster-free specs):
    the host's clock, ``datetime.now(timezone.utc)``.
    """
    use(request.config)
    from harness import cluster_plugin

    return cluster_plugin.since_anchor(request)


@pytest.fixture
def issue_number(request: pytest.FixtureRequest) -> int:
    """A GitHub issue number never used before on this machine (see :func:`harness.unique_issue_number`)."""
    use(request.config)
    from harness.ids import unique_issue_number

    return unique_issue_number()


@pytest.fixture(scope="session")
def forwards(request: pytest.FixtureRequest) -> Iterator[ForwardPool | ServiceAddresses]:
    """One :class:`ForwardPool` for the session: ``forwards.get(kube, "svc/fake-github", 80)``; with
    ``--in-cluster``, a :class:`~harness.service_addresses.ServiceAddresses` (the Services' in-cluster addresses,
    no kubectl) with the same ``get``/``aget``.

    At session end every forward is stopped; if any kubectl child survived, teardown raises
    :class:`~harness.errors.ForwardLeak`, so the session fails loudly instead of leaving ports held.
    """
    use(request.config)
    from harness.forward_fixtures import session_pool

    pool = session_pool(request.config)
    yield pool
    pool.close()


@pytest.fixture
def kubectl_standin(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KubectlStandIn:
    """A scripted ``kubectl`` stand-in first on PATH for this test (see :mod:`harness.testing.kubectl_standin`).

    ``kubectl_standin.script(mode=..., target_port=...)`` sets its behaviour; ``kubectl_standin.kube()`` is a
    pinned :class:`~harness.kube.Kube` (context ``standin``, namespace ``default``) that runs it. A project whose specs
    expect other names overrides this fixture in its conftest (``KubectlStandIn(folder, context=..., namespace=...)``).
    """
    use(request.config)
    import os

    from harness.testing.standin import KubectlStandIn

    standin = KubectlStandIn(tmp_path / "kubectl-standin")
    monkeypatch.setenv("PATH", f"{standin.dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return standin


@pytest.fixture(scope="session")
def harness_run_id(request: pytest.FixtureRequest) -> str:
    """This run's id (shared by xdist workers): the value of the ``stack-harness.dev/run`` label."""
    use(request.config)
    from harness import diagnostics_plugin

    return diagnostics_plugin.run_id(request)


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> EvidenceRequest:
    """Declare what to keep if this spec fails (see :class:`harness.diagnostics_plugin.EvidenceRequest`)."""
    use(request.config)
    from harness import diagnostics_plugin

    return diagnostics_plugin.evidence_request(request)


@pytest.fixture
def cleanup(request: pytest.FixtureRequest, kube: Kube) -> Iterator[Ledger]:
    """A :class:`harness.cleanup.Ledger` for this spec: what it creates is labelled with the run id and deleted,
    newest first, after the spec, unless a spec of the module failed or ``--keep-resources``."""
    from harness import diagnostics_plugin

    yield from diagnostics_plugin.ledger_for(request, kube, request.node.nodeid)


@pytest.fixture(scope="module")
def module_cleanup(request: pytest.FixtureRequest, kube: Kube) -> Iterator[Ledger]:
    """A :class:`harness.cleanup.Ledger` for the module, deleted after its last spec (same rules as ``cleanup``)."""
    from harness import diagnostics_plugin

    yield from diagnostics_plugin.ledger_for(request, kube, request.node.nodeid)


@pytest.fixture(scope="session")
def harness_target(request: pytest.FixtureRequest) -> TargetChoice:
    """The session's :class:`harness.targets.TargetChoice` (``kind`` ``cluster`` or ``twin``, and why); skips when
    ``-m`` left no cluster spec to choose a target for."""
    use(request.config)
    from harness import targets

    return targets.session_target(request)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlaneTarget]:
    """The run's real control plane (:mod:`harness.controlplane.fixtures`), started on first use."""
    use(request.config)
    from harness.controlplane import fixtures

    yield from fixtures.session_control_plane(request)


@pytest.fixture
def control_plane_namespace(control_plane: ControlPlaneTarget, request: pytest.FixtureRequest) -> Iterator[Kube]:
    """A namespace of its own on the control plane for this spec, deleted after it."""
    from harness.controlplane import fixtures

    yield from fixtures.fresh_namespace(control_plane, request)


_FIXTURES = (
    *("kube", "since", "issue_number", "forwards", "kubectl_standin", "harness_run_id", "evidence", "cleanup"),
    *("module_cleanup", "harness_target", "control_plane", "control_plane_namespace"),
)


@pytest.fixture(scope="session", autouse=True)
def _harness_leak_audit() -> Iterator[None]:
    """At session end, any child the harness spawned and never reaped is killed and fails the session loudly
    (an error on the session's last test, which pytest-xdist reports from every worker). Children that were alive
    before the session began are not its own (an in-process pytester session inside another one) and are left alone."""
    process = sys.modules.get("harness.process")
    before = set(process.LIVE_CHILDREN) if process is not None else set()
    yield
    process = sys.modules.get("harness.process")
    if process is None:  # nothing of the harness started a child in this session
        return
    survivors = {
        pid: argv for pid, argv in list(process.LIVE_CHILDREN.items()) if pid not in before and process.group_alive(pid)
    }
    stubborn = [pid for pid in survivors if not process.kill_pid_group(pid)]
    if survivors:
        listing = "; ".join(f"pid {pid}: {' '.join(argv)}" for pid, argv in survivors.items())
        still = f" (still alive 5 s after SIGKILL: {', '.join(map(str, stubborn))})" if stubborn else ""
        pytest.fail(
            f"harness leak audit: child processes outlived their tests and were killed now: {listing}{still}",
            pytrace=False,
        )
