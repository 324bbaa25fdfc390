r"""What discovery advertises for one resource type: :class:`ResourceType` (group, version, plural, kind, scope, verbs,
short names, categories, subresources) and its :class:`Subresource`\ s.

A leaf module, so the catalogue of built-in types (:mod:`fakes.kube.catalog`) and the
:class:`~fakes.kube.resources.Registry` that serves it both build on it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class Subresource:
    """A subresource as discovery lists it: ``status``/``scale`` (object-shaped) or a connect verb (``exec``)."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


@dataclass(frozen=True)
class ResourceType:
    """One served group/version/resource.

    ``key`` (``"apps/deployments"``, ``"/pods"`` for core) identifies the stored collection across versions;
    ``has_generation``: the server keeps ``metadata.generation`` (bumped on spec changes); ``status_subresource``:
    the main resource ignores ``status`` on writes and ``/status`` ignores everything else; ``custom``: served from a
    CRD (no strategic merge patch, merge patch instead of it in kubectl).
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = ()
    has_generation: bool = False
    custom: bool = False
    #: CRD ``additionalPrinterColumns`` for the Table answer (name, type, jsonPath, description, priority).
    printer_columns: tuple[dict[str, Any], ...] = ()
    #: CRD openAPIV3Schema of this version, when declared (validation of required fields, defaults).
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    #: The Kubernetes minors (first, last) whose default API server serves this group-version.
    minors: tuple[int, int] = (0, 999)

    @property
    def key(self) -> str:
        return f"{self.group}/{self.plural}"

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def status_subresource(self) -> bool:
        return any(s.name == "status" for s in self.subresources)

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)

    @property
    def qualified(self) -> str:
        """``deployments.apps`` (``pods`` for core): how errors name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def base_path(self, namespace: str | None = None) -> str:
        """``/apis/apps/v1/namespaces/NS/deployments`` (or without the namespace part)."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"
