"""The in-cluster mode's pieces without a cluster: the service account read as client-go's ``rest.InClusterConfig``
reads it (``k8s.io/client-go/rest/config.go``), the kubeconfig it gives (real kubectl reads it), the Services'
addresses in place of port-forwards, the plan's objects for in-cluster shards, and ``pytest --in-cluster`` outside a
pod refused with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import incluster
from harness.errors import InClusterUnavailable
from harness.jobrun.plan import IN_CLUSTER_RULES, TOKEN_SECRET, Plan
from harness.kube import Kube
from harness.service_addresses import ServiceAddress, ServiceAddresses

pytestmark = pytest.mark.timeout(60)
POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def mounted(tmp_path: Path) -> Path:
    root = tmp_path / "serviceaccount"
    root.mkdir()
    (root / "token").write_text("eyJhbGciOi.mounted")
    (root / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----")
    (root / "namespace").write_text("shop\n")
    return root


def test_the_mounted_files_give_a_rotating_token_file_and_the_service_host(tmp_path: Path) -> None:
    root = mounted(tmp_path)
    account = incluster.service_account(POD_ENV, root)
    assert (account.server, account.namespace, account.token_file, account.token) == (
        "https://10.96.0.1:443", "shop", root / "token", None
    )  # fmt: skip
    assert account.ca_pem.endswith("-----END CERTIFICATE-----\n")


def test_an_ipv6_service_host_is_bracketed(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    assert incluster.service_account(env, mounted(tmp_path)).server == "https://[fd00::1]:6443"


def test_without_the_files_the_environment_gives_the_token(tmp_path: Path) -> None:
    env = {**POD_ENV, incluster.TOKEN_ENV: "tok", incluster.CA_ENV: "PEM", incluster.NAMESPACE_ENV: "ns"}
    account = incluster.service_account(env, tmp_path / "absent")
    assert (account.token, account.token_file, account.namespace) == ("tok", None, "ns")


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({}, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set"),
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "not both set"),
        (POD_ENV, "HARNESS_SA_TOKEN, HARNESS_SA_CA_CRT, HARNESS_SA_NAMESPACE are not set"),
        ({**POD_ENV, "HARNESS_SA_TOKEN": "t", "HARNESS_SA_NAMESPACE": "n"}, "HARNESS_SA_CA_CRT is not set"),
    ],
)
def test_what_is_missing_is_named(tmp_path: Path, env: dict[str, str], why: str) -> None:
    with pytest.raises(InClusterUnavailable, match=why):
        incluster.service_account(env, tmp_path / "absent")


def test_a_mounted_token_without_its_namespace_file_is_named(tmp_path: Path) -> None:
    root = mounted(tmp_path)
    (root / "namespace").unlink()
    with pytest.raises(InClusterUnavailable, match="has a token but namespace cannot be read"):
        incluster.service_account(POD_ENV, root)


def test_real_kubectl_reads_the_kubeconfig_with_its_one_context(tmp_path: Path) -> None:
    path = incluster.write_kubeconfig(incluster.service_account(POD_ENV, mounted(tmp_path)), tmp_path / "kc")
    assert path.stat().st_mode & 0o777 == 0o600
    done = subprocess.run(
        ["kubectl", "config", "view", "--kubeconfig", str(path), "--minify", "-o", "json"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    view = json.loads(done.stdout)
    assert view["current-context"] == incluster.CONTEXT
    assert view["contexts"][0]["context"]["namespace"] == "shop"
    assert view["users"][0]["user"] == {"tokenFile": str(tmp_path / "serviceaccount" / "token")}
    assert view["clusters"][0]["cluster"]["server"] == "https://10.96.0.1:443"


def kube(namespace: str) -> Kube:
    return Kube(incluster.CONTEXT, namespace, allowed=(incluster.CONTEXT,), kubectl_path="kubectl")


def test_a_service_is_dialled_at_its_dns_name_unless_the_map_names_it() -> None:
    pool = ServiceAddresses({"svc/web:80": "127.0.0.1:41234", "other/svc/web:80": "127.0.0.2:5000"})
    assert pool.get(kube("shop"), "svc/web", 80).base_url == "http://127.0.0.1:41234"
    assert pool.get(kube("other"), "svc/web", 80).base_url == "http://127.0.0.2:5000"
    found = pool.get(kube("shop"), "svc/api", 8080)
    assert isinstance(found, ServiceAddress)
    assert found.base_url == "http://api.shop.svc:8080"
    assert (found.gone_reason(), found.broken_reason(), found.exit_summary(), pool.opened) == (None, None, None, 0)


def test_a_pod_target_is_refused_in_cluster() -> None:
    with pytest.raises(ValueError, match="dials Services only"):
        ServiceAddresses({}).get(kube("shop"), "pod/web-0", 80)


@pytest.mark.parametrize("text", ['{"svc/web:80": "nowhere"}', "[1]", "{not json"])
def test_a_malformed_address_map_is_refused(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("HARNESS_SERVICE_ADDRESSES", text)
    with pytest.raises(ValueError, match="HARNESS_SERVICE_ADDRESSES"):
        ServiceAddresses()


def test_in_cluster_local_process_shards_get_a_token_secret_a_lease_rule_and_the_flag() -> None:
    plan = Plan("r1", 2, ("specs",), 60.0, in_cluster=True, api_server="https://127.0.0.1:39999")
    objects = {obj["kind"]: obj for obj in plan.objects()}
    assert objects["Secret"]["metadata"]["name"] == TOKEN_SECRET
    assert objects["Secret"]["type"] == "kubernetes.io/service-account-token"
    assert objects["Role"]["rules"] == list(IN_CLUSTER_RULES)
    assert objects["ServiceAccount"]["automountServiceAccountToken"] is True
    container = objects["Job"]["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--", "specs", "--in-cluster"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("127.0.0.1", "39999")
    assert env[incluster.TOKEN_ENV] == {"secretKeyRef": {"name": TOKEN_SECRET, "key": "token"}}


def test_in_cluster_shards_with_an_image_get_no_secret_the_kubelet_mounts_the_token() -> None:
    kinds = [obj["kind"] for obj in Plan("r1", 1, (), 60.0, image="runner:dev", in_cluster=True).objects()]
    assert kinds == ["Namespace", "ServiceAccount", "Role", "RoleBinding", "Job"]


def test_pytest_in_cluster_outside_a_pod_is_one_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "--in-cluster", "-p", "no:cacheprovider", "-q"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set" in done.stderr
    assert "Traceback" not in done.stderr
