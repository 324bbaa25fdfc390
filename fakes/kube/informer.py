"""A list+watch cache of one list of objects, as client-go's informers keep one (reduced to one consumer).

:class:`Informer` lists the path, then watches from the list's resourceVersion through :meth:`Api.watch
<fakes.kube.client.Api.watch>` (bookmarks asked for, a fresh list on ``410 Gone``). What it holds is the server's
state as of the last event it read: reads from it are as stale as a controller-runtime client's cached reads, never
more. A failed list or watch (a ``403`` from RBAC, a refused connection) is retried after a back-off that starts at
:data:`BACKOFF_SECONDS` and doubles up to :data:`BACKOFF_MAX_SECONDS`, the reflector's (``tools/cache/reflector.go``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import httpx

from fakes.kube.client import Api, ApiError

log = logging.getLogger("fakes.kube.informer")
Obj = dict[str, Any]
Handler = Callable[[str, Obj], None]
BACKOFF_SECONDS = 0.8
BACKOFF_MAX_SECONDS = 30.0


class InformerNotSynced(Exception):
    """The first list did not complete within the start's budget; the message names the path and the last error."""


class Informer:
    """``Informer(api, path, on_event=..., **params)``: the objects of the list at ``path`` (``params`` such as
    ``labelSelector`` go to the list and the watch). ``on_event(type, obj)`` is called on the informer's loop for
    every ``ADDED``/``MODIFIED``/``DELETED`` (an object gone while no watch ran is ``DELETED`` after the next list)."""

    def __init__(self, api: Api, path: str, *, on_event: Handler | None = None, **params: Any) -> None:
        self.api, self.path, self.params, self.on_event = api, path, params, on_event
        self._objects: dict[tuple[str, str], Obj] = {}
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.last_error: BaseException | None = None

    async def start(self, timeout: float) -> None:
        """Start watching; returns once the first list is in. Raises :class:`InformerNotSynced` after ``timeout``
        seconds (the watch goes on trying until :meth:`stop`)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            why = f": {self.last_error}" if self.last_error else ""
            raise InformerNotSynced(f"list of {self.path} not in within {timeout:.1f} s{why}") from None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def get(self, name: str, namespace: str = "") -> Obj | None:
        """The cached object ``name`` (``namespace``: empty for a cluster-scoped list or when the list is of one
        namespace), or ``None``."""
        found = self._objects.get((namespace, name))
        if found is None and not namespace:
            found = next((obj for (_, n), obj in self._objects.items() if n == name), None)
        return found

    def items(self) -> list[Obj]:
        return list(self._objects.values())

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def _run(self) -> None:
        backoff = BACKOFF_SECONDS
        while True:
            try:
                async for event in self.api.watch(self.path, **self.params):
                    self._apply(event)
                    backoff = BACKOFF_SECONDS
            except (ApiError, httpx.HTTPError, OSError, ValueError) as exc:
                self.last_error = exc
                log.info("watch of %s failed, again in %.1f s: %s", self.path, backoff, exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_SECONDS)

    def _apply(self, event: Obj) -> None:
        kind = event.get("type")
        if kind == "SYNCED":
            listed = {tuple(key) for key in event["keys"]}
            for key in [k for k in self._objects if k not in listed]:
                self._emit("DELETED", self._objects.pop(key))
            self._synced.set()
            return
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if kind == "DELETED":
            self._objects.pop(key, None)
        elif kind in ("ADDED", "MODIFIED"):
            kind = "MODIFIED" if key in self._objects else "ADDED"
            self._objects[key] = obj
        else:
            return
        self._emit(str(kind), obj)

    def _emit(self, kind: str, obj: Obj) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(kind, obj)
        except Exception:  # a consumer's bug must not end the watch
            log.exception("handler of %s failed on a %s event", self.path, kind)
