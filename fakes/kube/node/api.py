"""The node's client of the API server: JSON over HTTPS with the kubeconfig's client certificate (httpx).

Only what a kubelet does: read, create, patch and delete objects, and watch a list from a resourceVersion,
listing again on ``410 Gone`` (``Expired``), as client-go's reflector does. Every call is bounded by
:data:`CALL_TIMEOUT`; a watch by its ``timeoutSeconds`` (:data:`WATCH_SECONDS`) and a read timeout just above it.
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
    """A non-2xx answer: ``status`` (the HTTP code), ``reason`` (the Status's ``reason``) and its message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason = status, reason


class Api:
    """One API server, as the kubeconfig's current (or named) context gives it."""

    def __init__(self, kubeconfig: Path, context: str | None = None) -> None:
        config = yaml.safe_load(Path(kubeconfig).read_text())
        name = context or config["current-context"]
        ctx = next(c["context"] for c in config["contexts"] if c["name"] == name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])
        self.server = str(cluster["server"]).rstrip("/")
        tls = ssl.create_default_context()
        with tempfile.TemporaryDirectory(prefix="node-api-") as folder:
            tls.load_verify_locations(_path(cluster, "certificate-authority", folder))
            tls.load_cert_chain(_path(user, "client-certificate", folder), _path(user, "client-key", folder))
        self._client = httpx.AsyncClient(base_url=self.server, verify=tls, timeout=CALL_TIMEOUT)

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


def _path(entry: Obj, key: str, folder: str) -> str:
    """A kubeconfig's file entry (``key``) or its ``-data`` form written to ``folder``."""
    if entry.get(key):
        return str(entry[key])
    target = os.path.join(folder, key)
    with open(target, "wb") as out:
        out.write(base64.b64decode(entry[f"{key}-data"]))
    return target
