"""A kubeconfig's exec credential plugin runs inside the caller's bound, and is named when it stalls or fails.

The Python ``kubernetes`` client runs such a plugin with no timeout and logs its failure, then sends the request
without credentials: a slow plugin held the API server check (and ``diagnose --budget``) as long as it slept, and a
failing one came back as "stale credentials (a recreated cluster?)". The harness runs the plugin itself
(:mod:`harness.kubeconfig`): a real plugin script here sleeps, fails or answers; the API server is the stand-in of
:mod:`harness.testing.apiserver`; the inner pytest runs use the kubectl stand-in of specs/guard/conftest.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from harness import CredentialPluginFailed, CredentialPluginTimeout, Kube
from harness.config import HarnessConfig
from harness.process import group_alive, run_bounded
from harness.testing.apiserver import StubApiServer, write_kubeconfig
from harness.testing.standin import KubectlStandIn

MINIKUBE_ONLY = HarnessConfig(("minikube",), "controller-agent")
ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = {"/api/v1/namespaces/controller-agent": {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}}
TOKEN = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "t0k3n"}}'


def _plugin(tmp_path: Path, body: str) -> Path:
    """An executable plugin script whose shell ``body`` runs after it wrote its pid to ``plugin.pid``."""
    path = tmp_path / "corp-login"
    path.write_text(f'#!/bin/sh\necho $$ > "{tmp_path}/plugin.pid"\n{body}\n')
    path.chmod(0o755)
    return path


def _kube(server: StubApiServer, plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Kube:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url, context="minikube", exec_command=[str(plugin)])
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    return Kube.connect(config=MINIKUBE_ONLY, read_files=True)


def test_a_plugin_that_does_not_answer_is_ended_at_the_bound_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _plugin(tmp_path, "exec sleep 60")
    with StubApiServer(NAMESPACE) as server:
        kube = _kube(server, plugin, tmp_path, monkeypatch)
        import kubernetes.client  # noqa: F401  (imported first: on a loaded machine the import alone takes seconds)

        started = time.monotonic()
        with pytest.raises(CredentialPluginTimeout) as caught:
            kube.check_api_server(timeout=2.0)
        took = time.monotonic() - started
        assert server.requests == []  # nothing was sent without credentials
    assert f"the credential plugin `{plugin}` (kubeconfig user 'stub-user' of context 'minikube') did not answer " in (
        str(caught.value)
    )
    assert "within 2.0 s" in str(caught.value)
    assert caught.value.kind == "credential-plugin-timeout"
    assert took < 2.0 + 20.0  # ended at the bound, not after the plugin's 60 s (generous: a loaded machine took 6.4 s)
    assert not group_alive(int((tmp_path / "plugin.pid").read_text()))  # its group was killed and reaped


def test_a_plugin_that_fails_is_quoted_and_nothing_is_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _plugin(tmp_path, "echo 'error: token expired; run corp-login --renew' >&2\nexit 4")
    with StubApiServer(status_for={"*": 401}) as server:
        kube = _kube(server, plugin, tmp_path, monkeypatch)
        with pytest.raises(CredentialPluginFailed) as caught:
            kube.check_api_server(timeout=5.0)
        assert server.requests == []
    message = str(caught.value)
    assert f"the credential plugin `{plugin}` (kubeconfig user 'stub-user' of context 'minikube') exited 4: " in message
    assert "error: token expired; run corp-login --renew" in message
    assert "recreated" not in message  # no guess: the server was never asked
    assert caught.value.returncode == 4
    assert caught.value.unrecoverable


def test_a_plugin_runs_without_a_terminal_and_its_token_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _plugin(tmp_path, f"printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"{tmp_path}/info.json\"\necho '{TOKEN}'")
    with StubApiServer({**NAMESPACE}) as server:
        kube = _kube(server, plugin, tmp_path, monkeypatch)
        info = kube.check_api_server(timeout=5.0)
        assert kube.api_client().configuration.api_key["BearerToken"] == "Bearer t0k3n"
        kube.close()
    assert info.namespace == "controller-agent"
    assert json.loads((tmp_path / "info.json").read_text()) == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


def test_a_plugin_that_prints_no_credential_is_named_with_what_it_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _plugin(tmp_path, "echo 'please log in at https://sso.example'")
    with StubApiServer(NAMESPACE) as server:
        kube = _kube(server, plugin, tmp_path, monkeypatch)
        with pytest.raises(CredentialPluginFailed) as caught:
            kube.check_api_server(timeout=5.0)
    assert "exited 0 but printed no JSON ExecCredential" in str(caught.value)
    assert "please log in at https://sso.example" in str(caught.value)


def test_diagnose_ends_a_plugin_that_does_not_answer_within_its_budget(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, "exec sleep 120")
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nallowed_contexts = ["minikube"]\nnamespace = "shop"\n')
    with StubApiServer(NAMESPACE) as server:
        kubeconfig = write_kubeconfig(
            tmp_path / "kubeconfig", server.url, context="minikube", exec_command=[str(plugin)]
        )
        argv = [sys.executable, "-m", "harness", "diagnose", "deployment/web", "--budget", "3"]
        argv += ["--kubeconfig", str(kubeconfig), "--context", "minikube"]
        env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(tmp_path))
        done = run_bounded(argv, timeout=60.0, cwd=str(tmp_path), env=env)  # the plugin alone would take 120 s
    assert done.returncode == 3, done.stderr  # the cluster cannot be used
    said = done.stdout + done.stderr
    assert f"the credential plugin `{plugin}`" in said
    assert "did not answer within" in said
    assert not group_alive(int((tmp_path / "plugin.pid").read_text()))


CLUSTER_SPEC = "import pytest\n\n@pytest.mark.cluster\ndef test_c(kube):\n    pass\n"


@pytest.mark.parametrize(
    "body, said",
    [
        ("echo 'sso: session expired' >&2\nexit 1", "exited 1: sso: session expired"),
        ("exec sleep 60", "did not answer within 5.0 s"),
    ],
    ids=["fails", "stalls"],
)
def test_the_session_api_check_names_the_plugin_once_for_every_cluster_spec(
    pytester: pytest.Pytester,
    local_cluster: StubApiServer,
    kubectl_standin: KubectlStandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    body: str,
    said: str,
) -> None:
    plugin = _plugin(tmp_path, body)
    kubeconfig = write_kubeconfig(
        tmp_path / "plugin-kubeconfig", local_cluster.url, context="minikube", exec_command=[str(plugin)]
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("-rE", "-p", "no:randomly")
    result.assert_outcomes(errors=1)
    causes = [line for line in result.stdout.lines if line.startswith("cluster unusable: ")]
    assert len(causes) == 1
    assert f"the credential plugin `{plugin}`" in causes[0]
    assert said in causes[0]
    assert "recreated" not in result.stdout.str()
    assert local_cluster.requests == []
