"""Every answer the fake sends is checked against the ``openai`` package's own types before it goes on the wire.

:func:`checked` validates a payload with the type the real client parses it into and refuses any key that type does
not name (the package's models accept unknown keys silently, so a typo would otherwise pass). A failure is a bug in
the fake: :class:`WireShapeError` reaches the shared runtime, which answers a loud 500 naming it. :func:`sse` frames a
server-sent event the way the real API does (``event:`` line only where the API sends one, compact JSON ``data:``,
a blank line).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import pydantic
from pydantic import TypeAdapter

DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


class WireShapeError(RuntimeError):
    """The fake built an answer the ``openai`` types refuse (a bug in the fake, not in the request)."""


def _extras(value: Any, where: str) -> list[str]:
    if isinstance(value, pydantic.BaseModel):
        found = [f"{where}.{key}" for key in (value.model_extra or {})]
        for name in type(value).model_fields:
            found += _extras(getattr(value, name), f"{where}.{name}")
        return found
    if isinstance(value, (list, tuple)):
        return [e for i, item in enumerate(value) for e in _extras(item, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [e for key, item in value.items() for e in _extras(item, f"{where}.{key}")]
    return []


@functools.lru_cache(maxsize=64)
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def checked(kind: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` unchanged, once it validates as ``kind`` (an ``openai`` model class or a union type) with no key
    the type does not declare. Raises :class:`WireShapeError` naming the type and the problem."""
    name = getattr(kind, "__name__", str(kind))
    try:
        model = _adapter(kind).validate_python(payload)
    except pydantic.ValidationError as exc:
        raise WireShapeError(f"the fake built a {name} the openai types refuse: {exc}") from None
    unknown = _extras(model, name)
    if unknown:
        raise WireShapeError(f"the fake built a {name} with keys the openai types do not declare: {unknown}")
    return payload


def dumps(payload: Any) -> str:
    """Compact JSON as the API sends it (raw UTF-8, no NaN)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sse(payload: dict[str, Any], event: str | None = None) -> bytes:
    """One server-sent event: optional ``event:`` line, one ``data:`` line, blank line."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {dumps(payload)}\n\n".encode()


def estimate_tokens(*texts: str) -> int:
    """A rough token count (4 characters per token, at least 1): usage fields are estimates, not a tokenizer's."""
    return max(1, math.ceil(sum(len(t) for t in texts) / 4))
