"""The specs' read-only view of any Qdrant, real or fake.

Exact counts only (``POST /points/count`` with ``exact: true``: ``points_count`` in ``GET /collections/<c>`` is
documented as approximate), whole-collection scrolls that follow ``next_page_offset`` (a single scroll silently
returns one page of 10: qdrant/qdrant#3412), and points by payload field. Every call goes through
:func:`harness.fetch.fetch_through_sync`, so each exchange has one total deadline and a failure names the hop; a
scroll also has a deadline over all its pages.

Nothing here writes: there is no create, upsert or delete (the harness never mutates what a spec reads back).

Specs compare exact counts (:meth:`QdrantView.point_count`) before and after an action (a service that stores one
point per distinct document, keyed by a content hash, adds none for a resent one and one for an edited one), and
read what is stored by a payload field (:meth:`QdrantView.payload_values`, a scroll that never pulls vectors). A
collection that does not exist is ``None``, never 0: "never created" (the feature is not wired up) and "empty"
mean opposite things.
"""

from __future__ import annotations

import time
from typing import Any

from harness.errors import QdrantReadError as QdrantReadError  # re-exported: defined in harness.errors
from harness.fetch import Forward, fetch_through_sync

DEFAULT_TIMEOUT = 10.0
"""Seconds for one exchange with Qdrant."""

PAGE_SIZE = 200
"""Points per scroll page."""


class QdrantView:
    """Read-only, bounded access to one Qdrant at ``target`` (a port-forward or a base URL such as
    ``"http://127.0.0.1:6333"``); ``api_key`` is sent as ``api-key`` when given; ``timeout`` is seconds per
    exchange. Transport failures raise ``harness.ServiceTimeout`` / ``harness.ServiceUnreachable`` /
    ``PortForward*`` from ``fetch_through``; wrong answers raise :class:`QdrantReadError`."""

    def __init__(self, target: Forward | str, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.target = target
        self.timeout = timeout
        self._headers = {"api-key": api_key} if api_key else {}

    def collections(self) -> list[str]:
        """Names of all collections (``GET /collections``)."""
        return [c["name"] for c in self._call("GET", "/collections")["collections"]]

    def exists(self, collection: str) -> bool:
        """True if ``collection`` exists; ``GET /collections/<c>`` with Qdrant's 404 meaning "never created" (not
        "empty"). A 404 without Qdrant's error envelope (a proxy, a wrong base URL) raises :class:`QdrantReadError`."""
        try:
            self._call("GET", f"/collections/{collection}")
        except QdrantReadError as exc:
            if _never_created(exc):
                return False
            raise
        return True

    def point_count(self, collection: str, filter: dict[str, Any] | None = None) -> int | None:
        """Exact number of points in ``collection`` (matching ``filter``), or ``None`` when the collection was never
        created (Qdrant's 404). One ``POST /points/count`` with ``exact: true``."""
        try:
            return self.count(collection, filter)
        except QdrantReadError as exc:
            if _never_created(exc):
                return None
            raise

    def point_counts(self, collections: tuple[str, ...]) -> dict[str, int | None]:
        """:meth:`point_count` of each of ``collections``, e.g. a baseline to compare an action against."""
        return {name: self.point_count(name) for name in collections}

    def payload_values(
        self, collection: str, key: str = "name", *, filter: dict[str, Any] | None = None, deadline: float = 60.0
    ) -> list[Any] | None:
        """The ``key`` payload value of every point that has one, in Qdrant's id order (a whole scroll with only
        ``key`` in the payload and no vectors), or ``None`` when the collection was never created."""
        try:
            points = self.scroll_all(
                collection, filter=filter, with_payload=[key], with_vector=False, deadline=deadline
            )
        except QdrantReadError as exc:
            if _never_created(exc):
                return None
            raise
        return [p["payload"][key] for p in points if (p.get("payload") or {}).get(key) is not None]

    def count(self, collection: str, filter: dict[str, Any] | None = None) -> int:
        """Exact number of points in ``collection`` matching ``filter`` (all when ``None``). 404 → QdrantReadError."""
        body: dict[str, Any] = {"exact": True}
        if filter is not None:
            body["filter"] = filter
        return int(self._call("POST", f"/collections/{collection}/points/count", json=body)["count"])

    def scroll_all(
        self,
        collection: str,
        *,
        filter: dict[str, Any] | None = None,
        with_payload: bool | list[str] = True,
        with_vector: bool = False,
        page_size: int = PAGE_SIZE,
        deadline: float = 60.0,
        max_points: int = 100_000,
    ) -> list[dict[str, Any]]:
        """Every matching point as Qdrant's record dicts (``id``, ``payload``, ``vector``), in Qdrant's id order.

        Follows ``next_page_offset`` until ``null``. Raises :class:`QdrantReadError` if the whole scroll takes more
        than ``deadline`` seconds, returns more than ``max_points``, or an offset repeats (a scroll that never ends).
        """
        ends_at = time.monotonic() + deadline
        points: list[dict[str, Any]] = []
        offset: Any = None
        seen: set[str] = set()
        while True:
            left = ends_at - time.monotonic()
            if left <= 0:
                raise QdrantReadError(
                    f"qdrant {self._where()}: scroll of `{collection}` not finished within "
                    f"{deadline:.1f} s ({len(points)} points read)"
                )
            body: dict[str, Any] = {"limit": page_size, "with_payload": with_payload, "with_vector": with_vector}
            if filter is not None:
                body["filter"] = filter
            if offset is not None:
                body["offset"] = offset
            page = self._call(
                "POST", f"/collections/{collection}/points/scroll", json=body, timeout=min(self.timeout, left)
            )
            points.extend(page["points"])
            offset = page.get("next_page_offset")
            if offset is None:
                return points
            if str(offset) in seen or len(points) > max_points:
                raise QdrantReadError(
                    f"qdrant {self._where()}: scroll of `{collection}` does not end (offset "
                    f"{offset!r} again or over {max_points} points)"
                )
            seen.add(str(offset))

    def points_where(self, collection: str, key: str, value: Any, **scroll: Any) -> list[dict[str, Any]]:
        """Points whose payload ``key`` (a Qdrant key path such as ``meta.title``) matches ``value`` exactly
        (``match.value``: a string, an integer or a bool; a stored ``1.0`` does not match ``1``)."""
        return self.scroll_all(collection, filter={"must": [{"key": key, "match": {"value": value}}]}, **scroll)

    def _where(self) -> str:
        return self.target if isinstance(self.target, str) else getattr(self.target, "target", repr(self.target))

    def _call(self, method: str, path: str, *, timeout: float | None = None, **request: Any) -> Any:
        response = fetch_through_sync(
            self.target, method, path, timeout=timeout or self.timeout, headers=self._headers, **request
        )
        try:
            body = response.json()
        except ValueError:
            body = None
        error = (
            body.get("status", {}).get("error")
            if isinstance(body, dict) and isinstance(body.get("status"), dict)
            else None
        )
        if response.status_code != 200:
            raise QdrantReadError(
                f"qdrant {self._where()}: {method} {path} answered HTTP {response.status_code}: "
                f"{error or response.text[:300]!r}",
                status=response.status_code,
                detail=error,
            )
        if not isinstance(body, dict) or "result" not in body:
            raise QdrantReadError(
                f"qdrant {self._where()}: {method} {path} answered 200 without Qdrant's "
                f"{{result, status, time}} envelope: {response.text[:300]!r}",
                status=200,
            )
        return body["result"]


def _never_created(exc: QdrantReadError) -> bool:
    """Qdrant's own "collection does not exist" answer: a 404 carrying its error envelope."""
    return exc.status == 404 and exc.detail is not None
