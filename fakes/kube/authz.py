"""RBAC authorization of the double's non-admin users, as a kube-apiserver with ``--authorization-mode=Node,RBAC``.

:func:`authorize` runs for every request a ServiceAccount token authenticated (:mod:`fakes.kube.tokens`), after
authentication and before any routing, so a watch is authorized before its stream starts and a path the double
does not serve is still a 403 when it is not allowed (as on a real server, where authorization comes before the
handler that would answer 404). The double's admin is never asked about.

- Request attributes (:func:`request_attributes`) as apiserver ``pkg/endpoints/request/requestinfo.go``
  ``NewRequestInfo`` derives them: ``/api/<v>/...`` and ``/apis/<group>/<v>/...`` with at least a resource are
  resource requests (``namespaces/<ns>/`` taken off unless followed by ``status``/``finalize``; then resource, name,
  subresource), everything else (``/api``, ``/apis/<group>/<v>``, ``/version``, ``/openapi/...``) a non-resource
  request whose verb is the lower-cased method. Verbs: POST ``create``, GET/HEAD ``get`` (no name: ``list``, or
  ``watch`` when the ``watch`` parameter is set and not ``false``/``0``; a ``fieldSelector`` requiring
  ``metadata.name=X`` gives the list or watch the name ``X``), PUT ``update``, PATCH ``patch``, DELETE ``delete``
  (no name: ``deletecollection``); the ``/watch/`` and ``/proxy/`` path prefixes too.
- Rules (:func:`rule_allows`) as ``plugin/pkg/auth/authorizer/rbac/rbac.go`` ``RuleAllows`` and
  ``pkg/apis/rbac/v1/evaluation_helpers.go``: verbs and apiGroups with ``*``, resources ``*``, ``<r>/<sub>`` and
  ``*/<sub>``, resourceNames (empty: any), nonResourceURLs exact, ``*`` or with a trailing ``*`` as a prefix.
- Which rules apply (:func:`decide`) as ``pkg/registry/rbac/validation/rule.go`` ``VisitRulesFor``: every stored
  ClusterRoleBinding whose subjects name the user (kind ``User`` by name, ``Group`` by one of its groups,
  ``ServiceAccount`` by namespace and name, the namespace defaulting to a RoleBinding's own), then the RoleBindings
  of the request's namespace; a binding's ``roleRef`` is read at each request (so a Role edited or deleted takes
  effect at once). A binding naming a role that does not exist adds ``RBAC: role.rbac.authorization.k8s.io "x" not
  found`` to the denial's message, as there.
- Besides the stored objects, the bootstrap policy every cluster has
  (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go``): the ClusterRoles ``cluster-admin``,
  ``system:discovery``, ``system:basic-user``, ``system:public-info-viewer`` and
  ``system:service-account-issuer-discovery``, and their ClusterRoleBindings to ``system:authenticated`` (the first
  three but ``cluster-admin``, which binds ``system:masters``) and ``system:serviceaccounts``. They are not stored
  objects on the double (``kubectl get clusterroles`` does not list them), but a binding may name them and a stored
  object of the same name takes their place.
- A denial (:func:`forbidden`) is the real 403 ``Status``
  (apiserver ``pkg/endpoints/handlers/responsewriters/errors.go`` ``ForbiddenStatusError`` and apimachinery
  ``errors.NewForbidden``): ``configmaps "x" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource
  "configmaps" in API group "" in the namespace "ns"`` (``... at the cluster scope`` for a cluster-wide request,
  ``forbidden: User "..." cannot get path "/metrics"`` for a non-resource one), ``details`` ``{name, group, kind}``
  (``kind`` is the resource; empty fields left out, ``{}`` for a path) and ``X-Content-Type-Options: nosniff``.

Not modelled: ClusterRole aggregation (``aggregationRule``: a ClusterRole grants the ``rules`` stored in it; the
controller that fills them in does not run), the bootstrap roles ``admin``, ``edit``, ``view`` and the ``system:*``
controller and node roles (a binding to them is a binding to a missing role), the Node authorizer (no node users),
escalation checks on writing Roles and bindings (``escalate``/``bind``), impersonation, and authorizing with label
or field selectors (``AuthorizeWithSelectors``). Cost: each request of a ServiceAccount reads the bindings and the
roles they name once (no cache, so nothing grows).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fakes.kube.errors import ApiError, status_object
from fakes.kube.tokens import User

Rule = Mapping[str, Any]
RBAC = "rbac.authorization.k8s.io"
API_PREFIXES = ("api", "apis")
SPECIAL_VERBS = ("proxy", "watch")
NAMESPACE_SUBRESOURCES = ("status", "finalize")
METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
#: ListOptions query parameters that are integers: one that does not parse makes ``NewRequestInfo`` fall back to
#: reading ``watch`` alone (and never a name from the field selector).
_INT_PARAMS = ("timeoutSeconds", "limit")

BOOTSTRAP_ROLES: dict[str, list[dict[str, Any]]] = {
    "cluster-admin": [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ],
    "system:discovery": [
        {
            "verbs": ["get"],
            "nonResourceURLs": [
                *("/livez", "/readyz", "/healthz", "/version", "/version/"),
                *("/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"),
            ],
        }
    ],
    "system:basic-user": [
        {
            "verbs": ["create"],
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
        },
        {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]},
    ],
    "system:public-info-viewer": [
        {"verbs": ["get"], "nonResourceURLs": ["/livez", "/readyz", "/healthz", "/version", "/version/"]}
    ],
    "system:service-account-issuer-discovery": [
        {
            "verbs": ["get"],
            "nonResourceURLs": [
                *("/.well-known/openid-configuration", "/.well-known/openid-configuration/"),
                *("/openid/v1/jwks", "/openid/v1/jwks/"),
            ],
        }
    ],
}
"""The bootstrap ClusterRoles' rules (``policy.go`` ``ClusterRoles``) the double knows without storing them."""


def _group_binding(name: str, *groups: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups],
    }


BOOTSTRAP_BINDINGS = [
    _group_binding("cluster-admin", "system:masters"),
    _group_binding("system:discovery", "system:authenticated"),
    _group_binding("system:basic-user", "system:authenticated"),
    _group_binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
    _group_binding("system:service-account-issuer-discovery", "system:serviceaccounts"),
]
"""The bootstrap ClusterRoleBindings (``policy.go`` ``ClusterRoleBindings``) that concern the double's users."""


@dataclass(frozen=True)
class Attributes:
    """What a request asks (``authorizer.AttributesRecord``): ``resource_request`` with ``api_group``,
    ``api_version``, ``namespace`` (``""`` cluster-wide), ``resource``, ``subresource``, ``name``; else ``path``."""

    user: User
    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


# --- request attributes ----------------------------------------------------------------------------------------


def request_attributes(user: User, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The attributes of ``method`` on ``path`` (decoded) with ``query`` (first value of each parameter), as
    ``requestinfo.go`` ``NewRequestInfo``."""
    method = method.upper()
    parts = path.strip("/").split("/") if path.strip("/") else []
    plain = Attributes(user, method.lower(), path)
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return plain
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix != "api":
        if len(parts) < 3:
            return plain
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    verb = METHOD_VERBS.get(method, "")
    if parts[0] in SPECIAL_VERBS:
        if len(parts) < 2:
            # the real server answers 500 here (it cannot parse the request); a denial is the closest the double has
            return Attributes(user, parts[0], path, True, group, version)
        verb, parts = parts[0], parts[1:]
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        verb, name = _list_verb(query)
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, path, True, group, version, namespace, resource, subresource, name)


def _list_verb(query: Mapping[str, str]) -> tuple[str, str]:
    """``list`` or ``watch``, and the name a ``metadata.name`` field selector requires (``NewRequestInfo`` decoding
    ``ListOptions``; a parameter that does not decode leaves only the ``watch`` flag, as there)."""
    watch = "watch" in query and query["watch"] != "0" and query["watch"].lower() != "false"
    verb = "watch" if watch else "list"
    if any(p in query and not _is_int(query[p]) for p in _INT_PARAMS):
        return verb, ""
    selector = query.get("fieldSelector")
    if not selector:
        return verb, ""
    terms = _field_terms(selector)
    if terms is None:
        return verb, ""
    for key, op, value in terms:
        if key == "metadata.name" and op in ("=", "==") and value not in (".", "..") and not set("/%") & set(value):
            return verb, value
    return verb, ""


def _is_int(text: str) -> bool:
    try:
        int(text, 10)
    except ValueError:
        return False
    return True


def _field_terms(selector: str) -> list[tuple[str, str, str]] | None:
    """A field selector's terms (apimachinery ``fields.ParseSelector``: ``,``-separated ``key=value``,
    ``key==value`` or ``key!=value``, ``\\`` escaping), or ``None`` when it does not parse."""
    terms: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in selector:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    if escaped:
        return None
    terms.append("".join(current))
    out = []
    for term in terms:
        if not term:
            continue
        for op in ("!=", "==", "="):
            at = _unescaped_find(term, op)
            if at >= 0:
                key, value = term[:at], term[at + len(op) :]
                unescaped = _unescape(value)
                if unescaped is None:
                    return None
                out.append((key, op, unescaped))
                break
        else:
            return None
    return out


def _unescaped_find(term: str, op: str) -> int:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        if term.startswith(op, i):
            return i
        i += 1
    return -1


def _unescape(value: str) -> str | None:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                return None
            out.append(value[i + 1])
            i += 2
            continue
        if value[i] in ",=":
            return None
        out.append(value[i])
        i += 1
    return "".join(out)


# --- rules -----------------------------------------------------------------------------------------------------


def _strings(rule: Rule, key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    """Whether one PolicyRule allows the request (``rbac.go`` ``RuleAllows``)."""
    verbs = _strings(rule, "verbs")
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(
            url == "*" or url == attrs.path or (url.endswith("*") and attrs.path.startswith(url.rstrip("*")))
            for url in _strings(rule, "nonResourceURLs")
        )
    groups = _strings(rule, "apiGroups")
    if "*" not in groups and attrs.api_group not in groups:
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    sub = attrs.subresource
    if not any(
        r == "*" or r == combined or (sub and len(r) == len(sub) + 2 and r.startswith("*/") and r.endswith(sub))
        for r in _strings(rule, "resources")
    ):
        return False
    names = _strings(rule, "resourceNames")
    return not names or attrs.name in names


def _applies(user: User, subjects: Any, namespace: str) -> bool:
    """Whether a binding's ``subjects`` name ``user`` (``rule.go`` ``appliesToUser``)."""
    for subject in subjects if isinstance(subjects, list) else []:
        if not isinstance(subject, dict):
            continue
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.name:
            return True
        if kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount":
            sa_namespace = subject.get("namespace") or namespace
            if sa_namespace and user.name == f"system:serviceaccount:{sa_namespace}:{name}":
                return True
    return False


class _Roles:
    """Reads the stored RBAC objects for one decision."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def cluster_role_bindings(self) -> list[dict[str, Any]]:
        stored: list[dict[str, Any]] = self.store.list(f"{RBAC}/v1/clusterrolebindings")[0]
        names = {b["metadata"]["name"] for b in stored}
        return stored + [b for b in BOOTSTRAP_BINDINGS if b["metadata"]["name"] not in names]

    def role_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return list(self.store.list(f"{RBAC}/v1/rolebindings", namespace)[0])

    def rules(self, ref: Any, namespace: str) -> tuple[list[Rule], str | None]:
        """The rules a ``roleRef`` names, or an error message (``rule.go`` ``GetRoleReferenceRules``)."""
        ref = ref if isinstance(ref, dict) else {}
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "Role":
            role = self.store.get(f"{RBAC}/v1/roles", namespace, name) if namespace else None
            if role is None:
                return [], f'role.{RBAC} "{name}" not found'
        elif kind == "ClusterRole":
            role = self.store.get(f"{RBAC}/v1/clusterroles", None, name)
            if role is None:
                if name in BOOTSTRAP_ROLES:
                    return list(BOOTSTRAP_ROLES[name]), None
                return [], f'clusterrole.{RBAC} "{name}" not found'
        else:
            return [], f'unsupported role reference kind: "{kind}"'
        rules = role.get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else [], None


def _visit(store: Any, user: User, namespace: str) -> Iterator[tuple[Rule | None, str | None]]:
    """Each rule that applies to ``user`` in ``namespace``, or an error, in ``rule.go`` ``VisitRulesFor`` order."""
    roles = _Roles(store)
    for binding in roles.cluster_role_bindings():
        if _applies(user, binding.get("subjects"), ""):
            rules, error = roles.rules(binding.get("roleRef"), "")
            if error is not None:
                yield None, error
            for rule in rules:
                yield rule, None
    if namespace:
        for binding in roles.role_bindings(namespace):
            if _applies(user, binding.get("subjects"), namespace):
                rules, error = roles.rules(binding.get("roleRef"), namespace)
                if error is not None:
                    yield None, error
                for rule in rules:
                    yield rule, None


def decide(store: Any, attrs: Attributes) -> tuple[bool, str]:
    """``(allowed, reason)`` for ``attrs`` (``rbac.go`` ``Authorize``): the reason of a denial is ``""`` or ``RBAC:
    `` and the errors met (one, or ``[a, b]`` deduplicated, as ``utilerrors.NewAggregate`` prints them)."""
    errors: list[str] = []
    for rule, error in _visit(store, attrs.user, attrs.namespace):
        if rule is not None and rule_allows(attrs, rule):
            return True, ""
        if error is not None and error not in errors:
            errors.append(error)
    if not errors:
        return False, ""
    return False, "RBAC: " + (errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")


# --- the denial ------------------------------------------------------------------------------------------------


def forbidden_message(attrs: Attributes) -> str:
    """``errors.go`` ``forbiddenMessage``."""
    if not attrs.resource_request:
        return f'User "{attrs.user.name}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    head = f'User "{attrs.user.name}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}"'
    if attrs.namespace:
        return f'{head} in the namespace "{attrs.namespace}"'
    return f"{head} at the cluster scope"


class Forbidden(ApiError):
    """The 403 a denied request gets; its ``details`` is ``{}`` rather than left out when empty (``NewForbidden``
    always sets it)."""

    def status_body(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        body = status_object("Failure", 0, message=self.message, reason=self.reason)
        body["details"] = details
        body["code"] = self.code
        return body


def _sanitized(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden(attrs: Attributes, reason: str = "") -> Forbidden:
    """The 403 for ``attrs`` (``errors.go`` ``ForbiddenStatusError``, apimachinery ``errors.NewForbidden``)."""
    detail = _sanitized(forbidden_message(attrs))
    if reason:
        detail = f"{detail}: {reason}"
    resource = attrs.resource if attrs.resource_request else ""
    group = attrs.api_group if attrs.resource_request else ""
    qualified = f"{resource}.{group}" if group else resource
    if not resource and not group:
        message = f"forbidden: {detail}"
    elif not attrs.name:
        message = f"{qualified} is forbidden: {detail}"
    else:
        message = f'{qualified} "{attrs.name}" is forbidden: {detail}'
    return Forbidden(
        403,
        "Forbidden",
        message,
        name=attrs.name,
        group=group,
        kind=resource,
        headers=[("X-Content-Type-Options", "nosniff")],
    )


def authorize(double: Any, user: User, method: str, path: str, query: Mapping[str, str]) -> None:
    """Raise :class:`Forbidden` unless RBAC allows ``user``'s request; nothing for a privileged user."""
    if user.privileged:
        return
    attrs = request_attributes(user, method, path, query)
    allowed, reason = decide(double.store, attrs)
    if not allowed:
        raise forbidden(attrs, reason)


__all__ = [
    "Attributes",
    "BOOTSTRAP_BINDINGS",
    "BOOTSTRAP_ROLES",
    "Forbidden",
    "authorize",
    "decide",
    "forbidden",
    "forbidden_message",
    "request_attributes",
    "rule_allows",
]
