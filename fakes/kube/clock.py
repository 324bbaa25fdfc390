"""The double's clock and the timers that run on it.

Every instant the double writes (``creationTimestamp``, ``deletionTimestamp``, condition times, event times, the
``Date`` header, the ``AGE`` column) comes from one :class:`Clock`: the host's ``time.time()`` plus a settable
offset in seconds, so a spec can put the API server ahead of or behind the host (clock skew) or jump it forward
(a progress deadline expiring) without waiting.

Formats, as a real API server writes them (apimachinery ``metav1.Time`` / ``metav1.MicroTime``):

- :func:`rfc3339` gives whole seconds, truncated not rounded (``metav1.Time`` marshals with second precision), so an
  object created at 12:00:00.9 shows ``12:00:00Z``. The precise instant is kept privately by the store.
- :func:`rfc3339_micro` gives microseconds (``MicroTime``: ``Event.eventTime``, ``Lease`` times).
- :func:`http_date` gives the RFC 9110 ``Date`` header (IMF-fixdate, whole seconds).

:class:`Timers` schedules callbacks on the double's event loop at an instant *of the double's clock*: moving the
clock forward fires every timer that became due, moving it back delays them. Controllers use it for timed work
(a readiness delay, a progress deadline, a grace period).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime


class Clock:
    """Host time plus an offset (seconds, float; positive = the double is ahead of the host). Thread-safe."""

    def __init__(self, offset: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._offset = float(offset)
        self._listeners: list[Callable[[], None]] = []

    @property
    def offset(self) -> float:
        """Seconds the double's clock is ahead of the host (negative: behind)."""
        with self._lock:
            return self._offset

    def time(self) -> float:
        """The double's time as epoch seconds (float)."""
        return time.time() + self.offset

    def now(self) -> datetime:
        """The double's time as an aware UTC datetime (microsecond precision)."""
        return datetime.fromtimestamp(self.time(), tz=UTC)

    def set_offset(self, seconds: float) -> None:
        """Put the double ``seconds`` ahead of the host (negative: behind). Raises ``ValueError`` if not finite."""
        seconds = float(seconds)
        if seconds != seconds or seconds in (float("inf"), float("-inf")):
            raise ValueError(f"clock offset must be a finite number of seconds, got {seconds!r}")
        with self._lock:
            self._offset = seconds
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def advance(self, seconds: float) -> None:
        """Move the double's clock by ``seconds`` (negative moves it back); due timers fire."""
        self.set_offset(self.offset + float(seconds))

    def set_time(self, instant: datetime | float) -> None:
        """Make the double's clock read ``instant`` now (aware datetime or epoch seconds)."""
        target = instant.timestamp() if isinstance(instant, datetime) else float(instant)
        self.set_offset(target - time.time())

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (from the thread that moved the clock) whenever the offset changes."""
        with self._lock:
            self._listeners.append(listener)


def rfc3339(epoch: float) -> str:
    """``2025-01-31T12:00:00Z``: whole seconds, truncated (what ``metav1.Time`` serialises)."""
    return datetime.fromtimestamp(int(epoch // 1), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(epoch: float) -> str:
    """``2025-01-31T12:00:00.123456Z`` (what ``metav1.MicroTime`` serialises)."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> float:
    """Epoch seconds from an RFC 3339 timestamp such as ``2025-01-31T12:00:00Z``. Raises ``ValueError``."""
    return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")).timestamp()


def http_date(epoch: float) -> str:
    """The ``Date`` header for ``epoch`` (IMF-fixdate, whole seconds, RFC 9110 §5.6.7)."""
    return email.utils.formatdate(int(epoch // 1), usegmt=True)


class TimerHandle:
    """A scheduled callback; :meth:`cancel` stops it if it has not run yet."""

    def __init__(self, due: float, callback: Callable[[], None]) -> None:
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    """Callbacks due at instants of a :class:`Clock`, run on one asyncio loop.

    Thread-safe: ``call_at``/``call_later`` may be called from any thread; callbacks always run on ``loop``. An
    exception in a callback is logged by asyncio's handler and does not stop other timers.
    """

    def __init__(self, clock: Clock, loop: asyncio.AbstractEventLoop) -> None:
        self.clock = clock
        self.loop = loop
        self._lock = threading.Lock()
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._armed: asyncio.TimerHandle | None = None
        self._closed = False
        clock.on_change(self._rearm_threadsafe)

    def call_at(self, instant: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback()`` on the loop once the double's clock reads ``instant`` (epoch seconds)."""
        handle = TimerHandle(instant, callback)
        with self._lock:
            heapq.heappush(self._heap, (instant, next(self._seq), handle))
        self._rearm_threadsafe()
        return handle

    def call_later(self, seconds: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback()`` on the loop ``seconds`` from now on the double's clock."""
        return self.call_at(self.clock.time() + max(0.0, seconds), callback)

    def close(self) -> None:
        """Drop every pending timer (the double is stopping)."""
        with self._lock:
            self._closed = True
            self._heap.clear()
        if self._armed is not None:
            self._armed.cancel()

    def _rearm_threadsafe(self) -> None:
        if self._closed or self.loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._rearm()
        else:
            with contextlib.suppress(RuntimeError):  # loop closed meanwhile
                self.loop.call_soon_threadsafe(self._rearm)

    def _rearm(self) -> None:
        if self._armed is not None:
            self._armed.cancel()
            self._armed = None
        now = self.clock.time()
        due: list[TimerHandle] = []
        with self._lock:
            while self._heap and (self._heap[0][2].cancelled or self._heap[0][0] <= now):
                _, _, handle = heapq.heappop(self._heap)
                if not handle.cancelled:
                    due.append(handle)
            nxt = self._heap[0][0] if self._heap else None
        for handle in due:
            handle.cancelled = True
            self.loop.call_soon(handle.callback)
        if nxt is not None and not self._closed:
            # Wake at most every second too, so a clock moved by another thread is noticed even if its
            # notification raced the arming.
            self._armed = self.loop.call_later(min(max(nxt - now, 0.0), 1.0), self._rearm)
