"""pytest fixtures for the Kubernetes API double (listed in the root ``conftest.py``).

- ``fake_kube``: a fresh double per test (``fakes.kube.KubeHandle``: ``.kubeconfig``, ``.context``,
  ``.cache_dir``, ``.kubectl(...)``, ``.kube()``, ``.store``, ``.clock``, ``.fault(...)``, ``.requests()``), stopped
  after the test with its thread, socket and temporary files gone. kubectl's discovery cache lives in the double's
  own directory (``--cache-dir``), so doubles on reused ports never confuse each other.
- ``fake_kube_module``: one double shared by a test module (faster when state allows); reset it yourself
  (``fake_kube_module.reset()``) where a test needs a clean slate.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakes.kube
from fakes.kube import KubeHandle


@pytest.fixture
def fake_kube() -> Iterator[KubeHandle]:
    with fakes.kube.serve() as handle:
        yield handle


@pytest.fixture(scope="module")
def fake_kube_module() -> Iterator[KubeHandle]:
    with fakes.kube.serve() as handle:
        yield handle
