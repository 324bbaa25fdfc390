"""The harness's API server check (``Kube.check_api_server``) on both targets: the API double and the real control
plane (``specs.targets``). What it reads, ``/version`` and the namespace, is the apiserver's own (``GET /version``,
``GET /api/v1/namespaces/NAME``), so nothing is skipped on either."""

from __future__ import annotations

import re

import pytest

from harness.errors import ApiServerRejected
from specs.targets import Target


def test_a_usable_api_server_reports_its_version_and_namespace(target: Target) -> None:
    info = target.kube.check_api_server()
    assert info.namespace == target.kube.namespace
    assert re.fullmatch(r"v1\.\d+\.\d+", info.version), info.version
    assert info.server.startswith(("http://127.0.0.1:", "https://127.0.0.1:")), info.server


def test_a_missing_namespace_is_named_with_the_command_that_makes_it(target: Target) -> None:
    kube = target.kube.in_namespace("no-such-namespace-here")
    try:
        with pytest.raises(ApiServerRejected) as caught:
            kube.check_api_server()
    finally:
        kube.close()
    assert caught.value.kind == "namespace-missing"
    assert caught.value.status == 404
    assert "create namespace no-such-namespace-here" in str(caught.value)
