"""Watch streams: ``GET <collection>?watch=true``, answered as newline-delimited JSON events.

Each line is ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}`` (``Content-Type:
application/json``, chunked), as the API server writes them for JSON clients. Semantics:

- ``resourceVersion`` unset or ``"0"``: first an ``ADDED`` for every current match, then changes. Any other
  value: every change after it (from the store's history); older than the history reaches is an ``ERROR`` event
  carrying a 410 ``Expired`` Status, then the stream ends (the kubernetes client raises ``ApiException(410)``).
- ``labelSelector`` / ``fieldSelector``: an object that starts matching arrives as ``ADDED``, one that stops
  matching as ``DELETED`` (as the API server's watch cache filters).
- ``allowWatchBookmarks=true``: ``BOOKMARK`` events (the object carries only ``metadata.resourceVersion``) every
  ``double.bookmark_interval`` seconds. ``sendInitialEvents=true``: the initial ``ADDED`` events end with a bookmark
  annotated ``k8s.io/initial-events-end: "true"``.
- ``timeoutSeconds``: the stream ends after that many seconds; without it after 30-60 minutes (the API server's
  ``--min-request-timeout`` range). It also ends when the client goes away (checked at least every second, since
  aiohttp does not always cancel a handler for a dead client), when the double stops, and when the watcher falls
  more than ``MAX_BACKLOG`` events behind.
- A client asking for ``Table`` (``kubectl get -w``) gets each event's object as a one-row ``Table``.
- While ``double.watches_silent`` is set, a watch stays open and sends nothing (a watch that goes silent).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

from aiohttp import web

from fakes.kube import tables
from fakes.kube.conversion import convert
from fakes.kube.errors import ApiError
from fakes.kube.resources import ResourceType
from fakes.kube.selectors import FieldSelector, LabelSelector
from fakes.kube.store import MAX_BACKLOG, StoreEvent

_POLL = 1.0  # seconds between checks that the client is still there


def _matches(
    obj: dict[str, Any] | None, namespace: str | None, rt: ResourceType, labels: LabelSelector, fields: FieldSelector
) -> bool:
    if obj is None:
        return False
    meta = obj.get("metadata") or {}
    if namespace and rt.namespaced and meta.get("namespace") != namespace:
        return False
    return labels.matches(meta.get("labels")) and fields.matches(obj, rt.key)


def translate(
    event: StoreEvent, namespace: str | None, rt: ResourceType, labels: LabelSelector, fields: FieldSelector
) -> tuple[str, dict[str, Any]] | None:
    """The watch event a filtered watcher sees for ``event`` (``None``: not for it)."""
    now = _matches(event.object, namespace, rt, labels, fields) if event.type != "DELETED" else False
    before = _matches(event.old, namespace, rt, labels, fields)
    if event.type == "DELETED":
        return ("DELETED", event.object) if before or _matches(event.object, namespace, rt, labels, fields) else None
    if now and before:
        return "MODIFIED", event.object
    if now:
        return "ADDED", event.object
    if before:
        return "DELETED", event.object
    return None


def for_version(obj: dict[str, Any], rt: ResourceType) -> dict[str, Any]:
    """``obj`` as served under ``rt``'s version (``apiVersion``/``kind`` set, converted: :mod:`.conversion`)."""
    out = dict(convert(obj, rt))
    out["apiVersion"] = rt.api_version
    out["kind"] = rt.kind
    return out


async def serve_watch(
    request: web.Request,
    double: Any,
    rt: ResourceType,
    namespace: str | None,
    labels: LabelSelector,
    fields: FieldSelector,
) -> web.StreamResponse:
    """Stream a watch for ``rt`` in ``namespace`` (``None``: all) until timeout, client exit or stop."""
    query = request.query
    rv_text = query.get("resourceVersion", "")
    try:
        since = int(rv_text) if rv_text not in ("", "0") else None
    except ValueError:
        raise ApiError(
            400,
            "BadRequest",
            f'invalid resource version "{rv_text}": strconv.ParseUint: parsing "{rv_text}": invalid syntax',
        ) from None
    timeout = _timeout(query.get("timeoutSeconds"))
    as_table = tables.wants_table(request.headers.get("Accept")) is not None
    include = query.get("includeObject", "Metadata")

    def shown(obj: dict[str, Any]) -> dict[str, Any]:
        obj = for_version(obj, rt)
        if not as_table:
            return obj
        meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        return tables.table(rt, [obj], now=double.clock.time(), include=include, list_meta=meta)

    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    initial_end = query.get("sendInitialEvents") in ("true", "1")
    queue: asyncio.Queue[StoreEvent | None] = asyncio.Queue()  # None: the double is stopping
    store = double.store
    expired: ApiError | None = None
    with store.locked():
        if since is None:
            items, start_rv = store.list(rt, namespace)
            backlog: list[tuple[str, dict[str, Any]]] = [
                ("ADDED", o) for o in items if _matches(o, namespace, rt, labels, fields)
            ]
        else:
            start_rv = since
            backlog = []
            try:
                for ev in store.history_since(since, [rt.key]):
                    seen = translate(ev, namespace, rt, labels, fields)
                    if seen is not None:
                        backlog.append(seen)
            except ApiError as exc:
                expired = exc
        sub = store.subscribe(queue.put_nowait, [rt.key]) if expired is None else None
    response = web.StreamResponse(
        status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"}
    )
    last_rv = start_rv

    async def wake() -> None:
        queue.put_nowait(None)

    untrack = double.track_stream(wake)
    try:
        await response.prepare(request)
        if expired is not None:
            await _send(response, "ERROR", expired.status_body())
            return response
        for kind, obj in backlog if not double.watches_silent else []:
            await _send(response, kind, shown(obj))
            last_rv = max(last_rv, int(obj["metadata"].get("resourceVersion", 0) or 0))
        if initial_end and since is None:
            await _send(response, "BOOKMARK", _bookmark(rt, last_rv, initial_end=True))
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + double.bookmark_interval
        while not double.stopping.is_set():
            now = time.monotonic()
            if now >= deadline or _gone(request) or (sub is not None and sub.cancelled):
                break
            wait = min(_POLL, deadline - now, max(0.0, next_bookmark - now) if bookmarks else _POLL)
            try:
                event = await asyncio.wait_for(queue.get(), timeout=max(wait, 0.0))
            except TimeoutError:
                event = None
            if event is None and double.stopping.is_set():
                break
            if double.watches_silent:
                continue
            if event is not None:
                change = translate(event, namespace, rt, labels, fields)
                last_rv = event.rv
                if change is not None:
                    await _send(response, change[0], shown(change[1]))
            if bookmarks and time.monotonic() >= next_bookmark:
                await _send(response, "BOOKMARK", _bookmark(rt, last_rv))
                next_bookmark = time.monotonic() + double.bookmark_interval
        if not _gone(request):
            await response.write_eof()
    except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
        pass  # the client went away (or the double is stopping): nothing left to tell anyone
    finally:
        untrack()
        if sub is not None:
            sub.cancel()
    return response


def _timeout(text: str | None) -> float:
    if text is None or text == "":
        return random.uniform(1800.0, 3600.0)
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, "BadRequest", f'invalid value for timeoutSeconds: "{text}"') from None
    if value <= 0:  # the API server treats 0 as "not set"
        return random.uniform(1800.0, 3600.0)
    return float(value)


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}


async def _send(response: web.StreamResponse, kind: str, obj: dict[str, Any]) -> None:
    line = json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n"
    await response.write(line.encode())


__all__ = ["serve_watch", "translate", "for_version", "MAX_BACKLOG"]
