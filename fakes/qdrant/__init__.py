"""A fake Qdrant REST server (claims 1.20.0) on Qdrant's own engine, with the shared fault injection and journal.

``serve(host, port, **options)`` yields a :class:`~fakes.server.FakeHandle` on a real socket (port 0: the OS
chooses); ``in_process(**options)`` returns an :class:`InProcessQdrant` reached through ``handle.transport()`` at
``http://qdrant.fake``. ``options`` go to :class:`QdrantFake`: ``api_key`` (str), ``apply_delay`` (seconds, float, for
updates sent without ``wait=true``), ``max_request_size_mb`` (int, default 32). Answers are Qdrant's shapes: the
``{"result", "status", "time"}`` envelope, errors as ``{"status": {"error": msg}}`` with Qdrant's codes and prefixes,
a plain-text 401; features it does not model are a 501 naming them. ``serve`` raises
``fakes.server.FakeServerError`` when the server does not start or stop within its bound.

Where each behaviour comes from (Qdrant's server source, qdrant-client, the qdrant-edge engine) and where the fake
knowingly differs: ``fakes/qdrant/README.md``.

Use::

    with fakes.qdrant.serve() as fq:                     # a real socket on 127.0.0.1:<OS port>
        client = QdrantClient(url=fq.url)
    with fakes.qdrant.in_process() as fq:                # no socket
        client = fakes.qdrant.client.ready_client(fq)    # its version check goes through the transport too
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fakes.extras import requires_extra

with requires_extra("fakes.qdrant"):
    from fakes.qdrant.app import QdrantFake
    from fakes.qdrant.wire import QDRANT_VERSION
    from fakes.runtime import FakeRuntime
    from fakes.server import FakeHandle, serve_fake

__all__ = ["QDRANT_VERSION", "InProcessQdrant", "QdrantFake", "in_process", "serve"]


class InProcessQdrant(FakeHandle[QdrantFake]):
    """A :class:`~fakes.server.FakeHandle` on a fake Qdrant with no socket, which owns the fake's temporary directory.

    Use it as a context manager (``with in_process() as fq:``) or call :meth:`close`; if neither happens, the
    directory is still removed when the fake is garbage-collected or at interpreter exit (``weakref.finalize``).
    """

    def close(self) -> None:
        """Drop every collection and delete the temporary directory (idempotent)."""
        self.app.close()

    def __enter__(self) -> InProcessQdrant:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> Iterator[FakeHandle[QdrantFake]]:
    """Serve a fresh fake Qdrant on ``host:port`` (0 = OS-chosen) in a thread; yields its ``FakeHandle``.

    ``options`` go to :class:`QdrantFake` (``api_key``, ``apply_delay``). The fake's temporary files are removed on
    exit. Raises ``fakes.server.FakeServerError`` if the server does not start or stop within its bound.
    """
    app = QdrantFake(**options)
    try:
        with serve_fake(app, host, port) as handle:
            yield handle
    finally:
        app.close()


def in_process(**options: Any) -> InProcessQdrant:
    """A fake Qdrant with no socket, reached through ``handle.transport()`` / ``async_transport()`` at ``handle.url``
    (``http://qdrant.fake``). ``options`` as for :func:`serve`. Use ``with in_process() as fq:`` (or ``fq.close()``);
    its temporary directory is removed at garbage collection or exit at the latest, so it cannot leak."""
    app = QdrantFake(**options)
    return InProcessQdrant(FakeRuntime(app), f"http://{app.name}.fake", served=False)
