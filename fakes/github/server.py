"""Running the fake GitHub through the shared machinery (``fakes/server.py``): on a socket or in-process.

Both are context managers yielding a :class:`fakes.server.FakeHandle` (``url``, ``app`` = the :class:`FakeGitHub`,
journal, faults, transports). On exit the server stops and the fake's webhook worker is closed, so no thread
outlives the block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fakes.github.app import FakeGitHub
from fakes.journal import JournalEntry
from fakes.server import FakeHandle, serve_fake
from fakes.server import in_process as _in_process


@contextlib.contextmanager
def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> Iterator[FakeHandle[FakeGitHub]]:
    """Serve a new :class:`FakeGitHub` (``options`` go to its constructor) with uvicorn in a thread; port 0 lets the OS
    choose. Raises ``fakes.server.FakeServerError`` when the server does not start or stop within its bounds."""
    fake = FakeGitHub(**options)
    try:
        with serve_fake(fake, host, port) as handle:
            yield handle
    finally:
        fake.close()


@contextlib.contextmanager
def in_process(**options: Any) -> Iterator[FakeHandle[FakeGitHub]]:
    """A new :class:`FakeGitHub` reachable only through ``handle.transport()`` / ``async_transport()`` at
    ``handle.url`` (``http://github.fake``): no socket, no server thread."""
    fake = FakeGitHub(**options)
    try:
        yield _in_process(fake)
    finally:
        fake.close()


def unserved(handle: FakeHandle) -> list[JournalEntry]:
    """Journal entries the fake answered 501 (an endpoint it does not model), oldest first.

    ``assert unserved(gh) == []`` is the spec's "no unstubbed endpoint was called"; it cannot pass vacuously because
    unserved calls are journaled with their 501 (health checks are the only requests never journaled).
    """
    return [entry for entry in handle.requests() if entry.status == 501]
