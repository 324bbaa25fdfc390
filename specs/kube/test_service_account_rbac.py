"""A ServiceAccount's TokenRequest token as a bearer token, and RBAC deciding what it may do, on the double and on
the real control plane (specs/targets.py; the plane runs ``--authorization-mode=Node,RBAC``).

Authentication follows kubernetes ``pkg/serviceaccount/claims.go`` (the token names the ServiceAccount's uid, so a
deleted or recreated ServiceAccount's token is refused; expiry with go-jose's one-minute leeway), authorization
``plugin/pkg/auth/authorizer/rbac/rbac.go`` and ``pkg/registry/rbac/validation/rule.go``, request attributes
apiserver ``pkg/endpoints/request/requestinfo.go``, the 403 ``pkg/endpoints/handlers/responsewriters/errors.go``
``forbiddenMessage``, the grants every authenticated user has ``bootstrappolicy/policy.go``. Every expected denial is
written out in full here: the real server is what decided the text.

The real server's RBAC reads bindings through informers and caches a token's authentication for 10 s, so a grant
(or a deleted ServiceAccount's 401) is waited for, within :data:`SETTLE` seconds; the double decides at once.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import httpx
import pytest
from kubernetes import client as kube_client

from specs.targets import Target, double_with_kubectl

pytestmark = pytest.mark.timeout(120)
SETTLE = 20.0
"""Seconds the real server may take to apply a new binding (informers) or refuse a deleted ServiceAccount's token
(its 10 s token authentication cache)."""
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    yield from double_with_kubectl()


class Api:
    """httpx clients for one target: :meth:`admin` (the kubeconfig's user) and :meth:`as_token` (a bearer token)."""

    def __init__(self, target: Target) -> None:
        self.namespace = target.kube.namespace
        if target.on_double:
            self.url, self.ca, self.cert = target.double.url, None, None
        else:
            conf = target.kube.api_client().configuration
            self.url, self.ca, self.cert = conf.host, conf.ssl_ca_cert, (conf.cert_file, conf.key_file)
        self._clients: list[httpx.Client] = []
        self.admin_client = self._client(self.cert, {})

    def _client(self, cert: tuple[str, str] | None, headers: dict[str, str]) -> httpx.Client:
        verify: ssl.SSLContext | bool = False
        if self.url.startswith("https://"):
            verify = ssl.create_default_context(cafile=self.ca)
            if cert is not None:
                verify.load_cert_chain(*cert)
        client = httpx.Client(base_url=self.url, verify=verify, headers=headers, timeout=10.0)
        self._clients.append(client)
        return client

    def as_token(self, token: str) -> httpx.Client:
        return self._client(None, {"Authorization": f"Bearer {token}"})

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None, ok: tuple[int, ...] = ()) -> Any:
        """An admin request that must succeed (2xx, or a status in ``ok``); returns the decoded answer."""
        answer = self.admin_client.request(method, path, json=body)
        assert answer.is_success or answer.status_code in ok, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer.json()

    def service_account(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        ns = namespace or self.namespace
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        return dict(self.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", body))

    def token(self, name: str, namespace: str | None = None, seconds: int = 3600) -> dict[str, Any]:
        """A TokenRequest's answer for ServiceAccount ``name``."""
        ns = namespace or self.namespace
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        return dict(self.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", body))

    def role(self, name: str, rules: list[dict[str, Any]], namespace: str | None = None) -> None:
        body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}}
        self.admin("POST", f"{RBAC}/namespaces/{namespace or self.namespace}/roles", {**body, "rules": rules})

    def bind(self, name: str, role_kind: str, role: str, sa: str, namespace: str | None = None) -> None:
        """A RoleBinding ``name`` in ``namespace`` of ``role_kind`` ``role`` to ServiceAccount ``sa`` of this
        spec's namespace."""
        body = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": self.namespace}],
        }
        self.admin("POST", f"{RBAC}/namespaces/{namespace or self.namespace}/rolebindings", body)

    @contextmanager
    def cluster_objects(self) -> Iterator[list[str]]:
        """Paths of cluster-scoped objects to delete when the ``with`` ends (also when it fails)."""
        paths: list[str] = []
        try:
            yield paths
        finally:
            for path in reversed(paths):
                self.admin_client.delete(path)

    @contextmanager
    def other_namespace(self) -> Iterator[str]:
        name = f"{self.namespace[:56]}-other"
        self.admin("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        try:
            yield name
        finally:
            self.admin_client.delete(f"/api/v1/namespaces/{name}")

    def close(self) -> None:
        for client in self._clients:
            client.close()


@pytest.fixture
def api(target: Target) -> Iterator[Api]:
    handle = Api(target)
    yield handle
    handle.close()


def user(api: Api, sa: str) -> str:
    return f"system:serviceaccount:{api.namespace}:{sa}"


def forbidden(message: str, *, name: str = "", group: str = "", kind: str = "") -> dict[str, Any]:
    """The 403 ``Status`` a denial is, ``details`` with the fields that are not empty (``{}`` when none are)."""
    details = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


def denied(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 403, (
        f"{answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}"
    )
    assert answer.headers.get("X-Content-Type-Options") == "nosniff"
    return dict(answer.json())


def eventually(ask: Callable[[], httpx.Response], status: int, within: float = SETTLE) -> httpx.Response:
    """``ask()`` until it answers ``status`` (the real server applies a binding through its informers)."""
    deadline = time.monotonic() + within
    while True:
        answer = ask()
        if answer.status_code == status or time.monotonic() > deadline:
            assert answer.status_code == status, f"{answer.request.url}: {answer.status_code} {answer.text}"
            return answer
        time.sleep(0.1)


def configmap(api: Api, name: str, namespace: str | None = None) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    api.admin("POST", f"/api/v1/namespaces/{namespace or api.namespace}/configmaps", body)


def test_a_service_account_without_a_binding_may_list_get_create_or_watch_nothing(api: Api) -> None:
    """No binding: every resource request is a 403 naming the verb, the resource and its group (a resource nobody
    serves too: authorization comes before routing), the name when the path has one, the namespace or the cluster
    scope; a cluster-wide list is ``at the cluster scope``."""
    api.service_account("lonely")
    sa = api.as_token(api.token("lonely")["status"]["token"])
    who, ns = user(api, "lonely"), api.namespace
    in_ns = f'in the namespace "{ns}"'

    assert denied(sa.get(f"/api/v1/namespaces/{ns}/configmaps")) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" {in_ns}',
        kind="configmaps",
    )
    assert denied(sa.get(f"/api/v1/namespaces/{ns}/configmaps/x")) == forbidden(
        f'configmaps "x" is forbidden: User "{who}" cannot get resource "configmaps" in API group "" {in_ns}',
        name="x",
        kind="configmaps",
    )
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}}
    assert denied(sa.post(f"/api/v1/namespaces/{ns}/configmaps", json=body)) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot create resource "configmaps" in API group "" {in_ns}',
        kind="configmaps",
    )
    assert denied(sa.get(f"/apis/apps/v1/namespaces/{ns}/deployments", params={"watch": "true"})) == forbidden(
        f'deployments.apps is forbidden: User "{who}" cannot watch resource "deployments" in API group "apps" {in_ns}',
        group="apps",
        kind="deployments",
    )
    agents = f"/apis/core.controller-agent.dev/v1/namespaces/{ns}/agents"
    assert denied(sa.get(agents)) == forbidden(
        f'agents.core.controller-agent.dev is forbidden: User "{who}" cannot list resource "agents" in API group '
        f'"core.controller-agent.dev" {in_ns}',
        group="core.controller-agent.dev",
        kind="agents",
    )
    assert denied(sa.delete(f"/api/v1/namespaces/{ns}/configmaps")) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot deletecollection resource "configmaps" in API group "" {in_ns}',
        kind="configmaps",
    )
    assert denied(sa.get("/api/v1/configmaps")) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" at the cluster scope',
        kind="configmaps",
    )
    assert denied(sa.get(f"/api/v1/namespaces/{ns}")) == forbidden(
        f'namespaces "{ns}" is forbidden: User "{who}" cannot get resource "namespaces" in API group "" {in_ns}',
        name=ns,
        kind="namespaces",
    )


def test_a_role_binding_grants_its_verbs_on_its_resources_in_its_namespace_only(api: Api) -> None:
    """A Role allowing get and list of configmaps, bound to the ServiceAccount: those two work in the namespace
    (through the ``kubernetes`` client too), create and delete and other resources stay 403, and in another
    namespace nothing is granted. A RoleBinding to a missing Role adds ``RBAC: role... not found`` to a denial."""
    api.service_account("reader")
    token = api.token("reader")["status"]["token"]
    sa, who, ns = api.as_token(token), user(api, "reader"), api.namespace
    configmap(api, "settings")
    api.role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}])
    api.bind("reader-cm", "Role", "cm-reader", "reader")

    listed = eventually(lambda: sa.get(f"/api/v1/namespaces/{ns}/configmaps"), 200).json()
    assert "settings" in [item["metadata"]["name"] for item in listed["items"]]
    assert sa.get(f"/api/v1/namespaces/{ns}/configmaps/settings").json()["data"] == {"k": "v"}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}}
    in_ns = f'in the namespace "{ns}"'
    assert denied(sa.post(f"/api/v1/namespaces/{ns}/configmaps", json=body)) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot create resource "configmaps" in API group "" {in_ns}',
        kind="configmaps",
    )
    assert denied(sa.delete(f"/api/v1/namespaces/{ns}/configmaps/settings")) == forbidden(
        f'configmaps "settings" is forbidden: User "{who}" cannot delete resource "configmaps" in API group "" {in_ns}',
        name="settings",
        kind="configmaps",
    )
    denied(sa.get(f"/api/v1/namespaces/{ns}/secrets"))

    conf = kube_client.Configuration()
    conf.host, conf.ssl_ca_cert, conf.verify_ssl = api.url, api.ca, api.ca is not None
    conf.api_key, conf.api_key_prefix = {"BearerToken": token}, {"BearerToken": "Bearer"}
    with kube_client.ApiClient(conf) as client:
        core = kube_client.CoreV1Api(client)
        assert core.read_namespaced_config_map("settings", ns).data == {"k": "v"}
        with pytest.raises(kube_client.ApiException) as refused:
            core.list_namespaced_secret(ns)
        assert refused.value.status == 403

    with api.other_namespace() as other:
        configmap(api, "settings", other)
        assert denied(sa.get(f"/api/v1/namespaces/{other}/configmaps")) == forbidden(
            f'configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" in the '
            f'namespace "{other}"',
            kind="configmaps",
        )
        api.bind("reader-missing", "Role", "no-such-role", "reader", namespace=other)
        message = (
            f'configmaps "settings" is forbidden: User "{who}" cannot get resource "configmaps" in API group "" in '
            f'the namespace "{other}": RBAC: role.rbac.authorization.k8s.io "no-such-role" not found'
        )
        answer = eventually(lambda: sa.get(f"/api/v1/namespaces/{other}/configmaps/settings"), 403)
        deadline = time.monotonic() + SETTLE
        while answer.json()["message"] != message and time.monotonic() < deadline:
            time.sleep(0.1)
            answer = sa.get(f"/api/v1/namespaces/{other}/configmaps/settings")
        assert denied(answer) == forbidden(message, name="settings", kind="configmaps")


def test_a_cluster_role_binding_grants_in_every_namespace_and_a_role_binding_to_it_in_one(api: Api) -> None:
    """A ClusterRole bound by a ClusterRoleBinding: list in this namespace, another one, and cluster-wide. Bound by
    a RoleBinding instead, the same ClusterRole grants only in the RoleBinding's namespace."""
    api.service_account("everywhere")
    api.service_account("here")
    everywhere = api.as_token(api.token("everywhere")["status"]["token"])
    here = api.as_token(api.token("here")["status"]["token"])
    ns, role = api.namespace, f"{api.namespace[:50]}-cm-lister"
    with api.cluster_objects() as made, api.other_namespace() as other:
        rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
        body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role}}
        api.admin("POST", f"{RBAC}/clusterroles", {**body, "rules": rules})
        made.append(f"{RBAC}/clusterroles/{role}")
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "everywhere", "namespace": ns}],
        }
        api.admin("POST", f"{RBAC}/clusterrolebindings", binding)
        made.append(f"{RBAC}/clusterrolebindings/{role}")
        api.bind("here-cm", "ClusterRole", role, "here")

        for namespace in (ns, other):
            listed = eventually(partial(everywhere.get, f"/api/v1/namespaces/{namespace}/configmaps"), 200)
            assert listed.json()["kind"] == "ConfigMapList"
        assert everywhere.get("/api/v1/configmaps").status_code == 200
        denied(everywhere.get(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"))

        assert (
            eventually(lambda: here.get(f"/api/v1/namespaces/{ns}/configmaps"), 200).json()["kind"] == "ConfigMapList"
        )
        who = user(api, "here")
        assert denied(here.get(f"/api/v1/namespaces/{other}/configmaps")) == forbidden(
            f'configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" in the '
            f'namespace "{other}"',
            kind="configmaps",
        )
        assert denied(here.get("/api/v1/configmaps")) == forbidden(
            f'configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" at the cluster '
            "scope",
            kind="configmaps",
        )


def test_resource_names_restrict_get_and_a_named_watch_but_list_stays_forbidden(api: Api) -> None:
    """A rule with ``resourceNames`` allows get of those names only; a list (which has no name) stays 403, while a
    watch whose field selector requires ``metadata.name`` of an allowed name is that name's watch."""
    api.service_account("picky")
    sa, who, ns = api.as_token(api.token("picky")["status"]["token"]), user(api, "picky"), api.namespace
    configmap(api, "allowed")
    configmap(api, "other")
    rules = [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get", "list", "watch"],
            "resourceNames": ["allowed"],
        }
    ]
    api.role("one-cm", rules)
    api.bind("picky-one-cm", "Role", "one-cm", "picky")

    assert eventually(lambda: sa.get(f"/api/v1/namespaces/{ns}/configmaps/allowed"), 200).json()["data"] == {"k": "v"}
    in_ns = f'in the namespace "{ns}"'
    assert denied(sa.get(f"/api/v1/namespaces/{ns}/configmaps/other")) == forbidden(
        f'configmaps "other" is forbidden: User "{who}" cannot get resource "configmaps" in API group "" {in_ns}',
        name="other",
        kind="configmaps",
    )
    assert denied(sa.get(f"/api/v1/namespaces/{ns}/configmaps")) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" {in_ns}',
        kind="configmaps",
    )
    watch = {"watch": "true", "timeoutSeconds": "1"}
    named = {**watch, "fieldSelector": "metadata.name=allowed"}
    with sa.stream("GET", f"/api/v1/namespaces/{ns}/configmaps", params=named) as stream:
        assert stream.status_code == 200
    assert denied(
        sa.get(f"/api/v1/namespaces/{ns}/configmaps", params={**watch, "fieldSelector": "metadata.name=other"})
    ) == forbidden(
        f'configmaps "other" is forbidden: User "{who}" cannot watch resource "configmaps" in API group "" {in_ns}',
        name="other",
        kind="configmaps",
    )
    assert denied(sa.get(f"/api/v1/namespaces/{ns}/configmaps", params=watch)) == forbidden(
        f'configmaps is forbidden: User "{who}" cannot watch resource "configmaps" in API group "" {in_ns}',
        kind="configmaps",
    )


def test_a_status_subresource_needs_its_own_resource_in_a_rule(api: Api) -> None:
    """``deployments`` does not cover ``deployments/status``: reading it is a 403 naming ``deployments/status``
    until a rule lists it (or ``*/status``)."""
    api.service_account("watcher")
    sa, who, ns = api.as_token(api.token("watcher")["status"]["token"]), user(api, "watcher"), api.namespace
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "r.local/a:1"}]},
            },
        },
    }
    api.admin("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", deployment)
    api.role("deploy-reader", [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}])
    api.bind("watcher-deploy", "Role", "deploy-reader", "watcher")
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"

    assert eventually(lambda: sa.get(path), 200).json()["metadata"]["name"] == "web"
    assert denied(sa.get(f"{path}/status")) == forbidden(
        f'deployments.apps "web" is forbidden: User "{who}" cannot get resource "deployments/status" in API group '
        f'"apps" in the namespace "{ns}"',
        name="web",
        group="apps",
        kind="deployments",
    )
    api.role("any-status", [{"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["get"]}])
    api.bind("watcher-status", "Role", "any-status", "watcher")
    assert eventually(lambda: sa.get(f"{path}/status"), 200).json()["metadata"]["name"] == "web"
    patch = {"metadata": {"labels": {"x": "y"}}}
    headers = {"Content-Type": "application/merge-patch+json"}
    assert denied(sa.patch(f"{path}/status", json=patch, headers=headers)) == forbidden(
        f'deployments.apps "web" is forbidden: User "{who}" cannot patch resource "deployments/status" in API group '
        f'"apps" in the namespace "{ns}"',
        name="web",
        group="apps",
        kind="deployments",
    )
    denied(sa.get(f"{path}/scale"))


def test_discovery_works_with_a_token_and_other_paths_are_forbidden(api: Api) -> None:
    """``/api``, ``/apis``, a group-version, ``/version`` and ``/healthz`` answer a ServiceAccount without any
    binding (``system:discovery``, ``system:public-info-viewer``); a path no bootstrap role grants is a 403 with
    empty ``details``."""
    api.service_account("discoverer")
    sa, who = api.as_token(api.token("discoverer")["status"]["token"]), user(api, "discoverer")
    assert sa.get("/api").json()["kind"] == "APIVersions"
    assert sa.get("/apis").json()["kind"] == "APIGroupList"
    assert sa.get("/api/v1").json()["kind"] == "APIResourceList"
    assert sa.get("/apis/apps/v1").json()["groupVersion"] == "apps/v1"
    assert sa.get("/version").json()["gitVersion"].startswith("v1.")
    assert sa.get("/healthz").text == "ok"
    assert denied(sa.get("/metrics")) == forbidden(f'forbidden: User "{who}" cannot get path "/metrics"')
    assert denied(sa.post("/api", json={})) == forbidden(f'forbidden: User "{who}" cannot post path "/api"')


def test_a_token_is_refused_once_expired(target_name: str, request: pytest.FixtureRequest) -> None:
    """On the double's clock: accepted until a minute past ``expirationTimestamp`` (go-jose's leeway), then 401."""
    if target_name != "double":
        pytest.skip("on the control plane the server's clock cannot be moved, and its shortest token lives 10 minutes")
    api = request.getfixturevalue("api")
    kd = request.getfixturevalue("target").double
    api.service_account("brief")
    answer = api.token("brief", seconds=600)
    sa = api.as_token(answer["status"]["token"])
    assert sa.get("/api").status_code == 200
    before = kd.clock.offset
    try:
        kd.clock.advance(600 + 30)
        assert sa.get("/api").status_code == 200
        kd.clock.advance(31 + 1)
        refused = sa.get("/api")
        assert (refused.status_code, refused.json()) == (401, UNAUTHORIZED)
    finally:
        kd.clock.set_offset(before)


def test_a_deleted_service_accounts_token_is_refused(api: Api) -> None:
    """The token names its ServiceAccount's uid: once the ServiceAccount is deleted it is a 401, and it stays one
    when a ServiceAccount of that name is created again, whose own new token works. An unknown token is a 401."""
    api.service_account("ephemeral")
    old = api.as_token(api.token("ephemeral")["status"]["token"])
    assert old.get("/api").status_code == 200
    api.admin("DELETE", f"/api/v1/namespaces/{api.namespace}/serviceaccounts/ephemeral")
    refused = eventually(lambda: old.get("/api"), 401)
    assert refused.json() == UNAUTHORIZED

    api.service_account("ephemeral")
    new = api.as_token(api.token("ephemeral")["status"]["token"])
    assert new.get("/api").status_code == 200
    assert old.get("/api").status_code == 401
    assert api.as_token("not-a-token").get("/api").status_code == 401
