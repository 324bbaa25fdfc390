"""The twin's cluster network: Service names to the local servers behind their Ready pods (the node's kube-proxy).

Inside the stack, services reach each other by Service DNS names (``http://agent-orchestrator-invoke:8081``); kube-proxy
sends a connection to one of the Service's *ready endpoints*. The twin does the same from what it watches through the
API (:class:`~fakes.kube.informer.Informer` caches, as kube-proxy watches): on a real control plane the Service's
EndpointSlices, which its controller keeps (ready, not terminating Pod endpoints, the target port resolved); on the
API double, which has no EndpointSlice controller, the pods the Service selects whose ``Ready`` condition is ``True``
and which are not terminating, the ``targetPort`` (a number or a container port name) looked up on the pod. The
pod's container port then leads to the local ``(host, port)`` its process listens on (the node's port table,
:class:`PortTable`); no pod or Service address is ever dialled. With no ready endpoint a connection is refused, as on
a cluster, so a restarting service really is unreachable for its callers.

Never used by the specs: they reach services only through ``kubectl port-forward``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from fakes.kube.client import Api
from fakes.kube.informer import Informer


class Unreachable(ConnectionError):
    """No ready endpoint (or no such Service): the connection a caller would see refused."""


@dataclass(frozen=True)
class Endpoint:
    pod: str
    container_port: int
    host: str
    port: int


def pod_ready(pod: dict[str, Any]) -> bool:
    """True when the pod is an endpoint: condition ``Ready=True`` and no ``deletionTimestamp``."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def container_port(pod: dict[str, Any], target: int | str) -> int | None:
    """The container port a Service's ``targetPort`` names on ``pod`` (numbers pass through)."""
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target:
                return int(port["containerPort"])
    return None


SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
SERVICE_NAME = "kubernetes.io/service-name"
"""The label the EndpointSlice controller puts on a Service's slices."""


class PortTable(Protocol):
    """Where a pod's container port listens on this machine (the node's runtime knows)."""

    def target(self, namespace: str, pod: str, port: int) -> tuple[str, int] | None: ...


class Network:
    """Resolve ``<service>[.<namespace>[.svc[.cluster.local]]]:<port>`` to a ready pod's local address, from the
    Services of every namespace and, with ``endpoint_slices``, the EndpointSlices the cluster's controller keeps
    for them (as kube-proxy reads them), else the pods they select (the API double runs no EndpointSlice
    controller), all as ``api`` lists and watches them (:meth:`start`, :meth:`stop`)."""

    def __init__(self, api: Api, ports: PortTable, namespace: str, *, endpoint_slices: bool = False) -> None:
        self.ports = ports
        self.namespace = namespace
        self.services = Informer(api, "/api/v1/services")
        self.sources = Informer(api, SLICES if endpoint_slices else "/api/v1/pods")
        self.endpoint_slices = endpoint_slices

    async def start(self, timeout: float) -> None:
        """Returns once both lists are in. Raises ``InformerNotSynced`` after ``timeout`` seconds."""
        await asyncio.gather(self.services.start(timeout), self.sources.start(timeout))

    async def stop(self) -> None:
        await asyncio.gather(self.services.stop(), self.sources.stop())

    def split_host(self, host: str) -> tuple[str, str]:
        parts = host.split(".")
        if len(parts) >= 2 and parts[1] not in ("svc",):
            return parts[0], parts[1]
        return parts[0], self.namespace

    def endpoints(self, service: str, port: int, namespace: str | None = None) -> list[Endpoint]:
        """Every ready endpoint of ``service``'s ``port`` (the Service port, as a caller dials it)."""
        ns = namespace or self.namespace
        svc = self.services.get(service, ns)
        if svc is None:
            return []
        spec = svc.get("spec") or {}
        target: int | str | None = None
        port_name = ""
        for entry in spec.get("ports") or []:
            if int(entry.get("port", 0)) == port:
                target, port_name = entry.get("targetPort", port), str(entry.get("name") or "")
        if target is None or not spec.get("selector"):
            return []
        if self.endpoint_slices:
            return self._from_slices(service, ns, port_name)
        selector = dict(spec["selector"])  # a Service selects by equality on every label it names
        found = []
        for pod in self.sources.items():
            labels = pod.get("metadata", {}).get("labels") or {}
            if pod["metadata"].get("namespace") != ns or not pod_ready(pod):
                continue
            if any(labels.get(key) != value for key, value in selector.items()):
                continue
            number = container_port(pod, target)
            mapped = self.ports.target(ns, pod["metadata"]["name"], number) if number is not None else None
            if mapped is not None:
                found.append(Endpoint(pod["metadata"]["name"], number or 0, mapped[0], mapped[1]))
        return found

    def _from_slices(self, service: str, ns: str, port_name: str) -> list[Endpoint]:
        """The ready, not terminating Pod endpoints of the Service's slices for its port named ``port_name``
        (``discovery.k8s.io/v1``: a slice's port carries the resolved target port number)."""
        found = []
        for piece in self.sources.items():
            meta = piece.get("metadata") or {}
            if meta.get("namespace") != ns or (meta.get("labels") or {}).get(SERVICE_NAME) != service:
                continue
            number = next((p.get("port") for p in piece.get("ports") or [] if (p.get("name") or "") == port_name), None)
            if number is None:
                continue
            for endpoint in piece.get("endpoints") or []:
                conditions, ref = endpoint.get("conditions") or {}, endpoint.get("targetRef") or {}
                if conditions.get("ready") is False or conditions.get("terminating") or ref.get("kind") != "Pod":
                    continue
                mapped = self.ports.target(ns, str(ref.get("name")), int(number))
                if mapped is not None:
                    found.append(Endpoint(str(ref["name"]), int(number), mapped[0], mapped[1]))
        return found

    def resolve(self, host: str, port: int) -> Endpoint:
        """One ready endpoint, chosen at random as kube-proxy does. Raises :class:`Unreachable`."""
        service, ns = self.split_host(host)
        found = self.endpoints(service, port, ns)
        if not found:
            raise Unreachable(f"connection refused: service {ns}/{service}:{port} has no ready endpoint")
        return random.choice(found)

    def url(self, url: str) -> str:
        """``url`` with its host and port replaced by a ready endpoint's local address."""
        parts = urlsplit(url)
        default = 443 if parts.scheme == "https" else 80
        endpoint = self.resolve(parts.hostname or "", parts.port or default)
        return urlunsplit((parts.scheme, f"{endpoint.host}:{endpoint.port}", parts.path, parts.query, parts.fragment))


class ClusterClient:
    """An ``httpx.AsyncClient`` whose requests go to cluster URLs through :class:`Network` (bounded timeouts)."""

    def __init__(self, network: Network, *, timeout: float = 10.0) -> None:
        self.network = network
        self.client = httpx.AsyncClient(timeout=timeout, trust_env=False)

    async def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send to a ready endpoint of the URL's Service. Raises :class:`Unreachable` or ``httpx.HTTPError``."""
        local = self.network.url(url)
        headers = dict(kwargs.pop("headers", None) or {})
        headers.setdefault("host", urlsplit(url).netloc)
        return await self.client.request(method, local, headers=headers, **kwargs)

    async def aclose(self) -> None:
        await self.client.aclose()
