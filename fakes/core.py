"""The framework-free contract every fake implements, and the one the shared machinery wraps.

A fake is a :class:`FakeApp`: plain state plus ``handle(FakeRequest) -> FakeResponse``. The shared machinery
(request journal, fault injection, the ``/_fake/`` admin API, the ASGI adapter served by uvicorn, the in-process
httpx transport) is written once against this contract and wraps any fake, so the fake Qdrant and the fake
GitHub differ only in their wire behaviour ("one core, three adapters": the core, the socket server, the in-process
transport).

A response is either whole (``FakeResponse.body``) or streamed (``FakeResponse.stream``: an iterable of
:class:`StreamChunk`, each sent after its own ``delay``), e.g. server-sent events. Both adapters send a streamed body
chunk by chunk (chunked transfer encoding on the socket, no ``content-length``), so a client sees the first chunk
before the last one exists, and the stream faults of ``fakes.faults`` can stop, pause or reset it between chunks.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs

#: Deepest nesting of arrays/objects a request body may have: serde_json's default recursion limit (128), which
#: real Qdrant's actix extractor uses. Deeper bodies are rejected before any fake code recurses into them.
MAX_JSON_DEPTH = 128
#: Integers a body may carry: the union of i64 and u64, what serde_json, Go and most servers keep as an integer.
#: Outside it a real parser loses precision or fails, and the fakes' engines overflow.
JSON_INT_MIN, JSON_INT_MAX = -(2**63), 2**64 - 1

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class BadJson(ValueError):
    """The request body is not valid JSON (as a real server's parser sees it).

    ``detail`` is a readable message; ``reason`` says which rule failed, so each fake can word its own error:
    ``"syntax"`` (Python's parser refused it), ``"encoding"`` (not UTF-8/16/32), ``"depth"`` (nested deeper than
    :data:`MAX_JSON_DEPTH`), ``"constant"`` (``NaN``, ``Infinity``, ``-Infinity``: Python accepts them, RFC 8259
    and real servers do not), ``"range"`` (a float that overflows to infinity such as ``1e400``, or an integer
    outside :data:`JSON_INT_MIN`..:data:`JSON_INT_MAX`).
    """

    def __init__(self, detail: str, reason: str = "syntax") -> None:
        super().__init__(detail)
        self.detail = detail
        self.reason = reason


class NonJsonValue(ValueError):
    """A fake tried to answer with NaN or an infinity, which JSON cannot carry (``FakeResponse.json``)."""


def _reject_constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON value (RFC 8259 has no NaN or Infinity)", "constant")


def _checked_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BadJson(f"number {text[:40]} is out of range for a 64-bit float", "range")
    return value


def _checked_int(text: str, *, wide_as_float: bool = False) -> int | float:
    # Length first: int() of a 5000-digit string raises ValueError (Python's digit limit), and a bound needs no more.
    if len(text.lstrip("-")) <= 20:
        value = int(text)
        if JSON_INT_MIN <= value <= JSON_INT_MAX:
            return value
    if wide_as_float:  # serde_json: an integer beyond i64/u64 is read as the nearest f64
        return _checked_float(text)
    shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"
    raise BadJson(f"integer {shown} is out of range (a JSON integer must fit in i64 or u64)", "range")


def json_depth(body: bytes) -> int:
    """How deeply arrays/objects nest in ``body`` (0 for a scalar), counted without parsing (brackets inside
    strings are skipped), so a hostile body is measured in C-speed passes, not recursion."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return max(itertools.accumulate(1 if c in b"[{" else -1 for c in brackets))


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

    def json(self, *, max_depth: int = MAX_JSON_DEPTH, wide_ints_as_float: bool = False) -> Any:
        """The body parsed as strict JSON (RFC 8259, as real servers parse it); an empty body is ``None``.

        Raises :class:`BadJson` (see its ``reason``) on a syntax or encoding error, nesting deeper than
        ``max_depth``, ``NaN``/``Infinity``, a float overflowing to infinity, or an integer outside i64/u64 (unless
        ``wide_ints_as_float``: then such an integer becomes the nearest float, as serde_json reads it, and only an
        infinite one is refused). Never raises ``RecursionError``, ``OverflowError`` or another ``ValueError``.
        """
        if not self.body.strip():
            return None
        depth = json_depth(self.body)
        if depth > max_depth:
            raise BadJson(f"nesting depth {depth} exceeds the limit of {max_depth}", "depth")
        try:
            return json.loads(
                self.body,
                parse_constant=_reject_constant,
                parse_float=_checked_float,
                parse_int=lambda text: _checked_int(text, wide_as_float=wide_ints_as_float),
            )
        except BadJson:
            raise
        except UnicodeDecodeError as exc:
            raise BadJson(str(exc), "encoding") from exc
        except json.JSONDecodeError as exc:
            raise BadJson(str(exc)) from exc
        except RecursionError:  # unreachable after the depth check; kept so no body can ever escape as a 500
            raise BadJson(f"nesting is too deep to parse (limit {max_depth})", "depth") from None


@dataclass(frozen=True)
class StreamChunk:
    """One piece of a streamed body: ``data`` is sent after waiting ``delay`` seconds (the stream's pacing).

    Empty ``data`` sends nothing but still counts as a chunk (a pure pause). Raises ``ValueError`` for a negative or
    non-finite ``delay`` and ``TypeError`` for ``data`` that is not bytes.
    """

    data: bytes
    delay: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes):
            raise TypeError(f"StreamChunk data must be bytes, got {type(self.data).__name__}")
        if (
            isinstance(self.delay, bool)
            or not isinstance(self.delay, (int, float))
            or not math.isfinite(self.delay)
            or self.delay < 0
        ):
            raise ValueError(f"StreamChunk delay={self.delay!r}: give seconds as a finite number >= 0")


@dataclass
class FakeResponse:
    """One HTTP response: status, header pairs (order kept, repeats allowed) and either body bytes or a stream.

    ``stream`` (an iterable of :class:`StreamChunk`, ``None`` for a whole body) is consumed lazily by the adapter that
    sends it, on the server's event loop: producing the next chunk must not block (pacing belongs in
    ``StreamChunk.delay``). A streamed response is sent without ``content-length``; ``body`` is then ignored.
    """

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    stream: Iterable[StreamChunk] | None = None

    def chunks(self) -> Iterator[StreamChunk]:
        """The body as chunks: the stream's own, or the whole body as one chunk (none for an empty body)."""
        if self.stream is not None:
            return iter(self.stream)
        return iter([StreamChunk(self.body)] if self.body else [])

    @classmethod
    def streamed(
        cls,
        status: int,
        chunks: Iterable[StreamChunk],
        content_type: str = "text/event-stream",
        headers: list[tuple[str, str]] | None = None,
    ) -> FakeResponse:
        """A streamed response (default ``content-type: text/event-stream``, the server-sent events type)."""
        return cls(status, [("content-type", content_type), *(headers or [])], stream=chunks)

    @classmethod
    def json(cls, status: int, payload: Any, headers: list[tuple[str, str]] | None = None) -> FakeResponse:
        """A JSON response, compact UTF-8 like the real services send.

        Raises :class:`NonJsonValue` if ``payload`` holds NaN or an infinity: a fake never puts invalid JSON on the
        wire (the caller answers a clear error instead; the shared runtime turns it into a 500 naming it).
        """
        try:
            body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except ValueError as exc:
            raise NonJsonValue(f"the answer would contain NaN or Infinity, which is not JSON ({exc})") from None
        return cls(status, [("content-type", "application/json"), *(headers or [])], body)

    @classmethod
    def text(cls, status: int, text: str, headers: list[tuple[str, str]] | None = None) -> FakeResponse:
        """A plain-text response (e.g. Qdrant's 401 body)."""
        return cls(status, [("content-type", "text/plain; charset=utf-8"), *(headers or [])], text.encode())


class FakeApp(Protocol):
    """What the shared machinery needs from a fake.

    ``name`` appears in logs and admin answers; ``unrecorded_paths`` are exact paths (health routes) the journal
    skips, so a readiness probe never reads as an application call.
    ``handle`` must be thread-safe (uvicorn's event loop and test threads may call it at once) and must not block
    for long: faults such as hang and drip are the machinery's job, not the fake's.
    """

    name: str
    unrecorded_paths: frozenset[str]

    def handle(self, request: FakeRequest) -> FakeResponse: ...

    def reset(self) -> None: ...
