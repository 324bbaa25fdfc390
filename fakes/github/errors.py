"""GitHub's error bodies: ``{"message", "documentation_url", "status"}`` with ``status`` a string (fakes-api.md §3.2).

Each helper returns a ready :class:`~fakes.core.FakeResponse`. Messages are GitHub's own wording where it is known
(``Not Found``, ``Bad credentials``, ``Validation Failed``, ``Label does not exist``, the App JWT messages of §3.7);
where GitHub's exact wording is unknown the docstring of the caller says so.
"""

from __future__ import annotations

from typing import Any

from fakes.core import FakeResponse

DOCS = "https://docs.github.com/rest"


def error(status: int, message: str, documentation_url: str = DOCS, **extra: Any) -> FakeResponse:
    """A GitHub error response; ``extra`` adds keys such as ``errors``."""
    body = {"message": message, "documentation_url": documentation_url, **extra, "status": str(status)}
    return FakeResponse.json(status, body)


def not_found(documentation_url: str = DOCS) -> FakeResponse:
    return error(404, "Not Found", documentation_url)


def bad_credentials() -> FakeResponse:
    return error(401, "Bad credentials")


def requires_authentication(documentation_url: str = DOCS) -> FakeResponse:
    return error(401, "Requires authentication", documentation_url)


def validation_failed(resource: str, field: str, code: str = "missing_field", documentation_url: str = DOCS,
                      message: str | None = None) -> FakeResponse:
    """422 ``Validation Failed`` with one entry in ``errors`` (codes: missing_field, invalid, custom, ...)."""
    entry: dict[str, Any] = {"resource": resource, "code": code, "field": field}
    if message is not None:
        entry["message"] = message
    return error(422, "Validation Failed", documentation_url, errors=[entry])


def invalid_request(detail: str, documentation_url: str = DOCS) -> FakeResponse:
    """422 for a body of the wrong shape (GitHub's JSON-schema check: ``Invalid request.\\n\\n<detail>``)."""
    return error(422, f"Invalid request.\n\n{detail}", documentation_url)


def problems_parsing_json(documentation_url: str = DOCS) -> FakeResponse:
    """400 for a body that is not JSON at all."""
    return error(400, "Problems parsing JSON", documentation_url)


def not_served(method: str, path: str) -> FakeResponse:
    """501 for anything the fake does not model: never a silent 200 (issue #5; fakes-api.md §3.1)."""
    return error(501, f"fake GitHub does not serve {method} {path}")
