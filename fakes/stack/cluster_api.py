"""A twin service's client of the Kubernetes API: what the product's services do with client-go, over HTTP.

Each service instance gets one from its node (``PodContext.api``): the API server of the cluster the twin runs on,
authenticated with the ServiceAccount token the node requested for its pod (TokenRequest, as a kubelet's projected
volume does), so RBAC decides what it may do, as for the real service. Resources are named ``plural.group`` as the
twin uses (``agentruns.core.controller-agent.dev``, ``jobs.batch``, ``secrets``), in the pod's namespace.

Writes that change a live object (:meth:`ClusterApi.mutate`) read it, change the copy and ``PUT`` it back with its
resourceVersion, again on ``409 Conflict`` as client-go's ``retry.RetryOnConflict`` does (``DefaultRetry``: 5
attempts). Watches are :class:`~fakes.kube.informer.Informer` caches that resume from their resourceVersion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fakes.kube.client import Api, ApiError, resource_path
from fakes.kube.informer import Handler, Informer
from fakes.stack import config

Obj = dict[str, Any]
CONFLICT_ATTEMPTS = 5
"""Attempts of a read-change-write on ``409 Conflict``: client-go's ``retry.DefaultRetry`` steps."""
CONFLICT_PAUSE = 0.01
"""Seconds between two attempts: ``retry.DefaultRetry``'s 10 ms."""
GROUP_VERSIONS = {"": "v1", "batch": "v1", "apps": "v1", config.GROUP: config.VERSION}
"""The version served for each group the twin's services use."""

__all__ = ["ApiError", "ClusterApi"]


class ClusterApi:
    """``ClusterApi(api, namespace)``: the resources of ``namespace`` through ``api``. Every call raises
    :class:`~fakes.kube.client.ApiError` for an answer it does not expect (``403`` from RBAC included) and
    ``httpx.HTTPError`` for a transport failure; each is bounded by the client's call timeout."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api, self.namespace = api, namespace

    def path(self, resource: str, name: str | None = None, sub: str = "") -> str:
        plural, _, group = resource.partition(".")
        return resource_path(group, GROUP_VERSIONS[group], plural, self.namespace, name, sub)

    async def get(self, resource: str, name: str) -> Obj | None:
        """The object, or ``None`` when there is none."""
        return await self.api.get(self.path(resource, name))

    async def list(self, resource: str, **params: Any) -> list[Obj]:
        """The items of one list (``params``: ``labelSelector``, ``fieldSelector``)."""
        listing = await self.api.call("GET", self.path(resource), **params)
        return list(listing.get("items") or [])

    async def create(self, resource: str, obj: Obj) -> Obj:
        return await self.api.call("POST", self.path(resource), obj)

    async def replace(self, resource: str, obj: Obj, sub: str = "") -> Obj:
        """``PUT`` of ``obj`` (its ``metadata.resourceVersion``, when set, must be current: else ``409``)."""
        return await self.api.call("PUT", self.path(resource, obj["metadata"]["name"], sub), obj)

    async def delete(self, resource: str, name: str, *, missing_ok: bool = True) -> None:
        try:
            await self.api.call("DELETE", self.path(resource, name))
        except ApiError as exc:
            if exc.status != 404 or not missing_ok:
                raise

    async def mutate(self, resource: str, name: str, change: Callable[[Obj], bool], sub: str = "") -> Obj | None:
        """Read ``name``, apply ``change`` to it (it returns ``False`` to write nothing) and write it back (to the
        subresource ``sub``), again on ``409``. The object written, or ``None`` when it is gone or unchanged."""
        for attempt in range(CONFLICT_ATTEMPTS):
            current = await self.get(resource, name)
            if current is None or not change(current):
                return None
            try:
                return await self.replace(resource, current, sub)
            except ApiError as exc:
                if exc.status != 409 or attempt == CONFLICT_ATTEMPTS - 1:
                    raise
            await asyncio.sleep(CONFLICT_PAUSE)
        return None

    def informer(self, resource: str, on_event: Handler | None = None, **params: Any) -> Informer:
        """A watch-backed cache of ``resource`` in the namespace (start it with ``await informer.start(t)``)."""
        return Informer(self.api, self.path(resource), on_event=on_event, **params)
