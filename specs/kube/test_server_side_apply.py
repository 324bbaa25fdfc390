"""Server-side apply and ``managedFields`` against the double, with the real kubectl 1.27 and 1.33 and the
``kubernetes`` client (``application/apply-patch+yaml``).

What a real API server does, and the sources followed: structured-merge-diff ``merge/update.go`` (an applier owns
exactly what it applies; a field it stops applying is removed unless another manager owns it; changing another
manager's field is a conflict unless forced; an update takes the fields it changes from everyone),
``typed/tofieldset.go`` and ``fieldpath/serialize.go`` (the ``FieldsV1`` keys: ``f:`` fields, ``k:`` list elements
by their keys, ``"."`` for an element or map owned itself), apimachinery ``pkg/util/managedfields/internal/``
``conflict.go`` (the 409's message and causes), ``managedfields.go`` (entry order and manager identity),
``scalehandler.go`` (``kubectl scale`` owns ``.spec.replicas`` through the ``scale`` subresource) and
``lastappliedmanager.go`` (``kubectl --server-side`` takes over from client-side apply without conflicts); the list
keys are the API's ``x-kubernetes-list-map-keys`` (container ports by ``containerPort`` and ``protocol``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

import fakes.kube
from fakes.kube import KubeHandle
from specs.kube.conftest import kubectl_build, require_kubectl

BUILDS = {minor: kubectl_build(minor) for minor in (27, 33)}


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve(controllers=False) as handle:
        yield handle


@pytest.fixture(params=sorted(BUILDS), ids=lambda minor: f"kubectl-1.{minor}")
def kubectl(request: pytest.FixtureRequest) -> str:
    path = BUILDS[request.param]
    if path is None:
        pytest.skip(f"no kubectl.1.{request.param} beside the kubectl on PATH")
    return path


def _apply(kd: KubeHandle, kubectl: str, tmp_path: Any, obj: dict[str, Any], *flags: str) -> Any:
    path = os.path.join(str(tmp_path), "manifest.yaml")
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(obj, out)
    return kd.kubectl("apply", "--server-side", *flags, "-f", path, kubectl=kubectl)


def _ok(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return done


def _configmap(data: dict[str, str] | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "settings"}
    if labels is not None:
        meta["labels"] = labels
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    return obj if data is None else {**obj, "data": data}


def _deployment(env: list[dict[str, str]], ports: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1", "env": env, "ports": ports}]},
            },
        },
    }


def _get(kd: KubeHandle, resource: str, name: str) -> dict[str, Any]:
    obj = kd.store.get(resource, kd.namespace, name)
    assert obj is not None, f"{resource}/{name} is gone"
    return obj


def _entries(kd: KubeHandle, resource: str, name: str) -> list[dict[str, Any]]:
    return list(_get(kd, resource, name)["metadata"].get("managedFields") or [])


def test_an_appliers_entry_has_the_apiservers_shape(kd: KubeHandle, kubectl: str, tmp_path: Any) -> None:
    _ok(_apply(kd, kubectl, tmp_path, _configmap({"k": "1"}, {"app": "x"}), "--field-manager=deployer"))
    [entry] = _entries(kd, "configmaps", "settings")
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert entry["manager"] == "deployer"
    assert entry["operation"] == "Apply"
    assert entry["apiVersion"] == "v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["time"].endswith("Z")
    assert entry["fieldsV1"] == {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    shown = json.loads(_ok(kd.kubectl("get", "configmap", "settings", "-o", "json", "--show-managed-fields")).stdout)
    assert shown["metadata"]["managedFields"] == [entry]


def test_fields_dropped_from_the_manifest_are_removed(kd: KubeHandle, kubectl: str, tmp_path: Any) -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    ports: list[dict[str, Any]] = [
        {"containerPort": 80},
        {"containerPort": 53, "protocol": "UDP"},
        {"containerPort": 53},
    ]
    _ok(_apply(kd, kubectl, tmp_path, _deployment(env, ports, {"app": "web", "tier": "front"})))
    container = _get(kd, "deployments", "web")["spec"]["template"]["spec"]["containers"][0]
    assert [(p["containerPort"], p.get("protocol", "TCP")) for p in container["ports"]] == [
        (80, "TCP"),
        (53, "UDP"),
        (53, "TCP"),
    ]
    _ok(_apply(kd, kubectl, tmp_path, _deployment(env[:1], ports[:1] + ports[2:], {"app": "web"})))
    obj = _get(kd, "deployments", "web")
    container = obj["spec"]["template"]["spec"]["containers"][0]
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert [(p["containerPort"], p.get("protocol", "TCP")) for p in container["ports"]] == [(80, "TCP"), (53, "TCP")]
    [entry] = _entries(kd, "deployments", "web")
    owned = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
    assert owned["."] == {}
    assert set(owned["f:ports"]) == {
        'k:{"containerPort":80,"protocol":"TCP"}',
        'k:{"containerPort":53,"protocol":"TCP"}',
    }
    assert set(owned["f:env"]) == {'k:{"name":"A"}'}


def test_a_field_another_manager_owns_stays_when_one_stops_applying_it(
    kd: KubeHandle, kubectl: str, tmp_path: Any
) -> None:
    _ok(_apply(kd, kubectl, tmp_path, _configmap({"shared": "s", "mine": "m"}), "--field-manager=first"))
    _ok(_apply(kd, kubectl, tmp_path, _configmap({"shared": "s"}), "--field-manager=second"))  # same value: shared
    _ok(_apply(kd, kubectl, tmp_path, _configmap(None), "--field-manager=first"))  # first now applies no field
    assert _get(kd, "configmaps", "settings")["data"] == {"shared": "s"}
    assert [(e["manager"], e["fieldsV1"]) for e in _entries(kd, "configmaps", "settings")] == [
        ("second", {"f:data": {"f:shared": {}}})
    ]


def test_a_conflict_is_a_409_naming_manager_and_field_until_forced(kd: KubeHandle, kubectl: str, tmp_path: Any) -> None:
    _ok(_apply(kd, kubectl, tmp_path, _configmap({"k": "1", "j": "1"}), "--field-manager=first"))
    refused = _apply(kd, kubectl, tmp_path, _configmap({"k": "2", "j": "2"}), "--field-manager=second")
    assert refused.returncode == 1
    assert 'Apply failed with 2 conflicts: conflicts with "first":\n- .data.j\n- .data.k' in refused.stderr
    assert _get(kd, "configmaps", "settings")["data"] == {"k": "1", "j": "1"}
    forced = _apply(kd, kubectl, tmp_path, _configmap({"k": "2"}), "--field-manager=second", "--force-conflicts")
    _ok(forced)
    entries = {e["manager"]: e["fieldsV1"] for e in _entries(kd, "configmaps", "settings")}
    assert entries == {"first": {"f:data": {"f:j": {}}}, "second": {"f:data": {"f:k": {}}}}
    assert _get(kd, "configmaps", "settings")["data"] == {"k": "2", "j": "1"}


def test_updates_are_recorded_as_update_owners_and_conflict_with_appliers(
    kd: KubeHandle, kubectl: str, tmp_path: Any
) -> None:
    _ok(_apply(kd, kubectl, tmp_path, _deployment([], [{"containerPort": 80}], {"app": "web"})))
    _ok(kd.kubectl("scale", "deployment/web", "--replicas=3", kubectl=kubectl))
    _ok(kd.kubectl("label", "deployment/web", "team=core", kubectl=kubectl))
    agent = os.path.basename(kubectl)  # no --field-manager: the user agent's first word, the binary's name
    entries = _entries(kd, "deployments", "web")
    assert (entries[0]["manager"], entries[0]["operation"]) == ("kubectl", "Apply")  # Apply sorts before Update
    updates = {(e["manager"], e.get("subresource")): e for e in entries[1:]}
    assert set(updates) == {(agent, "scale"), ("kubectl-label", None)}
    assert {e["operation"] for e in updates.values()} == {"Update"}
    assert updates[agent, "scale"]["apiVersion"] == "apps/v1"
    assert updates[agent, "scale"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert updates["kubectl-label", None]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:team": {}}}}
    assert "f:replicas" not in entries[0]["fieldsV1"]["f:spec"]
    refused = _apply(kd, kubectl, tmp_path, _deployment([], [{"containerPort": 80}], {"app": "web"}))
    assert refused.returncode == 1
    assert (
        f'Apply failed with 1 conflict: conflict with "{agent}" with subresource "scale" using apps/v1: .spec.replicas'
        in refused.stderr
    )


def test_kubectl_takes_over_from_client_side_apply_without_conflicts(
    kd: KubeHandle, kubectl: str, tmp_path: Any
) -> None:
    path = os.path.join(str(tmp_path), "csa.yaml")
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(_configmap({"k": "1"}), out)
    _ok(kd.kubectl("apply", "-f", path, kubectl=kubectl))
    other = _apply(kd, kubectl, tmp_path, _configmap({"k": "2"}), "--field-manager=someone-else")
    assert other.returncode == 1
    assert 'conflict with "kubectl-client-side-apply" using v1: .data.k' in other.stderr
    _ok(_apply(kd, kubectl, tmp_path, _configmap({"k": "2"})))
    obj = _get(kd, "configmaps", "settings")
    assert obj["data"] == {"k": "2"}
    last = json.loads(obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["data"] == {"k": "2"}


def test_the_python_client_applies_gets_409_causes_and_forces(kd: KubeHandle) -> None:
    api = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
    try:
        core = kube_client.CoreV1Api(api)  # looked up here: the client's API classes load every model
        apply = "application/apply-patch+yaml"
        body = _configmap({"k": "1"})
        created: Any = core.patch_namespaced_config_map(
            "settings", kd.namespace, body, field_manager="first", _content_type=apply
        )
        assert created.data == {"k": "1"}
        assert [(m.manager, m.operation) for m in created.metadata.managed_fields] == [("first", "Apply")]
        with pytest.raises(ApiException) as caught:
            core.patch_namespaced_config_map(
                "settings", kd.namespace, _configmap({"k": "2"}), field_manager="second", _content_type=apply
            )
        assert caught.value.status == 409
        status = json.loads(str(caught.value.body))
        assert status["reason"] == "Conflict"
        assert status["message"] == 'Apply failed with 1 conflict: conflict with "first": .data.k'
        assert status["details"]["causes"] == [
            {"reason": "FieldManagerConflict", "message": 'conflict with "first"', "field": ".data.k"}
        ]
        forced: Any = core.patch_namespaced_config_map(
            "settings", kd.namespace, _configmap({"k": "2"}), field_manager="second", force=True, _content_type=apply
        )
        assert forced.data == {"k": "2"}
        assert [m.manager for m in forced.metadata.managed_fields] == ["second"]
        with pytest.raises(ApiException) as caught:
            with_fields = _configmap({"k": "3"})
            with_fields["metadata"]["managedFields"] = [{"manager": "x", "operation": "Apply"}]
            core.patch_namespaced_config_map(
                "settings", kd.namespace, with_fields, field_manager="second", _content_type=apply
            )
        assert caught.value.status == 400
        assert json.loads(str(caught.value.body))["message"] == "metadata.managedFields must be nil"
    finally:
        api.close()


_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "routes.example.dev"},
    "spec": {
        "group": "example.dev",
        "scope": "Namespaced",
        "names": {"plural": "routes", "singular": "route", "kind": "Route"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "backends": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {"name": {"type": "string"}, "weight": {"type": "integer"}},
                                        },
                                    },
                                    "hosts": {"type": "array", "items": {"type": "string"}},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def _route(backends: list[dict[str, Any]], hosts: list[str]) -> dict[str, Any]:
    spec = {"backends": backends, "hosts": hosts}
    return {"apiVersion": "example.dev/v1", "kind": "Route", "metadata": {"name": "r"}, "spec": spec}


def test_a_custom_resources_lists_follow_its_crds_list_markers(kd: KubeHandle, kubectl: str, tmp_path: Any) -> None:
    _ok(_apply(kd, kubectl, tmp_path, _CRD))
    _ok(_apply(kd, kubectl, tmp_path, _route([{"name": "a", "weight": 1}], ["a.dev"]), "--field-manager=team-a"))
    refused = _apply(kd, kubectl, tmp_path, _route([{"name": "b", "weight": 2}], ["b.dev"]), "--field-manager=team-b")
    assert refused.returncode == 1  # hosts has no marker: atomic, one owner, so replacing it conflicts
    assert 'conflict with "team-a": .spec.hosts' in refused.stderr
    _ok(_apply(kd, kubectl, tmp_path, _route([{"name": "b", "weight": 2}], ["a.dev"]), "--field-manager=team-b"))
    route = _get(kd, "routes", "r")
    assert route["spec"]["backends"] == [{"name": "a", "weight": 1}, {"name": "b", "weight": 2}]  # keyed: merged
    _ok(_apply(kd, kubectl, tmp_path, _route([], ["a.dev"]), "--field-manager=team-a"))
    assert _get(kd, "routes", "r")["spec"]["backends"] == [{"name": "b", "weight": 2}]
    entries = {e["manager"]: e["fieldsV1"] for e in _entries(kd, "routes", "r")}
    assert entries["team-b"]["f:spec"]["f:backends"] == {'k:{"name":"b"}': {".": {}, "f:name": {}, "f:weight": {}}}


def test_an_update_owns_the_defaults_decoded_into_its_request(kd: KubeHandle, kubectl: str, tmp_path: Any) -> None:
    path = os.path.join(str(tmp_path), "csa.yaml")
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(_deployment([], [{"containerPort": 80}], {"app": "web"}), out)
    _ok(kd.kubectl("apply", "-f", path, kubectl=kubectl))
    [entry] = _entries(kd, "deployments", "web")
    container = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
    assert "f:imagePullPolicy" in container  # defaulted while decoding the create: its manager owns it
    pinned = _deployment([], [{"containerPort": 80}], {"app": "web"})
    pinned["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    refused = _apply(kd, kubectl, tmp_path, pinned, "--field-manager=ci")
    assert refused.returncode == 1
    assert (
        'conflict with "kubectl-client-side-apply" using apps/v1: '
        '.spec.template.spec.containers[name="app"].imagePullPolicy' in refused.stderr
    )


def test_an_applied_element_without_its_key_is_the_apiservers_internal_error(kd: KubeHandle) -> None:
    api = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
    try:
        config = _deployment([], [{"containerPort": 80}], {"app": "web"})
        del config["spec"]["template"]["spec"]["containers"][0]["name"]
        with pytest.raises(ApiException) as caught:
            kube_client.AppsV1Api(api).patch_namespaced_deployment(
                "web", kd.namespace, config, field_manager="ci", _content_type="application/apply-patch+yaml"
            )
        assert caught.value.status == 500
        status = json.loads(str(caught.value.body))
        assert status["reason"] == "InternalError"
        assert status["message"] == (
            f"Internal error occurred: failed to create typed patch object ({kd.namespace}/web; apps/v1, "
            "Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an "
            'element that omits key field "name" (and doesn\'t have default value)'
        )
        assert kd.store.get("deployments", kd.namespace, "web") is None
    finally:
        api.close()
