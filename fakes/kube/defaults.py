"""Defaults a real API server fills in on create and update (the ``SetDefaults_*`` functions of the core, apps and
batch API groups), limited to the fields kubectl, the kubernetes client and the double's controllers read.

Each function mutates the object in place. Unknown kinds are left alone. Sources: ``pkg/apis/core/v1/defaults.go``,
``pkg/apis/apps/v1/defaults.go``, ``pkg/apis/batch/v1/defaults.go`` in kubernetes/kubernetes.
"""

from __future__ import annotations

import base64
import ipaddress
import itertools
import secrets
from collections.abc import Callable
from typing import Any

from fakes.kube.conversion import hpa_defaults
from fakes.kube.errors import forbidden

Obj = dict[str, Any]


def pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and the container defaults: every PodSpec, a Pod's and each workload's template.
    ``enableServiceLinks`` is a Pod's alone (``SetDefaults_Pod``), so a template never shows it."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    # v1's deprecated ``serviceAccount`` mirrors ``serviceAccountName`` (the core v1 conversions, both ways)
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    for container in itertools.chain(spec.get("initContainers") or [], spec.get("containers") or []):
        if not isinstance(container, dict):
            continue
        image = str(container.get("image", ""))
        tag = image.rpartition("/")[2].partition("@")[0]
        latest = ":" not in tag or tag.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest and "@" not in image else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def nested_meta(holder: Obj) -> None:
    """A nested ObjectMeta (a template's) reads ``creationTimestamp: null``: Go's encoding/json never omits the
    ``metav1.Time`` struct and a zero Time marshals as ``null`` (apimachinery ``pkg/apis/meta/v1/time.go``)."""
    meta = holder.get("metadata")
    if meta is None:
        meta = holder["metadata"] = {}
    if isinstance(meta, dict):
        meta.setdefault("creationTimestamp", None)


def pod_template(template: Any) -> None:
    """A PodTemplateSpec: its metadata and its PodSpec's defaults."""
    if isinstance(template, dict):
        nested_meta(template)
        if isinstance(template.get("spec"), dict):
            pod_spec(template["spec"])


def _template(obj: Obj) -> None:
    pod_template((obj.get("spec") or {}).get("template"))


def deployment(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(obj)


def replicaset(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    _template(obj)


def statefulset(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    update = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    if update.get("type") == "RollingUpdate":
        update.setdefault("rollingUpdate", {"partition": 0})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    _template(obj)


def job(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    # pkg/apis/batch/v1/defaults.go (JobPodReplacementPolicy, on since 1.29): Failed with a podFailurePolicy
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)
    template = spec.setdefault("template", {})
    if isinstance(template.get("spec"), dict):
        template["spec"].setdefault("restartPolicy", "Never")
    _template(obj)


def job_selector(obj: Obj) -> None:
    """The Job's generated selector and template labels (``manualSelector`` unset), from its uid: what the Job
    strategy's ``PrepareForCreate`` does."""
    spec = obj.setdefault("spec", {})
    if spec.get("manualSelector") or spec.get("selector"):
        return
    uid, name = obj["metadata"].get("uid", ""), obj["metadata"].get("name", "")
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
    )


def cronjob(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        nested_meta(job_template)
        if isinstance(job_template.get("spec"), dict):
            pod_template(job_template["spec"].get("template"))


def podtemplate(obj: Obj) -> None:
    pod_template(obj.get("template"))


def service(obj: Obj, allocate_ip: Callable[[], str]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        if not spec.get("clusterIP"):
            spec["clusterIP"] = allocate_ip()
        if spec["clusterIP"] != "None":
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        else:
            spec.setdefault("clusterIPs", ["None"])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])


def namespace(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")
    labels = obj.setdefault("metadata", {}).setdefault("labels", {})
    labels.setdefault("kubernetes.io/metadata.name", obj["metadata"].get("name", ""))


def secret(obj: Obj) -> None:
    """``stringData`` is write-only: a real server base64-encodes it into ``data`` (its keys win) and never
    stores or returns it (the Secret API reference, "stringData")."""
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj["data"] if isinstance(obj.get("data"), dict) else {}
        data.update({k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()})
        obj["data"] = data


def pod_own_spec(spec: Obj) -> None:
    """A Pod's spec: the PodSpec defaults and ``SetDefaults_Pod``'s ``enableServiceLinks``."""
    pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)


def pod(obj: Obj) -> None:
    pod_own_spec(obj.setdefault("spec", {}))
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", "BestEffort")


def daemonset(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    update = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    if update.get("type") == "RollingUpdate":
        rolling = update.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(obj)


def replicationcontroller(obj: Obj) -> None:
    """An RC's selector and labels default to its template's labels (``SetDefaults_ReplicationController``)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if labels:
        spec.setdefault("selector", dict(labels))
        obj.setdefault("metadata", {}).setdefault("labels", dict(labels))
    _template(obj)


def persistentvolumeclaim(obj: Obj) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec`` (``pkg/apis/core/v1/defaults.go``)."""
    obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")


def csidriver(obj: Obj) -> None:
    """``SetDefaults_CSIDriver`` (``pkg/apis/storage/v1/defaults.go``; ``seLinuxMount`` under the
    SELinuxMountReadWriteOncePod gate, on by default since 1.28)."""
    spec = obj.setdefault("spec", {})
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("requiresRepublish", False),
        ("seLinuxMount", False),
    ):
        spec.setdefault(key, value)
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def storageclass(obj: Obj) -> None:
    """``SetDefaults_StorageClass`` (``pkg/apis/storage/v1/defaults.go``)."""
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def priorityclass(obj: Obj) -> None:
    """``SetDefaults_PriorityClass`` (``pkg/apis/scheduling/v1/defaults.go``)."""
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def networkpolicy(obj: Obj) -> None:
    """``SetDefaults_NetworkPolicy`` (``pkg/apis/networking/v1/defaults.go``): no ``policyTypes`` means Ingress,
    and Egress too when it has egress rules."""
    spec = obj.setdefault("spec", {})
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def validatingadmissionpolicy(obj: Obj) -> None:
    """``SetDefaults_ValidatingAdmissionPolicySpec``, ``SetDefaults_MatchResources`` and ``SetDefaults_Rule``
    (``pkg/apis/admissionregistration/v1/defaults.go``)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("failurePolicy", "Fail")
    match = spec.get("matchConstraints")
    if isinstance(match, dict):
        match.setdefault("matchPolicy", "Equivalent")
        match.setdefault("namespaceSelector", {})
        match.setdefault("objectSelector", {})
        for key in ("resourceRules", "excludeResourceRules"):
            for rule in match.get(key) or []:
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")


def persistentvolume(obj: Obj) -> None:
    """``SetDefaults_PersistentVolume`` (``pkg/apis/core/v1/defaults.go``); its status is the PV controller's.
    A ``hostPath`` source gets its empty ``type`` (``SetDefaults_HostPathVolumeSource``)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    if isinstance(spec.get("hostPath"), dict):
        spec["hostPath"].setdefault("type", "")


BY_KEY: dict[str, Callable[[Obj], None]] = {
    "storage.k8s.io/storageclasses": storageclass,
    "scheduling.k8s.io/priorityclasses": priorityclass,
    "networking.k8s.io/networkpolicies": networkpolicy,
    "admissionregistration.k8s.io/validatingadmissionpolicies": validatingadmissionpolicy,
    "/persistentvolumes": persistentvolume,
    "/persistentvolumeclaims": persistentvolumeclaim,
    "storage.k8s.io/csidrivers": csidriver,
    "/pods": pod,
    "/podtemplates": podtemplate,
    "/namespaces": namespace,
    "/secrets": secret,
    "apps/deployments": deployment,
    "apps/replicasets": replicaset,
    "apps/statefulsets": statefulset,
    "batch/jobs": job,
    "batch/cronjobs": cronjob,
    "autoscaling/horizontalpodautoscalers": hpa_defaults,
    "apps/daemonsets": daemonset,
    "/replicationcontrollers": replicationcontroller,
}


class ClusterIPs:
    """Hands out ClusterIPs from 10.96.0.0/12 in order (10.96.0.1 is the ``kubernetes`` Service's): kubeadm's default
    Service range, which kind and minikube share."""

    def __init__(self) -> None:
        self._net = ipaddress.ip_network("10.96.0.0/12")
        self._next = 10

    def allocate(self) -> str:
        self._next += 1
        return str(self._net.network_address + self._next)


def apply_defaults(resource_key: str, obj: Obj, ips: ClusterIPs) -> None:
    """Fill in what a real server defaults for ``resource_key`` (``"apps/deployments"``)."""
    status_defaults(resource_key, obj)
    if resource_key == "/pods":
        pod_admission(obj)
    if resource_key == "/services":
        service(obj, ips.allocate)
        return
    fill = BY_KEY.get(resource_key)
    if fill is not None:
        fill(obj)


#: The ``status`` a new object of each kind carries before any controller writes one: Go's encoding/json never omits
#: a struct, so the empty status struct is ``{}`` and its non-``omitempty`` fields are zeros (``k8s.io/api``
#: ``types.go``: ``ServiceStatus.LoadBalancer``, ``ReplicaSetStatus.Replicas``, ``StatefulSetStatus.Replicas`` and
#: ``AvailableReplicas``).
EMPTY_STATUS: dict[str, Obj] = {
    "/services": {"loadBalancer": {}},
    "apps/deployments": {},
    "apps/replicasets": {"replicas": 0},
    "apps/statefulsets": {"replicas": 0, "availableReplicas": 0},
    "batch/jobs": {},
    "batch/cronjobs": {},
    "/persistentvolumeclaims": {"phase": "Pending"},  # SetDefaults_PersistentVolumeClaim
    "networking.k8s.io/ingresses": {"loadBalancer": {}},
    "storage.k8s.io/volumeattachments": {"attached": False},
    "certificates.k8s.io/certificatesigningrequests": {},
}


def status_defaults(resource_key: str, obj: Obj) -> None:
    """Fill the status fields a real server always shows (see :data:`EMPTY_STATUS`); a status already written keeps
    its values."""
    empty = EMPTY_STATUS.get(resource_key)
    if empty is None:
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    for key, value in empty.items():
        status.setdefault(key, dict(value) if isinstance(value, dict) else value)


#: The tolerations the ``DefaultTolerationSeconds`` admission plugin (on by default) gives every pod.
DEFAULT_TOLERATIONS = tuple(
    {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for taint in ("not-ready", "unreachable")
)


def pod_admission(obj: Obj) -> None:
    """What kube-apiserver's default admission plugins add to a pod: ``Priority`` (no priority class: ``priority: 0``
    and ``preemptionPolicy: PreemptLowerPriority``) and ``DefaultTolerationSeconds`` (not-ready and unreachable
    nodes tolerated for 300 s unless the pod already tolerates them; ``plugin/pkg/admission/defaulttolerationseconds``
    in kubernetes/kubernetes)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("priorityClassName"):
        spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        return
    present = list(tolerations or [])
    for default in DEFAULT_TOLERATIONS:
        if not any(_tolerates(t, str(default["key"])) for t in present):
            present.append(dict(default))
    spec["tolerations"] = present


def _tolerates(toleration: Any, key: str) -> bool:
    if not isinstance(toleration, dict) or toleration.get("effect") not in (None, "", "NoExecute"):
        return False
    return toleration.get("key") in (None, "", key) and (
        toleration.get("key") or toleration.get("operator") == "Exists"
    )


#: The ServiceAccount admission plugin's names (``plugin/pkg/admission/serviceaccount/admission.go``).
DEFAULT_SERVICE_ACCOUNT = "default"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # names.SimpleNameGenerator's


def service_account_admission(obj: Obj, namespace: str, lookup: Callable[[str], Obj | None]) -> None:
    """The ServiceAccount admission plugin on a pod's create: ``serviceAccountName`` defaults to ``default``; a
    ServiceAccount that does not exist refuses the pod (403); unless the pod, else its ServiceAccount, says
    ``automountServiceAccountToken: false``, every container and init container without a mount at
    :data:`TOKEN_MOUNT_PATH` mounts the projected ``kube-api-access-<5 random>`` volume (``TokenVolumeSource``:
    a bound token, ``kube-root-ca.crt``'s ``ca.crt`` and the namespace). ``lookup(name)``: the ServiceAccount.
    ``default`` counts as present: the plugin waits for the controller that creates it in every namespace."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    name = str(spec.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT)
    spec["serviceAccountName"] = spec["serviceAccount"] = name
    account = lookup(name)
    if account is None and name != DEFAULT_SERVICE_ACCOUNT:
        pod_name = str((obj.get("metadata") or {}).get("name") or "")
        detail = f'error looking up service account {namespace}/{name}: serviceaccount "{name}" not found'
        raise forbidden("pods", "", pod_name, detail)
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = (account or {}).get("automountServiceAccountToken")
    if automount is False:
        return
    volumes: list[Any] = spec["volumes"] if isinstance(spec.get("volumes"), list) else []
    volume = next(
        (v["name"] for v in volumes if isinstance(v, dict) and str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)),
        None,
    )
    volume_name = volume or TOKEN_VOLUME_PREFIX + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
    needs_volume = False
    for container in itertools.chain(spec.get("initContainers") or [], spec.get("containers") or []):
        if not isinstance(container, dict):
            continue
        mounts: list[Any] = container["volumeMounts"] if isinstance(container.get("volumeMounts"), list) else []
        if not any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
            container["volumeMounts"] = [
                *mounts,
                {"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH},
            ]
            needs_volume = True
    if volume is None and needs_volume:
        spec["volumes"] = [*volumes, {"name": volume_name, "projected": token_volume_source()}]


def token_volume_source() -> Obj:
    """``serviceaccount.TokenVolumeSource``: the projected sources, their default mode set explicitly."""
    return {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                    ]
                }
            },
        ],
        "defaultMode": 420,
    }
