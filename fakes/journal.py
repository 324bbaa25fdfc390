"""The request journal every fake keeps: what arrived, in order, with credentials redacted.

Specs read it in-process (``FakeHandle.requests(...)``) or over the admin API (``GET /_fake/requests``) to prove
what a client actually sent, e.g. that a write carried ``?wait=true`` or that no unmodelled route was called (each
entry is stamped with the status the fake answered, ``None`` when a fault ate the answer). Health routes are never
recorded (the machinery skips ``FakeApp.unrecorded_paths``), so readiness probes do not read as application calls.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
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
    (hang, reset) meant no status was ever sent; ``fault`` names the fault kind applied, if any.
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

    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty). Raises ``ValueError`` on a body that is not JSON."""
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
        }
        try:
            out["body"] = self.body.decode()
        except UnicodeDecodeError:
            out["body"] = None
            out["body_base64"] = base64.b64encode(self.body).decode()
        return out


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
        return value.timestamp() if value.tzinfo else value.replace(tzinfo=_utc()).timestamp()
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


def _utc():
    from datetime import timezone

    return timezone.utc


class Journal:
    """A thread-safe, append-only list of :class:`JournalEntry` (cleared only by :meth:`clear`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[JournalEntry] = []
        self._seq = 0

    def record(self, request: FakeRequest, *, fault: str | None = None) -> JournalEntry:
        """Append ``request`` (headers redacted) and return its entry; stamp the status later with :meth:`stamp`."""
        with self._lock:
            self._seq += 1
            entry = JournalEntry(
                seq=self._seq,
                time=time.time(),
                method=request.method.upper(),
                path=request.path,
                query=request.query,
                headers=redact_headers(request.headers),
                body=request.body,
                fault=fault,
                query_params=request.query_params,
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
