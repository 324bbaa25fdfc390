"""Type checks that stand in for decoding a body into the API's Go structs.

A real server decodes every body into typed structs, so ``"spec": true`` on a Deployment or ``"replicas": "3"``
never reaches its logic: the decoder answers 400 (``json: cannot unmarshal bool into Go struct field
Deployment.spec of type v1.DeploymentSpec``). The double keeps objects as JSON, so it checks the fields it reads
against the shapes below before using them, with the same kind of 400. Fields not listed are kept as sent
(unchecked); custom resources get the metadata check only (their schemas are the CRD's business).
"""

from __future__ import annotations

from typing import Any

from fakes.kube.errors import ApiError

# A shape is a type name ("string", "int", "bool", "object", "any", "quantity", "int-or-string"), a dict of field
# shapes (an object), ("list", shape) or ("map", shape).
Shape = Any

_STR_MAP = ("map", "string")
META: dict[str, Shape] = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "uid": "string",
    "resourceVersion": "string",
    "generation": "int",
    "creationTimestamp": "any",
    "deletionTimestamp": "any",
    "deletionGracePeriodSeconds": "int",
    "labels": _STR_MAP,
    "annotations": _STR_MAP,
    "finalizers": ("list", "string"),
    "ownerReferences": (
        "list",
        {
            "apiVersion": "string",
            "kind": "string",
            "name": "string",
            "uid": "string",
            "controller": "bool",
            "blockOwnerDeletion": "bool",
        },
    ),
    "managedFields": ("list", "object"),
}
_SELECTOR: dict[str, Shape] = {
    "matchLabels": _STR_MAP,
    "matchExpressions": ("list", {"key": "string", "operator": "string", "values": ("list", "string")}),
}
_CONTAINER: dict[str, Shape] = {
    "name": "string",
    "image": "string",
    "command": ("list", "string"),
    "args": ("list", "string"),
    "ports": ("list", {"name": "string", "containerPort": "int", "protocol": "string", "hostPort": "int"}),
    "env": ("list", {"name": "string", "value": "string", "valueFrom": "object"}),
    "resources": "object",
    "imagePullPolicy": "string",
    "volumeMounts": ("list", "object"),
}
_POD_SPEC: dict[str, Shape] = {
    "containers": ("list", _CONTAINER),
    "initContainers": ("list", _CONTAINER),
    "restartPolicy": "string",
    "terminationGracePeriodSeconds": "int",
    "nodeName": "string",
    "serviceAccountName": "string",
    "volumes": ("list", {"name": "string"}),
    "readinessGates": ("list", {"conditionType": "string"}),
    "hostNetwork": "bool",
}
_CONDITIONS = ("list", {"type": "string", "status": "string", "reason": "string", "message": "string"})
_TEMPLATE: dict[str, Shape] = {"metadata": META, "spec": _POD_SPEC}
_WORKLOAD_STATUS: dict[str, Shape] = {
    "replicas": "int",
    "readyReplicas": "int",
    "availableReplicas": "int",
    "updatedReplicas": "int",
    "observedGeneration": "int",
    "conditions": _CONDITIONS,
}
_CONTAINER_STATUS = (
    "list",
    {"name": "string", "ready": "bool", "restartCount": "int", "state": "object", "lastState": "object"},
)

SHAPES: dict[str, dict[str, Shape]] = {
    "/pods": {
        "spec": _POD_SPEC,
        "status": {
            "phase": "string",
            "podIP": "string",
            "conditions": _CONDITIONS,
            "containerStatuses": _CONTAINER_STATUS,
            "initContainerStatuses": _CONTAINER_STATUS,
        },
    },
    "/services": {
        "spec": {
            "type": "string",
            "clusterIP": "string",
            "selector": _STR_MAP,
            "ports": (
                "list",
                {
                    "name": "string",
                    "port": "int",
                    "protocol": "string",
                    "targetPort": "int-or-string",
                    "nodePort": "int",
                },
            ),
            "externalIPs": ("list", "string"),
        },
        "status": "object",
    },
    "/endpoints": {
        "subsets": (
            "list",
            {"addresses": ("list", {"ip": "string"}), "ports": ("list", {"port": "int", "name": "string"})},
        )
    },
    "/configmaps": {"data": _STR_MAP, "binaryData": _STR_MAP, "immutable": "bool"},
    "/secrets": {"data": _STR_MAP, "stringData": _STR_MAP, "type": "string", "immutable": "bool"},
    "/serviceaccounts": {"secrets": ("list", "object"), "imagePullSecrets": ("list", "object")},
    "/namespaces": {"spec": {"finalizers": ("list", "string")}, "status": {"phase": "string"}},
    "/events": {
        "involvedObject": {
            "kind": "string",
            "name": "string",
            "namespace": "string",
            "uid": "string",
            "fieldPath": "string",
            "apiVersion": "string",
        },
        "reason": "string",
        "message": "string",
        "type": "string",
        "count": "int",
        "source": {"component": "string", "host": "string"},
        "firstTimestamp": "any",
        "lastTimestamp": "any",
        "eventTime": "any",
        "reportingComponent": "string",
    },
    "apps/deployments": {
        "spec": {
            "replicas": "int",
            "selector": _SELECTOR,
            "template": _TEMPLATE,
            "strategy": {
                "type": "string",
                "rollingUpdate": {"maxSurge": "int-or-string", "maxUnavailable": "int-or-string"},
            },
            "progressDeadlineSeconds": "int",
            "revisionHistoryLimit": "int",
            "minReadySeconds": "int",
            "paused": "bool",
        },
        "status": _WORKLOAD_STATUS,
    },
    "apps/replicasets": {
        "spec": {"replicas": "int", "selector": _SELECTOR, "template": _TEMPLATE},
        "status": _WORKLOAD_STATUS,
    },
    "apps/statefulsets": {
        "spec": {
            "replicas": "int",
            "selector": _SELECTOR,
            "template": _TEMPLATE,
            "serviceName": "string",
            "podManagementPolicy": "string",
            "updateStrategy": "object",
        },
        "status": _WORKLOAD_STATUS,
    },
    "batch/jobs": {
        "spec": {
            "parallelism": "int",
            "completions": "int",
            "backoffLimit": "int",
            "selector": _SELECTOR,
            "template": _TEMPLATE,
            "suspend": "bool",
            "manualSelector": "bool",
        },
        "status": {
            "active": "int",
            "succeeded": "int",
            "failed": "int",
            "conditions": _CONDITIONS,
            "startTime": "any",
            "completionTime": "any",
        },
    },
    "batch/cronjobs": {
        "spec": {
            "schedule": "string",
            "suspend": "bool",
            "timeZone": "string",
            "jobTemplate": {"metadata": META, "spec": {"template": _TEMPLATE, "selector": _SELECTOR}},
        },
        "status": {"active": ("list", "object"), "lastScheduleTime": "any"},
    },
    "apiextensions.k8s.io/customresourcedefinitions": {
        "spec": {
            "group": "string",
            "scope": "string",
            "names": {
                "plural": "string",
                "singular": "string",
                "kind": "string",
                "listKind": "string",
                "shortNames": ("list", "string"),
                "categories": ("list", "string"),
            },
            "versions": (
                "list",
                {
                    "name": "string",
                    "served": "bool",
                    "storage": "bool",
                    "subresources": {"status": "object", "scale": "object"},
                    "additionalPrinterColumns": (
                        "list",
                        {
                            "name": "string",
                            "type": "string",
                            "jsonPath": "string",
                            "description": "string",
                            "priority": "int",
                        },
                    ),
                    "schema": {"openAPIV3Schema": "object"},
                },
            ),
        },
        "status": "object",
    },
}

_GO_TYPES = {
    "string": "string",
    "int": "int64",
    "bool": "bool",
    "object": "object",
    "quantity": "Quantity",
    "int-or-string": "IntOrString",
}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fail(value: Any, path: str, expected: str) -> ApiError:
    return ApiError(
        400, "BadRequest", f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type {expected}"
    )


def check(value: Any, shape: Shape, path: str) -> None:
    """Raise a 400 :class:`ApiError` when ``value`` does not have ``shape`` (``None`` always passes: omitted)."""
    if value is None or shape == "any":
        return
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise _fail(value, path, "object")
        for name, inner in shape.items():
            if name in value:
                check(value[name], inner, f"{path}.{name}")
        return
    if isinstance(shape, tuple):
        kind, inner = shape
        if kind == "list":
            if not isinstance(value, list):
                raise _fail(value, path, "array")
            for i, item in enumerate(value):
                if item is None and inner != "any":
                    raise _fail(item, f"{path}[{i}]", "object")
                check(item, inner, f"{path}[{i}]")
        else:
            if not isinstance(value, dict):
                raise _fail(value, path, "map")
            for key, item in value.items():
                check(item, inner, f"{path}[{key}]")
        return
    ok = {
        "string": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "object": isinstance(value, dict),
        "int-or-string": isinstance(value, (int, str)) and not isinstance(value, bool),
        "quantity": isinstance(value, (int, float, str)) and not isinstance(value, bool),
    }[shape]
    if not ok:
        raise _fail(value, path, _GO_TYPES[shape])


def drop_nulls(value: Any) -> Any:
    """``value`` without ``null`` object members, recursively: Go decodes a JSON ``null`` field as an absent one."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def check_object(resource_key: str, kind: str, obj: Any, *, custom: bool) -> None:
    """Check a whole object of ``kind`` (its metadata, and its known fields unless ``custom``)."""
    if not isinstance(obj, dict):
        raise ApiError(400, "BadRequest", f"json: cannot unmarshal {_json_type(obj)} into Go value of type {kind}")
    for name in ("apiVersion", "kind"):
        if name in obj and not isinstance(obj[name], str):
            raise _fail(obj[name], f"{kind}.{name}", "string")
    check(obj.get("metadata"), META, f"{kind}.metadata")
    if not custom:
        check(obj, SHAPES.get(resource_key, {}), kind)
