"""Fixtures for the specs of the harness's stack helpers (all cluster-free).

``receiver``: a local HTTP server on 127.0.0.1 (OS port) recording each request's method, path, headers and exact
body bytes and answering 202; stopped (thread joined) after the test.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class Receiver:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    seen: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.append({"method": "POST", "path": self.path, "headers": headers, "body": self.rfile.read(length)})
            answer = b'{"accepted": true}'
            self.send_response(202)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Receiver(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5.0)
