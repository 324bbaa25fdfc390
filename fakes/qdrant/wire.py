"""Qdrant's wire contract: envelopes, error codes and messages, point ids.

Neither engine checks any of this (local mode is no oracle for errors), so it is the fake's own code, written from
Qdrant's server source; ``fakes/qdrant/README.md`` ("The wire", "Point ids") lists the rules and their sources.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from fakes.core import BadJson, FakeRequest, FakeResponse

#: The Qdrant server version the fake claims on ``GET /`` (why this one: ``fakes/qdrant/README.md``, "Server version").
QDRANT_VERSION = "1.20.0"
#: No real commit: a marker so a version report never reads as a real build.
QDRANT_COMMIT = "fake000000000000000000000000000000000000"

U64_MAX = 2**64 - 1
_UUID_RE = re.compile(
    r"^(?:urn:uuid:)?(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\{[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}"
    r"|[0-9a-fA-F]{32})$"
)

PointId = int | str


class QdrantError(Exception):
    """An error answer: HTTP ``status`` and the full ``status.error`` message (prefix included)."""

    def __init__(self, status: int, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


def format_error(detail: str) -> QdrantError:
    """400 for JSON syntax / type / serde errors (actix ``JsonPayloadError``)."""
    return QdrantError(400, f"Format error in JSON body: {detail}")


def validation_error(detail: str, where: str = "JSON body") -> QdrantError:
    """422 for ``validator`` rule failures, e.g. ``limit: value 0 invalid, must be 1 or larger``."""
    return QdrantError(422, f"Validation error in {where}: [{detail}]")


def wrong_input(detail: str) -> QdrantError:
    """400 ``StorageError::BadInput``."""
    return QdrantError(400, f"Wrong input: {detail}")


def bad_request(detail: str) -> QdrantError:
    """400 ``StorageError::BadRequest``."""
    return QdrantError(400, f"Bad request: {detail}")


def not_found(detail: str) -> QdrantError:
    """404 ``StorageError::NotFound``."""
    return QdrantError(404, f"Not found: {detail}")


def collection_missing(name: str) -> QdrantError:
    return not_found(f"Collection `{name}` doesn't exist!")


def not_modelled(what: str) -> QdrantError:
    """501: a real Qdrant feature the fake does not model (never a silent wrong answer)."""
    return QdrantError(501, f"Service internal error: fake qdrant does not model {what}")


def envelope(result: Any, started: float, status: str = "ok") -> FakeResponse:
    """``{"result", "status", "time"}`` with ``time`` in float seconds (``helpers.rs``)."""
    return FakeResponse.json(200, {"result": result, "status": status, "time": time.monotonic() - started})


def error_envelope(error: QdrantError, started: float) -> FakeResponse:
    """``{"status": {"error": msg}, "time"}``, no ``result`` key."""
    return FakeResponse.json(
        error.status, {"status": {"error": error.message}, "time": time.monotonic() - started}, error.headers
    )


def parse_point_id(value: Any) -> PointId:
    """A u64 or a UUID (returned lower-case hyphenated); anything else raises ``QdrantError`` 400 worded as Qdrant's
    ``ExtendedPointId`` deserializer words it."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX:
        return value
    if isinstance(value, str) and _UUID_RE.match(value):
        return str(uuid.UUID(value))
    shown = value if isinstance(value, (int, float)) and not isinstance(value, bool) else _json_repr(value)
    raise format_error(f"value {shown} is not a valid point ID, valid values are either an unsigned integer or a UUID")


def parse_path_id(text: str) -> PointId:
    """The path form ``/points/{id}``: ``"42"`` parses as an int (``FromStr``), else a UUID."""
    if text.isdigit() and int(text) <= U64_MAX:
        return int(text)
    if _UUID_RE.match(text):
        return str(uuid.UUID(text))
    raise QdrantError(
        400,
        f"Format error in path parameters: value {text} is not a valid point ID, "
        "valid values are either an unsigned integer or a UUID",
    )


def wire_id(value: Any) -> PointId:
    """An engine id as the wire shows it: int stays int, UUIDs lower-case hyphenated strings."""
    if isinstance(value, int):
        return value
    return str(uuid.UUID(str(value)))


def f32(value: float) -> float:
    """The shortest decimal of an f32, as serde_json prints Qdrant's f32 scores and vectors (``0.6``, not
    ``0.6000000238418579``)."""
    return float(str(np.float32(value)))


def _json_repr(value: Any) -> str:
    import json

    return json.dumps(value) if not isinstance(value, str) else value


#: serde_json's own words for what ``FakeRequest.json`` refuses (its ``at line L column C`` suffix is not modelled):
#: depth past 128 is ``recursion limit exceeded``, ``NaN``/``Infinity`` are no JSON token (``expected value``), and a
#: float past f64 is ``number out of range``.
_SERDE_GIST = {"depth": "recursion limit exceeded", "constant": "expected value", "range": "number out of range"}


def read_body(request: FakeRequest) -> dict[str, Any]:
    """The JSON object body; 400 ``Format error in JSON body`` on bad JSON or a non-object."""
    try:
        body = request.json(wide_ints_as_float=True)  # serde_json reads an integer beyond u64/i64 as an f64
    except BadJson as exc:
        raise format_error(_SERDE_GIST.get(exc.reason, exc.detail)) from None
    if body is None and not request.body.strip():
        raise format_error("EOF while parsing a value at line 1 column 0")
    if not isinstance(body, dict):  # a literal ``null`` included: serde says so, not "EOF"
        raise format_error(f"invalid type: {serde_unexpected(body)}, expected a map at line 1 column 1")
    return body


def serde_unexpected(value: Any) -> str:
    """How serde_json names a JSON value in ``invalid type``/``invalid value`` errors (its ``JsonUnexpected``):
    ``integer `-5```, ``floating point `2.5```, ``string "4"``, ``boolean `true```, ``null``, ``sequence``, ``map``."""
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{_ryu(value)}`"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, list):
        return "sequence"
    if isinstance(value, dict):
        return "map"
    return "null"


def _ryu(value: float) -> str:
    """A float as serde_json prints it (ryu: ``2.5``, ``1.0``, ``1e20``, ``1e-7``), from Python's shortest repr."""
    text = repr(value).replace("e+", "e")
    return re.sub(r"e(-?)0+(\d)", r"e\1\2", text)


def unsigned(value: Any, where: str, rust_type: str = "usize") -> int:
    """``value`` as serde reads an unsigned integer field: 400 Format error worded like serde otherwise (``invalid
    type: string "4", expected u64`` for a wrong type, ``invalid value: integer `-5`, expected usize`` for a
    negative)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 0:
            return value
        raise format_error(f"{where}: invalid value: {serde_unexpected(value)}, expected {rust_type}")
    raise format_error(f"{where}: invalid type: {serde_unexpected(value)}, expected {rust_type}")


def validate(model: type[BaseModel], data: Any, where: str = "") -> Any:
    """``model.model_validate(data)``; a pydantic error becomes 400 Format error naming the first bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"] if not str(p).startswith(("list[", "union[")))
        field = f"{where}.{loc}".strip(".") if loc else where
        raise format_error(f"{field}: {first['msg']}" if field else first["msg"]) from None


def query_flag(request: FakeRequest, name: str) -> bool:
    """A boolean query parameter (``?wait=true``); anything but true/false is 400 like actix's serde."""
    value = request.query_param(name)
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise QdrantError(400, "Query deserialize error: provided string was not `true` or `false`")
