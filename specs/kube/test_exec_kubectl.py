"""``kubectl exec`` from the real kubectl builds against the double: exit codes, streams, stdin, host commands.

Runs once per kubectl build of the matrix: 1.27-1.29 exec over SPDY/3.1 (``v4.channel.k8s.io``), 1.30+ over the
WebSocket ``v5.channel.k8s.io``. Commands go through ``harness.Kube.kubectl`` as a harness user's would.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.kube import KubeHandle
from fakes.kube.exec import ExecRequest, ExecResult
from fakes.kube.kubectl_builds import KubectlBuild
from harness.errors import KubectlError
from specs.kube.kube_streams import double_for, kube_for, no_leaks, running_pod

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kdb(kubectl_env: KubectlBuild) -> Iterator[KubeHandle]:
    with no_leaks(), double_for(kubectl_env) as handle:
        yield handle


def test_a_handlers_exit_code_becomes_kubectls(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    running_pod(kdb, "api-0")
    seen: list[ExecRequest] = []

    def handler(request: ExecRequest) -> ExecResult:
        seen.append(request)
        return ExecResult(3, stdout="partial output\n", stderr="something failed\n")

    kdb.double.exec_handlers.set(kdb.namespace, "api-0", handler)
    done = kube_for(kdb, kubectl_env).kubectl("exec", "api-0", "-c", "app", "--", "sh", "-c", "exit 3", check=False)
    assert done.returncode == 3
    assert done.stdout == "partial output\n"
    assert done.stderr.splitlines() == ["something failed", "command terminated with exit code 3"]
    assert [(r.container, r.command, r.stdout, r.stderr, r.tty) for r in seen] == [
        ("app", ["sh", "-c", "exit 3"], True, True, False)
    ]


def test_a_zero_exit_is_success_and_check_raises_on_non_zero(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    running_pod(kdb, "api-0")
    kdb.double.exec_handlers.set(kdb.namespace, "api-0", lambda r: 0 if r.command == ["true"] else 42)
    kube = kube_for(kdb, kubectl_env)
    assert kube.kubectl("exec", "api-0", "--", "true").returncode == 0
    with pytest.raises(KubectlError, match="command terminated with exit code 42"):
        kube.kubectl("exec", "api-0", "--", "false")


def test_stdin_reaches_the_handler_and_its_answer_comes_back(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    running_pod(kdb, "api-0")
    kdb.double.exec_handlers.set(kdb.namespace, "api-0", lambda r: ExecResult(0, stdout=r.stdin_data.upper()))
    done = kube_for(kdb, kubectl_env).kubectl("exec", "-i", "api-0", "--", "tr", "a-z", "A-Z", input="hello\n")
    assert done.stdout == "HELLO\n"


def test_an_annotated_pod_runs_the_command_on_the_host(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    running_pod(kdb, "tools-0", annotations={"double.stack-harness.dev/exec": "host"})
    done = kube_for(kdb, kubectl_env).kubectl(
        "exec", "tools-0", "--", "sh", "-c", "echo $HOSTNAME; echo warn >&2; exit 7", check=False
    )
    assert done.returncode == 7
    assert done.stdout == "tools-0\n"
    assert done.stderr.splitlines() == ["warn", "command terminated with exit code 7"]


def test_without_a_handler_kubectl_is_told_what_is_missing(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    running_pod(kdb, "api-0")
    done = kube_for(kdb, kubectl_env).kubectl("exec", "api-0", "--", "ls", check=False)
    assert done.returncode == 1
    assert "no exec handler for pod default/api-0" in done.stderr
    assert "double.stack-harness.dev/exec: host" in done.stderr


def test_an_unknown_container_is_the_api_servers_400(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    running_pod(kdb, "api-0")
    done = kube_for(kdb, kubectl_env).kubectl("exec", "api-0", "-c", "sidecar", "--", "ls", check=False)
    assert done.returncode == 1
    assert "container sidecar is not valid for pod api-0" in done.stderr
