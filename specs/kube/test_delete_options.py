"""DeleteOptions and server dry runs, as the apiserver reads them (apiserver ``pkg/endpoints/handlers/delete.go``):
a non-empty DELETE body is the options and the query is then not read; an empty body takes them from the query;
apimachinery's ``ValidateDeleteOptions`` refuses bad values with a 422 on ``DeleteOptions.meta.k8s.io``. A dry run
(``dryRun: ["All"]``) persists nothing on any verb (the registry's dry-run path, apiserver
``pkg/registry/generic/registry/store.go``). Real kubectl (1.27, 1.33 and the default build) sends its options in
the body; the ``kubernetes`` client sends ``body=V1DeleteOptions(...)`` the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from fakes.kube import KubeHandle
from specs.kube.conftest import kubectl_build, require_kubectl

CM = "/api/v1/namespaces/{ns}/configmaps"


@pytest.fixture
def http(kd: KubeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=kd.url, timeout=10.0) as client:
        yield client


@pytest.fixture
def core(kd: KubeHandle) -> Iterator[kube_client.CoreV1Api]:
    api = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
    yield kube_client.CoreV1Api(api)
    api.close()


def _configmap(kd: KubeHandle, ns: str, name: str, **meta: object) -> dict:
    return kd.store.create("configmaps", {"metadata": {"name": name, "namespace": ns, **meta}, "data": {"k": "v"}})


@pytest.mark.parametrize("minor", [27, 33, None])
def test_kubectl_delete_dry_run_server_leaves_the_object(kd: KubeHandle, ns: str, minor: int | None) -> None:
    binary = require_kubectl() if minor is None else kubectl_build(minor)
    if binary is None:
        pytest.skip(f"no kubectl.1.{minor} beside kubectl")
    _configmap(kd, ns, "keep")
    done = kd.kubectl("delete", "configmap", "keep", "--dry-run=server", kubectl=binary, namespace=ns)
    assert done.returncode == 0, done.stderr
    assert 'configmap "keep" deleted (server dry run)' in done.stdout
    assert kd.store.get("configmaps", ns, "keep") is not None
    sent = [e for e in kd.requests(method="DELETE") if e.path.endswith(f"/namespaces/{ns}/configmaps/keep")]
    assert sent
    assert json.loads(sent[-1].body)["dryRun"] == ["All"]  # in the body, not the query
    assert "dryRun" not in sent[-1].query_params


def test_kubectl_delete_dry_run_server_keeps_a_collection_and_dependents(kd: KubeHandle, ns: str) -> None:
    owner = _configmap(kd, ns, "owner")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    _configmap(kd, ns, "dependent", ownerReferences=[ref])
    done = kd.kubectl("delete", "configmaps", "--all", "--dry-run=server", namespace=ns)
    assert done.returncode == 0, done.stderr
    assert {"owner", "dependent"} <= {o["metadata"]["name"] for o in kd.store.list("configmaps", ns)[0]}


def test_the_python_clients_body_options(kd: KubeHandle, ns: str, core: kube_client.CoreV1Api) -> None:
    _configmap(kd, ns, "c1")
    core.delete_namespaced_config_map("c1", ns, body=kube_client.V1DeleteOptions(dry_run=["All"]))
    assert kd.store.get("configmaps", ns, "c1") is not None
    owner = _configmap(kd, ns, "parent")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": owner["metadata"]["uid"]}
    _configmap(kd, ns, "child", ownerReferences=[ref])
    core.delete_namespaced_config_map("parent", ns, body=kube_client.V1DeleteOptions(propagation_policy="Orphan"))
    assert kd.store.get("configmaps", ns, "parent") is None
    assert kd.store.require("configmaps", ns, "child")["metadata"].get("ownerReferences") in (None, [])


def test_preconditions_in_the_body_are_409_in_the_storage_layers_words(
    kd: KubeHandle, ns: str, core: kube_client.CoreV1Api
) -> None:
    obj = _configmap(kd, ns, "guarded")
    wrong_uid = kube_client.V1DeleteOptions(preconditions=kube_client.V1Preconditions(uid="not-the-uid"))
    with pytest.raises(ApiException) as raised:
        core.delete_namespaced_config_map("guarded", ns, body=wrong_uid)
    assert raised.value.status == 409
    message = json.loads(raised.value.body or "{}")["message"]
    assert message == (
        f'Operation cannot be fulfilled on configmaps "guarded": StorageError: invalid object, Code: 4, '
        f"Key: /registry/configmaps/{ns}/guarded, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: not-the-uid, UID in object meta: {obj['metadata']['uid']}"
    )
    stale = kube_client.V1DeleteOptions(preconditions=kube_client.V1Preconditions(resource_version="1"))
    with pytest.raises(ApiException) as raised:
        core.delete_namespaced_config_map("guarded", ns, body=stale)
    assert raised.value.status == 409
    assert "Precondition failed: ResourceVersion in precondition: 1" in json.loads(raised.value.body or "{}")["message"]
    fresh = kube_client.V1DeleteOptions(
        preconditions=kube_client.V1Preconditions(
            uid=obj["metadata"]["uid"], resource_version=obj["metadata"]["resourceVersion"]
        )
    )
    core.delete_namespaced_config_map("guarded", ns, body=fresh)
    assert kd.store.get("configmaps", ns, "guarded") is None


def test_a_body_replaces_the_query_and_an_empty_body_reads_it(kd: KubeHandle, ns: str, http: httpx.Client) -> None:
    """delete.go decodes the body into the options when there is one, and only otherwise the query."""
    _configmap(kd, ns, "by-query")
    response = http.delete(CM.format(ns=ns) + "/by-query", params={"dryRun": "All"})
    assert response.status_code == 200, response.text
    assert kd.store.get("configmaps", ns, "by-query") is not None
    body = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1"})
    response = http.request(
        "DELETE", CM.format(ns=ns) + "/by-query", params={"dryRun": "All"}, content=body,
        headers={"content-type": "application/json"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    assert kd.store.get("configmaps", ns, "by-query") is None


def test_a_pod_dry_run_delete_answers_it_terminating_and_stores_nothing(
    kd: KubeHandle, ns: str, http: httpx.Client
) -> None:
    spec = {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]}
    kd.store.create("pods", {"metadata": {"name": "p", "namespace": ns}, "spec": spec})
    done = kd.kubectl("delete", "pod", "p", "--dry-run=server", "--wait=false", namespace=ns)
    assert done.returncode == 0, done.stderr
    body = json.dumps({"dryRun": ["All"], "gracePeriodSeconds": 30})
    path = f"/api/v1/namespaces/{ns}/pods/p"
    response = http.request("DELETE", path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["deletionGracePeriodSeconds"] == 30  # the answer a real delete would give
    assert kd.store.require("pods", ns, "p")["metadata"].get("deletionTimestamp") is None


def test_bad_options_are_422_as_validate_delete_options_words_them(kd: KubeHandle, ns: str, http: httpx.Client) -> None:
    _configmap(kd, ns, "opts")
    path = CM.format(ns=ns) + "/opts"
    cases = {
        json.dumps({"propagationPolicy": "Sideways"}): (
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": '
            'supported values: "Foreground", "Background", "Orphan", "nil"'
        ),
        json.dumps({"dryRun": ["Bogus"]}): (
            'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: '
            'supported values: "All"'
        ),
        json.dumps({"propagationPolicy": "Orphan", "orphanDependents": True}): (
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": '
            "orphanDependents and deletionPropagation cannot be both set"
        ),
    }
    for body, message in cases.items():
        response = http.request("DELETE", path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert response.json()["message"] == message
        assert response.json()["details"] == {"group": "meta.k8s.io", "kind": "DeleteOptions", "causes": [
            response.json()["details"]["causes"][0]]}  # fmt: skip
    response = http.delete(path, params={"propagationPolicy": "Sideways"})
    assert response.status_code == 422
    assert kd.store.get("configmaps", ns, "opts") is not None


def test_dry_run_never_persists_on_create_update_patch_or_scale(kd: KubeHandle, ns: str, http: httpx.Client) -> None:
    before = kd.store.resource_version
    done = kd.kubectl("create", "configmap", "ghost", "--from-literal=a=b", "--dry-run=server", namespace=ns)
    assert done.returncode == 0, done.stderr
    assert kd.store.get("configmaps", ns, "ghost") is None
    _configmap(kd, ns, "real")
    before = kd.store.resource_version
    patched = kd.kubectl(
        "patch", "configmap", "real", "--dry-run=server", "-p", '{"data":{"k":"changed"}}', namespace=ns
    )
    assert patched.returncode == 0, patched.stderr
    current = kd.store.require("configmaps", ns, "real")
    replaced = http.put(CM.format(ns=ns) + "/real", params={"dryRun": "All"}, json={**current, "data": {"k": "put"}})
    assert replaced.status_code == 200
    assert replaced.json()["data"] == {"k": "put"}
    assert kd.store.require("configmaps", ns, "real")["data"] == {"k": "v"}
    assert kd.store.resource_version == before
    kd.store.create(
        "deployments",
        {
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        },
    )
    scaled = kd.kubectl("scale", "deployment/web", "--replicas=5", "--dry-run=server", namespace=ns)
    assert scaled.returncode == 0, scaled.stderr
    assert kd.store.require("deployments", ns, "web")["spec"]["replicas"] == 1
    bogus = http.post(CM.format(ns=ns), params={"dryRun": "Bogus"}, json={"metadata": {"name": "x"}})
    assert bogus.status_code == 422
    assert bogus.json()["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: supported values: "All"'
    )
