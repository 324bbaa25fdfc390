"""What the API server fills into an object on its way in, read back through the real kubectl 1.32 and 1.33, on the
double and on the real control plane (specs/targets.py): defaulting (``pkg/apis/core/v1/defaults.go`` and the
generated ``SetObjectDefaults_*`` that walk every nested PodSpec), each kind's registry strategy
(``pkg/registry/<group>/<kind>/strategy.go``), the ServiceAccount admission plugin
(``plugin/pkg/admission/serviceaccount/admission.go``) and the root CA publisher
(``pkg/controller/certificates/rootcacertpublisher``), all at v1.33.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from harness import Kube
from specs.kube.conftest import kubectl_build
from specs.targets import Target, double_with_kubectl

pytestmark = pytest.mark.timeout(180)
MINORS = (32, 33)
CONTAINER = {"name": "c", "image": "registry.local/app:1.0"}


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    """A double with its controllers: the ``default`` ServiceAccount and ``kube-root-ca.crt`` are theirs."""
    yield from double_with_kubectl()


@pytest.fixture(params=MINORS, ids=[f"kubectl-1.{m}" for m in MINORS])
def kubectl(request: pytest.FixtureRequest, target: Target) -> Kube:
    """The target's Kube running the real ``kubectl.1.<minor>``."""
    path = kubectl_build(request.param)
    if path is None:
        pytest.skip(f"no kubectl.1.{request.param} beside the kubectl on PATH")
    kube = copy.copy(target.kube)
    kube.kubectl_path = path
    return kube


def minor_of(kube: Kube) -> str:
    return kube.kubectl_path.rsplit(".", 1)[-1]


def apply(kube: Kube, obj: dict[str, Any]) -> dict[str, Any]:
    """``kubectl apply`` then ``kubectl get -o json``: the stored object as kubectl reads it back."""
    kube.kubectl("apply", "-f", "-", input=json.dumps(obj))
    kind = obj["kind"].lower() + ("." + obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else "")
    return dict(json.loads(kube.kubectl("get", kind, obj["metadata"]["name"], "-o", "json").stdout))


def template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"containers": [dict(CONTAINER)], **spec}}


def workloads(suffix: str) -> dict[str, tuple[dict[str, Any], tuple[str, ...]]]:
    """Each kind holding a pod template, and the path of that template in it."""
    labels = {"app": f"w-{suffix}"}
    selector = {"matchLabels": labels}
    job_spec = {"template": template({}, restartPolicy="Never")}
    return {
        "Deployment": (
            {"apiVersion": "apps/v1", "spec": {"selector": selector, "replicas": 0, "template": template(labels)}},
            ("spec", "template"),
        ),
        "ReplicaSet": (
            {"apiVersion": "apps/v1", "spec": {"selector": selector, "replicas": 0, "template": template(labels)}},
            ("spec", "template"),
        ),
        "StatefulSet": (
            {"apiVersion": "apps/v1", "spec": {"selector": selector, "replicas": 0, "template": template(labels)}},
            ("spec", "template"),
        ),
        "DaemonSet": (
            {"apiVersion": "apps/v1", "spec": {"selector": selector, "template": template(labels)}},
            ("spec", "template"),
        ),
        "Job": ({"apiVersion": "batch/v1", "spec": {"suspend": True, **job_spec}}, ("spec", "template")),
        "CronJob": (
            {
                "apiVersion": "batch/v1",
                "spec": {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": job_spec}},
            },
            ("spec", "jobTemplate", "spec", "template"),
        ),
        "PodTemplate": ({"apiVersion": "v1", "template": template(labels)}, ("template",)),
        "ReplicationController": (
            {"apiVersion": "v1", "spec": {"selector": labels, "replicas": 0, "template": template(labels)}},
            ("spec", "template"),
        ),
    }


def dig(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        obj = obj[key]
    return obj


def test_a_nested_object_meta_reads_a_null_creation_time(kubectl: Kube) -> None:
    """A template's ObjectMeta (a CronJob's jobTemplate's too) has a zero ``creationTimestamp``, which marshals as
    ``null``: ``metav1.Time`` is a struct encoding/json never omits (apimachinery ``pkg/apis/meta/v1/time.go``)."""
    suffix = minor_of(kubectl)
    for kind, (obj, path) in workloads(suffix).items():
        stored = apply(kubectl, {**obj, "kind": kind, "metadata": {"name": f"{kind.lower()}-{suffix}"}})
        metas = [dig(stored, path)["metadata"]]
        if kind == "CronJob":
            metas.append(stored["spec"]["jobTemplate"]["metadata"])
        for meta in metas:
            assert meta.get("creationTimestamp", "absent") is None, kind
        assert isinstance(stored["metadata"]["creationTimestamp"], str), kind


def test_a_pod_template_gets_the_podspec_defaults_and_only_a_pod_gets_service_links(kubectl: Kube) -> None:
    """Every nested PodSpec gets ``SetDefaults_PodSpec`` and the container defaults (the generated
    ``SetObjectDefaults_*`` walk a PodTemplate's and a CronJob's jobTemplate's too); ``enableServiceLinks`` is
    ``SetDefaults_Pod``'s, so a Pod shows it and a template does not."""
    suffix = minor_of(kubectl)
    for kind, (obj, path) in workloads(suffix).items():
        spec = dig(apply(kubectl, {**obj, "kind": kind, "metadata": {"name": f"{kind.lower()}-{suffix}"}}), path)[
            "spec"
        ]
        assert "enableServiceLinks" not in spec, kind
        assert (spec["dnsPolicy"], spec["schedulerName"], spec["securityContext"]) == (
            "ClusterFirst",
            "default-scheduler",
            {},
        ), kind
        assert spec["terminationGracePeriodSeconds"] == 30, kind
        assert spec["restartPolicy"] == ("Never" if kind in ("Job", "CronJob") else "Always"), kind
        container = spec["containers"][0]
        assert (container["imagePullPolicy"], container["terminationMessagePath"]) == (
            "IfNotPresent",
            "/dev/termination-log",
        ), kind
        assert container["terminationMessagePolicy"] == "File", kind
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{suffix}"}, "spec": {"containers": [CONTAINER]}}
    assert apply(kubectl, pod)["spec"]["enableServiceLinks"] is True


def test_generation_is_kept_on_the_kinds_whose_strategy_sets_it(kubectl: Kube) -> None:
    """``PrepareForCreate`` sets ``generation: 1`` on a Pod, a PodTemplate, a webhook configuration and a
    PriorityClass; a Pod's and a PodTemplate's ``PrepareForUpdate`` bump it when their spec (template) changes, a
    PriorityClass's never does; an HPA keeps none at v1.33 (``HPAGeneration`` came later). Strategies:
    ``pkg/registry/core/{pod,podtemplate}``, ``admissionregistration/*webhookconfiguration``,
    ``scheduling/priorityclass``, ``autoscaling/horizontalpodautoscaler``."""
    suffix = f"{minor_of(kubectl)}-{uuid.uuid4().hex[:6]}"
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"g-{suffix}"},
        "spec": {"containers": [CONTAINER]},
    }
    assert apply(kubectl, pod)["metadata"]["generation"] == 1
    pod["spec"]["activeDeadlineSeconds"] = 600
    assert apply(kubectl, pod)["metadata"]["generation"] == 2
    held: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": f"t-{suffix}"},
        "template": template({}),
    }
    assert apply(kubectl, held)["metadata"]["generation"] == 1
    held["template"]["spec"]["activeDeadlineSeconds"] = 600
    assert apply(kubectl, held)["metadata"]["generation"] == 2
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"h-{suffix}"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 2},
    }
    assert "generation" not in apply(kubectl, hpa)["metadata"]
    cluster_scoped = [f"priorityclass.scheduling.k8s.io/pc-{suffix}"]
    try:
        priority = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"pc-{suffix}"},
            "value": 10,
        }
        assert apply(kubectl, priority)["metadata"]["generation"] == 1
        priority["description"] = "changed"
        assert apply(kubectl, priority)["metadata"]["generation"] == 1
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            name = f"{kind.lower()}-{suffix}"
            cluster_scoped.append(f"{kind.lower()}.admissionregistration.k8s.io/{name}")
            config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}}
            assert apply(kubectl, config)["metadata"]["generation"] == 1, kind
    finally:
        kubectl.kubectl("delete", "--ignore-not-found", "--wait=false", *cluster_scoped)


def test_service_account_admission_mounts_the_token_volume_in_every_container(kubectl: Kube) -> None:
    """A pod naming no ServiceAccount runs as ``default`` and gets the projected ``kube-api-access-<5 random>``
    volume (a bound token, ``kube-root-ca.crt``'s ``ca.crt``, the namespace), mounted read-only at
    /var/run/secrets/kubernetes.io/serviceaccount in each container and init container."""
    suffix = minor_of(kubectl)
    containers = [dict(CONTAINER), {**CONTAINER, "name": "d"}]
    spec = {"initContainers": [{**CONTAINER, "name": "i"}], "containers": containers}
    pod = apply(kubectl, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"sa-{suffix}"}, "spec": spec})
    assert (pod["spec"]["serviceAccountName"], pod["spec"]["serviceAccount"]) == ("default", "default")
    [volume] = pod["spec"]["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {
                "downwardAPI": {
                    "items": [
                        {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}
                    ]
                }
            },
        ],
    }
    mount = {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": volume["name"], "readOnly": True}
    for container in pod["spec"]["initContainers"] + pod["spec"]["containers"]:
        assert container["volumeMounts"] == [mount], container["name"]


def test_service_account_admission_refuses_a_missing_account_and_honours_automount_false(kubectl: Kube) -> None:
    """A pod naming a ServiceAccount that does not exist is refused (403, the plugin's message); with
    ``automountServiceAccountToken: false`` it gets no token volume and no mount."""
    suffix = minor_of(kubectl)
    missing = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"nosa-{suffix}"},
        "spec": {"serviceAccountName": "nobody", "containers": [CONTAINER]},
    }
    refused = kubectl.kubectl("create", "-f", "-", input=json.dumps(missing), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): error when creating "STDIN": pods "nosa-{suffix}" is forbidden: error '
        f'looking up service account {kubectl.namespace}/nobody: serviceaccount "nobody" not found'
    )
    off = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"nomount-{suffix}"},
        "spec": {"automountServiceAccountToken": False, "containers": [CONTAINER]},
    }
    pod = apply(kubectl, off)
    assert pod["spec"]["serviceAccountName"] == "default"
    assert "volumes" not in pod["spec"]
    assert "volumeMounts" not in pod["spec"]["containers"][0]


def test_jobs_volumes_and_csi_drivers_get_their_kinds_defaults(kubectl: Kube) -> None:
    # pkg/apis/batch/v1/defaults.go, pkg/apis/core/v1/defaults.go and pkg/apis/storage/v1/defaults.go at v1.33
    suffix = f"{minor_of(kubectl)}-{uuid.uuid4().hex[:6]}"
    pod = template({}, restartPolicy="Never")
    plain = apply(
        kubectl, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plain"}, "spec": {"template": pod}}
    )
    assert (plain["spec"]["podReplacementPolicy"], plain["spec"]["manualSelector"]) == ("TerminatingOrFailed", False)
    rules = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    guarded = apply(
        kubectl,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "guarded"},
            "spec": {"template": pod, "podFailurePolicy": rules},
        },
    )
    assert guarded["spec"]["podReplacementPolicy"] == "Failed"
    claim = apply(
        kubectl,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    assert (claim["spec"]["volumeMode"], claim["status"]["phase"]) == ("Filesystem", "Pending")
    volume_name, driver_name = f"pv-{suffix}", f"driver-{suffix}.example.com"
    volume_spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}}
    made = [  # cluster-scoped: they outlive the namespace, so they are deleted here
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume_name}, "spec": volume_spec},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver_name}, "spec": {}},
    ]
    try:
        volume, driver = apply(kubectl, made[0]), apply(kubectl, made[1])
        assert volume["spec"]["volumeMode"] == "Filesystem"
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert driver["spec"] == {
            "attachRequired": True,
            "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "podInfoOnMount": False,
            "requiresRepublish": False,
            "seLinuxMount": False,
            "storageCapacity": False,
            "volumeLifecycleModes": ["Persistent"],
        }
    finally:  # through the kubernetes client: what kubectl sends is the corpus's to cover, not a clean-up's
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=kubectl.kubeconfig, context=kubectl.context)
        with contextlib.suppress(client.ApiException):
            client.CoreV1Api(api).delete_persistent_volume(volume_name, _preload_content=False)
        with contextlib.suppress(client.ApiException):
            client.StorageV1Api(api).delete_csi_driver(driver_name, _preload_content=False)


def test_storage_scheduling_network_and_policy_kinds_get_their_defaults(kubectl: Kube) -> None:
    # pkg/apis/{storage,scheduling,networking,admissionregistration}/v1/defaults.go at v1.33; Ingress's status is
    # Go's never-omitted struct
    suffix = f"{minor_of(kubectl)}-{uuid.uuid4().hex[:6]}"
    policy = apply(
        kubectl,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "deny"},
            "spec": {"podSelector": {}},
        },
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rule = {"ports": [{"port": 53, "protocol": "UDP"}]}
    outward = apply(
        kubectl,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "dns"},
            "spec": {"podSelector": {}, "egress": [rule]},
        },
    )
    assert outward["spec"]["policyTypes"] == ["Ingress", "Egress"]
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    ingress = apply(
        kubectl,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "web"},
            "spec": {"defaultBackend": backend},
        },
    )
    assert ingress["status"] == {"loadBalancer": {}}
    names = {
        kind: f"{kind.lower()}-{suffix}" for kind in ("StorageClass", "PriorityClass", "ValidatingAdmissionPolicy")
    }
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]
    made: list[dict[str, Any]] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": names["StorageClass"]},
            "provisioner": "example.com/none",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": names["PriorityClass"]},
            "value": 1000,
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": names["ValidatingAdmissionPolicy"]},
            "spec": {"matchConstraints": {"resourceRules": rules}, "validations": [{"expression": "true"}]},
        },
    ]
    try:
        storage, priority, admission = (apply(kubectl, obj) for obj in made)
        assert (storage["reclaimPolicy"], storage["volumeBindingMode"]) == ("Delete", "Immediate")
        assert priority["preemptionPolicy"] == "PreemptLowerPriority"
        assert admission["spec"]["failurePolicy"] == "Fail"
        match = admission["spec"]["matchConstraints"]
        assert (match["matchPolicy"], match["namespaceSelector"], match["objectSelector"]) == ("Equivalent", {}, {})
        assert match["resourceRules"][0]["scope"] == "*"
    finally:  # cluster-scoped: through the kubernetes client, as above
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=kubectl.kubeconfig, context=kubectl.context)
        for delete, name in (
            (client.StorageV1Api(api).delete_storage_class, names["StorageClass"]),
            (client.SchedulingV1Api(api).delete_priority_class, names["PriorityClass"]),
            (
                client.AdmissionregistrationV1Api(api).delete_validating_admission_policy,
                names["ValidatingAdmissionPolicy"],
            ),
        ):
            with contextlib.suppress(client.ApiException):
                delete(name, _preload_content=False)
