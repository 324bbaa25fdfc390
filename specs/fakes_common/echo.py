"""A minimal FakeApp for specs of the shared machinery: echoes the request, counts calls, has one health route."""

from __future__ import annotations

import threading

from fakes.core import FakeRequest, FakeResponse


class EchoFake:
    name = "echo"
    unrecorded_paths = frozenset({"/healthz"})

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == "/healthz":
            return FakeResponse.text(200, "ok")
        with self._lock:
            self.calls += 1
            calls = self.calls
        return FakeResponse.json(
            200,
            {
                "method": request.method,
                "path": request.path,
                "query": request.query,
                "body": request.body.decode(errors="replace"),
                "calls": calls,
                "base_url": request.base_url,
            },
        )

    def error_response(self, status: int) -> FakeResponse:
        return FakeResponse.json(status, {"echo_error": status})

    def reset(self) -> None:
        with self._lock:
            self.calls = 0
