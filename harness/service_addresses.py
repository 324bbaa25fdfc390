"""The in-cluster mode's ``forwards``: a Service's in-cluster address in place of a kubectl port-forward.

A spec asks the ``forwards`` fixture for ``forwards.get(kube, "svc/NAME", PORT)`` in both modes. In a pod
(``--in-cluster``) the answer is :class:`ServiceAddress`, ``http://NAME.NAMESPACE.svc:PORT`` (the Service's DNS name,
Kubernetes docs "DNS for Services and Pods"): no kubectl runs, nothing can die between the spec and the Service,
so the forward failures of :func:`harness.fetch_through` never arise and its service failures name the Service.

A cluster without cluster DNS, or a node whose pods are processes on one machine, gives the addresses instead:
:data:`ADDRESSES_ENV` holds a JSON object from ``"svc/NAME:PORT"`` (or ``"NAMESPACE/svc/NAME:PORT"``) to
``"HOST:PORT"``; a target it names is dialled there, any other by DNS name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from harness.kube import Kube

ADDRESSES_ENV = "HARNESS_SERVICE_ADDRESSES"


class ServiceAddress:
    """A Service reached directly: what :func:`harness.fetch_through` needs of a forward (``target``,
    ``base_url``; it never dies, so every forward question answers "no"), plus ``host`` and ``port``."""

    def __init__(self, target: str, host: str, port: int) -> None:
        self.target, self.host, self.port = target, host, port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        return True

    def gone_reason(self) -> str | None:
        return None

    def exit_summary(self) -> str | None:
        return None

    def exit_code(self) -> int | None:
        return None

    def broken_reason(self) -> str | None:
        return None

    def stderr_tail(self) -> str:
        return ""

    def note_answer(self) -> None:
        pass

    def note_reset(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"ServiceAddress({self.target} at {self.host}:{self.port})"


class ServiceAddresses:
    """The ``forwards`` pool of the in-cluster mode: :meth:`get` / :meth:`aget` as :class:`harness.ForwardPool`
    has them. ``addresses`` (default: :data:`ADDRESSES_ENV` parsed) maps targets to ``HOST:PORT``. Raises
    ``ValueError`` at construction for a malformed map."""

    opened = 0
    """kubectl children started: none, ever."""

    def __init__(self, addresses: Mapping[str, str] | None = None) -> None:
        self.addresses = dict(_from_env() if addresses is None else addresses)
        for key, value in self.addresses.items():
            _split(value, key)

    def get(self, kube: Kube, target: str, remote_port: int, *, ready_path: str | None = None) -> ServiceAddress:
        """The address of ``target`` (``svc/NAME``) port ``remote_port`` in ``kube``'s namespace. Raises
        ``ValueError`` for another kind of target: only Services have an in-cluster address to dial."""
        kind, _, name = target.partition("/")
        if kind not in ("svc", "service") or not name:
            raise ValueError(
                f"in-cluster mode dials Services only ('svc/NAME'), got {target!r}: a pod's address is not stable "
                f"and the harness never dials one; put a Service in front of it"
            )
        for key in (f"{kube.namespace}/svc/{name}:{remote_port}", f"svc/{name}:{remote_port}"):
            if key in self.addresses:
                host, port = _split(self.addresses[key], key)
                return ServiceAddress(target, host, port)
        return ServiceAddress(target, f"{name}.{kube.namespace}.svc", remote_port)

    async def aget(self, kube: Kube, target: str, remote_port: int, *, ready_path: str | None = None) -> ServiceAddress:
        """:meth:`get`, for async specs (nothing to await: no process starts)."""
        return self.get(kube, target, remote_port, ready_path=ready_path)

    def close(self) -> None:
        pass


def _from_env() -> dict[str, str]:
    text = os.environ.get(ADDRESSES_ENV, "")
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{ADDRESSES_ENV} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f'{ADDRESSES_ENV} must be a JSON object of "svc/NAME:PORT": "HOST:PORT", got {text!r}')
    return data


def _split(address: str, key: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{ADDRESSES_ENV}: {key!r} maps to {address!r}, not HOST:PORT")
    return host.strip("[]"), int(port)
