"""Fixtures for the guard specs of the plugin and of kube access.

``local_cluster``: a stand-in API server (:mod:`harness.testing.apiserver`) holding the namespaces
``controller-agent`` and ``e2e-ns``, a kubeconfig whose context ``minikube`` points at it (``KUBECONFIG``), the
kubectl stand-in first on PATH, and a private harness state directory (``HARNESS_STATE_DIR``: issue numbers and
the cluster lock), so inner pytest runs see an allowed, reachable cluster without touching a real one.

Every inner project (``pytester``) gets this repository's ``[tool.harness]`` (:data:`THIS_REPOSITORY`): the guard specs
describe how the plugin treats this repository's cluster specs. What a project without the table gets is specified
in specs/guard/test_harness_config.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.testing import register_fuzz_marker
from harness.testing.apiserver import StubApiServer, write_kubeconfig
from harness.testing.standin import KubectlStandIn

NAMESPACES = ("controller-agent", "e2e-ns")
THIS_REPOSITORY = '[tool.harness]\nallowed_contexts = ["minikube"]\nnamespace = "controller-agent"\n'


@pytest.fixture(autouse=True)
def _inner_projects_are_configured_like_this_repository(request: pytest.FixtureRequest) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester").makefile(".toml", pyproject=THIS_REPOSITORY)


def pytest_configure(config: pytest.Config) -> None:
    register_fuzz_marker(config)  # the chat client's hypothesis spec runs deep under `make fuzz`


@pytest.fixture
def local_cluster(
    kubectl_standin: KubectlStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[StubApiServer]:
    objects = {
        f"/api/v1/namespaces/{name}": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in NAMESPACES
    }
    with StubApiServer(objects) as server:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", server.url)))
        monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "harness-state"))
        yield server


@pytest.fixture
def empty_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kubeconfig file without a current context, as ``KUBECONFIG``."""
    path = tmp_path / "empty-kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: ''\n")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path
