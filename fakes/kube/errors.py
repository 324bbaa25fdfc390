"""Kubernetes ``Status`` errors as a real API server words them (apimachinery ``pkg/api/errors``).

:class:`ApiError` carries everything a ``Status`` body needs; handlers raise it and the server turns it into the
response (:meth:`ApiError.status_body`). Constructors below reproduce the real messages, e.g.
``deployments.apps "api" not found`` (404 NotFound), ``pods "x" already exists`` (409 AlreadyExists),
``Operation cannot be fulfilled on ...: the object has been modified; please apply your changes to the latest
version and try again`` (409 Conflict), ``too old resource version: 5 (40)`` (410 Expired) and
``Kind "name" is invalid: field: Invalid value: ...`` (422 Invalid).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Cause:
    """One ``details.causes`` entry: ``reason`` such as ``FieldValueInvalid``, the ``field`` path, a message."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class ApiError(Exception):
    """An error answered as a ``Status`` object with HTTP ``code``."""

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status_body(self) -> dict[str, Any]:
        """The ``Status`` object for this error."""
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        return status_object("Failure", self.code, message=self.message, reason=self.reason, details=details)


def status_object(
    status: str, code: int, *, message: str = "", reason: str = "", details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``Status`` with its keys in the order Go's encoding/json writes ``metav1.Status``: kind, apiVersion,
    metadata, status, message, reason, details, code (``omitempty`` fields left out when empty; apimachinery
    ``pkg/apis/meta/v1/types.go``). ``details`` keys must already be in ``StatusDetails`` order: name, group, kind,
    uid, causes, retryAfterSeconds."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": status}
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details:
        body["details"] = details
    if code:
        body["code"] = code
    return body


def qualified(resource: str, group: str) -> str:
    """``deployments.apps`` for a grouped resource, ``pods`` for the core group (how messages name resources)."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', name=name, group=group, kind=resource
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def forbidden(resource: str, group: str, name: str, detail: str) -> ApiError:
    """An admission plugin's refusal (``apierrors.NewForbidden``)."""
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(resource, group)} "{name}" is forbidden: {detail}',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, group: str, name: str, detail: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {detail}',
        name=name,
        group=group,
        kind=resource,
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def gone_too_old(requested: int, oldest: int) -> ApiError:
    """410 for a watch from a resourceVersion older than the double remembers (etcd's compaction wording)."""
    return expired(f"too old resource version: {requested} ({oldest})")


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid: ``Kind.group "name" is invalid: [field: message, ...]`` (one cause: no brackets)."""
    shown = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:
        shown = f"[{shown}]"
    qualified_kind = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{qualified_kind} "{name}" is invalid: {shown}',
        name=name,
        group=group,
        kind=kind,
        causes=causes,
    )


def field_invalid(path: str, value: Any, detail: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", path)


def field_required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def method_not_allowed(verb: str, resource: str, group: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        kind=resource,
        group=group,
    )


def unsupported_media_type(accepted: list[str]) -> ApiError:
    """415, as for a strategic merge patch on a custom resource (which has no Go struct to read merge keys from)."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
    )


def page_not_found() -> ApiError:
    """What the server answers for a path it does not serve (an unknown resource type included)."""
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


def for_status(code: int) -> ApiError:
    """The Status a real server sends for ``code`` with no more specific cause (fault injection's default body)."""
    if code == 429:
        return ApiError(429, "TooManyRequests", "Too many requests, please try again later.", retry_after=1)
    if code == 503:
        return ApiError(503, "ServiceUnavailable", "The server is currently unable to handle the request")
    if code == 504:
        return ApiError(
            504,
            "Timeout",
            "The server was unable to return a response in the time allotted, but may still be processing the request",
        )
    if code >= 500:
        return ApiError(code, "InternalError", "Internal error occurred: injected fault")
    if code == 401:
        return unauthorized()
    if code == 403:
        return ApiError(403, "Forbidden", "forbidden: injected fault")
    if code == 404:
        return page_not_found()
    if code == 409:
        return ApiError(409, "Conflict", "injected conflict")
    return ApiError(code, "" if code < 400 else "BadRequest", f"injected status {code}")
