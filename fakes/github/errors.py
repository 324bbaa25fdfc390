"""GitHub's error answers, raised by handlers as :class:`GitHubError` and sent by one dispatcher.

A body is ``{"message", "documentation_url", "status"}`` with ``status`` a string, plus ``errors`` for a 422. Messages
are GitHub's own wording where it is known (``Not Found``, ``Bad credentials``, ``Validation Failed``, ``Label does not
exist``, the App JWT messages in :mod:`fakes.github.auth`); where GitHub's exact wording is unknown the caller's
docstring says so. Each helper returns the exception, so a handler writes ``raise errors.not_found(doc)``.
"""

from __future__ import annotations

from typing import Any

from fakes.core import FakeResponse

DOCS = "https://docs.github.com/rest"


class GitHubError(Exception):
    """A refusal in GitHub's words: :meth:`response` is the answer the dispatcher sends instead of the handler's.

    ``status`` is the HTTP status, ``message`` GitHub's text, ``documentation_url`` the docs page of the route, and
    ``extra`` further keys of the body (e.g. ``errors``).
    """

    def __init__(self, status: int, message: str, documentation_url: str = DOCS, **extra: Any) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.documentation_url = documentation_url
        self.extra = extra

    def response(self) -> FakeResponse:
        body = {
            "message": self.message,
            "documentation_url": self.documentation_url,
            **self.extra,
            "status": str(self.status),
        }
        return FakeResponse.json(self.status, body)


def error(status: int, message: str, documentation_url: str = DOCS, **extra: Any) -> GitHubError:
    """A GitHub error; ``extra`` adds keys such as ``errors``."""
    return GitHubError(status, message, documentation_url, **extra)


def not_found(documentation_url: str = DOCS) -> GitHubError:
    return error(404, "Not Found", documentation_url)


def bad_credentials() -> GitHubError:
    return error(401, "Bad credentials")


def requires_authentication(documentation_url: str = DOCS) -> GitHubError:
    return error(401, "Requires authentication", documentation_url)


def not_accessible_by_integration(documentation_url: str = DOCS) -> GitHubError:
    """403 for an installation token used where its installation does not reach, or where no user acts."""
    return error(403, "Resource not accessible by integration", documentation_url)


def validation_failed(
    resource: str, field: str, code: str = "missing_field", documentation_url: str = DOCS, message: str | None = None
) -> GitHubError:
    """422 ``Validation Failed`` with one entry in ``errors`` (codes: missing_field, invalid, custom, ...)."""
    entry: dict[str, Any] = {"resource": resource, "code": code, "field": field}
    if message is not None:
        entry["message"] = message
    return error(422, "Validation Failed", documentation_url, errors=[entry])


def invalid_request(detail: str, documentation_url: str = DOCS) -> GitHubError:
    """422 for a body of the wrong shape (GitHub's JSON-schema check: ``Invalid request.\\n\\n<detail>``)."""
    return error(422, f"Invalid request.\n\n{detail}", documentation_url)


def problems_parsing_json(documentation_url: str = DOCS) -> GitHubError:
    """400 for a body that is not JSON at all."""
    return error(400, "Problems parsing JSON", documentation_url)


def not_served(method: str, path: str) -> GitHubError:
    """501 for anything the fake does not model, naming method and path: never a silent 200."""
    return error(501, f"fake GitHub does not serve {method} {path}")
