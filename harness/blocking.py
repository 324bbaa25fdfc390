"""Blocking entry points: the one place that runs a private event loop for a sync caller.

``wait_for_sync``, ``fetch_through_sync`` and ``chat_turn_sync`` (and the sync clients built on them) each run their
async twin with ``anyio.run``. Called from inside a running event loop, ``anyio.run`` says only "Already running
asyncio in this thread"; here the call is refused first with :class:`SyncCallInEventLoop`, naming the function to
await instead. A failure the twin raises for the spec to read (a timeout, a failed hop) loses the event loop's
frames, so the traceback ends at the caller's line, as the README promises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from harness.errors import SyncCallInEventLoop

T = TypeVar("T")


def running_async_library() -> str | None:
    """The async library running in this thread (``"asyncio"``, ``"trio"``), or ``None``.

    The same test ``anyio.run`` makes before it refuses: sniffio's answer when sniffio is installed (its context
    variable, then asyncio's current task), else whether asyncio has a running loop in this thread.
    """
    try:
        import sniffio
    except ImportError:
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return "asyncio"
    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None


def refuse_inside_event_loop(entry: str, instead: str) -> None:
    """Raise :class:`SyncCallInEventLoop` if an event loop runs in this thread.

    ``entry`` is the blocking function called (``"fetch_through_sync"``), ``instead`` its async twin
    (``"fetch_through"``); the one-line message names both and the fix.
    """
    __tracebackhide__ = True
    library = running_async_library()
    if library is not None:
        raise SyncCallInEventLoop(
            f"{entry}() blocks to run its own event loop, but {library} is already running in this thread "
            f"(an async spec or fixture): use `await {instead}(...)` there, or move the blocking call to a worker "
            f"thread with `await anyio.to_thread.run_sync(...)`"
        )


def run_blocking(
    call: Callable[[], Awaitable[T]],
    *,
    entry: str,
    instead: str,
    spec_facing: tuple[type[BaseException], ...] = (AssertionError,),
) -> T:
    """Run ``call()`` on a private event loop (``anyio.run``) and return its result.

    Raises :class:`SyncCallInEventLoop` at once when an event loop already runs in this thread (see
    :func:`refuse_inside_event_loop`). An exception of a ``spec_facing`` type (default: the harness's assertion
    failures: timeouts, failed hops) is re-raised without the frames of the event loop and of the async twin, its
    cause kept, so pytest shows the caller's line and the one-line message; anything else propagates unchanged.
    """
    __tracebackhide__ = True
    refuse_inside_event_loop(entry, instead)
    try:
        return anyio.run(call)
    except spec_facing as exc:
        raise exc.with_traceback(None) from exc.__cause__
