"""A small async client of a Kubernetes API server: JSON over http(s) (httpx), for the fakes that act as a cluster's
components (the local node, the stack twin's services).

Credentials as a kubeconfig gives them (a client certificate or a bearer token, the CA to trust) or a bearer token
alone (a pod's ServiceAccount token, :meth:`Api.with_token`). Reads, writes (``PATCH`` as a JSON merge patch), and a
watch of a list from a resourceVersion that lists again on ``410 Gone`` (``Expired``), as client-go's reflector does.
Every call is bounded by :data:`CALL_TIMEOUT`; a watch by its ``timeoutSeconds`` (:data:`WATCH_SECONDS`) and a read
timeout just above it.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import yaml

CALL_TIMEOUT = 10.0
WATCH_SECONDS = 60
"""The ``timeoutSeconds`` of one watch request; the API server ends it then and the node watches again."""
Obj = dict[str, Any]


class ApiError(Exception):
    """A non-2xx answer: ``status`` (the HTTP code, also as ``code``), ``reason`` (the Status's ``reason``) and its
    ``message``."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message

    @property
    def code(self) -> int:
        return self.status


class Api:
    """One API server at ``server`` (``https://host:port`` or ``http://...``), with ``token`` as the bearer and
    ``tls`` (client certificate, CA) for https. :meth:`from_kubeconfig` reads both from a kubeconfig."""

    def __init__(self, server: str, *, token: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.server, self.token, self.tls = server.rstrip("/"), token, tls
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(
            base_url=self.server, verify=tls or True, timeout=CALL_TIMEOUT, headers=headers, trust_env=False
        )

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path | str, context: str | None = None) -> Api:
        """The server, credentials and CA of ``kubeconfig``'s ``context`` (default: its current context)."""
        config = yaml.safe_load(Path(kubeconfig).read_text())
        name = context or config["current-context"]
        ctx = next(c["context"] for c in config["contexts"] if c["name"] == name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])
        server = str(cluster["server"])
        if not server.startswith("https:"):
            return cls(server, token=user.get("token"))
        tls = ssl.create_default_context()
        with tempfile.TemporaryDirectory(prefix="kube-client-") as folder:
            if cluster.get("certificate-authority") or cluster.get("certificate-authority-data"):
                tls.load_verify_locations(_path(cluster, "certificate-authority", folder))
            if user.get("client-certificate") or user.get("client-certificate-data"):
                tls.load_cert_chain(_path(user, "client-certificate", folder), _path(user, "client-key", folder))
        return cls(server, token=user.get("token"), tls=tls)

    def set_token(self, token: str) -> None:
        """Authenticate the next requests with ``token`` (a refreshed ServiceAccount token)."""
        self.token = token
        self._client.headers["Authorization"] = f"Bearer {token}"

    def with_token(self, token: str) -> Api:
        """A client of the same server and CA that authenticates with ``token`` alone (no client certificate),
        as a pod does with its ServiceAccount token."""
        tls = None
        if self.tls is not None:
            tls = ssl.create_default_context()
            tls.load_verify_locations(cadata=_ca_pems(self.tls))
        return Api(self.server, token=token, tls=tls)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def call(self, method: str, path: str, body: Obj | None = None, **params: Any) -> Obj:
        """One request; the decoded answer. Raises :class:`ApiError` for a non-2xx answer, ``httpx.HTTPError`` for
        a transport failure or timeout."""
        headers = {"Accept": "application/json"}
        content = None
        if body is not None:
            content = json.dumps(body).encode()
            headers["Content-Type"] = "application/merge-patch+json" if method == "PATCH" else "application/json"
        answer = await self._client.request(method, path, content=content, headers=headers, params=params or None)
        return _decoded(answer)

    async def get(self, path: str, **params: Any) -> Obj | None:
        """The object at ``path``, or ``None`` on ``404``. Raises :class:`ApiError` for another non-2xx answer."""
        try:
            return await self.call("GET", path, **params)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def watch(self, path: str, **params: Any) -> AsyncIterator[Obj]:
        """``ADDED``/``MODIFIED``/``DELETED`` events of the list at ``path``, forever: a list first (its items as
        ``ADDED``, then ``{"type": "SYNCED", "keys": [(namespace, name), ...]}`` so the caller can drop what went
        while it was not watching), then watches from the last resourceVersion (bookmarks asked for); a watch the
        server ends is started again from there, ``410 Gone`` lists again."""
        while True:
            listing = await self.call("GET", path, **params)
            version = str(listing["metadata"]["resourceVersion"])
            for item in listing.get("items") or []:
                yield {"type": "ADDED", "object": item}
            yield {"type": "SYNCED", "keys": [_key(i) for i in listing.get("items") or []]}
            expired = False
            while not expired:
                try:
                    async for event in self._events(path, version, params):
                        if event.get("type") == "ERROR":  # 410 Expired inside the stream
                            expired = True
                            break
                        version = str(event["object"]["metadata"].get("resourceVersion") or version)
                        if event.get("type") != "BOOKMARK":
                            yield event
                except ApiError as exc:
                    if exc.status != 410:
                        raise
                    expired = True
                except httpx.TransportError:
                    continue  # the stream broke or idled past its read timeout: watch again from `version`

    async def _events(self, path: str, version: str, params: dict[str, Any]) -> AsyncIterator[Obj]:
        query = {
            **params,
            "watch": "true",
            "resourceVersion": version,
            "timeoutSeconds": str(WATCH_SECONDS),
            "allowWatchBookmarks": "true",
        }
        timeout = httpx.Timeout(CALL_TIMEOUT, read=WATCH_SECONDS + CALL_TIMEOUT)
        async with self._client.stream("GET", path, params=query, timeout=timeout) as answer:
            if answer.status_code >= 300:
                await answer.aread()
                _decoded(answer)
            async for line in answer.aiter_lines():
                if line.strip():
                    yield json.loads(line)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _decoded(answer: httpx.Response) -> Obj:
    try:
        body = answer.json() if answer.content else {}
    except ValueError:
        body = {"message": answer.text[:500]}
    if answer.status_code >= 300:
        raise ApiError(answer.status_code, str(body.get("reason") or ""), str(body.get("message") or ""))
    return dict(body)


def _ca_pems(tls: ssl.SSLContext) -> str:
    """The CA certificates ``tls`` trusts, as PEM text."""
    return "".join(ssl.DER_cert_to_PEM_cert(der) for der in tls.get_ca_certs(binary_form=True))


def resource_path(
    group: str, version: str, plural: str, namespace: str | None = None, name: str | None = None, sub: str = ""
) -> str:
    """The REST path of a resource (``/api/v1/...`` for the core group ``""``, ``/apis/<group>/<version>/...``),
    namespaced when ``namespace`` is given, of one object when ``name`` is, of its subresource ``sub``."""
    path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    if namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    if name:
        path += f"/{name}"
    return f"{path}/{sub}" if sub and name else path


def _path(entry: Obj, key: str, folder: str) -> str:
    """A kubeconfig's file entry (``key``) or its ``-data`` form written to ``folder``."""
    if entry.get(key):
        return str(entry[key])
    target = os.path.join(folder, key)
    with open(target, "wb") as out:
        out.write(base64.b64decode(entry[f"{key}-data"]))
    return target
