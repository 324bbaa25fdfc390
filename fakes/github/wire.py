"""The fake GitHub's routing and request decoding: route tables, the authenticated :class:`Call`, strict JSON bodies.

A leaf module (it imports only :mod:`fakes.core`, :mod:`fakes.github.errors` and :mod:`fakes.github.state`), so the
handler modules and the app all build on it without importing each other. Handlers registered in a
:class:`RouteTable` take ``(fake, call)`` and return a :class:`~fakes.core.FakeResponse`, or raise
:class:`~fakes.github.errors.GitHubError`; the app's one dispatcher turns that into GitHub's error answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import unquote

from fakes.core import BadJson, FakeRequest, FakeResponse
from fakes.github import errors
from fakes.github.state import App, Token, User

_DOC = "https://docs.github.com/rest"
#: The docs page of each served route: GitHub puts it in every error body's ``documentation_url``.
DOCS = {
    "repo": f"{_DOC}/repos/repos#get-a-repository",
    "issues": f"{_DOC}/issues/issues#list-repository-issues",
    "issue": f"{_DOC}/issues/issues#get-an-issue",
    "comments": f"{_DOC}/issues/comments#list-issue-comments",
    "create_comment": f"{_DOC}/issues/comments#create-an-issue-comment",
    "comment": f"{_DOC}/issues/comments#get-an-issue-comment",
    "update_comment": f"{_DOC}/issues/comments#update-an-issue-comment",
    "add_labels": f"{_DOC}/issues/labels#add-labels-to-an-issue",
    "remove_label": f"{_DOC}/issues/labels#remove-a-label-from-an-issue",
    "issue_reaction": f"{_DOC}/reactions/reactions#create-reaction-for-an-issue",
    "comment_reaction": f"{_DOC}/reactions/reactions#create-reaction-for-an-issue-comment",
    "pull": f"{_DOC}/pulls/pulls#get-a-pull-request",
    "contents": f"{_DOC}/repos/contents#get-repository-content",
    "access_token": f"{_DOC}/apps/apps#create-an-installation-access-token-for-an-app",
    "repo_installation": f"{_DOC}/apps/apps#get-a-repository-installation-for-the-authenticated-app",
    "user": f"{_DOC}/users/users#get-the-authenticated-user",
    "permission": f"{_DOC}/collaborators/collaborators#get-repository-permissions-for-a-user",
    "rate_limit": f"{_DOC}/overview/rate-limits-for-the-rest-api",
}

#: Where a file's ``download_url`` points: GitHub's is ``https://raw.githubusercontent.com/{owner}/{repo}/{ref}/{path}``,
#: another host; the fake serves it under this prefix of its own base URL.
RAW_PREFIX = "/raw/"

#: How a route authenticates: "token" (optional token, checked when sent), "jwt" (an App JWT required) or "none"
#: (OAuth endpoints: no API credential, outside the REST API's rate limit).
AuthKind = Literal["token", "jwt", "none"]


@dataclass
class Call:
    """One API request after authentication: the request, its base URL, its normalised raw path (what ``Link`` URLs
    use), the path parameters and who sent it."""

    request: FakeRequest
    base: str
    path: str
    params: dict[str, str]
    token: Token | None = None
    app: App | None = None  # set on App-JWT routes

    @property
    def actor(self) -> User | None:
        return self.token.actor if self.token is not None else None


F = TypeVar("F")  # the fake a table's handlers take
Handler = Callable[[F, Call], FakeResponse]


@dataclass(frozen=True)
class Route(Generic[F]):
    """A route and what GitHub says about it: ``scopes`` goes to ``X-Accepted-OAuth-Scopes`` (OAuth tokens) and
    ``permissions`` to ``X-Accepted-GitHub-Permissions`` (App tokens)."""

    method: str
    regex: re.Pattern[str]
    handler: Handler[F]
    auth: AuthKind
    scopes: str = ""
    permissions: str = ""


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``/repos/{owner}/{repo}/contents/{path*}`` to a regex over the raw (still percent-encoded) path.

    ``{name*}`` spans segments and may be empty (a contents path: ``/contents/`` is the root); ``{number}`` and
    ``{..._id}`` are integers, so ``/issues/comments`` is no issue. A negative one matches too and finds nothing:
    GitHub answers 404 for ``/issues/-1``, not 501.
    """
    regex_text = re.sub(r"\{(\w+)\*\}", r"(?P<\1>.*)", pattern)
    regex_text = re.sub(r"\{(number|\w+_id)\}", r"(?P<\1>-?[0-9]+)", regex_text)
    return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", regex_text) + "$")


class RouteTable(Generic[F]):
    """Routes in registration order; :meth:`route` is the decorator, :meth:`match` finds the handler for a request."""

    def __init__(self, *tables: RouteTable[F]) -> None:
        self._routes: list[Route[F]] = [r for table in tables for r in table]

    def __iter__(self) -> Iterator[Route[F]]:
        return iter(self._routes)

    def route(
        self, method: str, pattern: str, auth: AuthKind = "token", *, scopes: str = "", permissions: str = ""
    ) -> Callable[[Handler[F]], Handler[F]]:
        """A decorator registering a handler for ``method`` and ``pattern`` (see :func:`compile_pattern`)."""
        regex = compile_pattern(pattern)

        def register(handler: Handler[F]) -> Handler[F]:
            self._routes.append(Route(method, regex, handler, auth, scopes, permissions))
            return handler

        return register

    def match(self, method: str, raw_path: str) -> tuple[Route[F], dict[str, str]] | None:
        """The route for ``method`` and ``raw_path`` with its percent-decoded path parameters, or None."""
        for candidate in self._routes:
            found = candidate.regex.match(raw_path)
            if found is not None and candidate.method == method:
                return candidate, {k: unquote(v) for k, v in found.groupdict().items()}
        return None


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def decode_unreserved(raw_path: str) -> str:
    """``raw_path`` with percent-encoded unreserved characters decoded (``/repos/oc%74o`` is ``/repos/octo``, RFC 3986
    section 6.2.2.2), so every route matches however a client encoded a name; ``%2F`` and other reserved characters
    stay encoded and remain part of the name they are in."""

    def one(found: re.Match[str]) -> str:
        char = chr(int(found.group(1), 16))
        return char if char in _UNRESERVED else found.group(0).upper()

    return re.sub(r"%([0-9A-Fa-f]{2})", one, raw_path)


def without_empty_segments(raw_path: str) -> str:
    """``raw_path`` without a trailing slash or empty segments (``//``); ``/`` stays ``/``."""
    return "/" + "/".join(segment for segment in raw_path.split("/") if segment)


def load_json(request: FakeRequest) -> Any:
    """The request body as strict JSON (None when empty); raises :class:`BadJson` for anything GitHub would not parse.

    Besides what ``FakeRequest.json`` refuses, this refuses by itself what Python's parser lets through or crashes on:
    ``NaN``/``Infinity`` and numbers that overflow a double (``1e400``), over-long integers (``ValueError``) and deep
    nesting (``RecursionError``), so no body can reach a handler and come back as a 500 or as invalid JSON.
    """
    try:
        value = request.json()
        json.dumps(value, allow_nan=False)  # ValueError on NaN/Infinity anywhere inside
    except BadJson:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadJson(f"{type(exc).__name__}: {str(exc)[:200]}") from None
    return value


def json_body(request: FakeRequest, doc: str) -> Any:
    """The JSON body; raises GitHub's 400 ``Problems parsing JSON`` for every body :func:`load_json` refuses."""
    try:
        return load_json(request)
    except BadJson:
        raise errors.problems_parsing_json(doc) from None
