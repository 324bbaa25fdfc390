"""Which resource types the double serves: the built-in kinds the stack uses, plus one per served CRD version.

A :class:`ResourceType` is what discovery advertises for one group/version/resource (plural, singular, kind, scope,
verbs, short names, categories, subresources), the same facts a real server lists in ``/api/v1`` and
``/apis/<group>/<version>``. The :class:`Registry` resolves them by URL (group, version, plural), by kubectl-style
names (``deploy``, ``deployments.apps``, ``Deployment``) and by kind; creating a ``CustomResourceDefinition`` adds
its served versions (:meth:`Registry.set_crd`), deleting it removes them.

Objects are stored once per group and resource; a CRD serving several versions answers the same objects under each
(``apiVersion`` rewritten, no conversion: the ``None`` conversion strategy).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from fakes.kube.resource_types import ALL_VERBS as ALL_VERBS
from fakes.kube.resource_types import STATUS_VERBS as STATUS_VERBS
from fakes.kube.resource_types import ResourceType as ResourceType
from fakes.kube.resource_types import Subresource as Subresource


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, STATUS_VERBS)


def _scale() -> Subresource:
    return Subresource("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")


def _connect(name: str, verbs: tuple[str, ...] = ("create", "get")) -> Subresource:
    return Subresource(
        name,
        "PodExecOptions"
        if name in ("exec", "attach")
        else "PodPortForwardOptions"
        if name == "portforward"
        else "Pod"
        if name == "log"
        else "PodProxyOptions",
        verbs,
    )


_CORE_NS = ("create", "delete", "get", "list", "patch", "update", "watch")

BUILTINS: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        short_names=("ns",),
        verbs=_CORE_NS,
        subresources=(Subresource("finalize", "Namespace", ("update",)), _status("Namespace")),
    ),
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        short_names=("po",),
        categories=("all",),
        subresources=(
            _connect("attach"),
            Subresource("binding", "Binding", ("create",)),
            Subresource("ephemeralcontainers", "Pod", STATUS_VERBS),
            Subresource("eviction", "Eviction", ("create",)),
            _connect("exec"),
            Subresource("log", "Pod", ("get",)),
            _connect("portforward"),
            _connect("proxy", ("create", "delete", "get", "patch", "update")),
            Subresource("resize", "Pod", STATUS_VERBS),
            _status("Pod"),
        ),
        has_generation=True,
    ),
    ResourceType(
        "",
        "v1",
        "services",
        "Service",
        True,
        short_names=("svc",),
        categories=("all",),
        subresources=(_connect("proxy", ("create", "delete", "get", "patch", "update")), _status("Service")),
    ),
    ResourceType("", "v1", "endpoints", "Endpoints", True, singular="endpoints", short_names=("ep",)),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
    ResourceType("", "v1", "secrets", "Secret", True),
    ResourceType(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        True,
        short_names=("sa",),
        subresources=(Subresource("token", "TokenRequest", ("create",), "authentication.k8s.io", "v1"),),
    ),
    ResourceType("", "v1", "events", "Event", True, short_names=("ev",)),
    ResourceType(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        short_names=("deploy",),
        categories=("all",),
        subresources=(_scale(), _status("Deployment")),
        has_generation=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        short_names=("rs",),
        categories=("all",),
        subresources=(_scale(), _status("ReplicaSet")),
        has_generation=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        short_names=("sts",),
        categories=("all",),
        subresources=(_scale(), _status("StatefulSet")),
        has_generation=True,
    ),
    ResourceType(
        "batch", "v1", "jobs", "Job", True, categories=("all",), subresources=(_status("Job"),), has_generation=True
    ),
    ResourceType(
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        True,
        short_names=("cj",),
        categories=("all",),
        subresources=(_status("CronJob"),),
        has_generation=True,
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=(_status("CustomResourceDefinition"),),
        has_generation=True,
    ),
)


def server_minor(git_version: str) -> int:
    """``32`` for ``v1.32.4`` (32 when it cannot be read)."""
    try:
        return int(git_version.lstrip("v").split(".")[1])
    except (IndexError, ValueError):
        return 32


class Registry:
    """The served resource types; thread-safe; CRD types come and go with their CRDs.

    ``minor`` is the Kubernetes minor the double reports (32 for ``v1.32.4``): it picks the group-versions a
    default API server of that version serves (:mod:`fakes.kube.catalog`). ``changes`` counts registry changes, so
    discovery answers can carry a fresh hash after a CRD appears.
    """

    def __init__(self, minor: int = 32) -> None:
        from fakes.kube.catalog import CORE, GROUPS  # catalog builds on this module's types

        self._lock = threading.Lock()
        self.minor = minor
        served = [t for t in (*BUILTINS, *CORE, *GROUPS) if t.minors[0] <= minor <= t.minors[1]]
        self._types: list[ResourceType] = served
        self._crds: dict[str, list[ResourceType]] = {}
        self.changes = 0

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types) + [t for ts in self._crds.values() for t in ts]

    def groups(self) -> list[tuple[str, list[str]]]:
        """``[(group, [versions...])]`` in discovery order; the first version of each group is preferred."""
        order: dict[str, list[str]] = {}
        for t in self.all():
            versions = order.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
        from fakes.kube.catalog import GROUP_ORDER

        known = [g for g in GROUP_ORDER if g in order]
        return [(g, order[g]) for g in known + sorted(g for g in order if g not in GROUP_ORDER)]

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        """The group-version's resources sorted by plural, as the API server lists them."""
        return sorted((t for t in self.all() if t.group == group and t.version == version), key=lambda t: t.plural)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/<group>/<version>/.../<plural>`` (``group`` ``""`` = ``/api/v1``)."""
        return next((t for t in self.all() if t.group == group and t.version == version and t.plural == plural), None)

    def by_key(self, key: str) -> ResourceType | None:
        """The preferred (first served) version of the collection ``key`` (``"apps/deployments"``)."""
        return next((t for t in self.all() if t.key == key), None)

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        return next((t for t in self.all() if t.group == group and t.version == version and t.kind == kind), None)

    def resolve(self, name: str | ResourceType) -> ResourceType:
        """A type from kubectl-style ``name``: ``pods``, ``po``, ``pod``, ``Pod``, ``deployments.apps``,
        ``apps/v1/deployments``, ``widgets.example.com`` (a CRD's kind). Raises ``KeyError`` naming it."""
        if isinstance(name, ResourceType):
            return name
        if name.count("/") == 2 or (name.count("/") == 1 and not name.startswith("/")):
            parts = name.split("/")
            found = self.lookup(*parts) if len(parts) == 3 else self.lookup("", parts[0], parts[1])
            if found:
                return found
        lowered = name.lower()
        head, _, group = lowered.partition(".")
        for candidate in self.all():
            if group and candidate.group != group:
                continue
            names = {candidate.plural, candidate.singular_name, candidate.kind.lower(), *candidate.short_names}
            if head in names or (not group and lowered in names):
                return candidate
        raise KeyError(f"the double serves no resource type {name!r}")

    def set_crd(self, crd: dict[str, Any]) -> None:
        """Serve (or re-serve) the versions of ``crd`` (a stored CustomResourceDefinition object)."""
        types = crd_types(crd)
        with self._lock:
            self._crds[crd["metadata"]["name"]] = types
            self.changes += 1

    def remove_crd(self, name: str) -> None:
        with self._lock:
            if self._crds.pop(name, None) is not None:
                self.changes += 1

    def reset(self) -> None:
        with self._lock:
            self._crds.clear()
            self.changes += 1


def crd_types(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a CRD serves: one per ``spec.versions[*]`` with ``served: true``."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out: list[ResourceType] = []
    versions: Iterable[dict[str, Any]] = spec.get("versions") or []
    for v in versions:
        if not v.get("served", True):
            continue
        subs: list[Subresource] = []
        declared = v.get("subresources") or {}
        if "scale" in declared:
            subs.append(Subresource("scale", "Scale", STATUS_VERBS, "autoscaling", "v1"))
        if "status" in declared:
            subs.append(Subresource("status", names.get("kind", ""), STATUS_VERBS))
        out.append(
            ResourceType(
                group=spec.get("group", ""),
                version=v.get("name", ""),
                plural=names.get("plural", ""),
                kind=names.get("kind", ""),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular", ""),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=tuple(subs),
                has_generation=True,
                custom=True,
                printer_columns=tuple(v.get("additionalPrinterColumns") or ()),
                schema=(v.get("schema") or {}).get("openAPIV3Schema"),
            )
        )
    return out
