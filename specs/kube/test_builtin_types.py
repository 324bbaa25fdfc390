"""The built-in types a default cluster serves, with the real kubectl builds and the kubernetes client: discovery
(scopes, short names, categories, version-dependent group-versions), ``kubectl get all`` and ``get nodes``, a
manifest bundle with RBAC and a DaemonSet rolled out, ``kubectl autoscale``, ``kubectl apply --prune`` on kubectl's
default prune list, the Node and the per-namespace ServiceAccount and root CA, PDB and HPA validation and status.

Sources: discovery as the apiserver registers its REST storage (``pkg/registry/<group>/<kind>/storage/storage.go``
short names and categories, ``pkg/controlplane`` default group-versions); columns from
``pkg/printers/internalversion/printers.go``; the DaemonSet rollout from ``pkg/controller/daemon`` and kubectl's
``polymorphichelpers/rollout_status.go``; ServiceAccount and ``kube-root-ca.crt`` from
``pkg/controller/serviceaccount`` and ``pkg/controller/certificates/rootcacertpublisher``; validation messages
from ``pkg/apis/policy/validation`` and ``pkg/apis/autoscaling/validation``; PDB status from
``pkg/controller/disruption``; HPA status on a cluster without metrics from ``pkg/controller/podautoscaler``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.kubectl_builds import KubectlBuild
from specs.kube.conftest import require_kubectl
from specs.kube.workloads import condition, eventually

pytestmark = pytest.mark.timeout(180)

BUNDLE = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: agent-reader}
rules: [{apiGroups: [""], resources: [nodes, pods], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: agent-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: agent-reader}
subjects: [{kind: ServiceAccount, name: agent, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: config-writer}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [create, update]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: config-writer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: config-writer}
subjects: [{kind: ServiceAccount, name: agent, namespace: default}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      serviceAccountName: agent
      containers: [{name: agent, image: "registry.local/agent:1.0"}]
"""


@pytest.fixture
def api() -> Iterator[tuple[KubeHandle, kube_client.ApiClient]]:
    require_kubectl()
    with fakes.kube.serve() as kd:
        client = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
        try:
            yield kd, client
        finally:
            client.close()


def _runner(kd: KubeHandle, build: KubectlBuild) -> Any:
    def run(*args: str, input: str | None = None) -> str:
        done = kd.kubectl(*args, kubectl=build.path, namespace="default", input=input)
        assert done.returncode == 0, f"{build}: kubectl {' '.join(args)} exited {done.returncode}: {done.stderr}"
        return str(done.stdout)

    return run


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


# --- kubectl, every build of the matrix -----------------------------------------------------------------------


def test_a_bundle_with_rbac_and_a_daemonset_rolls_out_on_the_node(kubectl_build: KubectlBuild) -> None:
    with fakes.kube.serve(kubectl_version=kubectl_build.server_git_version()) as kd:
        run = _runner(kd, kubectl_build)
        applied = run("apply", "-f", "-", input=BUNDLE)
        for line in (
            "serviceaccount/agent created",
            "clusterrole.rbac.authorization.k8s.io/agent-reader created",
            "clusterrolebinding.rbac.authorization.k8s.io/agent-reader created",
            "role.rbac.authorization.k8s.io/config-writer created",
            "rolebinding.rbac.authorization.k8s.io/config-writer created",
            "daemonset.apps/agent created",
        ):
            assert line in applied
        assert 'daemon set "agent" successfully rolled out' in run(
            "rollout", "status", "daemonset/agent", "--timeout=60s"
        )

        nodes = _rows(run("get", "nodes"))
        assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        assert [nodes[1][i] for i in (0, 1, 2, 4)] == ["fake-node", "Ready", "control-plane", kd.git_version]
        everything = run("get", "all")
        assert "daemonset.apps/agent" in everything
        (pod,) = [p for p in kd.store.list("pods", "default")[0] if p["metadata"]["name"].startswith("agent-")]
        assert pod["spec"]["nodeName"] == "fake-node"
        assert f"pod/{pod['metadata']['name']}" in everything
        table = _rows(run("get", "daemonset", "agent"))
        assert table[0] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE"]
        assert table[1][:7] == ["agent", "1", "1", "1", "1", "1", "<none>"]
        binding = _rows(run("get", "rolebinding", "config-writer", "-o", "wide"))
        assert binding[1][1] == "Role/config-writer"
        assert binding[1][-1] == "default/agent"

        run("set", "image", "daemonset/agent", "agent=registry.local/agent:1.1")
        assert "successfully rolled out" in run("rollout", "status", "daemonset/agent", "--timeout=60s")
        live = [
            p
            for p in kd.store.list("pods", "default")[0]
            if p["metadata"]["name"].startswith("agent-") and not p["metadata"].get("deletionTimestamp")
        ]
        assert [p["spec"]["containers"][0]["image"] for p in live] == ["registry.local/agent:1.1"]
        history = run("rollout", "history", "daemonset/agent")
        assert [row[0] for row in _rows(history)[2:]] == ["1", "2"]


def test_kubectl_autoscale_creates_an_hpa_that_reads_back_under_v2_and_v1(kubectl_build: KubectlBuild) -> None:
    with fakes.kube.serve(kubectl_version=kubectl_build.server_git_version()) as kd:
        run = _runner(kd, kubectl_build)
        run("create", "deployment", "web", "--image=registry.local/web:1.0")
        assert "autoscaled" in run("autoscale", "deployment", "web", "--min=2", "--max=4", "--cpu-percent=70")
        # Without a metrics server the autoscaler only keeps the replica count within the range.
        eventually(lambda: kd.store.require("deployments", "default", "web")["spec"]["replicas"] == 2, what="min 2")
        rows = _rows(run("get", "hpa", "web"))
        assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
        assert rows[1][:6] == ["web", "Deployment/web", "cpu:", "<unknown>/70%", "2", "4"]  # no metrics: unknown
        v2 = json.loads(run("get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "json"))
        assert v2["apiVersion"] == "autoscaling/v2"
        assert v2["spec"]["metrics"] == [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
            }
        ]
        assert "currentMetrics" not in v2["status"]  # the double has no metrics: none are made up
        v1 = json.loads(run("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json"))
        assert (v1["spec"]["targetCPUUtilizationPercentage"], v1["spec"]["minReplicas"]) == (70, 2)


def test_apply_prune_works_with_kubectls_default_prune_list(kubectl_build: KubectlBuild, tmp_path: Path) -> None:
    def configmap(name: str) -> str:
        return json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "demo"}}}
        )

    (tmp_path / "a.json").write_text(configmap("a"))
    (tmp_path / "b.json").write_text(configmap("b"))
    with fakes.kube.serve(kubectl_version=kubectl_build.server_git_version()) as kd:
        run = _runner(kd, kubectl_build)
        run("apply", "-f", str(tmp_path), "--prune", "-l", "app=demo")
        (tmp_path / "b.json").unlink()
        pruned = run("apply", "-f", str(tmp_path), "--prune", "-l", "app=demo")
        assert "configmap/b pruned" in pruned
        assert kd.store.get("configmaps", "default", "b") is None
        assert kd.store.get("configmaps", "default", "a") is not None


# --- discovery ---------------------------------------------------------------------------------------------------


def _resources(kd: KubeHandle, path: str) -> dict[str, dict[str, Any]]:
    answer = httpx.get(kd.url + path, headers={"Accept": "application/json"}, timeout=10.0)
    answer.raise_for_status()
    return {r["name"]: r for r in answer.json()["resources"]}


@pytest.mark.parametrize(
    ("path", "name", "namespaced", "short", "categories"),
    [
        ("/api/v1", "nodes", False, ["no"], None),
        ("/api/v1", "persistentvolumeclaims", True, ["pvc"], None),
        ("/api/v1", "persistentvolumes", False, ["pv"], None),
        ("/api/v1", "replicationcontrollers", True, ["rc"], ["all"]),
        ("/apis/apps/v1", "daemonsets", True, ["ds"], ["all"]),
        ("/apis/autoscaling/v2", "horizontalpodautoscalers", True, ["hpa"], ["all"]),
        ("/apis/autoscaling/v1", "horizontalpodautoscalers", True, ["hpa"], ["all"]),
        ("/apis/policy/v1", "poddisruptionbudgets", True, ["pdb"], None),
        ("/apis/networking.k8s.io/v1", "ingresses", True, ["ing"], None),
        ("/apis/networking.k8s.io/v1", "networkpolicies", True, ["netpol"], None),
        ("/apis/networking.k8s.io/v1", "ingressclasses", False, None, None),
        ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False, None, None),
        ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True, None, None),
        ("/apis/scheduling.k8s.io/v1", "priorityclasses", False, ["pc"], None),
        ("/apis/coordination.k8s.io/v1", "leases", True, None, None),
        ("/apis/apiregistration.k8s.io/v1", "apiservices", False, None, ["api-extensions"]),
        ("/apis/storage.k8s.io/v1", "storageclasses", False, ["sc"], None),
    ],
)
def test_discovery_lists_each_kind_with_its_scope_short_names_and_categories(
    path: str, name: str, namespaced: bool, short: list[str] | None, categories: list[str] | None
) -> None:
    with fakes.kube.serve(controllers=False) as kd:
        entry = _resources(kd, path)[name]
    assert entry["namespaced"] is namespaced
    assert entry.get("shortNames") == short
    assert entry.get("categories") == categories


def test_group_versions_follow_the_reported_version() -> None:
    """flowcontrol is v1 from 1.29 (v1beta3 before); ServiceCIDR and IPAddress are GA from 1.33; beta groups off."""
    served: dict[str, set[str]] = {}
    for version in ("v1.27.16", "v1.32.4", "v1.33.1"):
        with fakes.kube.serve(kubectl_version=version, controllers=False) as kd:
            groups = httpx.get(kd.url + "/apis", headers={"Accept": "application/json"}, timeout=10.0).json()
            served[version] = {v["groupVersion"] for g in groups["groups"] for v in g["versions"]}
            networking = _resources(kd, "/apis/networking.k8s.io/v1")
            assert ("servicecidrs" in networking) is (version == "v1.33.1")
    assert "flowcontrol.apiserver.k8s.io/v1beta3" in served["v1.27.16"]
    assert "flowcontrol.apiserver.k8s.io/v1" not in served["v1.27.16"]
    assert "flowcontrol.apiserver.k8s.io/v1" in served["v1.32.4"]
    assert not any("alpha" in gv or "beta" in gv for gv in served["v1.32.4"])


# --- the node and what the controller manager puts in every namespace ------------------------------------------


def test_the_kubelets_node_and_lease(api: tuple[KubeHandle, kube_client.ApiClient]) -> None:
    kd, client = api
    core: Any = kube_client.CoreV1Api(client)
    node: Any = eventually(lambda: core.list_node().items, what="the node").pop()
    assert node.metadata.name == "fake-node"
    conditions = {c.type: (c.status, c.reason) for c in node.status.conditions}
    assert conditions == {
        "MemoryPressure": ("False", "KubeletHasSufficientMemory"),
        "DiskPressure": ("False", "KubeletHasNoDiskPressure"),
        "PIDPressure": ("False", "KubeletHasSufficientPID"),
        "Ready": ("True", "KubeletReady"),
    }
    assert {"cpu", "memory", "pods", "ephemeral-storage"} <= set(node.status.allocatable)
    assert node.status.capacity == node.status.allocatable
    assert node.status.node_info.kubelet_version == kd.git_version
    assert node.metadata.labels["kubernetes.io/hostname"] == "fake-node"
    leases: Any = kube_client.CoordinationV1Api(client)
    lease = eventually(lambda: leases.list_namespaced_lease("kube-node-lease").items, what="lease")[0]
    assert lease.spec.holder_identity == "fake-node"
    core.create_namespaced_pod(
        "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "registry.local/c"}]}}
    )
    eventually(lambda: core.read_namespaced_pod("p", "default").spec.node_name == "fake-node", what="bound")


def test_the_node_and_its_pods_report_a_loopback_address(api: tuple[KubeHandle, kube_client.ApiClient]) -> None:
    """No address of a cluster tool's own network (minikube's 192.168.49.2 once): loopback, as kwok's nodes on the
    real control plane report."""
    kd, client = api
    core: Any = kube_client.CoreV1Api(client)
    node: Any = eventually(lambda: core.list_node().items, what="the node").pop()
    addresses = {a.type: a.address for a in node.status.addresses}
    assert addresses == {"InternalIP": "127.0.0.1", "Hostname": "fake-node"}
    core.create_namespaced_pod(
        "default",
        {"metadata": {"name": "hosted"}, "spec": {"containers": [{"name": "c", "image": "registry.local/c"}]}},
    )

    def placed() -> Any:
        status = core.read_namespaced_pod("hosted", "default").status
        return status if status.host_ip else None

    status = eventually(placed, what="the pod's host IP")
    assert (status.host_ip, [h.ip for h in status.host_ips or []]) == ("127.0.0.1", ["127.0.0.1"])


def test_every_namespace_gets_the_default_service_account_and_the_root_ca(
    api: tuple[KubeHandle, kube_client.ApiClient],
) -> None:
    kd, client = api
    core: Any = kube_client.CoreV1Api(client)
    core.create_namespace({"metadata": {"name": "team-a"}})
    account = eventually(lambda: _maybe(lambda: core.read_namespaced_service_account("default", "team-a")), what="sa")
    root = eventually(lambda: _maybe(lambda: core.read_namespaced_config_map("kube-root-ca.crt", "team-a")), what="ca")
    certificate = x509.load_pem_x509_certificate(root.data["ca.crt"].encode())
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert root.metadata.annotations["kubernetes.io/description"].startswith("Contains a CA bundle")
    assert not account.secrets  # no token Secrets since 1.24
    core.delete_namespaced_service_account("default", "team-a")
    again = eventually(lambda: _maybe(lambda: core.read_namespaced_service_account("default", "team-a")), what="back")
    assert again.metadata.uid != account.metadata.uid
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
        eventually(partial(kd.store.get, "serviceaccounts", namespace, "default"), what=f"default in {namespace}")


def test_the_root_ca_is_the_serving_ca_over_https() -> None:
    with fakes.kube.serve(tls=True) as kd:
        published = eventually(
            lambda: kd.store.get("configmaps", "default", "kube-root-ca.crt"), what="kube-root-ca.crt"
        )
        assert published["data"]["ca.crt"].encode() == kd.double.ca_pem


def apps(client: kube_client.ApiClient) -> Any:
    return kube_client.AppsV1Api(client)


def _maybe(read: Any) -> Any:
    try:
        return read()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


# --- PDB and HPA: validated, status from what the double can know ------------------------------------------------


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.local/app:1"}]},
            },
        },
    }


def test_a_pdb_counts_the_healthy_pods_it_selects(api: tuple[KubeHandle, kube_client.ApiClient]) -> None:
    kd, client = api
    apps(client).create_namespaced_deployment("default", _deployment("web", 3))
    policy: Any = kube_client.PolicyV1Api(client)
    policy.create_namespaced_pod_disruption_budget(
        "default",
        {"metadata": {"name": "web"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}},
    )
    status = eventually(
        lambda: (
            (kd.store.require("poddisruptionbudgets", "default", "web").get("status") or {}).get("currentHealthy") == 3
            and kd.store.require("poddisruptionbudgets", "default", "web")["status"]
        ),
        what="3 healthy pods",
    )
    assert (status["desiredHealthy"], status["disruptionsAllowed"], status["expectedPods"]) == (2, 1, 3)
    allowed = condition({"status": status}, "DisruptionAllowed")
    assert allowed is not None
    assert (allowed["status"], allowed["reason"]) == ("True", "SufficientPods")
    with pytest.raises(ApiException) as refused:
        policy.create_namespaced_pod_disruption_budget(
            "default",
            {
                "metadata": {"name": "both"},
                "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            },
        )
    assert refused.value.status == 422
    body = json.loads(str(refused.value.body))
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 1: minAvailable and maxUnavailable cannot be both set",
        "field": "spec.minAvailable",
    }


def test_an_hpa_with_max_below_min_is_refused_and_a_valid_one_says_it_has_no_metrics(
    api: tuple[KubeHandle, kube_client.ApiClient],
) -> None:
    kd, client = api
    apps(client).create_namespaced_deployment("default", _deployment("api", 2))
    autoscaling: Any = kube_client.AutoscalingV2Api(client)

    def hpa(name: str, low: int, high: int) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                "minReplicas": low,
                "maxReplicas": high,
            },
        }

    with pytest.raises(ApiException) as refused:
        autoscaling.create_namespaced_horizontal_pod_autoscaler("default", hpa("bad", 3, 2))
    assert refused.value.status == 422
    assert "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`" in str(
        refused.value.body
    )
    autoscaling.create_namespaced_horizontal_pod_autoscaler("default", hpa("api", 1, 5))
    stored = eventually(
        lambda: condition(kd.store.require("horizontalpodautoscalers", "default", "api"), "ScalingActive"),
        what="ScalingActive",
    )
    assert (stored["status"], stored["reason"]) == ("False", "FailedGetResourceMetric")
    read: Any = autoscaling.read_namespaced_horizontal_pod_autoscaler("api", "default")
    assert read.status.current_replicas == 2
    assert read.status.current_metrics is None
    assert [m.resource.target.average_utilization for m in read.spec.metrics] == [80]  # v2's default metric


def test_a_replication_controller_keeps_its_pods_and_scales(api: tuple[KubeHandle, kube_client.ApiClient]) -> None:
    kd, _ = api
    manifest = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "app", "image": "registry.local/legacy:1"}]},
            },
        },
    }
    done = kd.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    assert done.returncode == 0, done.stderr
    stored = kd.store.require("replicationcontrollers", "default", "legacy")
    assert stored["spec"]["selector"] == {"app": "legacy"}  # defaulted from the template's labels
    eventually(
        lambda: (
            (kd.store.require("replicationcontrollers", "default", "legacy").get("status") or {}).get("readyReplicas")
            == 2
        ),
        what="2 ready",
    )
    assert _rows(kd.kubectl("get", "rc", "legacy").stdout)[1][:4] == ["legacy", "2", "2", "2"]
    assert kd.kubectl("scale", "rc", "legacy", "--replicas=1").returncode == 0
    eventually(
        lambda: (
            len([p for p in kd.store.list("pods", "default")[0] if not p["metadata"].get("deletionTimestamp")]) == 1
        ),
        what="scaled to 1",
    )
