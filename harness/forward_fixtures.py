"""Pytest fixtures for port-forwards: the session pool ``forwards`` and the ``kubectl_standin``.

Registered by the harness plugin (``pytest_plugins``), or in a conftest with
``pytest_plugins = ["harness.forward_fixtures"]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported when a spec asks for the fixture: loading the plugin stays cheap
    from harness.forward_pool import ForwardPool
    from harness.testing.standin import KubectlStandIn


@pytest.fixture(scope="session")
def forwards() -> Iterator[ForwardPool]:
    """One :class:`ForwardPool` for the session: ``forwards.get(kube, "svc/fake-github", 80)``.

    At session end every forward is stopped; if any kubectl child survived, teardown raises
    :class:`~harness.errors.ForwardLeak`, so the session fails loudly instead of leaving ports held.
    """
    from harness.forward_pool import ForwardPool

    pool = ForwardPool()
    yield pool
    pool.close()


@pytest.fixture
def kubectl_standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KubectlStandIn:
    """A scripted ``kubectl`` stand-in first on PATH for this test (see :mod:`harness.testing.kubectl_standin`).

    ``kubectl_standin.script(mode=..., target_port=...)`` sets its behaviour; ``kubectl_standin.kube()`` is a
    pinned :class:`~harness.kube.Kube` (context ``minikube``) that runs it.
    """
    from harness.testing.standin import KubectlStandIn

    standin = KubectlStandIn(tmp_path / "kubectl-standin")
    monkeypatch.setenv("PATH", f"{standin.dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return standin
