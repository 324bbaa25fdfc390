"""The ``/_fake/`` admin API every fake serves, under a prefix none of the faked services uses.

Routes (JSON in and out; errors are ``400 {"error": "..."}`` naming the bad input):

- ``GET /_fake/`` → ``{"name", "requests", "faults"}``: which fake this is, journal size, active faults.
- ``GET /_fake/requests?path_prefix=&since=&method=`` → ``{"requests": [entry, ...], "dropped": n}`` (see
  ``JournalEntry.to_dict``; ``since`` is epoch seconds or RFC 3339; ``dropped`` counts entries the bounded journal
  let go).
- ``POST /_fake/reset`` → ``{"reset": true}``: the fake's state, the journal and the faults are all cleared.
- ``GET /_fake/faults`` → ``{"faults": [...]}``; ``POST /_fake/faults`` with a fault object (``Fault.from_dict``) →
  201 and the fault with its ``id``; ``DELETE /_fake/faults`` clears all; ``DELETE /_fake/faults/{id}`` one (404 if
  unknown).
- Anything else under ``/_fake/`` goes to the fake's optional ``admin(request) -> FakeResponse | None`` hook (seeding,
  state dumps, webhook triggers); ``None`` or no hook → 404.

Admin calls are never journaled and never faulted, so a ``*`` fault can always be cleared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fakes.core import BadJson, FakeApp, FakeRequest, FakeResponse
from fakes.faults import Fault, FaultSpecError, FaultTable
from fakes.journal import Journal


class FakeRuntime(Protocol):
    """What the admin routes reach of a :class:`fakes.runtime.FakeRuntime` (which imports this module, so this one
    cannot import it back): the fake, its journal, its faults, and reset."""

    @property
    def app(self) -> FakeApp: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def faults(self) -> FaultTable: ...

    def reset(self) -> None: ...


PREFIX = "/_fake"


def is_admin_path(path: str) -> bool:
    """True for ``/_fake`` and everything under ``/_fake/``."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def _error(status: int, message: str) -> FakeResponse:
    return FakeResponse.json(status, {"error": message})


def handle_admin(runtime: FakeRuntime, request: FakeRequest) -> FakeResponse:
    """Answer one admin request against ``runtime`` (journal, fault table, fake)."""
    route = request.path[len(PREFIX) :].rstrip("/") or "/"
    method = request.method.upper()
    if route == "/" and method == "GET":
        return FakeResponse.json(
            200,
            {
                "name": runtime.app.name,
                "requests": len(runtime.journal.entries()),
                "faults": [f.to_dict() for f in runtime.faults.list()],
            },
        )
    if route == "/requests" and method == "GET":
        try:
            entries = runtime.journal.entries(
                path_prefix=request.query_param("path_prefix") or None,
                since=request.query_param("since") or None,
                method=request.query_param("method") or None,
            )
        except ValueError as exc:
            return _error(400, str(exc))
        return FakeResponse.json(200, {"requests": [e.to_dict() for e in entries], "dropped": runtime.journal.dropped})
    if route == "/reset" and method == "POST":
        runtime.reset()
        return FakeResponse.json(200, {"reset": True})
    if route == "/faults":
        return _faults(runtime, request, method)
    if route.startswith("/faults/") and method == "DELETE":
        fault_id = route[len("/faults/") :]
        if runtime.faults.clear(fault_id):
            return FakeResponse.json(200, {"cleared": fault_id})
        return _error(404, f"no active fault with id {fault_id!r}")
    hook: Callable[[FakeRequest], FakeResponse | None] | None = getattr(runtime.app, "admin", None)
    response = hook(request) if hook is not None else None
    if response is not None:
        return response
    return _error(404, f"no admin route {method} {request.path}; see fakes/README.md")


def _faults(runtime: FakeRuntime, request: FakeRequest, method: str) -> FakeResponse:
    if method == "GET":
        return FakeResponse.json(200, {"faults": [f.to_dict() for f in runtime.faults.list()]})
    if method == "DELETE":
        runtime.faults.clear()
        return FakeResponse.json(200, {"cleared": "all"})
    if method == "POST":
        try:
            fault = runtime.faults.add(Fault.from_dict(request.json()))
        except BadJson as exc:
            return _error(400, f"fault body is not JSON: {exc.detail}")
        except FaultSpecError as exc:
            return _error(400, str(exc))
        return FakeResponse.json(201, fault.to_dict())
    return _error(405, f"{method} is not allowed on {PREFIX}/faults (GET, POST, DELETE)")
