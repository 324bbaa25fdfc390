"""GitHub's page-number pagination with absolute ``Link`` headers (GitHub docs: "Using pagination in the
REST API").

``per_page`` defaults to 30 and is silently capped at 100; ``page`` defaults to 1; a page past the end is ``[]``.
``Link`` carries ``prev``/``next``/``last``/``first`` as absolute URLs built from the fake's base URL and the request's
own query (so a client's ``per_page`` and ``since`` survive), and is omitted when everything fits on one page. Page 1
omits ``prev``/``first`` and the last page omits ``next``/``last``, following the docs example (no real capture).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


def _int_param(value: str | None, default: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return number if number >= 1 else default


@dataclass(frozen=True)
class Page:
    items: list[Any]
    link: str | None  # the Link header value, or None when there is a single page


def paginate(items: Sequence[Any], *, base: str, path: str, query: str) -> Page:
    """Cut ``items`` to the page the query asks for and build the ``Link`` header for it."""
    params = dict(parse_qsl(query, keep_blank_values=True))
    per_page = min(_int_param(params.get("per_page"), DEFAULT_PER_PAGE), MAX_PER_PAGE)
    page = _int_param(params.get("page"), 1)
    last = max(1, -(-len(items) // per_page))
    chunk = list(items[(page - 1) * per_page : page * per_page])
    if last == 1 and page == 1:
        return Page(chunk, None)

    def url(number: int) -> str:
        return f"{base}{path}?{urlencode({**params, 'page': str(number)})}"

    rels: list[tuple[str, int]] = []
    if page > 1:
        rels.append(("prev", min(page - 1, last)))
    if page < last:
        rels.extend([("next", page + 1), ("last", last)])
    if page > 1:
        rels.append(("first", 1))
    return Page(chunk, ", ".join(f'<{url(n)}>; rel="{rel}"' for rel, n in rels))
