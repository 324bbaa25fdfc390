"""What a probe can know about the attempt it runs in: its bound and its deadline.

``wait_for`` sets the current attempt in a context variable before calling the probe (anyio copies
context into worker threads, so sync probes see it too). Bounded calls inside the probe (kubectl,
``fetch_through``, kubernetes ``_request_timeout``) shorten their own timeout to what is left of the
attempt with :func:`clamp_to_attempt`, so an abandoned attempt's thread ends by itself.
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass, field


@dataclass
class Attempt:
    """One probe attempt: ``number`` (1-based), ``bound`` in seconds, ``deadline`` on ``time.monotonic()``."""

    number: int
    bound: float
    deadline: float
    notes: list[str] = field(default_factory=list)

    def remaining(self) -> float:
        """Seconds left before this attempt's deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())


_current: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("harness_attempt", default=None)


def current_attempt() -> Attempt | None:
    """The attempt the calling probe runs in, or ``None`` outside ``wait_for``."""
    return _current.get()


def clamp_to_attempt(timeout: float) -> float:
    """``timeout`` shortened to the current attempt's remaining seconds (unchanged outside ``wait_for``).

    Never returns less than 1 ms, so a call made at the very end of an attempt fails fast instead of
    being handed a zero or negative timeout (which some APIs read as "forever").
    """
    attempt = _current.get()
    if attempt is None:
        return timeout
    return max(0.001, min(timeout, attempt.remaining()))


def note(text: str) -> None:
    """Attach a line to the current attempt; ``WaitTimeout`` shows the last one (e.g. the window applied)."""
    attempt = _current.get()
    if attempt is not None:
        attempt.notes.append(text)


def enter(attempt: Attempt) -> contextvars.Token[Attempt | None]:
    """Make ``attempt`` current (for ``wait_for``); pass the token to :func:`leave`."""
    return _current.set(attempt)


def leave(token: contextvars.Token[Attempt | None]) -> None:
    """Restore the attempt that was current before :func:`enter`."""
    _current.reset(token)
