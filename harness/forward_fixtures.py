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
    from harness.service_addresses import ServiceAddresses
    from harness.testing.standin import KubectlStandIn


@pytest.fixture(scope="session")
def forwards(request: pytest.FixtureRequest) -> Iterator[ForwardPool | ServiceAddresses]:
    """One :class:`ForwardPool` for the session: ``forwards.get(kube, "svc/fake-github", 80)``; with
    ``--in-cluster``, a :class:`~harness.service_addresses.ServiceAddresses` (the Services' in-cluster addresses,
    no kubectl) with the same ``get``/``aget``.

    At session end every forward is stopped; if any kubectl child survived, teardown raises
    :class:`~harness.errors.ForwardLeak`, so the session fails loudly instead of leaving ports held.
    """
    pool = session_pool(request.config)
    yield pool
    pool.close()


def session_pool(config: pytest.Config) -> ForwardPool | ServiceAddresses:
    """The ``forwards`` fixture's pool for this session's mode (``--in-cluster`` or not)."""
    from harness.forward_pool import ForwardPool
    from harness.service_addresses import ServiceAddresses

    return ServiceAddresses() if config.getoption("--in-cluster", False) else ForwardPool()


@pytest.fixture
def kubectl_standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KubectlStandIn:
    """A scripted ``kubectl`` stand-in first on PATH for this test (see :mod:`harness.testing.kubectl_standin`).

    ``kubectl_standin.script(mode=..., target_port=...)`` sets its behaviour; ``kubectl_standin.kube()`` is a
    pinned :class:`~harness.kube.Kube` (context ``standin``, namespace ``default``) that runs it. A project whose specs
    expect other names overrides this fixture in its conftest (``KubectlStandIn(folder, context=..., namespace=...)``).
    """
    from harness.testing.standin import KubectlStandIn

    standin = KubectlStandIn(tmp_path / "kubectl-standin")
    monkeypatch.setenv("PATH", f"{standin.dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return standin
