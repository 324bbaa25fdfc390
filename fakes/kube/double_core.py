"""What a subresource handler's context needs of the double: its store, its loop, its stop signal, stream tracking.

:mod:`fakes.kube.double` imports the extension points (:mod:`fakes.kube.extensions`), so they cannot import it back,
not even for types; they type the double with this protocol, which :class:`~fakes.kube.double.KubeDouble` satisfies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from fakes.kube.store import Store


class DoubleCore(Protocol):
    """``store`` (the objects), ``loop`` (the serving event loop, ``None`` before it serves), ``stopping`` (set when
    the double stops) and ``track_stream(closer)`` (close a long-lived stream at stop; returns the untrack call)."""

    @property
    def store(self) -> Store: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None: ...

    @property
    def stopping(self) -> asyncio.Event: ...

    def track_stream(self, closer: Callable[[], Awaitable[None]]) -> Callable[[], None]: ...
