"""The real kubectl against an API server that is not there: PortForwardNotReady carries its real stderr.

Runs the real builds ``kubectl.1.27`` and ``kubectl.1.33`` beside the kubectl on PATH (that one may be a dispatcher
that picks a build by asking the server's version); skipped where a build is not installed. Nothing here can
reach a cluster: the kubeconfig is written to tmp_path and points at a local socket.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import PortForwardNotReady
from harness.kube import Kube
from harness.portforward import PortForward, client_version
from harness.testing.kubectl_builds import real_kubectl

BUILDS = {minor: real_kubectl(minor) for minor in (27, 33)}


@pytest.fixture(params=sorted(BUILDS), ids=lambda minor: f"kubectl-1.{minor}")
def kubectl(request: pytest.FixtureRequest) -> str:
    path = BUILDS[request.param]
    if path is None:
        pytest.skip(f"kubectl 1.{request.param} is not installed beside the kubectl on PATH")
    return path


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}
contexts:
- name: minikube
  context: {{cluster: nowhere, user: nobody, namespace: controller-agent}}
current-context: minikube
users:
- name: nobody
  user: {{token: not-a-real-token}}
"""


def _kube(tmp_path: Path, port: int, kubectl: str) -> Kube:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG.format(port=port))
    return Kube(  # a discovery cache of its own, not ~/.kube/cache where an earlier server on this port left one
        "minikube",
        "controller-agent",
        allowed=("minikube",),
        kubectl_path=kubectl,
        kubeconfig=str(config),
        cache_dir=str(tmp_path / "kube-cache"),
    )


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound but never listened on: connections are refused, and nobody else can take it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def black_hole_port() -> Iterator[int]:
    """A port that completes the TCP handshake (backlog) and never says a word."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_unreachable_api_server_not_ready_carries_kubectls_real_stderr(
    tmp_path: Path, refusing_port: int, kubectl: str
) -> None:
    kube = _kube(tmp_path, refusing_port, kubectl)
    start = time.monotonic()
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(kube, "pod/fake-github", 80, ready_timeout=20.0).start()
    assert time.monotonic() - start < 15.0  # raced against kubectl's own exit, not the 20 s budget
    err = caught.value
    assert err.exit_code == 1
    assert f"127.0.0.1:{refusing_port}" in err.stderr_tail
    assert "refused" in err.stderr_tail
    assert err.kubectl_version.startswith("v1.")
    assert err.kubectl_version in str(err)


def test_silent_api_server_is_bounded_by_the_readiness_budget(
    tmp_path: Path, black_hole_port: int, kubectl: str
) -> None:
    kube = _kube(tmp_path, black_hole_port, kubectl)
    start = time.monotonic()
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(kube, "svc/fake-github", 80, ready_timeout=2.0, stop_grace=0.5).start()
    assert time.monotonic() - start < 10.0
    assert "within 2.0s" in str(caught.value)
    assert caught.value.kubectl_version.startswith("v1.")


def test_client_version_is_read_from_the_binary(kubectl: str) -> None:
    assert client_version(kubectl).startswith(f"v1.{kubectl.rsplit('.', 1)[1]}.")
