"""Bad input gets the real server's answer and never a crash: 400 for malformed bodies and selectors, 404 for unknown
types, 413 past the body limit, 422 Invalid naming the field, 401 for a wrong token; hypothesis throws arbitrary
requests at the double and no answer may be a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.kube import KubeHandle
from specs.kube.conftest import bare

CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def served() -> Iterator[KubeHandle]:
    with bare() as handle:
        yield handle


@pytest.fixture(scope="module")
def http(served: KubeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=10.0) as client:
        yield client


def _status(response: httpx.Response) -> dict:
    body = response.json()
    assert body["kind"] == "Status", body
    assert body["code"] == response.status_code
    return body


def test_malformed_json_and_yaml_are_400(http: httpx.Client) -> None:
    for body, content_type in (
        (b"{not json", "application/json"),
        (b"[1,2", "application/json"),
        (b"a: [unclosed", "application/yaml"),
        (b"\xff\xfe\x00", "application/json"),
        (b"k8s\x00\x0a\xff", "application/vnd.kubernetes.protobuf"),
    ):
        response = http.post(CM, content=body, headers={"content-type": content_type})
        assert response.status_code == 400, (body, response.text)
        assert _status(response)["reason"] == "BadRequest"
    not_object = http.post(CM, json=[1, 2])
    assert not_object.status_code == 400


def test_invalid_objects_are_422_naming_the_field(http: httpx.Client) -> None:
    response = http.post(CM, json={"metadata": {"name": "Bad_Name"}})
    assert response.status_code == 422
    body = _status(response)
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'
    )
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    deployment = http.post(
        "/apis/apps/v1/namespaces/default/deployments",
        json={"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{}]}}}},
    )
    fields = {c["field"] for c in _status(deployment)["details"]["causes"]}
    assert fields == {
        "spec.selector",
        "spec.template.spec.containers[0].name",
        "spec.template.spec.containers[0].image",
    }
    service = http.post(
        "/api/v1/namespaces/default/services", json={"metadata": {"name": "my.svc"}, "spec": {"ports": [{"port": 0}]}}
    )
    assert {c["field"] for c in _status(service)["details"]["causes"]} == {"metadata.name", "spec.ports[0].port"}


def test_kubectl_prints_the_invalid_fields(served: KubeHandle) -> None:
    done = served.kubectl(
        "create",
        "-f",
        "-",
        namespace="default",
        input=json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "UPPER"}}),
    )
    assert done.returncode == 1
    assert 'The ConfigMap "UPPER" is invalid: metadata.name: Invalid value: "UPPER"' in done.stderr


def test_unknown_paths_and_types_are_404_statuses(http: httpx.Client) -> None:
    for path in (
        "/api/v1/frobs",
        "/apis/nope/v1/things",
        "/api/v1/namespaces/default/pods/p/nosuchsub",
        "/api/v1/pods/x",
        "/totally/else",
        "/api/v9/pods",
    ):
        response = http.get(path)
        assert response.status_code == 404, path
        assert _status(response)["message"] == "the server could not find the requested resource"


def test_oversized_body_is_413(http: httpx.Client) -> None:
    body = json.dumps({"metadata": {"name": "big"}, "data": {"k": "x" * (3 * 1024 * 1024 + 10)}})
    response = http.post(CM, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert _status(response)["reason"] == "RequestEntityTooLarge"


def test_wrong_token_is_401_and_kubectl_says_so_over_tls() -> None:
    with bare(tls=True) as kd:
        good = kd.kubectl("get", "configmaps", "-o", "name", namespace="default")
        assert good.returncode == 0, good.stderr
        bad = kd.kubectl("get", "configmaps", "--token", "not-the-token", namespace="default")
        assert bad.returncode == 1
        assert "You must be logged in to the server" in bad.stderr
        anonymous = httpx.get(f"{kd.url}{CM}", verify=False, timeout=5.0)
        assert anonymous.status_code == 401
        assert httpx.get(f"{kd.url}/version", verify=False, timeout=5.0).status_code == 200


SEGMENTS = st.sampled_from(
    [
        "api",
        "apis",
        "v1",
        "apps",
        "namespaces",
        "default",
        "pods",
        "configmaps",
        "deployments",
        "status",
        "scale",
        "log",
        "exec",
        "x",
        "",
        "..",
        "%00",
        "\u00e9",
    ]
)
METHODS = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
TYPES = st.sampled_from(
    [
        "application/json",
        "application/yaml",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
        "application/vnd.kubernetes.protobuf",
        "text/plain",
    ]
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "metadata",
                    "name",
                    "spec",
                    "kind",
                    "apiVersion",
                    "data",
                    "labels",
                    "status",
                    "op",
                    "path",
                    "value",
                    "$patch",
                    "containers",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
QUERIES = st.sampled_from(
    [
        "",
        "watch=true&timeoutSeconds=1",
        "labelSelector=a%20in%20(",
        "fieldSelector=x=1",
        "limit=-1",
        "continue=garbage",
        "resourceVersion=abc&watch=1&timeoutSeconds=1",
        "dryRun=All",
        "gracePeriodSeconds=x",
        "propagationPolicy=Sideways",
    ]
)


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    method=METHODS,
    parts=st.lists(SEGMENTS, min_size=1, max_size=7),
    query=QUERIES,
    body=JSONISH,
    raw=st.binary(max_size=40),
    content_type=TYPES,
    use_raw=st.booleans(),
)
def test_no_request_crashes_the_double(
    http: httpx.Client,
    method: str,
    parts: list[str],
    query: str,
    body: object,
    raw: bytes,
    content_type: str,
    use_raw: bool,
) -> None:
    content = raw if use_raw else json.dumps(body).encode()
    path = "/" + "/".join(parts)
    url = str(http.base_url).rstrip("/") + path + ("?" + query if query else "")
    response = http.request(method, url, content=content, headers={"content-type": content_type})
    assert response.status_code != 500, f"{method} {path}?{query} {content!r} -> {response.text}"
    assert response.status_code < 500 or response.status_code in (503, 504)
    if response.status_code >= 400 and method != "HEAD":
        assert response.json()["kind"] == "Status"


ROUTES = st.sampled_from(
    [
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps/fz",
        "/api/v1/namespaces/default/pods",
        "/api/v1/namespaces/default/pods/fz",
        "/api/v1/namespaces/default/pods/fz/status",
        "/api/v1/namespaces/default/services",
        "/api/v1/namespaces/default/services/fz",
        "/api/v1/namespaces",
        "/api/v1/namespaces/fz",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/apps/v1/namespaces/default/deployments/fz",
        "/apis/apps/v1/namespaces/default/deployments/fz/scale",
        "/apis/apps/v1/namespaces/default/deployments/fz/status",
        "/apis/batch/v1/namespaces/default/jobs",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/api/v1/namespaces/default/events",
        "/api/v1/namespaces/default/serviceaccounts/fz/token",
        "/api/v1/namespaces/default/secrets/fz",
    ]
)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.text(max_size=6)
    | st.sampled_from(["fz", "v1", "Pod", "ConfigMap", "TCP", "25%", "", "app"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "namespace",
                    "labels",
                    "containers",
                    "image",
                    "ports",
                    "port",
                    "containerPort",
                    "selector",
                    "matchLabels",
                    "template",
                    "replicas",
                    "spec",
                    "metadata",
                    "status",
                    "data",
                    "finalizers",
                    "ownerReferences",
                    "uid",
                    "resourceVersion",
                    "$patch",
                    "$retainKeys",
                    "names",
                    "group",
                    "versions",
                    "type",
                    "targetPort",
                    "env",
                    "value",
                    "op",
                    "path",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    method=st.sampled_from(["POST", "PUT", "PATCH", "DELETE", "GET"]),
    route=ROUTES,
    spec=VALUES,
    meta=VALUES,
    kind=st.sampled_from([None, "ConfigMap", "Pod", "Deployment", "Scale", "Wrong"]),
    content_type=TYPES,
)
def test_no_object_shaped_request_crashes_the_double(
    http: httpx.Client, method: str, route: str, spec: object, meta: object, kind: str | None, content_type: str
) -> None:
    body: dict[str, object] = {"metadata": meta if isinstance(meta, dict) else {"name": "fz"}, "spec": spec}
    if isinstance(body["metadata"], dict):
        body["metadata"].setdefault("name", "fz")
    if kind:
        body["kind"] = kind
    content = json.dumps(body if method != "PATCH" or "json-patch" not in content_type else [spec]).encode()
    response = http.request(method, route, content=content, headers={"content-type": content_type})
    assert response.status_code != 500, f"{method} {route} {content!r} -> {response.text}"
    if response.status_code >= 400:
        assert response.json()["kind"] == "Status"
