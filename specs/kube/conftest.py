"""Shared helpers for specs of the Kubernetes API double: where the real kubectl builds are, and a module double."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

import fakes.kube
from fakes.kube import KubeHandle

MANIFESTS = os.path.join(os.path.dirname(__file__), "manifests")


def kubectl_dir() -> str | None:
    """The directory holding ``kubectl`` and its ``kubectl.1.NN`` builds, or None without a kubectl."""
    found = shutil.which("kubectl")
    return os.path.dirname(os.path.realpath(found)) if found else None


def kubectl_build(minor: int) -> str | None:
    """The path of the real ``kubectl.1.<minor>`` build beside the kubectl on PATH, or None."""
    folder = kubectl_dir()
    path = os.path.join(folder, f"kubectl.1.{minor}") if folder else ""
    return path if path and os.access(path, os.X_OK) else None


def require_kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("no kubectl on PATH: the double's kubectl specs need the real binary")
    return path


def manifest(name: str) -> str:
    return os.path.join(MANIFESTS, name)


@pytest.fixture(scope="module")
def kd() -> Iterator[KubeHandle]:
    """One bare double for the module (kubectl's discovery cache stays warm across its specs). No controllers: these
    specs write the statuses kubectl reads themselves (the controllers' specs use their own doubles)."""
    require_kubectl()
    with fakes.kube.serve(controllers=False) as handle:
        yield handle


def bare(**options: Any) -> AbstractContextManager[KubeHandle]:
    """``fakes.kube.serve(**options)`` without the simulated controllers: for specs of the API itself, which write
    workload status by hand (a deployment controller would overwrite it) and want no background writes."""
    options.setdefault("controllers", False)
    return fakes.kube.serve(**options)


@pytest.fixture
def ns(kd: KubeHandle, request: pytest.FixtureRequest) -> str:
    """A namespace of the module double for this spec alone (named after the spec): xdist may spread a module's
    specs over workers, each with its own ``kd``, so no spec may rely on another having run."""
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower().removeprefix("test_"))[:50].strip("-")
    if kd.store.get("namespaces", None, name) is None:
        kd.store.create("namespaces", {"metadata": {"name": name}})
    return name
