"""A minimal webhook receiver for specs, served by the shared machinery on a real socket: it records each delivery's
raw bytes and headers, verifies ``X-Hub-Signature-256`` over those bytes before parsing (like the stack's gateway)
and answers 401 on a mismatch or 202 at once. Faults (hang, latency) come from the machinery."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fakes.core import FakeRequest, FakeResponse
from fakes.github import verify_signature


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    verified: bool


class Receiver:
    name = "receiver"
    unrecorded_paths = frozenset({"/healthz"})

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self._lock = threading.Lock()
        self.received: list[Received] = []

    def handle(self, request: FakeRequest) -> FakeResponse:
        header = request.headers.get("x-hub-signature-256")
        ok = verify_signature(secret=self.secret, body=request.body, header=header)
        with self._lock:
            self.received.append(Received(dict(request.headers), request.body, ok))
        if not ok:
            return FakeResponse.json(401, {"error": "signature mismatch"})
        return FakeResponse.json(202, {"accepted": request.headers.get("x-github-delivery")})

    def reset(self) -> None:
        with self._lock:
            self.received.clear()
