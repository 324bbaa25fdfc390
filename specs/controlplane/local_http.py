"""A real HTTP server on 127.0.0.1 for the control-plane specs: a local process behind a pod's port, or a module
proxy that refuses."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

STOP_TIMEOUT = 5.0
"""Seconds the serving thread has to end after shutdown."""


class Quiet(http.server.BaseHTTPRequestHandler):
    """A handler that logs nothing (pytest's output stays the spec's own)."""

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve ``handler`` on an OS-chosen port of 127.0.0.1 for the block; yields the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="local-http", daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=STOP_TIMEOUT)
