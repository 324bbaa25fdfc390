"""The framework-free contract every fake implements, and the one the shared machinery wraps.

A fake is a :class:`FakeApp`: plain state plus ``handle(FakeRequest) -> FakeResponse``. The shared machinery
(request journal, fault injection, the ``/_fake/`` admin API, the ASGI adapter served by uvicorn, the in-process
httpx transport) is written once against this contract and wraps any fake, so the fake Qdrant and the fake
GitHub differ only in their wire behaviour (design: ``shared/reference/fakes-api.md`` §4.1, "one core, three
adapters").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs


class BadJson(ValueError):
    """The request body is not valid JSON; ``detail`` is the parser's message (each fake words its own error)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class FakeRequest:
    """One HTTP request as the fake sees it.

    ``path`` is percent-decoded (``raw_path`` keeps the wire form, e.g. ``/labels/needs%20triage``); ``query`` is the
    raw query string without ``?``; ``headers`` has lower-cased names (the last value wins for repeated names);
    ``base_url`` is ``scheme://host[:port]`` as the client addressed the fake (from the ``Host`` header), so URL fields
    in responses can point back at the fake.
    """

    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    base_url: str = "http://fake"
    raw_path: str = ""

    @property
    def query_params(self) -> dict[str, list[str]]:
        """Query parameters, each name to its list of values (``parse_qs`` with blank values kept)."""
        return parse_qs(self.query, keep_blank_values=True)

    def query_param(self, name: str, default: str | None = None) -> str | None:
        """The last value of query parameter ``name``, or ``default``."""
        values = self.query_params.get(name)
        return values[-1] if values else default

    def json(self) -> Any:
        """The body parsed as JSON; an empty body is ``None``. Raises :class:`BadJson` on a malformed body."""
        if not self.body.strip():
            return None
        try:
            return json.loads(self.body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadJson(str(exc)) from exc


@dataclass
class FakeResponse:
    """One HTTP response: status, header pairs (order kept, repeats allowed) and body bytes."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    @classmethod
    def json(cls, status: int, payload: Any, headers: list[tuple[str, str]] | None = None) -> FakeResponse:
        """A JSON response, compact UTF-8 like the real services send."""
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        return cls(status, [("content-type", "application/json"), *(headers or [])], body)

    @classmethod
    def text(cls, status: int, text: str, headers: list[tuple[str, str]] | None = None) -> FakeResponse:
        """A plain-text response (e.g. Qdrant's 401 body)."""
        return cls(status, [("content-type", "text/plain; charset=utf-8"), *(headers or [])], text.encode())


class FakeApp(Protocol):
    """What the shared machinery needs from a fake.

    ``name`` appears in logs and admin answers; ``unrecorded_paths`` are exact paths (health routes) the journal
    skips, so a readiness probe never reads as an application call (stack-under-test.md §9, failure mode 14).
    ``handle`` must be thread-safe (uvicorn's event loop and test threads may call it at once) and must not block
    for long: faults such as hang and drip are the machinery's job, not the fake's.
    """

    name: str
    unrecorded_paths: frozenset[str]

    def handle(self, request: FakeRequest) -> FakeResponse: ...

    def reset(self) -> None: ...
