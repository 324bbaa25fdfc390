"""Protobuf bodies decoded with the field numbers of apimachinery's and the API's ``generated.proto``
(``k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto``, ``k8s.io/api/{core,apps,batch}/v1/generated.proto``).

Round trip with the real kubectl 1.32 and 1.33, whose ``create`` generators send protobuf: what
``kubectl create ... --dry-run=client -o json`` prints is the object kubectl encodes, and every field of it must come
back from the double with the same value after the protobuf ``create``. A misnumbered field lands under another name
(or is refused), so it fails here. ``create job --from=cronjob/x`` carries ``ownerReferences`` (numbered kind 1,
name 3, uid 4, apiVersion 5, controller 6, blockOwnerDeletion 7), the message a wrong numbering broke with a 400.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.kube import KubeHandle
from specs.kube.conftest import kubectl_build

PROTOBUF = "application/vnd.kubernetes.protobuf"

GENERATORS: list[tuple[str, str, list[str]]] = [
    ("configmaps", "cm", ["configmap", "cm", "--from-literal=a=1", "--from-literal=b=two"]),
    ("secrets", "s", ["secret", "generic", "s", "--from-literal=token=x", "--type=example.com/token"]),
    (
        "secrets",
        "reg",
        ["secret", "docker-registry", "reg", "--docker-server=r.local", "--docker-username=u", "--docker-password=p"],
    ),
    ("serviceaccounts", "sa", ["serviceaccount", "sa"]),
    (
        "deployments",
        "d",
        ["deployment", "d", "--image=registry.local/d:1", "--replicas=2", "--port=8080", "--", "serve", "--fast"],
    ),
    ("services", "svc", ["service", "clusterip", "svc", "--tcp=80:8080", "--tcp=443:8443"]),
    ("services", "np", ["service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080"]),
    ("services", "ext", ["service", "externalname", "ext", "--external-name=example.com"]),
    ("jobs", "j", ["job", "j", "--image=busybox", "--", "echo", "hi"]),
    (
        "cronjobs",
        "cj",
        ["cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--restart=OnFailure", "--", "date"],
    ),
]


def _binary(minor: int) -> str:
    path = kubectl_build(minor)
    if path is None:
        pytest.skip(f"no kubectl.1.{minor} beside kubectl")
    return path


def _missing(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Where ``stored`` lacks or differs from a value in ``sent`` (``null`` in ``sent`` stands for "unset")."""
    if sent is None:
        return []
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path}: {stored!r} is not an object"]
        return [m for key, value in sent.items() for m in _missing(value, stored.get(key), f"{path}.{key}")]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{path}: {stored!r} != {sent!r}"]
        return [m for i, value in enumerate(sent) for m in _missing(value, stored[i], f"{path}[{i}]")]
    return [] if sent == stored else [f"{path}: {stored!r} != {sent!r}"]


@pytest.mark.parametrize("minor", [32, 33])
def test_generators_round_trip(kd: KubeHandle, ns: str, minor: int) -> None:
    binary = _binary(minor)
    for plural, name, args in GENERATORS:
        # flags go first: anything after "--" is the container's command
        preview = kd.kubectl("-n", ns, "--dry-run=client", "-o", "json", "create", *args, kubectl=binary)
        assert preview.returncode == 0, preview.stderr
        since = kd.store.resource_version
        done = kd.kubectl("-n", ns, "create", *args, kubectl=binary)
        assert done.returncode == 0, (args, done.stderr)
        assert kd.store.resource_version > since
        posts = [e for e in kd.requests(method="POST") if e.path.endswith(f"/namespaces/{ns}/{plural}")]
        assert posts[-1].headers.get("content-type") == PROTOBUF, args
        stored = kd.store.require(plural, ns, name)
        assert _missing(json.loads(preview.stdout), stored) == [], args


@pytest.mark.parametrize("minor", [32, 33])
def test_job_from_cronjob(kd: KubeHandle, ns: str, minor: int) -> None:
    binary = _binary(minor)
    made = kd.kubectl(
        "create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", kubectl=binary, namespace=ns
    )
    assert made.returncode == 0, made.stderr
    args = ["job", "nightly-manual", "--from=cronjob/nightly"]
    preview = kd.kubectl("create", *args, "--dry-run=client", "-o", "json", kubectl=binary, namespace=ns)
    assert preview.returncode == 0, preview.stderr
    done = kd.kubectl("create", *args, kubectl=binary, namespace=ns)
    assert done.returncode == 0, done.stderr
    assert "job.batch/nightly-manual created" in done.stdout
    posts = [e for e in kd.requests(method="POST") if e.path.endswith(f"/namespaces/{ns}/jobs")]
    assert posts[-1].headers.get("content-type") == PROTOBUF
    cronjob = kd.store.require("cronjobs", ns, "nightly")
    job = kd.store.require("jobs", ns, "nightly-manual")
    assert _missing(json.loads(preview.stdout), job) == []
    # kubectl's create_job.go sets apiVersion, kind, name, uid and controller (no blockOwnerDeletion)
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "nightly",
            "uid": cronjob["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
