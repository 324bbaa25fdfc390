"""A small Kubernetes API server stand-in on 127.0.0.1, for cluster-free specs that run the *real* kubectl.

It answers only what those specs need: legacy discovery (``/api``, ``/apis``, ``/api/v1``, ``/apis/apps/v1``),
``/version``, ``GET``/``DELETE`` of the objects it holds, lists (with ``fieldSelector=metadata.name=X``) and watches
that stay open without events until the server stops. ``status_for`` answers chosen paths with a fixed HTTP status
(``{"/version": 404}``, or ``{"*": 401}`` for every path) in the API's ``Status`` shape. Every request is recorded
in ``requests`` as ``(method, path)``.

Helpers for API servers that are not there: :func:`refusing_port` (bound, never listening: connections are
refused) and :func:`silent_port` (listening, never accepting: the handshake completes and nothing is ever said).
:func:`write_kubeconfig` writes a kubeconfig whose context (the caller names it) points at any of them.

Built on the standard library's ``ThreadingHTTPServer``; :meth:`StubApiServer.stop` releases held watches, shuts
down every open connection (a client's idle keep-alive connection would otherwise hold its handler thread in a
read forever) and joins every thread. A client that goes away is not an error here (nothing is printed).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

_HOLD = 120.0
"""Longest a watch is held open if the server is never stopped (seconds)."""

_CORE_RESOURCES = [
    {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "shortNames": ["po"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
    },
    {
        "name": "namespaces",
        "singularName": "namespace",
        "namespaced": False,
        "kind": "Namespace",
        "shortNames": ["ns"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
    },
]
_APPS_RESOURCES = [
    {
        "name": "deployments",
        "singularName": "deployment",
        "namespaced": True,
        "kind": "Deployment",
        "shortNames": ["deploy"],
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
    },
]
_DISCOVERY: dict[str, dict[str, Any]] = {
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    },
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            }
        ],
    },
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": _CORE_RESOURCES},
    "/apis/apps/v1": {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "apps/v1",
        "resources": _APPS_RESOURCES,
    },
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0-stub", "platform": "linux/amd64"},
}
_LIST_KINDS = {"pods": "PodList", "deployments": "DeploymentList", "namespaces": "NamespaceList"}


class StubApiServer:
    """Serve on ``127.0.0.1:<OS-chosen port>`` until :meth:`stop`; use as a context manager.

    ``objects`` maps an object's API path (``/api/v1/namespaces/NS/pods/NAME``) to its JSON; ``status_for`` maps a
    path (or ``"*"``) to an HTTP status every request for it gets. ``url`` is ``http://127.0.0.1:PORT``.
    """

    def __init__(
        self, objects: dict[str, dict[str, Any]] | None = None, status_for: dict[str, int] | None = None
    ) -> None:
        self.objects: dict[str, dict[str, Any]] = dict(objects or {})
        self.status_for = dict(status_for or {})
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        server = self

        class Handler(_Handler):
            stub = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = False
        self._httpd.block_on_close = True
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"stub-apiserver-{self.port}"
        )

    def start(self) -> StubApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release held watches, stop serving, close open connections, join every thread (bounded). Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5.0)
        self._httpd.close_connections()
        self._httpd.server_close()

    def seen(self, method: str, path_prefix: str = "") -> list[str]:
        """Paths of the requests with ``method`` whose path starts with ``path_prefix``, in order."""
        with self._lock:
            return [path for m, path in self.requests if m == method and path.startswith(path_prefix)]

    def __enter__(self) -> StubApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _QuietServer(ThreadingHTTPServer):
    """Tracks its open connections so :meth:`close_connections` can end idle keep-alive reads at stop."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.open: set[socket.socket] = set()
        self.open_lock = threading.Lock()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.open_lock:
            self.open.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.open_lock:
                self.open.discard(request)

    def close_connections(self) -> None:
        with self.open_lock:
            connections = list(self.open)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (kubectl killed at its bound) is expected here: print nothing."""


class _Handler(BaseHTTPRequestHandler):
    stub: StubApiServer
    protocol_version = "HTTP/1.1"
    timeout = _HOLD  # a backstop: no handler waits longer than this for a client's next request

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with self.stub._lock:
            self.stub.requests.append((method, url.path))
        status = self.stub.status_for.get(url.path, self.stub.status_for.get("*"))
        if status is not None:
            self._status(status)
        elif method == "GET" and url.path in _DISCOVERY:
            self._json(200, _DISCOVERY[url.path])
        elif method == "DELETE":
            self._delete(url.path)
        else:
            self._get(url.path, {k: v[0] for k, v in parse_qs(url.query).items()})

    def _get(self, path: str, query: dict[str, str]) -> None:
        with self.stub._lock:
            found = self.stub.objects.get(path)
            kind = path.rsplit("/", 1)[-1]
            members = [obj for p, obj in self.stub.objects.items() if p.rsplit("/", 1)[0] == path]
        if found is not None:
            self._json(200, found)
            return
        if kind not in _LIST_KINDS:
            self._status(404, f'{kind} "{path.rsplit("/", 1)[-1]}" not found')
            return
        wanted = query.get("fieldSelector", "").removeprefix("metadata.name=")
        if wanted:
            members = [m for m in members if m.get("metadata", {}).get("name") == wanted]
        if query.get("watch") in ("true", "1"):
            self._hold_watch()
            return
        self._json(
            200, {"kind": _LIST_KINDS[kind], "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": members}
        )

    def _delete(self, path: str) -> None:
        with self.stub._lock:
            found = self.stub.objects.pop(path, None)
        if found is None:
            self._status(404, f'"{path.rsplit("/", 1)[-1]}" not found')
        else:
            self._json(200, found)

    def _hold_watch(self) -> None:
        """Headers now, then nothing (no event) until the server stops: a watch on a condition never met."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.stub._stopping.wait(_HOLD)
        self.close_connection = True

    def _status(self, code: int, message: str | None = None) -> None:
        reason = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound"}.get(code, "InternalError")
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message or reason,
            "reason": reason,
            "code": code,
        }
        self._json(code, body)

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A port bound but never listened on: connections are refused, and nobody else can take it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A port that completes the TCP handshake (the kernel's backlog) and never says a word."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def write_kubeconfig(
    path: Path,
    server: str,
    *,
    context: str,
    namespace: str | None = None,
    exec_command: list[str] | None = None,
) -> Path:
    """Write a kubeconfig at ``path`` whose ``context`` (also current) points at ``server``; returns ``path``.

    The user has a static token, or, with ``exec_command``, an exec credential plugin (``client.authentication.k8s.io
    /v1``) that kubectl runs as its own child to get a token.
    """
    if exec_command:
        user: dict[str, Any] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": exec_command[0],
                "args": exec_command[1:],
                "interactiveMode": "Never",
            }
        }
    else:
        user = {"token": "not-a-real-token"}
    context_entry: dict[str, Any] = {"cluster": "stub", "user": "stub-user"}
    if namespace:
        context_entry["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "preferences": {},
        "clusters": [
            {"name": "stub", "cluster": {"server": server, "insecure-skip-tls-verify": server.startswith("https")}}
        ],
        "contexts": [{"name": context, "context": context_entry}],
        "users": [{"name": "stub-user", "user": user}],
    }
    path.write_text(json.dumps(config, indent=1))
    return path
