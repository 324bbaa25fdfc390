"""The fault table: which requests a fake should fail, and how (the hung/failed split Toxiproxy's ``timeout`` and
``reset_peer`` toxics give, plus drip and the stream faults, selectable per route).

A :class:`Fault` selects requests by method and a path glob (``fnmatch``: ``*`` also crosses ``/``), applies to the
next ``times`` matching requests or, with ``times=None``, until cleared. Kinds, and what a socket client sees:

- ``hang``: the connection is accepted and the request read, then nothing is ever sent (until the client goes away
  or the server stops): a read timeout, or a hang forever for a client without one.
- ``drip``: the real response's status and headers at once, then its body one byte every ``interval`` seconds:
  defeats per-read timeouts (httpx's default: 5 s of inactivity per read, no total), only a total deadline catches
  it (encode/httpx#1450).
- ``reset``: a TCP RST instead of an answer (``ECONNRESET``; httpx ``ReadError``/``RemoteProtocolError``).
- ``status``: answer ``status`` (200-599; 1xx is informational, never a final answer) with ``headers`` (e.g.
  ``Retry-After``) and ``body`` (default: the fake's own error body for that status, if it offers one) without
  calling the fake. A 204 or 304 carries no body (RFC 9110 §15.3.5, §15.4.5): any body is dropped.
- ``latency``: wait ``delay`` seconds, then the real response.

Stream faults act on the fake's real response between its chunks (a streamed body such as server-sent events; a
whole body counts as one chunk). ``after`` chunks are sent first (all of them if the stream is shorter):

- ``stream_stop``: the connection is closed without finishing the body (no terminating chunk): httpx raises
  ``RemoteProtocolError`` ("peer closed connection without sending complete message body").
- ``stream_pause``: a pause of ``delay`` seconds before the next chunk, then the rest of the stream: a read timeout
  shorter than ``delay`` fires; a total deadline may.
- ``stream_reset``: a TCP RST mid-body (``ECONNRESET``; httpx ``ReadError``).

Health routes (a fake's ``unrecorded_paths``) are exempt unless ``include_health=True``, so a ``*`` fault does not
make a cluster's readiness probe pull the fake out of its Service. ``apply=True`` on hang/reset/status lets the
fake apply the request first (the write happened, the answer was lost).
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import threading
from dataclasses import dataclass, field
from typing import Any

KINDS = ("hang", "drip", "reset", "status", "latency", "stream_stop", "stream_pause", "stream_reset")
#: Kinds that act between the chunks of the fake's real response (the fake is called, its answer is cut).
STREAM_KINDS = frozenset({"stream_stop", "stream_pause", "stream_reset"})
#: Statuses whose response has no body (RFC 9110 §15.3.5, §15.4.5); h11 refuses to send one.
BODYLESS_STATUSES = frozenset({204, 304})


class FaultSpecError(ValueError):
    """A fault description that cannot be applied (unknown kind, bad count, wrong parameter type)."""


@dataclass
class Fault:
    """One row of the fault table; ``remaining`` counts down from ``times`` (``None`` = until cleared)."""

    kind: str
    path: str = "*"
    method: str = "*"
    times: int | None = None
    status: int = 503
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None
    delay: float = 0.0
    interval: float = 0.5
    after: int = 0
    apply: bool = False
    include_health: bool = False
    id: str = ""
    remaining: int | None = None
    hits: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise FaultSpecError(f"fault kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.times is not None and (
            not isinstance(self.times, int) or isinstance(self.times, bool) or self.times < 1
        ):
            raise FaultSpecError(f"fault times={self.times!r}: give a positive integer, or None for 'until cleared'")
        if not isinstance(self.status, int) or isinstance(self.status, bool) or not 100 <= self.status <= 599:
            raise FaultSpecError(f"fault status={self.status!r} is not an HTTP status code")
        if self.status < 200:
            raise FaultSpecError(
                f"fault status={self.status}: a 1xx status is informational, not a final answer; give 200-599"
            )
        for name in ("delay", "interval"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise FaultSpecError(f"fault {name}={value!r}: give seconds as a finite non-negative number")
        if self.kind == "drip" and self.interval <= 0:
            raise FaultSpecError("fault drip needs interval > 0 seconds")
        if self.kind == "stream_pause" and self.delay <= 0:
            raise FaultSpecError("fault stream_pause needs delay > 0 seconds (the pause before the next chunk)")
        if not isinstance(self.after, int) or isinstance(self.after, bool) or self.after < 0:
            raise FaultSpecError(f"fault after={self.after!r}: give the number of chunks sent first, an integer >= 0")
        if not isinstance(self.path, str) or not isinstance(self.method, str):
            raise FaultSpecError(
                f"fault path={self.path!r} / method={self.method!r}: give strings such as '/collections/*' and 'POST'"
            )
        self.method = self.method.upper()
        self.headers = [(str(k), str(v)) for k, v in self.headers]
        if any(c in text for pair in self.headers for text in pair for c in "\r\n\0"):
            raise FaultSpecError(f"fault headers={self.headers!r}: a header name or value holds CR, LF or NUL")
        body: object = self.body  # from JSON or keywords: any type until checked here
        if isinstance(body, str):
            self.body = body.encode()
        elif body is not None and not isinstance(body, bytes):
            raise FaultSpecError(
                f"fault body={body!r}: give a string or bytes (or leave it out for the fake's own error body)"
            )
        if self.remaining is None:
            self.remaining = self.times

    def matches(self, method: str, path: str, *, health: bool) -> bool:
        """True when this fault selects a ``method`` request to ``path`` (``health``: a health route)."""
        if health and not self.include_health:
            return False
        return (self.method == "*" or self.method == method.upper()) and fnmatch.fnmatchcase(path, self.path)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (admin API)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "path": self.path,
            "method": self.method,
            "times": self.times,
            "remaining": self.remaining,
            "hits": self.hits,
            "status": self.status,
            "headers": [list(h) for h in self.headers],
            "body": None if self.body is None else self.body.decode(errors="replace"),
            "delay": self.delay,
            "interval": self.interval,
            "after": self.after,
            "apply": self.apply,
            "include_health": self.include_health,
        }

    @classmethod
    def from_dict(cls, spec: Any) -> Fault:
        """Build a fault from a mapping: the admin API's JSON, or ``FakeHandle.fault``'s keywords; ``headers`` may be an
        object or a list of pairs.

        Raises :class:`FaultSpecError` naming the offending key (an unknown one included).
        """
        if not isinstance(spec, dict):
            raise FaultSpecError('a fault is a JSON object such as {"kind": "status", "status": 503}')
        allowed = {
            "kind",
            "path",
            "method",
            "times",
            "status",
            "headers",
            "body",
            "delay",
            "interval",
            "after",
            "apply",
            "include_health",
        }
        unknown = sorted(set(spec) - allowed)
        if unknown:
            raise FaultSpecError(f"unknown fault field(s) {unknown}; allowed: {sorted(allowed)}")
        if "kind" not in spec:
            raise FaultSpecError("a fault needs 'kind' (one of " + ", ".join(KINDS) + ")")
        spec = dict(spec)
        headers = spec.get("headers") or []
        if isinstance(headers, dict):
            headers = list(headers.items())
        try:
            spec["headers"] = [(k, v) for k, v in headers]
        except (TypeError, ValueError):
            raise FaultSpecError("fault headers: give an object or a list of [name, value] pairs") from None
        try:
            return cls(**spec)
        except (TypeError, AttributeError) as exc:  # e.g. method=3 (no .upper())
            raise FaultSpecError(f"bad fault field: {exc}") from None


class FaultTable:
    """Thread-safe ordered fault rows; the first matching row wins and is counted down by :meth:`take`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)
        #: Set whenever faults are cleared: in-process hangs wake on it (sockets end on client or server exit).
        self.cleared = threading.Event()

    def add(self, fault: Fault) -> Fault:
        """Append ``fault`` (it gets an ``id`` such as ``f3``) and return it."""
        with self._lock:
            fault.id = f"f{next(self._ids)}"
            self._faults.append(fault)
            self.cleared.clear()
            return fault

    def take(self, method: str, path: str, *, health: bool = False) -> Fault | None:
        """The first fault matching this request, counted down (and dropped once spent), or ``None``."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, health=health):
                    fault.hits += 1
                    if fault.remaining is not None:
                        fault.remaining -= 1
                        if fault.remaining <= 0:
                            self._faults.remove(fault)
                    return fault
        return None

    def list(self) -> list[Fault]:
        """The active faults, in match order."""
        with self._lock:
            return list(self._faults)

    def clear(self, fault_id: str | None = None) -> bool:
        """Remove one fault by id (True if it existed) or, with no id, all of them (always True)."""
        with self._lock:
            if fault_id is None:
                self._faults.clear()
                found = True
            else:
                before = len(self._faults)
                self._faults = [f for f in self._faults if f.id != fault_id]
                found = len(self._faults) != before
        if fault_id is None:
            self.cleared.set()
        return found
