"""HTTP to the components while a start runs: the API server as the plane's admin, and the others' health
endpoints. Every request is bounded by :data:`REQUEST_TIMEOUT`; specs reach the plane through kubectl or the
kubernetes client (:meth:`harness.controlplane.plane.ControlPlane.kube`), never through this."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from typing import Any

import httpx

from harness.controlplane.pki import Pki
from harness.errors import ControlPlaneStartFailed

REQUEST_TIMEOUT = 5.0
"""Seconds one request to a component may take."""


class AdminClient:
    """JSON requests to the API server at ``url`` with the admin's client certificate (one TLS context, one
    connection pool); ``close()`` when done."""

    def __init__(self, url: str, pki: Pki) -> None:
        self.url = url
        context = ssl.create_default_context(cafile=str(pki.ca.cert))
        context.load_cert_chain(str(pki.admin.cert), str(pki.admin.key))
        self._client = httpx.Client(verify=context, timeout=REQUEST_TIMEOUT)

    def ready(self) -> bool:
        """``/readyz`` answers 200 (any transport error: not yet)."""
        try:
            return self._client.get(f"{self.url}/readyz").status_code == 200
        except httpx.HTTPError:
            return False

    def request(self, method: str, path: str, body: object | None = None) -> dict[str, Any]:
        """Raises :class:`ControlPlaneStartFailed` on an error status, quoting the API server's answer;
        ``httpx.HTTPError`` when there is no answer."""
        answer = self._client.request(
            method,
            self.url + path,
            content=json.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json"},
        )
        if answer.status_code >= 400:
            raise ControlPlaneStartFailed(
                f"{method} {path} answered {answer.status_code}: {answer.text[:300]}", component="kube-apiserver"
            )
        result: dict[str, Any] = answer.json()
        return result

    def exists(self, path: str) -> bool:
        return self._client.get(self.url + path).status_code == 200

    def close(self) -> None:
        self._client.close()


def health_probe(url: str) -> Callable[[], bool]:
    """A probe that is true when ``url`` answers 200. The certificate is not checked: kube-controller-manager and
    kube-scheduler serve a self-signed one of their own, and only the answer's status matters here."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def probe() -> bool:
        try:
            return httpx.get(url, verify=context, timeout=REQUEST_TIMEOUT).status_code == 200
        except httpx.HTTPError:
            return False

    return probe
