"""Live progress of long waits: what is awaited, attempts so far (hung and failed among them), elapsed of budget.

A wait shorter than ``threshold`` (3 s) shows nothing. Past it, every running wait is shown:

- ``live`` (a terminal, one process): one line rewritten in place about twice a second,
  ``waiting for deployment/web to roll out: 12s of 120s, attempt 7 (6 done: 1 hung, 2 failed)``, erased when the
  wait ends;
- ``lines`` (CI logs, pytest-xdist workers, anything that is not a terminal): the same text as a new line every
  ``period`` (30 s) of a wait, and one closing line for a wait that printed any;
- ``off``.

``wait_for`` calls :func:`watch` as it starts and closes the :class:`Watch` as it ends (which also records the wait
for the spec's timeline, :mod:`harness.timeline`). One daemon ticker thread draws; it exists only while a watched
wait runs, and the last :meth:`Watch.close` joins it (bounded), so no thread outlives the waits. Outside pytest
progress goes to ``sys.stderr`` (``live`` when it is a terminal); the pytest plugin points it at the terminal (or
the CI log) through its own descriptor, so pytest's output capture never swallows it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness import timeline


class WaitSummary(Protocol):
    """What progress shows of a wait: a :class:`harness.waiting.WaitSummary` (waiting imports this module, so this
    one names only the fields it reads)."""

    @property
    def describe(self) -> str: ...
    @property
    def budget(self) -> float: ...
    @property
    def outcome(self) -> str: ...
    @property
    def attempts(self) -> list[Any]: ...
    def count(self, outcome: Any) -> int: ...


MODES = ("auto", "live", "lines", "off")
TICK = 0.5
_JOIN_TIMEOUT = 2.0


def _stderr_write(text: str) -> None:
    stream = sys.__stderr__ or sys.stderr
    if stream is not None:
        stream.write(text)
        stream.flush()


def _stderr_is_terminal() -> bool:
    stream = sys.__stderr__
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, OSError):  # closed
        return False


@dataclass
class Settings:
    """``mode`` (one of :data:`MODES`; ``auto`` = ``live`` on a terminal, else ``lines``), ``threshold`` and
    ``period`` in seconds, ``write`` (takes text, newlines included), ``terminal`` (is ``write`` a terminal),
    ``prefix`` put before each line (e.g. the xdist worker's id)."""

    mode: str = "auto"
    threshold: float = 3.0
    period: float = 30.0
    write: Callable[[str], None] = _stderr_write
    terminal: bool | None = None
    prefix: str = ""

    def effective_mode(self) -> str:
        if self.mode != "auto":
            return self.mode
        terminal = _stderr_is_terminal() if self.terminal is None else self.terminal
        return "live" if terminal else "lines"


_settings = Settings()
_lock = threading.Lock()
_active: list[Watch] = []
_ticker: threading.Thread | None = None
_wake = threading.Event()
_live_shown = False


def configure(**changes: object) -> Settings:
    """Change the settings (keywords of :class:`Settings`); returns the previous ones (for :func:`restore`).
    Raises ``ValueError`` for an unknown mode or a negative threshold or non-positive period."""
    global _settings
    mode = changes.get("mode", _settings.mode)
    if mode not in MODES:
        raise ValueError(f"progress mode must be one of {', '.join(MODES)}, got {mode!r}")
    previous = _settings
    updated = Settings(**{**previous.__dict__, **changes})
    if updated.threshold < 0 or updated.period <= 0:
        raise ValueError(f"need threshold >= 0 and period > 0 seconds, got {updated.threshold} and {updated.period}")
    _settings = updated
    return previous


def restore(settings: Settings) -> None:
    """Put back settings returned by :func:`configure`."""
    global _settings
    _settings = settings


class Watch:
    """One wait on display. ``close()`` is idempotent."""

    def __init__(self, summary: WaitSummary, mode: str) -> None:
        self.summary = summary
        self.mode = mode
        self.start = time.monotonic()
        self.lines_printed = 0
        self.shown = False
        self.closed = False

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def line(self) -> str:
        s = self.summary
        done = len(s.attempts)
        running = "" if self.closed else f", attempt {done + 1}"
        return (
            f"waiting for {s.describe}: {_secs(self.elapsed())} of {_secs(s.budget)}{running} "
            f"({done} done: {s.count('hung')} hung, {s.count('failed')} failed)"
        )

    def close(self) -> None:
        """The wait ended: take it off the display (a closing line in ``lines`` mode if it printed any)."""
        with _lock:
            if self.closed:
                return
            self.closed = True
            if self in _active:
                _active.remove(self)
            last = not _active
        if self.mode == "lines" and self.lines_printed:
            _emit(
                f"{_settings.prefix}done waiting for {self.summary.describe} after {_secs(self.elapsed())}: "
                f"{self.summary.outcome}, {_attempts(len(self.summary.attempts))}\n"
            )
        if last:
            _stop_ticker()


def _attempts(count: int) -> str:
    """``1 attempt``, ``3 attempts``."""
    return f"{count} attempt{'' if count == 1 else 's'}"


def _secs(value: float) -> str:
    """``4.2s`` under ten seconds, ``42s`` above."""
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"


def watch(summary: WaitSummary) -> Watch:
    """Start showing ``summary``'s wait (after the threshold) and note it on the spec's timeline."""
    timeline.note_wait(summary)
    mode = _settings.effective_mode()
    handle = Watch(summary, mode)
    if mode == "off":
        handle.closed = True
        return handle
    with _lock:
        _active.append(handle)
        _start_ticker()
    return handle


def _start_ticker() -> None:
    """Start the ticker unless one runs (call with ``_lock`` held)."""
    global _ticker
    if _ticker is None:
        _ticker = threading.Thread(target=_tick_loop, name="harness progress", daemon=True)
        _ticker.start()


def _stop_ticker() -> None:
    """Wake the ticker so it sees no active wait and ends; wait (bounded) for it unless a new wait started."""
    with _lock:
        ticker = _ticker
    _wake.set()
    end = time.monotonic() + _JOIN_TIMEOUT
    while ticker is not None and ticker is not threading.current_thread() and time.monotonic() < end:
        ticker.join(timeout=0.05)
        if not ticker.is_alive():
            break
        with _lock:
            if _active:  # a new wait keeps it running
                return
    _erase_live()


def _tick_loop() -> None:
    global _ticker
    while True:
        _wake.wait(TICK)
        _wake.clear()
        with _lock:
            active = [w for w in _active if not w.closed]
            if not active:
                _ticker = None
                return
        _draw(active)


def _draw(active: list[Watch]) -> None:
    global _live_shown
    settings = _settings
    due = [w for w in active if w.elapsed() >= settings.threshold]
    if not due:
        return
    live = [w for w in due if w.mode == "live"]
    if live:
        newest = live[-1]
        more = f" (+{len(live) - 1} more)" if len(live) > 1 else ""
        lead = "" if _live_shown else "\n"
        _live_shown = True
        _emit(f"{lead}\r\x1b[K{settings.prefix}{newest.line()}{more}")
    for w in due:
        if w.mode == "lines" and w.elapsed() >= settings.period * (w.lines_printed + 1):
            w.lines_printed += 1
            _emit(f"{settings.prefix}{w.line()}\n")


def _erase_live() -> None:
    global _live_shown
    if _live_shown:
        _live_shown = False
        _emit("\r\x1b[K")


def _emit(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # the terminal went away: progress is not worth failing a wait for
        _settings.write(text)
