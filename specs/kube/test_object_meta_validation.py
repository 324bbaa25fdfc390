"""Validation the apiserver applies to every object's metadata, with apimachinery's messages (``pkg/api/validation/
objectmeta.go`` ``ValidateObjectMetaAccessor``, ``pkg/util/validation/validation.go``; Kubernetes 1.32 wording):
the 256 KiB total of annotations (``TotalAnnotationSizeLimitB``), label keys and values, names by each kind's rule
(Services DNS-1035 labels, Namespaces DNS-1123 labels, the rest DNS-1123 subdomains), generateName, finalizers; and
the request body limit (apiserver ``MaxRequestBodyBytes``, 3 MiB by default: 413 ``Request entity too large: limit
is 3145728``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import httpx
import pytest
import yaml

from fakes.kube import KubeHandle

TOO_LONG = "Too long: may not be more than 262144 bytes"


@pytest.fixture
def http(kd: KubeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=kd.url, timeout=10.0) as client:
        yield client


def _post(http: httpx.Client, ns: str, plural: str, obj: dict) -> httpx.Response:
    path = f"/api/v1/namespaces/{ns}/{plural}" if plural != "namespaces" else "/api/v1/namespaces"
    return http.post(path, json=obj)


def _invalid(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Invalid", 422)
    return str(body["message"])


def test_kubectl_create_with_a_300_kb_annotation_is_refused(kd: KubeHandle, ns: str, tmp_path: os.PathLike) -> None:
    """The public report this comes from: a 300 KB annotation a real API server refuses and the double stored."""
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "huge", "annotations": {"example.com/blob": "x" * 300_000}},
    }
    path = os.path.join(str(tmp_path), "huge.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(manifest, handle)
    done = kd.kubectl("create", "-f", path, namespace=ns)
    assert done.returncode == 1
    assert f'The ConfigMap "huge" is invalid: metadata.annotations: {TOO_LONG}' in done.stderr
    assert kd.store.get("configmaps", ns, "huge") is None


def test_the_annotation_limit_counts_keys_and_values(kd: KubeHandle, ns: str, http: httpx.Client) -> None:
    key = "k"
    at_limit = {"metadata": {"name": "edge", "annotations": {key: "x" * (262144 - len(key))}}}
    assert _post(http, ns, "configmaps", at_limit).status_code == 201
    over = {"metadata": {"name": "over", "annotations": {key: "x" * (262144 - len(key) + 1)}}}
    response = _post(http, ns, "configmaps", over)
    assert _invalid(response) == f'ConfigMap "over" is invalid: metadata.annotations: {TOO_LONG}'
    cause = response.json()["details"]["causes"][0]
    assert cause == {"reason": "FieldValueTooLong", "message": TOO_LONG, "field": "metadata.annotations"}
    grown = kd.kubectl("annotate", "configmap", "edge", "more=x", namespace=ns)
    assert grown.returncode == 1  # an update is held to it too
    assert TOO_LONG in grown.stderr


def test_label_keys_and_values(http: httpx.Client, ns: str) -> None:
    long_name = "a" * 64
    message = _invalid(_post(http, ns, "configmaps", {"metadata": {"name": "lk", "labels": {long_name: "v"}}}))
    assert message == (
        f'ConfigMap "lk" is invalid: metadata.labels: Invalid value: "{long_name}": '
        "name part must be no more than 63 characters"
    )
    message = _invalid(_post(http, ns, "configmaps", {"metadata": {"name": "lv", "labels": {"k": "-bad"}}}))
    assert message == (
        'ConfigMap "lv" is invalid: metadata.labels: Invalid value: "-bad": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
    message = _invalid(_post(http, ns, "configmaps", {"metadata": {"name": "lp", "labels": {"Bad_Prefix/k": "v"}}}))
    assert message.startswith(
        'ConfigMap "lp" is invalid: metadata.labels: Invalid value: "Bad_Prefix/k": prefix part a lowercase RFC 1123 '
        "subdomain must consist of"
    )
    annotated = {"metadata": {"name": "ak", "annotations": {"a/b/c": "v"}}}
    assert 'metadata.annotations: Invalid value: "a/b/c": a qualified name must consist of' in _invalid(
        _post(http, ns, "configmaps", annotated)
    )


def test_names_follow_each_kinds_rule(http: httpx.Client, ns: str) -> None:
    svc = {"metadata": {"name": "1web"}, "spec": {"ports": [{"port": 80}]}}
    assert _invalid(_post(http, ns, "services", svc)) == (
        'Service "1web" is invalid: metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower '
        "case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
        "character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )
    assert _post(http, ns, "configmaps", {"metadata": {"name": "1web.example"}}).status_code == 201
    assert _invalid(_post(http, ns, "namespaces", {"metadata": {"name": "a.b"}})) == (
        'Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots'
    )
    long_name = "a" * 254
    assert _invalid(_post(http, ns, "configmaps", {"metadata": {"name": long_name}})).endswith(
        f'metadata.name: Invalid value: "{long_name}": must be no more than 253 characters'
    )


def test_generate_name_is_validated_as_a_prefix(kd: KubeHandle, http: httpx.Client, ns: str) -> None:
    created = _post(http, ns, "configmaps", {"metadata": {"generateName": "job-run-"}})
    assert created.status_code == 201
    assert created.json()["metadata"]["name"].startswith("job-run-")
    message = _invalid(_post(http, ns, "configmaps", {"metadata": {"generateName": "Run-"}}))
    assert 'metadata.generateName: Invalid value: "Run-": a lowercase RFC 1123 subdomain' in message


def test_finalizers_are_qualified_names(http: httpx.Client, ns: str) -> None:
    obj = {"metadata": {"name": "fin", "finalizers": ["example.com/ok", "not ok"]}}
    message = _invalid(_post(http, ns, "configmaps", obj))
    assert message.startswith('ConfigMap "fin" is invalid: metadata.finalizers[1]: Invalid value: "not ok": name part')


def test_a_body_over_3_mib_is_413_in_the_apiservers_words(http: httpx.Client, ns: str) -> None:
    body = json.dumps({"metadata": {"name": "big"}, "data": {"k": "x" * (3 * 1024 * 1024)}})
    response = http.post(
        f"/api/v1/namespaces/{ns}/configmaps", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    status = response.json()
    assert (status["reason"], status["message"], status["code"]) == (
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
        413,
    )
