"""A scripted stand-in for the orchestrator's ``/invoke`` routes, for the invoke client's cluster-free specs.

Not a test module and not the twin: it answers as the orchestrator's ``InvokeServer`` does on the wire (202
``{id, status: "pending"}`` with a ``location`` header; 400 ``{"error": ...}`` for a body without a non-empty
``request`` or with a tool whose name is not ``[A-Za-z0-9_-]{1,64}``; 401 without the expected bearer; ``GET
/invoke/<id>`` 200 with the record, 404 with an empty body for an unknown id), and settles each invocation after a
scripted number of polls into a scripted record. Served by ``fakes.server.serve_fake``, so specs get the request
journal and the fault kinds (hang, reset, status) for free.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from fakes.core import BadJson, FakeRequest, FakeResponse

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GET = re.compile(r"/invoke/([^/]+)")


@dataclass
class Plan:
    """What the next accepted invocation does: stay ``pending`` for ``polls`` GETs, then become ``final``
    (merged over ``{"id": ..., "status": ...}``)."""

    polls: int = 1
    final: dict[str, Any] = field(default_factory=lambda: {"status": "succeeded", "result": "done"})


class InvokeDouble:
    """The fake app. ``plans`` is a queue consumed by each accepted ``POST /invoke`` (the default :class:`Plan` when
    empty); ``bodies`` records the parsed bodies accepted; ``forget()`` drops every record, as a restart would."""

    name = "orchestrator-invoke"
    unrecorded_paths: frozenset[str] = frozenset({"/healthz"})

    def __init__(self, bearer: str = "e2e-gateway-token") -> None:
        self.bearer = bearer
        self.plans: list[Plan] = []
        self.bodies: list[dict[str, Any]] = []
        self.polls: dict[str, int] = {}
        self._records: dict[str, tuple[Plan, int]] = {}
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.plans.clear()
            self.bodies.clear()
            self.polls.clear()
            self._records.clear()

    def forget(self) -> None:
        with self._lock:
            self._records.clear()

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == "/healthz":
            return FakeResponse.json(200, {"ok": True})
        if request.method == "POST" and request.path == "/invoke":
            return self._post(request)
        match = _GET.fullmatch(request.path)
        if request.method == "GET" and match:
            return self._get(match.group(1))
        return FakeResponse(404)

    def _post(self, request: FakeRequest) -> FakeResponse:
        if request.headers.get("authorization") != f"Bearer {self.bearer}":
            return FakeResponse(401)
        try:
            body = request.json()
        except BadJson:
            body = None
        problem = _problem(body)
        if problem:
            return FakeResponse.json(400, {"error": problem})
        invocation_id = str(uuid.uuid4())
        with self._lock:
            self.bodies.append(body)
            plan = self.plans.pop(0) if self.plans else Plan()
            self._records[invocation_id] = (plan, 0)
        return FakeResponse.json(
            202, {"id": invocation_id, "status": "pending"}, headers=[("location", f"/invoke/{invocation_id}")]
        )

    def _get(self, invocation_id: str) -> FakeResponse:
        with self._lock:
            if invocation_id not in self._records:
                return FakeResponse(404)
            plan, seen = self._records[invocation_id]
            self._records[invocation_id] = (plan, seen + 1)
            self.polls[invocation_id] = seen + 1
        if seen + 1 < plan.polls:
            return FakeResponse.json(200, {"id": invocation_id, "status": "pending"})
        return FakeResponse(
            200, [("content-type", "application/json")], json.dumps({"id": invocation_id, **plan.final}).encode()
        )


def _problem(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("request"), str) or not body["request"].strip():
        return 'body must be JSON: { "request": "<non-empty string>" }'
    for tool in body.get("tools") or []:
        name = ((tool or {}).get("function") or {}).get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            return f"invalid tool name {name!r}: must match [A-Za-z0-9_-]{{1,64}}"
    return None
