"""Shared by the cleanup specs: the real kubectl on each target (specs/targets.py), and inner projects whose ``kube``
is the outer spec's own (its target, context and namespace)."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from fakes.kube.objects import bare_double
from harness import Kube
from specs.targets import Target


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


@pytest.fixture
def kd() -> Iterator[Any]:
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    with bare_double() as handle:
        yield handle


@pytest.fixture
def kube(target: Target) -> Kube:
    return target.kube


def names(kube: Kube, resource: str) -> list[str]:
    """The names of ``resource`` in ``kube``'s namespace, sorted (read through kubectl, as on any target)."""
    return sorted(o["metadata"]["name"] for o in kube.kubectl_json("get", resource)["items"])


INNER_CONFTEST = """
import pytest
from harness.kube import Kube, resolve_kubectl

@pytest.fixture(scope="session")
def kube():
    return Kube({context!r}, {namespace!r}, allowed=({context!r},), kubectl_path=resolve_kubectl("kubectl"),
                kubeconfig={kubeconfig!r}, cache_dir={cache!r})
"""


def inner(pytester: pytest.Pytester, kube: Kube, spec: str) -> None:
    """An inner project whose ``kube`` is the spec's own (its target, context and namespace)."""
    fields = {"context": kube.context, "namespace": kube.namespace, "kubeconfig": kube.kubeconfig}
    pytester.makeconftest(INNER_CONFTEST.format(**fields, cache=kube.cache_dir))
    pytester.makepyfile(test_inner=spec)


def printed_inspections_find(kube: Kube, lines: list[str]) -> list[str]:
    """What the summary's ``get ... -l <run label>`` commands list when run as printed (through the spec's kubectl),
    sorted: ``all`` leaves ConfigMaps out, so a command naming it would find none of them."""
    found: list[str] = []
    for line in lines:
        words = shlex.split(line.strip())
        if words[:1] == ["kubectl"] and "get" in words and "-l" in words:
            found += kube.kubectl(*words[words.index("get") :], "-o", "name").stdout.split()
    return sorted(found)
