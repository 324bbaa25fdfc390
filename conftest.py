"""Repository-level pytest configuration.

The harness's own pytest plugin (markers ``cluster`` and ``disruptive``, options ``--kube-context`` and
``--namespace``, fixtures ``kube``, ``since``, ``issue_number``, ``forwards``) is loaded through its
``pytest11`` entry point (``harness.pytest_plugin``), so it works the same in any project that installs
the harness. The fakes' fixtures (``fake_qdrant``, ``fake_github``, ``fake_openai``, ``fake_kube``) are listed here.
"""

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fakes import extras

if TYPE_CHECKING:
    from harness.testing.standin import KubectlStandIn

pytest_plugins = [
    "pytester",  # the plugin's guard specs run inner pytest sessions
    "fakes.fixtures",  # fake_github, fake_openai, fake_qdrant, fake_kube: each fake imported when first used
    "specs.bytecode",  # under xdist, the controller rewrites the suite's modules once before the workers start
    "specs.parity.summary",  # the double-against-the-real-server comparison's line in the summary
    "specs.targets",  # target_name / target: specs that run on the API double and on the real control plane
]
if extras.installed("kube-double"):  # `make install-check` runs one other fake's specs in a venv without the double
    pytest_plugins.append("fakes.kube.kubectl_builds")  # the kubectl version matrix (kubectl_build, --kubectl-matrix)


GC_THRESHOLDS = (700, 10, 100)
"""Python's cyclic garbage collector in this suite's processes: a full collection after 100 of the middle generation
instead of 10 (Python's default is (700, 10, 10)); the young generations are collected as often as by default. A
worker of this suite holds the fakes' client libraries (pydantic models by the thousand) and every collected spec, and
each full collection walks all of it: by default 15% of the Python CPU of a `make test` run went to the collector
(16.8 of 108.8 s, 13.7 s of it in full collections). The fakes' specs in one process (fake_openai, github, qdrant):
4.0-4.4 s of 28-30 s by default, 1.4-1.5 s with this and the collected session frozen out of the collector."""
gc.set_threshold(*GC_THRESHOLDS)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()  # modules, fixtures' definitions and the collected specs live as long as the process: never garbage


INNER_RUN_PLUGINS_OFF = ("hypothesispytest",)
"""Installed pytest plugins no inner project here uses: hypothesis's imports the whole of hypothesis, about a third of
the start-up CPU of an inner pytest process. anyio's stays: without it anyio is first imported (and assert-rewritten,
as a plugin's package) inside the first wait of a spec, on that spec's timer."""

XDIST_WORKER_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _inner_runs_are_sessions_of_their_own(request: pytest.FixtureRequest) -> None:
    if "pytester" not in request.fixturenames:
        return
    request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it is set up; ours comes after
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("PYTEST_ADDOPTS", " ".join(f"-p no:{name}" for name in INNER_RUN_PLUGINS_OFF))
    for name in XDIST_WORKER_VARIABLES:  # an inner run is a session of its own, not this xdist worker
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def kubectl_standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> "KubectlStandIn":
    """The harness's ``kubectl_standin`` fixture with this repository's context and namespace (``minikube``,
    ``controller-agent``, what [tool.harness] allows and names), which its guard specs read back."""
    from harness.testing.standin import KubectlStandIn

    standin = KubectlStandIn(tmp_path / "kubectl-standin", context="minikube", namespace="controller-agent")
    monkeypatch.setenv("PATH", f"{standin.dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return standin
