"""The real kubectl builds on this machine, and the version matrix that runs specs on each of them.

Where builds come from: the Cloud SDK bundle puts ``kubectl.1.NN`` files beside the binary that the ``kubectl`` on
PATH resolves to (``/usr/bin/kubectl`` -> ``/usr/lib/google-cloud-sdk/bin/kubectl``). That ``kubectl`` is not a
build but Google's *dispatcher* (``version --client`` says ``v1.32.4-dispatcher``): it asks the server's
``/version`` and execs the ``kubectl.1.NN`` matching the server's minor version. So the "installed default" is the
dispatcher, and which build it runs is decided by the double's ``gitVersion``.

Why a matrix: port-forward and exec changed transport across these versions, and kubectl's exit code on a lost
port-forward changed too:

==========  =======================================  ===================================  ====================
build       port-forward                             exec                                 lost connection exit
==========  =======================================  ===================================  ====================
1.27-1.29   SPDY/3.1 upgrade (``POST``)              SPDY/3.1, ``v4.channel.k8s.io``      1 (0 before 1.27)
1.30        SPDY/3.1 upgrade                         WebSocket ``v5.channel.k8s.io``      1
1.31-1.33   WebSocket tunnel carrying SPDY/3.1       WebSocket ``v5.channel.k8s.io``      1
==========  =======================================  ===================================  ====================

(``KUBECTL_PORT_FORWARD_WEBSOCKETS=false`` sends 1.31+ back to the SPDY upgrade, ``KUBECTL_REMOTE_COMMAND_WEBSOCKETS
=false`` exec; both fall back by themselves when the WebSocket upgrade is refused.)

The pytest side: a test that takes the ``kubectl_build`` fixture (a :class:`KubectlBuild`) runs once per selected
build, and carries the ``kubectl_matrix`` marker. Selection (option ``--kubectl-matrix`` or env ``KUBECTL_MATRIX``):

- ``edges`` (default, what ``make test`` runs): the installed default (the ``kubectl`` on PATH), the oldest and
  the newest ``kubectl.1.NN`` present;
- ``all`` (``make matrix``): every supported minor (:data:`SUPPORTED_MINORS`), a missing one skipped with its
  version in the reason, plus the newest build with its WebSocket transports switched off;
- ``default``: only the installed default.

Load with ``pytest_plugins = ["fakes.kube.kubectl_builds"]`` (the repository's conftest does).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from harness import process

SUPPORTED_MINORS = tuple(range(27, 34))
"""kubectl minors the matrix covers (1.27 to 1.33)."""

_BUILD_NAME = re.compile(r"^kubectl\.1\.(\d+)$")
_VERSION_TIMEOUT = 10.0


@dataclass(frozen=True)
class KubectlBuild:
    """One kubectl to run: ``path``, ``minor`` (27 for 1.27; for the dispatcher, the minor it reports),
    ``label`` (``1.27``, ``default``, ``1.33-spdy``), and ``env``: variables to set for it (the switches that turn
    a WebSocket transport off)."""

    path: str
    minor: int
    label: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def dispatcher(self) -> bool:
        """True for the Cloud SDK dispatcher (it execs the build matching the server's minor)."""
        return self.label == "default" and "dispatcher" in self.git_version()

    @property
    def portforward_transport(self) -> str:
        """``websocket`` (a WebSocket tunnel carrying SPDY, 1.31+) or ``spdy`` (the ``Upgrade: SPDY/3.1`` request)."""
        off = self.env.get("KUBECTL_PORT_FORWARD_WEBSOCKETS", "").lower() == "false"
        return "websocket" if self.minor >= 31 and not off else "spdy"

    @property
    def exec_transport(self) -> str:
        """``websocket`` (``v5.channel.k8s.io``, 1.30+) or ``spdy`` (``v4.channel.k8s.io`` over SPDY/3.1)."""
        off = self.env.get("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "").lower() == "false"
        return "websocket" if self.minor >= 30 and not off else "spdy"

    @property
    def lost_connection_exit_code(self) -> int:
        """Exit code after ``lost connection to pod``: 1 since 1.27, 0 before (kubernetes/kubernetes#114460)."""
        return 1 if self.minor >= 27 else 0

    def git_version(self) -> str:
        """``kubectl version --client`` gitVersion (cached; ``unknown`` when it cannot be read within 10 s)."""
        return _git_version(self.path)

    def server_git_version(self) -> str:
        """A server gitVersion this build is at home with (``v1.<minor>.0``); the dispatcher runs that minor."""
        return f"v1.{self.minor}.0"

    def environ(self) -> dict[str, str]:
        """``os.environ`` plus :attr:`env`, for a child process."""
        return {**os.environ, **self.env}

    def __str__(self) -> str:
        return f"kubectl {self.label} ({self.path})"


@functools.lru_cache(maxsize=32)
def _git_version(path: str) -> str:
    try:
        done = process.run_bounded([path, "version", "--client", "-o", "json"], timeout=_VERSION_TIMEOUT)
        return str(json.loads(done.stdout)["clientVersion"]["gitVersion"])
    except (OSError, process.Timeout, ValueError, KeyError, TypeError):
        return "unknown"


def installed_kubectl(name: str = "kubectl") -> str | None:
    """The absolute path of ``name`` on PATH (not resolved through links), or ``None``."""
    return shutil.which(name)


def builds_dir(name: str = "kubectl") -> str | None:
    """The directory holding ``kubectl.1.NN`` builds: that of the binary the ``kubectl`` on PATH resolves to."""
    found = installed_kubectl(name)
    return os.path.dirname(os.path.realpath(found)) if found else None


def discover(name: str = "kubectl") -> list[KubectlBuild]:
    """Every executable ``kubectl.1.NN`` beside the resolved ``kubectl``, oldest first (``[]`` when none)."""
    directory = builds_dir(name)
    if directory is None or not os.path.isdir(directory):
        return []
    builds = []
    for entry in os.listdir(directory):
        match = _BUILD_NAME.match(entry)
        path = os.path.join(directory, entry)
        if match and os.access(path, os.X_OK) and os.path.isfile(path):
            minor = int(match.group(1))
            builds.append(KubectlBuild(path, minor, f"1.{minor}"))
    return sorted(builds, key=lambda b: b.minor)


def default_build(name: str = "kubectl") -> KubectlBuild | None:
    """The ``kubectl`` on PATH as a build (minor from its ``version --client``), or ``None`` when absent."""
    found = installed_kubectl(name)
    if found is None:
        return None
    match = re.match(r"v1\.(\d+)", _git_version(found))
    return KubectlBuild(found, int(match.group(1)) if match else 0, "default")


def websockets_off(build: KubectlBuild) -> KubectlBuild:
    """``build`` with its WebSocket transports switched off (1.31+ port-forward and 1.30+ exec use SPDY again)."""
    env = {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false", "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
    return KubectlBuild(build.path, build.minor, f"{build.label}-spdy", env)


# --- the pytest matrix ---------------------------------------------------------------------------------------

SELECTIONS = ("edges", "all", "default")


def selection(config: pytest.Config) -> str:
    """The matrix selection in force (option, else env ``KUBECTL_MATRIX``, else ``edges``)."""
    chosen = config.getoption("kubectl_matrix", None) or os.environ.get("KUBECTL_MATRIX") or "edges"
    if chosen not in SELECTIONS:
        raise pytest.UsageError(f"--kubectl-matrix / KUBECTL_MATRIX must be one of {SELECTIONS}, got {chosen!r}")
    return chosen


def matrix_params(chosen: str) -> Iterator[object]:
    """``pytest.param`` entries for the selection: builds present run; missing ones skip, naming the version."""
    builds = discover()
    default = default_build()
    where = builds_dir() or "(no kubectl on PATH)"
    if chosen in ("edges", "default"):
        picked = [default] if default is not None else []
        if chosen == "edges" and builds:
            picked += [b for b in (builds[0], builds[-1]) if b not in picked]
        if not picked:
            yield pytest.param(
                None,
                id="kubectl-missing",
                marks=pytest.mark.skip(reason="no kubectl on PATH and no kubectl.1.NN build"),
            )
        for build in picked:
            yield pytest.param(build, id=f"kubectl-{build.label}")
        return
    present = {b.minor: b for b in builds}
    for minor in SUPPORTED_MINORS:
        if minor in present:
            yield pytest.param(present[minor], id=f"kubectl-1.{minor}")
        else:
            reason = f"kubectl 1.{minor} is not installed (no kubectl.1.{minor} in {where})"
            yield pytest.param(None, id=f"kubectl-1.{minor}", marks=pytest.mark.skip(reason=reason))
    if builds and builds[-1].minor >= 31:
        yield pytest.param(websockets_off(builds[-1]), id=f"kubectl-1.{builds[-1].minor}-spdy")
    if default is not None:
        yield pytest.param(default, id="kubectl-default")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kubectl-matrix",
        dest="kubectl_matrix",
        choices=SELECTIONS,
        default=None,
        help="kubectl builds for specs taking `kubectl_build`: edges (installed, oldest, newest; default), all, "
        "default",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kubectl_matrix: runs once per real kubectl build (fixture kubectl_build; see fakes.kube.kubectl_builds)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kubectl_build" in metafunc.fixturenames:
        metafunc.parametrize("kubectl_build", list(matrix_params(selection(metafunc.config))), scope="function")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "kubectl_build" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kubectl_matrix)


@pytest.fixture
def kubectl_env(kubectl_build: KubectlBuild, monkeypatch: pytest.MonkeyPatch) -> KubectlBuild:
    """``kubectl_build`` with its :attr:`~KubectlBuild.env` set in this process for the test (children inherit it)."""
    for key, value in kubectl_build.env.items():
        monkeypatch.setenv(key, value)
    return kubectl_build
