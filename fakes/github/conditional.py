"""GitHub's caching headers and conditional requests (GitHub docs: "Best practices for using the REST API", "Rate
limits for the REST API": a 304 does not count against the primary rate limit).

Every successful answer of the API host, a ``GET`` or a write (``POST``, ``PATCH``, ``DELETE``), carries a weak
``ETag`` (a SHA-256 of the representation: the body and its ``Link``, so it changes exactly when what the client would
see changes), ``Cache-Control`` (``private`` when an ``Authorization`` was sent, else ``public``;
``max-age=60, s-maxage=60``) and ``Vary``; single objects also carry ``Last-Modified`` (set by their handler). On a
``GET``, ``If-None-Match`` naming the current ETag (weak comparison, ``*`` matches anything), or, without it,
``If-Modified-Since`` at or after ``Last-Modified``, turns the answer into ``304 Not Modified`` with no body.
"""

from __future__ import annotations

import hashlib
from email.utils import parsedate_to_datetime

from fakes.core import FakeRequest, FakeResponse

_VARY_AUTHENTICATED = "Accept, Authorization, Cookie, X-GitHub-OTP"
_VARY_ALWAYS = "Accept-Encoding, Accept, X-Requested-With"
_KEPT_ON_304 = frozenset({"etag", "last-modified", "cache-control", "vary"})


def header(response: FakeResponse, name: str) -> str | None:
    return next((value for key, value in response.headers if key.lower() == name), None)


def etag(response: FakeResponse) -> str:
    digest = hashlib.sha256(response.body + b"\n" + (header(response, "link") or "").encode()).hexdigest()
    return f'W/"{digest}"'


def add_cache_headers(request: FakeRequest, response: FakeResponse) -> None:
    """``ETag``, ``Cache-Control`` and ``Vary`` for a successful answer, as GitHub sends them (on writes too)."""
    authenticated = "authorization" in request.headers
    response.headers.append(("etag", etag(response)))
    response.headers.append(("cache-control", f"{'private' if authenticated else 'public'}, max-age=60, s-maxage=60"))
    response.headers.append(("vary", _VARY_AUTHENTICATED if authenticated else "Accept"))
    response.headers.append(("vary", _VARY_ALWAYS))


def not_modified(request: FakeRequest, response: FakeResponse) -> bool:
    """Whether the client's copy is current: ``If-None-Match`` against ``ETag`` first, else ``If-Modified-Since``
    against ``Last-Modified`` (RFC 9110 section 13.2.2: If-Modified-Since is ignored when If-None-Match is sent)."""
    wanted = request.headers.get("if-none-match")
    if wanted is not None:
        current = _opaque(header(response, "etag") or "")
        return any(tag.strip() == "*" or _opaque(tag) == current for tag in wanted.split(","))
    since, modified = request.headers.get("if-modified-since"), header(response, "last-modified")
    if since is None or modified is None:
        return False
    try:
        return parsedate_to_datetime(modified) <= parsedate_to_datetime(since)
    except (TypeError, ValueError):  # an unparsable date is ignored, as RFC 9110 says
        return False


def as_304(response: FakeResponse) -> FakeResponse:
    """The 304 for ``response``: its validators and caching headers, no body and no content type."""
    return FakeResponse(304, [(k, v) for k, v in response.headers if k.lower() in _KEPT_ON_304], b"")


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag.removeprefix("W/")
