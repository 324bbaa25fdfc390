"""The request journal every fake keeps: what arrived, in order, with credentials redacted.

Specs read it in-process (``FakeHandle.requests(...)``) or over the admin API (``GET /_fake/requests``) to prove
what a client actually sent, e.g. that a write carried ``?wait=true`` or that no unmodelled route was called (each
entry is stamped with the status the fake answered, ``None`` when a fault ate the answer). Health routes are never
recorded (the machinery skips ``FakeApp.unrecorded_paths``), so readiness probes do not read as application calls.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fakes.core import FakeRequest

#: Header names whose values never reach the journal (lower-case).
REDACTED_HEADERS = frozenset({"authorization", "api-key", "cookie", "proxy-authorization", "x-api-key"})
REDACTED = "<redacted>"


@dataclass
class JournalEntry:
    """One recorded request.

    ``time`` is wall-clock epoch seconds (float) so ``since`` filters work across processes and over the admin API;
    ``seq`` is the arrival order (from 1). ``status`` is the HTTP status the client was sent, or ``None`` if a fault
    (hang, reset) meant no status was ever sent; ``fault`` names the fault kind applied, if any. ``credential`` tells
    whose credential the request carried without revealing it (:func:`credential_fingerprint`).
    """

    seq: int
    time: float
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    status: int | None = None
    fault: str | None = None
    query_params: dict[str, list[str]] = field(default_factory=dict)
    #: The body's size on the wire; ``body`` holds at most the journal's ``max_body`` bytes of it.
    body_size: int = 0
    #: The ``Authorization`` header as a fingerprint (``Bearer sha256:<16 hex>``), ``None`` without one.
    credential: str | None = None

    @property
    def body_truncated(self) -> bool:
        return self.body_size > len(self.body)

    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty). Raises ``ValueError`` on a body that is not JSON or was
        truncated by the journal's ``max_body``."""
        if self.body_truncated:
            raise ValueError(
                f"journal entry {self.seq} ({self.method} {self.path}): body of {self.body_size} bytes "
                f"was truncated to {len(self.body)}; raise Journal.max_body to inspect it"
            )
        return json.loads(self.body) if self.body.strip() else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (admin API): ``body`` as UTF-8 text when it decodes, else ``body_base64``."""
        out: dict[str, Any] = {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
            "status": self.status,
            "fault": self.fault,
            "body_size": self.body_size,
            "credential": self.credential,
        }
        try:
            out["body"] = self.body.decode()
        except UnicodeDecodeError:
            out["body"] = None
            out["body_base64"] = base64.b64encode(self.body).decode()
        return out


def credential_fingerprint(authorization: str | None) -> str | None:
    """An ``Authorization`` value as ``<scheme> sha256:<first 16 hex digits of SHA-256 of the credential>``
    (``Bearer gho_x`` -> ``Bearer sha256:...``; a value without a scheme has none), or ``None`` for no header. Two
    requests carried the same credential exactly when their fingerprints are equal; the value cannot be read back."""
    if authorization is None:
        return None
    scheme, _, credential = authorization.strip().partition(" ")
    if not credential:
        scheme, credential = "", scheme
    digest = hashlib.sha256(credential.strip().encode()).hexdigest()[:16]
    return f"{scheme} sha256:{digest}".strip()


def redact_headers(headers: dict[str, str]) -> dict[str, str]:
    """A copy of ``headers`` with credential-bearing values replaced by ``<redacted>``."""
    return {k: (REDACTED if k.lower() in REDACTED_HEADERS else v) for k, v in headers.items()}


def parse_since(value: float | int | str | datetime | None) -> float | None:
    """Epoch seconds from a float, an int, a numeric string or an RFC 3339 / ISO 8601 string (naive = UTC).

    Raises ``ValueError`` naming the value when it is none of these.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.timestamp() if value.tzinfo else value.replace(tzinfo=UTC).timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        raise ValueError(f"since={value!r} is neither epoch seconds nor an RFC 3339 timestamp") from None
    return parse_since(parsed)


class Journal:
    """A thread-safe, append-only log of :class:`JournalEntry`, bounded so a fake left running in a cluster cannot
    grow without limit: the newest ``max_entries`` entries are kept (``dropped`` counts the rest) and each body is
    kept up to ``max_body`` bytes (``body_size`` tells the full size)."""

    def __init__(self, *, max_entries: int = 10_000, max_body: int = 1 << 20) -> None:
        self._lock = threading.Lock()
        self._entries: collections.deque[JournalEntry] = collections.deque(maxlen=max_entries)
        self._seq = 0
        self.max_body = max_body
        self.dropped = 0

    def record(self, request: FakeRequest, *, fault: str | None = None) -> JournalEntry:
        """Append ``request`` (headers redacted) and return its entry; stamp the status later with :meth:`stamp`."""
        with self._lock:
            self._seq += 1
            if len(self._entries) == self._entries.maxlen:
                self.dropped += 1
            entry = JournalEntry(
                seq=self._seq,
                time=time.time(),
                method=request.method.upper(),
                path=request.path,
                query=request.query,
                headers=redact_headers(request.headers),
                body=request.body[: self.max_body],
                fault=fault,
                query_params=request.query_params,
                body_size=len(request.body),
                credential=credential_fingerprint(request.headers.get("authorization")),
            )
            self._entries.append(entry)
            return entry

    def stamp(self, entry: JournalEntry, status: int | None) -> None:
        """Record the status the client was sent for ``entry``."""
        with self._lock:
            entry.status = status

    def entries(
        self,
        *,
        path_prefix: str | None = None,
        since: float | int | str | datetime | None = None,
        method: str | None = None,
    ) -> list[JournalEntry]:
        """Snapshot copies of matching entries, oldest first.

        ``path_prefix`` matches the decoded path's start; ``since`` (epoch seconds or RFC 3339) keeps entries at or
        after that instant; ``method`` is case-insensitive. Raises ``ValueError`` on an unparseable ``since``.
        """
        cutoff = parse_since(since)
        with self._lock:
            snapshot = [dataclasses.replace(e) for e in self._entries]
        return [
            e
            for e in snapshot
            if (path_prefix is None or e.path.startswith(path_prefix))
            and (cutoff is None or e.time >= cutoff)
            and (method is None or e.method == method.upper())
        ]

    def clear(self) -> None:
        """Forget every entry (sequence numbers keep counting, so a stale ``seq`` never aliases a new one)."""
        with self._lock:
            self._entries.clear()
            self.dropped = 0
