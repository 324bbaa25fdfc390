"""Per-kind registry behaviour as the apiserver's registries have it, seen through the ``kubernetes`` client and
real kubectl:

- which DELETE answers the object and which a ``Status`` (``ReturnDeletedObject`` of each registry; apiserver
  ``pkg/registry/generic/registry/store.go`` ``finalizeDelete``);
- the status and spec fields a new object always carries (Go's encoding/json of the ``k8s.io/api`` types, the
  ``SetDefaults_*`` functions, the Service strategy);
- uid and resourceVersion compared before validation (``store.go`` ``Update``: ``GuaranteedUpdate`` checks the
  version, then ``rest.BeforeUpdate`` validates);
- immutable fields in the apiserver's words (``pkg/apis/core/validation``, ``pkg/apis/apps/validation``);
- ``Status`` bodies byte for byte as the apiserver writes them (``metav1.Status`` field order, Go's
  ``json.Encoder`` newline).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from fakes.kube import KubeHandle


@pytest.fixture
def api(kd: KubeHandle) -> Iterator[kube_client.ApiClient]:
    client = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
    yield client
    client.close()


@pytest.fixture
def http(kd: KubeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=kd.url, timeout=10.0) as client:
        yield client


def _service(name: str) -> kube_client.V1Service:
    return kube_client.V1Service(
        metadata=kube_client.V1ObjectMeta(name=name),
        spec=kube_client.V1ServiceSpec(selector={"app": name}, ports=[kube_client.V1ServicePort(port=80)]),
    )


def test_delete_namespaced_service_answers_the_service(kd: KubeHandle, ns: str, api: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api)
    core.create_namespaced_service(ns, _service("web"))
    deleted = core.delete_namespaced_service("web", ns)
    assert isinstance(deleted, kube_client.V1Service)
    assert deleted.metadata is not None
    assert deleted.metadata.name == "web"
    core.create_namespaced_service_account(
        ns, kube_client.V1ServiceAccount(metadata=kube_client.V1ObjectMeta(name="sa"))
    )
    assert isinstance(core.delete_namespaced_service_account("sa", ns), kube_client.V1ServiceAccount)
    core.create_namespaced_config_map(ns, kube_client.V1ConfigMap(metadata=kube_client.V1ObjectMeta(name="cm")))
    status = core.delete_namespaced_config_map("cm", ns)
    assert isinstance(status, dict)  # the client declares ``object`` here and hands the Status over as parsed
    assert (status["status"], status["details"]["name"], status["details"]["kind"]) == ("Success", "cm", "configmaps")


def test_a_new_service_and_workloads_carry_their_empty_status(
    kd: KubeHandle, ns: str, api: kube_client.ApiClient
) -> None:
    created = kube_client.CoreV1Api(api).create_namespaced_service(ns, _service("plain"))
    assert created.status is not None
    assert created.status.load_balancer is not None
    done = kd.kubectl("create", "service", "clusterip", "gen", "--tcp=80:8080", namespace=ns)
    assert done.returncode == 0, done.stderr
    service = kd.store.require("services", ns, "gen")
    assert service["status"] == {"loadBalancer": {}}
    spec = service["spec"]
    assert (spec["sessionAffinity"], spec["ipFamilies"], spec["ipFamilyPolicy"], spec["internalTrafficPolicy"]) == (
        "None",
        ["IPv4"],
        "SingleStack",
        "Cluster",
    )
    done = kd.kubectl("create", "deployment", "d", "--image=registry.local/d:1", namespace=ns)
    assert done.returncode == 0, done.stderr
    deployment = kd.store.require("deployments", ns, "d")
    assert deployment["status"] == {}
    assert "enableServiceLinks" not in deployment["spec"]["template"]["spec"]  # SetDefaults_Pod's, a Pod's alone
    done = kd.kubectl("create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", namespace=ns)
    assert done.returncode == 0, done.stderr
    assert kd.store.require("cronjobs", ns, "cj")["status"] == {}


def test_a_stale_resource_version_is_409_before_validation(kd: KubeHandle, ns: str, api: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api)
    first = core.create_namespaced_config_map(ns, kube_client.V1ConfigMap(metadata=kube_client.V1ObjectMeta(name="rv")))
    core.patch_namespaced_config_map("rv", ns, {"data": {"a": "1"}})
    assert first.metadata is not None
    first.metadata.labels = {"bad key!": "x"}  # invalid too: the version is compared first
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("rv", ns, first)
    assert raised.value.status == 409
    assert json.loads(raised.value.body or "{}")["reason"] == "Conflict"
    current = core.read_namespaced_config_map("rv", ns)
    assert current.metadata is not None
    current.metadata.labels = {"bad key!": "x"}
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("rv", ns, current)
    assert raised.value.status == 422


def test_a_services_cluster_ip_may_not_change_once_set(kd: KubeHandle, ns: str) -> None:
    done = kd.kubectl("create", "service", "clusterip", "fixed", "--tcp=80:8080", namespace=ns)
    assert done.returncode == 0, done.stderr
    patched = kd.kubectl("patch", "service", "fixed", "-p", '{"spec":{"clusterIP":"10.96.200.200"}}', namespace=ns)
    assert patched.returncode == 1
    assert (
        'The Service "fixed" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.200.200"}: '
        "may not change once set" in patched.stderr
    )


def test_a_deployments_selector_is_immutable_in_the_apiservers_words(kd: KubeHandle, ns: str) -> None:
    done = kd.kubectl("create", "deployment", "sel", "--image=registry.local/sel:1", namespace=ns)
    assert done.returncode == 0, done.stderr
    patch = {
        "spec": {
            "selector": {"matchLabels": {"app": "other"}},
            "template": {"metadata": {"labels": {"app": "other"}}},
        }
    }
    patched = kd.kubectl("patch", "deployment", "sel", "--type=merge", "-p", json.dumps(patch), namespace=ns)
    assert patched.returncode == 1
    assert (
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"other"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable" in patched.stderr
    )


def test_an_immutable_configmap_keeps_its_data(kd: KubeHandle, ns: str) -> None:
    kd.store.create(
        "configmaps", {"metadata": {"name": "frozen", "namespace": ns}, "data": {"a": "1"}, "immutable": True}
    )
    patched = kd.kubectl("patch", "configmap", "frozen", "-p", '{"data":{"a":"2"}}', namespace=ns)
    assert patched.returncode == 1
    assert 'The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set' in (
        patched.stderr
    )


def test_status_bodies_are_byte_for_byte_the_apiservers(kd: KubeHandle, ns: str, http: httpx.Client) -> None:
    response = http.get(f"/api/v1/namespaces/{ns}/configmaps/nope")
    assert response.status_code == 404
    assert response.content == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"configmaps \\"nope\\" not found","reason":"NotFound",'
        b'"details":{"name":"nope","kind":"configmaps"},"code":404}\n'
    )
    kd.store.create("configmaps", {"metadata": {"name": "gone", "namespace": ns}})
    uid = kd.store.require("configmaps", ns, "gone")["metadata"]["uid"]
    deleted = http.delete(f"/api/v1/namespaces/{ns}/configmaps/gone")
    assert deleted.content == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
        b'"details":{"name":"gone","kind":"configmaps","uid":"' + uid.encode() + b'"}}\n'
    )


def test_a_new_pod_carries_what_the_default_admission_plugins_add(kd: KubeHandle, ns: str) -> None:
    """Priority and DefaultTolerationSeconds, both in kube-apiserver's default admission set."""
    done = kd.kubectl("run", "probe", "--image=busybox", "--restart=Never", namespace=ns)
    assert done.returncode == 0, done.stderr
    spec = kd.store.require("pods", ns, "probe")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"], spec["enableServiceLinks"]) == (0, "PreemptLowerPriority", True)
    assert spec["tolerations"] == [
        {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for taint in ("not-ready", "unreachable")
    ]
    kept = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 5,
    }
    pod = {
        "metadata": {"name": "own", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": [kept]},
    }
    tolerations = kd.store.create("pods", pod)["spec"]["tolerations"]
    assert [t["key"] for t in tolerations] == ["node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"]
    assert tolerations[0]["tolerationSeconds"] == 5
