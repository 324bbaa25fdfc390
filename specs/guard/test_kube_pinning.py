"""Nothing a caller passes or the environment holds can redirect or reshape a pinned kubectl call.

- flags that choose the target (context, kubeconfig, cluster, server, user, credentials, namespace, all
  namespaces, preferences) are refused with a ``ValueError`` naming the flag, in every form kubectl parses;
- every kubectl child runs in an environment the harness controls (kubeconfig files fixed at connect, user
  preferences off, no proxies, no ``KUBECTL_*`` switches), and the kubernetes client reads the same files;
- with the real kubectl 1.33 and user preferences that make ``delete`` interactive, a harness delete still
  deletes (the API server is a local stand-in answering what these calls need).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Kube
from harness.config import HarnessConfig
from harness.errors import KubectlError
from harness.kube import duration_flag, refuse_target_flags
from harness.testing.apiserver import StubApiServer, write_kubeconfig
from harness.testing.kubectl_builds import real_kubectl
from harness.testing.standin import KubectlStandIn

MINIKUBE_ONLY = HarnessConfig(("minikube",), "controller-agent")

TARGET_FLAGS = [
    "--context",
    "--kubeconfig",
    "--cluster",
    "--server",
    "--user",
    "--token",
    "--as",
    "--as-group",
    "--as-uid",
    "--certificate-authority",
    "--insecure-skip-tls-verify",
    "--client-certificate",
    "--client-key",
    "--username",
    "--password",
    "--tls-server-name",
    "--as-user-extra",
    "--namespace",
    "--kuberc",
]


@pytest.mark.parametrize("flag", TARGET_FLAGS)
@pytest.mark.parametrize("form", ["separate", "equals"])
def test_a_flag_that_chooses_the_target_is_refused_in_both_forms(
    kubectl_standin: KubectlStandIn, flag: str, form: str
) -> None:
    kube = Kube.connect(config=MINIKUBE_ONLY)
    before = len(kubectl_standin.argvs())
    args = ["get", "pods", flag, "other"] if form == "separate" else ["get", "pods", f"{flag}=other"]
    with pytest.raises(ValueError, match=re.escape(repr(args[2]))) as caught:
        kube.kubectl(*args)
    message = str(caught.value)
    assert repr(args[2]) in message  # names the flag as given
    assert "pins the context and namespace" in message
    assert len(kubectl_standin.argvs()) == before  # nothing ran


@pytest.mark.parametrize(
    "args, flag",
    [
        (["get", "pods", "-n", "other"], "-n"),
        (["get", "pods", "-nother"], "-n"),
        (["get", "pods", "-n=other"], "-n"),
        (["get", "pods", "-A"], "-A"),
        (["get", "pods", "--all-namespaces"], "--all-namespaces"),
        (["get", "pods", "--all-namespaces=true"], "--all-namespaces"),
        (["get", "pods", "-wA"], "-A"),
        (["get", "pods", "-s", "https://10.0.0.1:6443"], "-s"),
    ],
)
def test_short_and_clustered_forms_are_refused_with_what_to_use_instead(args: list[str], flag: str) -> None:
    with pytest.raises(ValueError, match=f"kubectl takes the last {re.escape(flag)} given") as caught:
        refuse_target_flags(args)
    message = str(caught.value)
    assert f"kubectl takes the last {flag} given" in message
    if flag in ("-n", "-A", "--all-namespaces"):
        assert "kube.in_namespace('NAME')" in message


@pytest.mark.parametrize(
    "args",
    [
        ["get", "pods", "-o", "json"],
        ["get", "pods", "-ojsonpath={.items[*].metadata.namespace}"],  # a value holding letters of refused flags
        ["get", "pods", "-l", "app=gateway"],
        ["logs", "deploy/x", "--since=10s", "-c", "main"],
        ["exec", "pod/x", "--", "sh", "-c", "kubectl -n other get pods --context prod"],  # after --: not kubectl's
        ["label", "pod", "x", "note=-n"],
    ],
)
def test_ordinary_arguments_pass(args: list[str]) -> None:
    refuse_target_flags(args)


def test_another_namespace_is_reached_through_an_explicit_still_guarded_kube(kubectl_standin: KubectlStandIn) -> None:
    kubectl_standin.answer("get", "pods", stdout="No resources found\n")
    kube = Kube.connect(config=MINIKUBE_ONLY)
    other = kube.in_namespace("observability")
    other.kubectl("get", "pods")
    assert kubectl_standin.argvs()[-1] == ["--context", "minikube", "-n", "observability", "get", "pods"]
    assert kube.namespace == "controller-agent"  # the original stays pinned where it was
    with pytest.raises(ValueError, match="not a Kubernetes namespace name"):
        kube.in_namespace("Bad_Name")
    kube.context = "prod"  # a context that is no longer allowed cannot be carried into another namespace
    with pytest.raises(Exception, match="refusing kube context 'prod'"):
        kube.in_namespace("observability")


def test_kubectl_children_run_in_an_environment_the_harness_controls(
    kubectl_standin: KubectlStandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "pinned", "https://127.0.0.1:8443", context="minikube")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    for name, value in {
        "HTTPS_PROXY": "http://proxy.invalid:3128",
        "https_proxy": "http://proxy.invalid:3128",
        "KUBECTL_KUBERC": "true",
        "KUBERC": str(tmp_path / "kuberc"),
        "KUBECTL_EXTERNAL_DIFF": "rm -rf",
        "KUBECACHEDIR": str(tmp_path),
    }.items():
        monkeypatch.setenv(name, value)
    kubectl_standin.answer("get", "pods", stdout="No resources found\n")
    kube = Kube.connect(config=MINIKUBE_ONLY)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "switched"))  # a later change must not redirect anything
    kube.kubectl("get", "pods")
    seen = kubectl_standin.envs()[-1]
    assert seen["KUBECONFIG"] == str(kubeconfig)
    assert seen["KUBERC"] == "off"
    assert seen["KUBECTL_KUBERC"] == "false"
    assert seen["HTTPS_PROXY"] is None
    assert seen["https_proxy"] is None
    assert "KUBECTL_EXTERNAL_DIFF" not in seen["names"]
    assert "KUBECACHEDIR" not in seen["names"]
    assert kube.kubeconfig_server() == "https://127.0.0.1:8443"
    assert kube.server_url() == "https://127.0.0.1:8443"  # the kubernetes client reads the same file


@pytest.fixture
def pod_server() -> Iterator[StubApiServer]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "controller-agent", "uid": "u1"}}
    with StubApiServer({"/api/v1/namespaces/controller-agent/pods/x": pod}) as server:
        yield server


KUBECTL_133 = real_kubectl(33)


@pytest.mark.skipif(KUBECTL_133 is None, reason="kubectl 1.33 is not installed beside the kubectl on PATH")
def test_user_preferences_that_make_delete_interactive_change_nothing(
    pod_server: StubApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "kuberc").write_text(
        "apiVersion: kubectl.config.k8s.io/v1alpha1\nkind: Preference\n"
        'overrides:\n- command: delete\n  flags:\n  - name: interactive\n    default: "true"\n'
        "- command: get\n  flags:\n  - name: output\n    default: yaml\n"
        "aliases:\n- name: getn\n  command: get\n  flags:\n  - name: output\n    default: json\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUBECTL_KUBERC", "true")  # kubectl 1.33 reads preferences only behind this switch
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", pod_server.url, context="minikube")
    assert KUBECTL_133 is not None
    kube = Kube(
        "minikube", "controller-agent", allowed=("minikube",), kubectl_path=KUBECTL_133, kubeconfig=str(kubeconfig)
    )
    listed = kube.kubectl("get", "pod", "x")
    assert listed.stdout.split()[0] == "NAME"  # kubectl's table, not the preferred YAML
    assert "apiVersion:" not in listed.stdout
    done = kube.kubectl("delete", "pod", "x", "--wait=false")
    assert "deletion is cancelled" not in done.stdout
    assert pod_server.seen("DELETE") == ["/api/v1/namespaces/controller-agent/pods/x"]


@pytest.mark.parametrize(
    "seconds, expected",
    [
        (0.4, "--timeout=400ms"),
        (0.0004, "--timeout=1ms"),
        (1.0001, "--timeout=1001ms"),
        (120.0, "--timeout=120s"),
        (59.9999, "--timeout=60s"),
        (1e-9, "--timeout=1ms"),
    ],
)
def test_durations_round_up_to_milliseconds_and_never_to_zero(seconds: float, expected: str) -> None:
    assert duration_flag("--timeout", seconds) == expected


@pytest.mark.parametrize("flag", ["--timeout", "--request-timeout", "--since", "--grace-period"])
@pytest.mark.parametrize("seconds", [0.0004, 0.4, 0.999, 1.0, 1.5, 29.9999, 300.0])
def test_no_duration_flag_is_shorter_than_its_budget_or_zero(flag: str, seconds: float) -> None:
    value = duration_flag(flag, seconds).split("=", 1)[1]
    as_seconds = int(value[:-2]) / 1000 if value.endswith("ms") else float(value.rstrip("s"))
    assert as_seconds >= seconds
    assert as_seconds > 0


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan")])
def test_a_duration_that_is_not_positive_and_finite_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="kubectl reads 0 as forever"):
        duration_flag("--timeout", seconds)


def test_grace_period_is_whole_seconds_rounded_up() -> None:
    assert duration_flag("--grace-period", 0.2) == "--grace-period=1"
    assert duration_flag("--grace-period", 30.0) == "--grace-period=30"
    assert duration_flag("--grace-period", 30.5) == "--grace-period=31"


def test_rollout_status_writes_a_sub_second_budget_as_milliseconds(kubectl_standin: KubectlStandIn) -> None:
    kubectl_standin.answer("rollout", "status", stdout='deployment "web" successfully rolled out\n')
    kube = Kube.connect(config=MINIKUBE_ONLY)
    kube.rollout_status("web", timeout=0.4)
    assert kubectl_standin.argvs()[-1][-1] == "--timeout=400ms"
    with pytest.raises(ValueError, match="kubectl reads 0 as forever"):
        kube.rollout_status("web", timeout=0)


_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "controller-agent", "uid": "u2", "resourceVersion": "7", "generation": 2},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    },
    "status": {"observedGeneration": 1},  # the new generation is never observed: the rollout never completes
}


@pytest.mark.parametrize("minor", [27, 33])
def test_real_kubectl_ends_a_sub_second_rollout_wait_by_itself(minor: int, tmp_path: Path) -> None:
    kubectl = real_kubectl(minor)
    if kubectl is None:
        pytest.skip(f"kubectl 1.{minor} is not installed beside the kubectl on PATH")
    with StubApiServer({"/apis/apps/v1/namespaces/controller-agent/deployments/web": _DEPLOYMENT}) as server:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url, context="minikube")
        kube = Kube(  # a discovery cache of its own, not ~/.kube/cache where an earlier server on this port left one
            "minikube",
            "controller-agent",
            allowed=("minikube",),
            kubectl_path=kubectl,
            kubeconfig=str(kubeconfig),
            cache_dir=str(tmp_path / "kube-cache"),
        )
        with pytest.raises(KubectlError, match="timed out waiting for the condition") as caught:
            kube.rollout_status("web", timeout=0.4, grace=20.0)
    # kubectl's own --timeout ended it ("0s" would have meant forever, and the harness would have killed it at 20.4 s)
    assert type(getattr(caught.value, "gave_up", None)).__name__ == "KubectlError"  # kubectl's exit, not a kill
    assert "timed out waiting for the condition" in str(caught.value)
    assert os.path.basename(kubectl) in str(caught.value)
