"""A local HTTP server with scripted wire faults, the "pod" behind the kubectl stand-in (port-forward guard specs).

Paths: ``/ok`` and ``/healthz`` (200 ``ok``), ``/status/NNN``, ``/hang`` (reads the request, never answers),
``/drip?every=S&size=N`` (headers with ``Content-Length: N`` at once, then one body byte every ``S`` seconds:
the slow-loris case httpx's inactivity timeouts miss, encode/httpx#1450), ``/reset`` (RST, no answer),
``/close`` (FIN, no answer), ``/big?size=N`` (``N`` bytes with ``Content-Length: N``), ``/flood?chunk=N``
(a chunked body of ``N``-byte chunks, as fast as the client reads, until it hangs up: the endless answer
``max_body`` guards against; ``sent_bytes`` counts what went out). Built on the standard library's
``ThreadingHTTPServer``; :meth:`TargetServer.stop` releases every hanging handler and joins all threads, so
nothing outlives a test.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_MAX_HOLD = 120.0
"""Longest a hanging or dripping handler holds its thread if the server is never stopped (seconds)."""


class TargetServer:
    """Serve on ``127.0.0.1:<OS-chosen port>`` until :meth:`stop`; use as a context manager.

    ``port`` and ``url`` are set once started. ``requests`` lists the paths received, in order;
    :meth:`wait_for_request` blocks (bounded) until ``n`` requests arrived; :attr:`clients_gone` counts
    exchanges a client abandoned (reset or closed mid-answer), which are not errors here and print nothing.
    """

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._arrived = threading.Condition()
        self.requests: list[str] = []
        self.sent_bytes = 0
        """Body bytes ``/flood`` and ``/big`` wrote (the socket's buffers may still hold some of them)."""
        server = self

        class Handler(_Handler):
            target = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = False
        self._httpd.block_on_close = True  # server_close() joins every handler thread
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"target-{self.port}"
        )

    def start(self) -> TargetServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging handlers, stop serving, join every thread (bounded by the handlers' holds). Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5.0)
        self._httpd.hang_up()
        self._httpd.server_close()

    @property
    def clients_gone(self) -> int:
        return self._httpd.clients_gone

    def wait_for_request(self, n: int = 1, timeout: float = 5.0) -> bool:
        """True once ``n`` requests have arrived; False after ``timeout`` seconds."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= n, timeout=timeout)

    def _record(self, path: str) -> None:
        with self._arrived:
            self.requests.append(path)
            self._arrived.notify_all()

    def __enter__(self) -> TargetServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    """Counts, and does not print, a client that went away mid-exchange: those are the point of most specs here
    (a forward killed mid-request, a capped body, a cancelled request). Any other handler error is printed."""

    clients_gone = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> None:
        """End every connection still open, so a handler waiting on an idle keep-alive connection returns: a peer
        may hold one open long after its client left (kwok's port-forward keeps its dial to the target)."""
        with self._open_lock:
            still = list(self._open)
        for conn in still:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            self.clients_gone += 1
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    target: TargetServer

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.target._record(url.path)
        stopping = self.target._stopping
        if url.path in ("/ok", "/healthz", "/"):
            self._answer(200, b"ok")
        elif url.path.startswith("/status/"):
            self._answer(int(url.path.rsplit("/", 1)[1]), b"status")
        elif url.path == "/hang":
            stopping.wait(_MAX_HOLD)
            self.close_connection = True
        elif url.path == "/drip":
            self._drip(float(query.get("every", "0.5")), int(query.get("size", "40")), stopping)
        elif url.path == "/reset":
            # SO_LINGER with a zero timeout turns close() into an RST.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
        elif url.path == "/close":
            self.close_connection = True
        elif url.path == "/big":
            self._big(int(query.get("size", "0")))
        elif url.path == "/flood":
            self._flood(int(query.get("chunk", "65536")), stopping)
        else:
            self._answer(404, b"no such path on the target server")

    do_POST = do_GET

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drip(self, every: float, size: int, stopping: threading.Event) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.flush()
        for _ in range(size):
            if stopping.wait(every):
                return
            try:
                self.wfile.write(b"x")
                self.wfile.flush()
            except OSError:  # the client gave up: that is the point of the test
                return

    def _big(self, size: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        block = b"x" * 65536
        left = size
        self.connection.settimeout(5.0)
        try:
            while left > 0:
                piece = block[: min(left, len(block))]
                self.wfile.write(piece)
                self.target.sent_bytes += len(piece)
                left -= len(piece)
        except OSError:  # the client stopped reading: expected when it caps the body
            pass
        self.close_connection = True

    def _flood(self, chunk: int, stopping: threading.Event) -> None:
        self.protocol_version = "HTTP/1.1"  # chunked framing needs HTTP/1.1
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        frame = b"%x\r\n" % chunk + b"x" * chunk + b"\r\n"
        deadline = time.monotonic() + _MAX_HOLD
        self.connection.settimeout(5.0)  # a client that stops reading without hanging up cannot pin this thread
        try:
            while not stopping.is_set() and time.monotonic() < deadline:
                self.wfile.write(frame)
                self.target.sent_bytes += chunk
        except OSError:  # the client hung up: that is the point of the test
            pass
        self.close_connection = True
