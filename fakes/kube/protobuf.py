"""Reading the protobuf request bodies kubectl sends for built-in kinds (``application/vnd.kubernetes.protobuf``).

kubectl 1.32 and later send ``kubectl create namespace|configmap|secret|serviceaccount|deployment|service|job|
cronjob|token`` as protobuf (their typed clients prefer it); everything else kubectl sends is JSON. A body is the
4-byte magic ``k8s\\0`` and a ``runtime.Unknown`` message (``typeMeta`` = 1, ``raw`` = 2, ``contentEncoding`` = 3,
``contentType`` = 4) whose ``raw`` is the object's message as generated from the Go types (``k8s.io/api``
``generated.proto``). :func:`decode` turns it into the JSON-shaped dict the rest of the double handles.

The schema below names the fields of the messages those commands send, by field number (the wire format of the
Kubernetes API, verified against bodies captured from kubectl 1.32). Go writes every non-pointer scalar, zero or
not, so zero values are dropped unless the field is a pointer (``!`` in the schema: ``replicas: 0`` is meaningful);
an empty ``Time`` is dropped (JSON ``null``); other empty messages stay ``{}``. A field the schema does not name is
skipped when it holds a zero value and refused otherwise (415, naming the message and field number), so a body the
double cannot read whole is never stored half-read. Responses are always JSON, which kubectl accepts.
"""

from __future__ import annotations

import base64
from typing import Any

from fakes.kube.clock import rfc3339
from fakes.kube.errors import ApiError, bad_request

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# Field specs: "name" (string), or "name:TYPE" with TYPE one of s (string), i (varint integer), b (bool),
# y (bytes, base64 in JSON), map (map<string,string>), ymap (map<string,bytes>), qmap (map<string,Quantity>),
# or a message name (Time, IntOrString and Quantity become strings or numbers as in JSON); a leading "[" makes it
# repeated, a trailing "!" keeps zero values.
_META = {
    1: "name",
    2: "generateName",
    3: "namespace",
    4: "selfLink",
    5: "uid",
    6: "resourceVersion",
    7: "generation:i",
    8: "creationTimestamp:Time",
    9: "deletionTimestamp:Time",
    10: "deletionGracePeriodSeconds:i!",
    11: "labels:map",
    12: "annotations:map",
    13: "ownerReferences:[OwnerReference",
    14: "finalizers:[s",
}
SCHEMA: dict[str, dict[int, str]] = {
    "Unknown": {1: "typeMeta:TypeMeta", 2: "raw:y", 3: "contentEncoding", 4: "contentType"},
    "TypeMeta": {1: "apiVersion", 2: "kind"},
    "ObjectMeta": _META,
    "Time": {1: "seconds:i", 2: "nanos:i"},
    "OwnerReference": {1: "kind", 3: "name", 4: "uid", 5: "apiVersion", 6: "controller:b!", 7: "blockOwnerDeletion:b!"},
    "LabelSelector": {1: "matchLabels:map", 2: "matchExpressions:[LabelSelectorRequirement"},
    "LabelSelectorRequirement": {1: "key", 2: "operator", 3: "values:[s"},
    "ObjectReference": {
        1: "kind",
        2: "namespace",
        3: "name",
        4: "uid",
        5: "apiVersion",
        6: "resourceVersion",
        7: "fieldPath",
    },
    "LocalObjectReference": {1: "name"},
    "Namespace": {1: "metadata:ObjectMeta", 2: "spec:NamespaceSpec", 3: "status:NamespaceStatus"},
    "NamespaceSpec": {1: "finalizers:[s"},
    "NamespaceStatus": {1: "phase"},
    "ConfigMap": {1: "metadata:ObjectMeta", 2: "data:map", 3: "binaryData:ymap", 4: "immutable:b!"},
    "Secret": {1: "metadata:ObjectMeta", 2: "data:ymap", 3: "type", 4: "stringData:map", 5: "immutable:b!"},
    "ServiceAccount": {
        1: "metadata:ObjectMeta",
        2: "secrets:[ObjectReference",
        3: "imagePullSecrets:[LocalObjectReference",
        4: "automountServiceAccountToken:b!",
    },
    "Service": {1: "metadata:ObjectMeta", 2: "spec:ServiceSpec", 3: "status:ServiceStatus"},
    "ServiceSpec": {
        1: "ports:[ServicePort",
        2: "selector:map",
        3: "clusterIP",
        4: "type",
        5: "externalIPs:[s",
        7: "sessionAffinity",
        8: "loadBalancerIP",
        10: "externalName",
        11: "externalTrafficPolicy",
        12: "healthCheckNodePort:i",
        13: "publishNotReadyAddresses:b",
    },
    "ServicePort": {
        1: "name",
        2: "protocol",
        3: "port:i!",
        4: "targetPort:IntOrString",
        5: "nodePort:i",
        6: "appProtocol",
    },
    "ServiceStatus": {1: "loadBalancer:LoadBalancerStatus"},
    "LoadBalancerStatus": {},
    "IntOrString": {1: "type:i", 2: "intVal:i", 3: "strVal"},
    "Quantity": {1: "string"},
    "Deployment": {1: "metadata:ObjectMeta", 2: "spec:DeploymentSpec", 3: "status:DeploymentStatus"},
    "DeploymentSpec": {
        1: "replicas:i!",
        2: "selector:LabelSelector",
        3: "template:PodTemplateSpec",
        4: "strategy:DeploymentStrategy",
        5: "minReadySeconds:i",
        6: "revisionHistoryLimit:i!",
        7: "paused:b",
        9: "progressDeadlineSeconds:i!",
    },
    "DeploymentStrategy": {1: "type", 2: "rollingUpdate:RollingUpdateDeployment"},
    "RollingUpdateDeployment": {1: "maxUnavailable:IntOrString", 2: "maxSurge:IntOrString"},
    "DeploymentStatus": {
        1: "observedGeneration:i",
        2: "replicas:i",
        3: "updatedReplicas:i",
        4: "availableReplicas:i",
        5: "unavailableReplicas:i",
        7: "readyReplicas:i",
        8: "collisionCount:i",
    },
    "PodTemplateSpec": {1: "metadata:ObjectMeta", 2: "spec:PodSpec"},
    "PodSpec": {
        2: "containers:[Container",
        3: "restartPolicy",
        4: "terminationGracePeriodSeconds:i!",
        5: "activeDeadlineSeconds:i!",
        6: "dnsPolicy",
        7: "nodeSelector:map",
        8: "serviceAccountName",
        9: "serviceAccount",
        10: "nodeName",
        11: "hostNetwork:b",
        12: "hostPID:b",
        13: "hostIPC:b",
        15: "imagePullSecrets:[LocalObjectReference",
        16: "hostname",
        17: "subdomain",
        19: "schedulerName",
        20: "initContainers:[Container",
        24: "priorityClassName",
    },
    "Container": {
        1: "name",
        2: "image",
        3: "command:[s",
        4: "args:[s",
        5: "workingDir",
        6: "ports:[ContainerPort",
        7: "env:[EnvVar",
        8: "resources:ResourceRequirements",
        13: "terminationMessagePath",
        14: "imagePullPolicy",
        16: "stdin:b",
        17: "stdinOnce:b",
        18: "tty:b",
        20: "terminationMessagePolicy",
    },
    "ContainerPort": {1: "name", 2: "hostPort:i", 3: "containerPort:i!", 4: "protocol", 5: "hostIP"},
    "EnvVar": {1: "name", 2: "value"},
    "ResourceRequirements": {1: "limits:qmap", 2: "requests:qmap"},
    "Job": {1: "metadata:ObjectMeta", 2: "spec:JobSpec", 3: "status:JobStatus"},
    "JobSpec": {
        1: "parallelism:i!",
        2: "completions:i!",
        3: "activeDeadlineSeconds:i!",
        4: "selector:LabelSelector",
        5: "manualSelector:b!",
        6: "template:PodTemplateSpec",
        7: "backoffLimit:i!",
        8: "ttlSecondsAfterFinished:i!",
        9: "completionMode",
        10: "suspend:b!",
    },
    "JobStatus": {
        2: "startTime:Time",
        3: "completionTime:Time",
        4: "active:i",
        5: "succeeded:i",
        6: "failed:i",
        7: "completedIndexes",
    },
    "CronJob": {1: "metadata:ObjectMeta", 2: "spec:CronJobSpec", 3: "status:CronJobStatus"},
    "CronJobSpec": {
        1: "schedule",
        2: "startingDeadlineSeconds:i!",
        3: "concurrencyPolicy",
        4: "suspend:b!",
        5: "jobTemplate:JobTemplateSpec",
        6: "successfulJobsHistoryLimit:i!",
        7: "failedJobsHistoryLimit:i!",
        8: "timeZone",
    },
    "JobTemplateSpec": {1: "metadata:ObjectMeta", 2: "spec:JobSpec"},
    "CronJobStatus": {4: "lastScheduleTime:Time", 5: "lastSuccessfulTime:Time"},
    "TokenRequest": {1: "metadata:ObjectMeta", 2: "spec:TokenRequestSpec", 3: "status:TokenRequestStatus"},
    "TokenRequestSpec": {1: "audiences:[s", 4: "expirationSeconds:i!"},
    "TokenRequestStatus": {1: "token", 2: "expirationTimestamp:Time"},
    # autoscaling/v1 (``kubectl autoscale``), k8s.io/api autoscaling/v1 generated.proto.
    "HorizontalPodAutoscaler": {
        1: "metadata:ObjectMeta",
        2: "spec:HorizontalPodAutoscalerSpec",
        3: "status:HorizontalPodAutoscalerStatus",
    },
    "HorizontalPodAutoscalerSpec": {
        1: "scaleTargetRef:CrossVersionObjectReference",
        2: "minReplicas:i!",
        3: "maxReplicas:i!",
        4: "targetCPUUtilizationPercentage:i!",
    },
    "CrossVersionObjectReference": {1: "kind", 2: "name", 3: "apiVersion"},
    "HorizontalPodAutoscalerStatus": {
        1: "observedGeneration:i!",
        2: "lastScaleTime:Time",
        3: "currentReplicas:i!",
        4: "desiredReplicas:i!",
        5: "currentCPUUtilizationPercentage:i!",
    },
}
#: The top-level message for each ``apiVersion``/``kind`` the double reads as protobuf.
KINDS = {
    ("autoscaling/v1", "HorizontalPodAutoscaler"),
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("authentication.k8s.io/v1", "TokenRequest"),
}


def _unreadable(detail: str) -> ApiError:
    return bad_request(f"the body of the request could not be decoded as protobuf: {detail}")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _unreadable("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _unreadable("varint longer than 10 bytes")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """``(field number, wire type, value)`` triples: ints for varints, bytes for length-delimited fields."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _unreadable("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, 0, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise _unreadable("length-delimited field runs past the end of its message")
            out.append((number, 2, data[pos : pos + size]))
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise _unreadable(f"wire type {wire} is not used by Kubernetes messages")
    if pos > len(data):
        raise _unreadable("fixed-size field runs past the end of its message")
    return out


def _spec(text: str) -> tuple[str, str, bool, bool]:
    name, _, kind = text.partition(":")
    kind = kind or "s"
    repeated = kind.startswith("[")
    keep_zero = kind.endswith("!")
    return name, kind.strip("[!"), repeated, keep_zero


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, raw: Any, where: str) -> Any:
    if kind in ("i", "b"):
        if wire != 0:
            raise _unreadable(f"{where}: expected a varint")
        return _signed(raw) if kind == "i" else bool(raw)
    if wire != 2:
        raise _unreadable(f"{where}: expected a length-delimited field")
    if kind == "y":
        return base64.b64encode(raw).decode()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _unreadable(f"{where}: string is not UTF-8") from None


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False) or value is None


def _message(name: str, data: bytes, depth: int = 0) -> Any:
    if depth > 40:
        raise _unreadable("messages nested too deeply")
    schema = SCHEMA[name]
    if name == "Time":
        fields = {n: v for n, _, v in _fields(data)}
        seconds = _signed(fields.get(1, 0))
        return rfc3339(seconds) if seconds else None
    if name == "Quantity":
        return _message_dict(schema, name, data, depth).get("string", "0")
    if name == "IntOrString":
        parts = _message_dict(schema, name, data, depth)
        return parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
    return _message_dict(schema, name, data, depth)


def _map_entry(kind: str, data: bytes, where: str) -> tuple[str, Any]:
    key, value = "", None
    for number, wire, raw in _fields(data):
        if number == 1:
            key = _scalar("s", wire, raw, where)
        elif number == 2:
            if kind == "qmap":
                value = _message("Quantity", raw)
            else:
                value = _scalar("y" if kind == "ymap" else "s", wire, raw, where)
    return key, "" if value is None else value


def _message_dict(schema: dict[int, str], name: str, data: bytes, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire, raw in _fields(data):
        where = f"{name} field {number}"
        text = schema.get(number)
        if text is None:
            if (wire == 0 and raw == 0) or (wire == 2 and raw == b""):
                continue  # a zero value Go always writes: nothing lost by skipping it
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the double cannot read protobuf field {number} of "
                f"{name}; send the object as JSON (kubectl: -o json | kubectl create -f -)",
            )
        field, kind, repeated, keep_zero = _spec(text)
        if kind in ("map", "ymap", "qmap"):
            key, value = _map_entry(kind, raw, where)
            out.setdefault(field, {})[key] = value
            continue
        if kind in SCHEMA:
            value = _message(kind, raw, depth + 1)
            if value is None:
                continue
        else:
            value = _scalar(kind, wire, raw, where)
            if _is_zero(value) and not keep_zero and not repeated:
                continue
        if repeated:
            out.setdefault(field, []).append(value)
        else:
            out[field] = value
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The object in a protobuf request body, JSON-shaped (``apiVersion`` and ``kind`` set).

    Raises :class:`ApiError`: 400 for a body that is not a Kubernetes protobuf envelope, 415 for a kind or field
    the double cannot read (the message says to send JSON instead).
    """
    if not body.startswith(MAGIC):
        raise _unreadable("missing the k8s\\0 prefix")
    envelope = _message("Unknown", body[len(MAGIC) :])
    meta = envelope.get("typeMeta") or {}
    api_version, kind = meta.get("apiVersion", ""), meta.get("kind", "")
    if (api_version, kind) not in KINDS:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the double cannot read {kind or 'an object'} "
            f"({api_version or 'no apiVersion'}) as protobuf; send it as JSON",
        )
    raw = base64.b64decode(envelope.get("raw", ""))
    obj = _message(kind, raw)
    return {"apiVersion": api_version, "kind": kind, **obj}
