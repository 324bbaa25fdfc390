"""The fakes' pytest fixtures in one plugin (``pytest_plugins = ["fakes.fixtures"]``), each fake imported only when
its fixture is first used: a pytest process that loads this plugin and uses no fake (an xdist controller, an inner
run, a session of specs that need one fake) does not pay for the others (qdrant-client and the ``openai`` package's
types are each about half a second of start-up). (They live here, not in each fake's package: importing
``fakes.qdrant.anything`` runs ``fakes/qdrant/__init__.py``, which imports the whole fake.)

- ``fake_github``: a fresh fake GitHub on 127.0.0.1 (OS-chosen port) per test: ``handle.url``, ``handle.app`` (the
  :class:`~fakes.github.FakeGitHub`, for seeding), ``handle.requests()`` (the journal), ``handle.fault(...)``,
  ``handle.transport()``; the server and its webhook worker are stopped when the test ends, on every path.
- ``fake_openai``: a fresh fake model endpoint per test (clients use ``handle.url + "/v1"``; ``handle.app`` is the
  :class:`~fakes.openai.OpenAIFake`: ``add_rules``, ``set_default``, ``log()``); any non-empty bearer key.
- ``fake_qdrant``: a fresh fake Qdrant on a real socket per test (``.url``, ``.requests()``, ``.fault()``,
  ``.reset()``, ``.transport()``).
- ``fake_kube``: a fresh Kubernetes API double per test (``fakes.kube.KubeHandle``: ``.kubeconfig``, ``.context``,
  ``.cache_dir``, ``.kubectl(...)``, ``.kube()``, ``.store``, ``.clock``, ``.fault(...)``, ``.requests()``).
  kubectl's discovery cache lives in the double's own directory (``--cache-dir``), so doubles on reused ports never
  confuse each other. ``fake_kube_module``: one double shared by a test module (reset it yourself with
  ``fake_kube_module.reset()`` where a test needs a clean slate).

Each yields a ``fakes.server.FakeHandle`` (the double a ``KubeHandle``), stopped after the test (or module) with its
thread, socket and temporary files gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fakes.github.app import FakeGitHub
    from fakes.kube import KubeHandle
    from fakes.openai import OpenAIFake
    from fakes.qdrant import QdrantFake
    from fakes.server import FakeHandle


@pytest.fixture
def fake_github() -> Iterator[FakeHandle[FakeGitHub]]:
    from fakes.github.server import serve

    with serve() as handle:
        yield handle


@pytest.fixture
def fake_openai() -> Iterator[FakeHandle[OpenAIFake]]:
    import fakes.openai

    with fakes.openai.serve() as handle:
        yield handle


@pytest.fixture
def fake_qdrant() -> Iterator[FakeHandle[QdrantFake]]:
    import fakes.qdrant

    with fakes.qdrant.serve() as handle:
        yield handle


@pytest.fixture
def fake_kube() -> Iterator[KubeHandle]:
    import fakes.kube

    with fakes.kube.serve() as handle:
        yield handle


@pytest.fixture(scope="module")
def fake_kube_module() -> Iterator[KubeHandle]:
    import fakes.kube

    with fakes.kube.serve() as handle:
        yield handle
