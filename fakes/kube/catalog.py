"""The built-in types a default cluster serves besides the ones :mod:`fakes.kube.resources` started with.

What a kind or minikube cluster of the reported version lists in discovery with the apiserver's default
``--runtime-config``: every GA group-version and no beta or alpha one (beta APIs are off by default since 1.24,
``pkg/controlplane/apiserver/options`` and ``DefaultAPIResourceConfigSource`` in ``pkg/controlplane/instance.go``),
with the scopes, short names, categories and subresources the REST storage of each kind declares
(``pkg/registry/<group>/<kind>/storage/storage.go``: ``ShortNames()``, ``Categories()``, the ``Status``/``Scale``
stores). Version-dependent entries carry the minors that serve them: FlowSchema is ``flowcontrol.apiserver.k8s.io/v1``
from 1.29 (``v1beta3`` before), ValidatingAdmissionPolicy is GA from 1.30, IPAddress and ServiceCIDR from 1.33.

Left out on purpose, because the double cannot answer them as a server does: the review kinds that are never stored
(``tokenreviews``, ``selfsubjectreviews``, ``subjectaccessreviews`` and the other ``authorization.k8s.io`` reviews:
their answers are computed by authenticators and authorizers), ``bindings`` (a pod's ``binding`` subresource is
enough for clients), ``componentstatuses`` (a deprecated probe of etcd and the controller manager) and
``events.k8s.io/v1`` Events (the same objects as core Events in another shape; the double stores by group and
resource and does not convert between the two, and kubectl reads core Events).
"""

from __future__ import annotations

from fakes.kube.resource_types import ALL_VERBS, STATUS_VERBS, ResourceType, Subresource


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, STATUS_VERBS)


def _scale() -> Subresource:
    return Subresource("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")


def _type(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    *,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    status: bool = False,
    extra: tuple[Subresource, ...] = (),
    generation: bool = False,
    singular: str = "",
    minors: tuple[int, int] = (0, 999),
) -> ResourceType:
    subs = extra + ((_status(kind),) if status else ())
    return ResourceType(
        group,
        version,
        plural,
        kind,
        namespaced,
        singular=singular,
        short_names=short,
        categories=categories,
        verbs=ALL_VERBS,
        subresources=tuple(sorted(subs, key=lambda s: s.name)),
        has_generation=generation,
        minors=minors,
    )


_ALL = ("all",)
_EXT = ("api-extensions",)
_PROXY = Subresource("proxy", "NodeProxyOptions", ("create", "delete", "get", "patch", "update"))
_RBAC = "rbac.authorization.k8s.io"
_ADMISSION = "admissionregistration.k8s.io"
_FLOW = "flowcontrol.apiserver.k8s.io"
_NET = "networking.k8s.io"
_STORAGE = "storage.k8s.io"

CORE = (
    _type("", "v1", "limitranges", "LimitRange", True, short=("limits",)),
    _type("", "v1", "nodes", "Node", False, short=("no",), status=True, extra=(_PROXY,)),
    _type("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short=("pvc",), status=True),
    _type("", "v1", "persistentvolumes", "PersistentVolume", False, short=("pv",), status=True),
    _type("", "v1", "podtemplates", "PodTemplate", True, generation=True),
    _type(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        True,
        short=("rc",),
        categories=_ALL,
        status=True,
        extra=(_scale(),),
        generation=True,
    ),
    _type("", "v1", "resourcequotas", "ResourceQuota", True, short=("quota",), status=True),
)

GROUPS = (
    _type("apiregistration.k8s.io", "v1", "apiservices", "APIService", False, categories=_EXT, status=True),
    _type("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _type("apps", "v1", "daemonsets", "DaemonSet", True, short=("ds",), categories=_ALL, status=True, generation=True),
    _type(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        True,
        short=("hpa",),
        categories=_ALL,
        status=True,
    ),
    _type(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        True,
        short=("hpa",),
        categories=_ALL,
        status=True,
    ),
    _type(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        False,
        short=("csr",),
        status=True,
        extra=(Subresource("approval", "CertificateSigningRequest", STATUS_VERBS),),
    ),
    _type(_NET, "v1", "ingressclasses", "IngressClass", False, generation=True),
    _type(_NET, "v1", "ingresses", "Ingress", True, short=("ing",), status=True, generation=True),
    _type(_NET, "v1", "ipaddresses", "IPAddress", False, short=("ip",), minors=(33, 999)),
    _type(_NET, "v1", "networkpolicies", "NetworkPolicy", True, short=("netpol",), generation=True),
    _type(_NET, "v1", "servicecidrs", "ServiceCIDR", False, status=True, minors=(33, 999)),
    _type(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        short=("pdb",),
        status=True,
        generation=True,
    ),
    _type(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _type(_RBAC, "v1", "clusterroles", "ClusterRole", False),
    _type(_RBAC, "v1", "rolebindings", "RoleBinding", True),
    _type(_RBAC, "v1", "roles", "Role", True),
    _type(_STORAGE, "v1", "csidrivers", "CSIDriver", False),
    _type(_STORAGE, "v1", "csinodes", "CSINode", False),
    _type(_STORAGE, "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    _type(_STORAGE, "v1", "storageclasses", "StorageClass", False, short=("sc",)),
    _type(_STORAGE, "v1", "volumeattachments", "VolumeAttachment", False, status=True),
    _type(
        _ADMISSION,
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
        categories=_EXT,
        generation=True,
    ),
    _type(
        _ADMISSION,
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        False,
        categories=_EXT,
        status=True,
        generation=True,
        minors=(30, 999),
    ),
    _type(
        _ADMISSION,
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        False,
        categories=_EXT,
        generation=True,
        minors=(30, 999),
    ),
    _type(
        _ADMISSION,
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        categories=_EXT,
        generation=True,
    ),
    _type("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=("pc",), generation=True),
    _type("coordination.k8s.io", "v1", "leases", "Lease", True),
    _type("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    _type("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    *(
        _type(_FLOW, version, plural, kind, False, status=True, generation=True, minors=minors)
        for version, minors in (("v1", (29, 999)), ("v1beta3", (26, 28)), ("v1beta2", (23, 28)))
        for plural, kind in (
            ("flowschemas", "FlowSchema"),
            ("prioritylevelconfigurations", "PriorityLevelConfiguration"),
        )
    ),
)

#: Order of groups in ``/apis`` as the aggregator lists the built-in ones (by its group priority,
#: ``cmd/kube-apiserver/app/aggregator.go``); CRD groups follow, sorted.
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)
