"""``wait_for``: poll a probe until it answers, with every attempt bounded and every outcome counted.

A poller that re-checks its deadline only between attempts lets one probe that never settles hold a run at
0% CPU for minutes; tenacity has the same gap (jd/tenacity#373). Here:

- each attempt is bounded by ``min(probe_timeout, remaining budget)``: async probes are cancelled at the
  bound; sync probes run in a daemon thread and are *abandoned* at the bound (a thread cannot be killed),
  and the wait counts how many abandoned attempts are still running;
- inside a pytest test, the budget ends before the test's pytest-timeout (the plugin sets the deadline);
- deadlines use ``time.monotonic()`` (anyio's clock); the wait never sleeps past its deadline and never
  starts an attempt with no budget left;
- a falsy answer (``None``, ``False``, ``0``, ``""``, an empty collection) means "not yet"; a truthy answer ends
  the wait and is returned as it is; a probe whose real answer is falsy returns it as :class:`Done` (``Done(0)``),
  which ends the wait and is unwrapped (so ``lambda: is_ready()`` answering ``False`` can never pass a spec
  vacuously, the trap tenacity's ``retry_if_result`` and Gomega's ``Eventually`` users know); an exception is a
  failed attempt; :class:`StopWaiting` ends the wait at once; an error waiting cannot fix (a refused API
  server, rejected credentials, a resource type not served: :func:`harness.errors.waiting_cannot_fix`) twice
  in a row ends it early with :class:`WaitStopped`;
- misuse fails at the call, before any attempt: a probe that cannot be called without arguments
  (:class:`ProbeNotCallable`), an ``interval`` <= 0 (a wait never spins), ``wait_for_sync`` inside a running event
  loop (:class:`harness.errors.SyncCallInEventLoop`, naming ``wait_for``);
- on timeout, :class:`WaitTimeout` names what was awaited, the budget, the attempts split into not-yet,
  failed, hung (no answer within ``probe_timeout``, or the probe's own clamped call timing out at that bound) and
  cut (the budget ran out during the attempt, whose bound was the rest of the budget: the probe was not shown to
  hang), the last "not yet" answer, the last error of each kind, and carries the per-attempt timeline.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
import inspect
import math
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Literal, TypeVar, cast, overload

import anyio
import anyio.lowlevel

from harness import attempts as attempt_context
from harness import progress
from harness.blocking import refuse_inside_event_loop, run_blocking
from harness.errors import (
    KubectlTimeout,
    ProbeNotCallable,
    ProcessTimeout,
    ServiceTimeout,
    StopWaiting,
    WaitStopped,
    WaitTimeout,
    waiting_cannot_fix,
)

T = TypeVar("T")
Outcome = Literal["ok", "not-yet", "failed", "hung", "cut", "stopped"]

_MAX_ABANDONED = 32
"""Abandoned sync attempts of one wait that may run at once; at the cap, the next attempt first waits (within its
bound) for one of them to end, and fails without a new thread if none does."""

MIN_ATTEMPT_SECONDS = 0.001
"""No attempt starts with less budget than this left: it could only be cut, never answer."""

UNRECOVERABLE_REPEATS = 2
"""Consecutive attempts failing with an error waiting cannot fix that end a wait early (one retry covers a blip)."""


@dataclass(frozen=True)
class Done(Generic[T]):
    """A probe's answer that ends the wait whatever its truth value: ``wait_for`` returns ``value``.

    A falsy answer means "not yet", so a probe whose real answer may be falsy wraps it:
    ``lambda: Done(count) if settled else None`` ends the wait with ``count`` even when it is ``0``;
    ``Done(False)``, ``Done(None)``, ``Done([])`` likewise. A truthy answer needs no wrapping.
    """

    value: T


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt on the timeline: ``start`` offset and ``duration`` in seconds, its ``bound``, outcome, error."""

    number: int
    start: float
    duration: float
    bound: float
    outcome: Outcome
    error: str | None = None
    answer: str | None = None
    """A "not yet" attempt's falsy answer (its ``repr``, clipped): what the probe saw."""


@dataclass
class WaitSummary:
    """Everything one ``wait_for`` did; ``outcome`` is ``ok``, ``timeout``, ``stopped`` or ``interrupted``."""

    describe: str
    budget: float
    interval: float
    probe_timeout: float
    outcome: str = "interrupted"
    elapsed: float = 0.0
    attempts: list[AttemptRecord] = field(default_factory=list)
    still_running: int = 0
    notes: list[str] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic, repr=False)
    started_at: float = field(default_factory=time.time)  # wall clock (epoch seconds), for timelines
    spec: str | None = None  # the pytest spec it ran in (from PYTEST_CURRENT_TEST), ``None`` outside pytest

    def count(self, outcome: Outcome) -> int:
        """How many attempts ended with ``outcome``."""
        return sum(1 for a in self.attempts if a.outcome == outcome)

    def last(self, outcome: Outcome) -> AttemptRecord | None:
        """The last attempt that ended with ``outcome``, or ``None``."""
        return next((a for a in reversed(self.attempts) if a.outcome == outcome), None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the per-attempt timeline included)."""
        return asdict(self)

    def line(self) -> str:
        """One line for the terminal summary: what, outcome, elapsed, attempts, hung, failed."""
        return (
            f"{self.outcome:<8} {self.elapsed:7.2f}s  {plural(len(self.attempts), 'attempt', width=3)} "
            f"({self.count('hung')} hung, {self.count('failed')} failed)  {self.describe}"
        )

    def timeout_message(self) -> str:
        """The :class:`WaitTimeout` message: what timed out first, then one line per fact."""
        parts = [f"{self.count('not-yet')} not yet", f"{self.count('failed')} failed"]
        hung = [a for a in self.attempts if a.outcome == "hung"]
        if hung:
            parts.append(f"{len(hung)} hung at its {seconds(max(a.bound for a in hung))}s bound")
        cut = self.last("cut")
        if cut is not None:
            parts.append(f"{self.count('cut')} cut short by the deadline (the last had {seconds(cut.bound)}s left)")
        lines = [
            f"timed out after {seconds(self.budget)}s waiting for {self.describe}",
            f"  {plural(len(self.attempts), 'attempt')}: {', '.join(parts)}",
        ]
        waiting = self.last("not-yet")
        if waiting is not None:
            lines.append(f"  last answer (attempt {waiting.number} at t+{seconds(waiting.start)}s): {waiting.answer}")
        failed = self.last("failed")
        if failed is not None:
            lines.append(
                _indented(f"last error (attempt {failed.number} at t+{seconds(failed.start)}s): {failed.error}")
            )
        if hung:
            lines.append(f"  last hang: attempt {hung[-1].number} started at t+{seconds(hung[-1].start)}s")
        if self.still_running:
            lines.append(f"  {plural(self.still_running, 'abandoned attempt')} still running")
        lines.extend(f"  {note}" for note in self.notes[-2:] if note.startswith("budget clamped"))
        other = [note for note in self.notes if not note.startswith("budget clamped")]
        if other:
            lines.append(f"  {other[-1]}")
        return "\n".join(lines)

    def stopped_message(self, error: BaseException) -> str:
        """The :class:`WaitStopped` message: the wait gave up early, and the error that made it."""
        return "\n".join(
            [
                f"stopped waiting for {self.describe} after {len(self.attempts)} attempts "
                f"({seconds(time.monotonic() - self._started)}s of {seconds(self.budget)}s): the last "
                f"{UNRECOVERABLE_REPEATS} failed with an error that waiting cannot fix",
                _indented(f"{type(error).__name__}: {str(error).strip()}"),
            ]
        )


def _indented(text: str) -> str:
    """``text`` as message lines: its first line indented by two, the rest by four."""
    first, *rest = text.splitlines() or [""]
    return "\n".join([f"  {first}", *(f"    {line}" for line in rest)])


def seconds(value: float) -> str:
    """Seconds for messages: three significant digits, at least one decimal (``30.0``, ``0.3``, ``0.05``, ``120.0``)."""
    if 0 < value < 0.001:
        return "<0.001"
    text = f"{value:.3g}"
    return text if "." in text or "e" in text else f"{text}.0"


def plural(count: int, noun: str, *, width: int = 0) -> str:
    """``1 attempt``, ``3 attempts`` (``width`` pads the number)."""
    return f"{count:{width}d} {noun}{'' if count == 1 else 's'}"


# --- the running test's own budget (set by the pytest plugin) ------------------------------------------


def _deadline_seen_before_import() -> tuple[float, float] | None:
    """The running test's deadline the pytest plugin saw pytest-timeout set before a spec's body imported this module
    (:func:`harness.pytest_plugin.pending_deadline`; looked up, not imported: pytest loads the plugin)."""
    pending = getattr(sys.modules.get("harness.pytest_plugin"), "pending_deadline", None)
    return pending() if callable(pending) else None


_test_deadline: tuple[float, float] | None = _deadline_seen_before_import()  # (monotonic deadline, test's timeout)


def set_test_deadline(deadline: float | None, timeout: float = 0.0) -> None:
    """Clamp every wait to end before ``deadline`` (``time.monotonic()``), the test's pytest-timeout; ``None`` clears.

    The plugin sets it per test, so a wait fails with its own description before pytest-timeout kills the
    test with a bare stack dump (a wait longer than its test's timeout would otherwise never report).
    """
    global _test_deadline
    _test_deadline = None if deadline is None else (deadline, timeout)


def test_margin(test_timeout: float) -> float:
    """Seconds a clamped wait leaves before the test's deadline for the failure report and teardown.

    A tenth of the test's timeout, at least 1 s (building a failure report took over 0.5 s on a loaded CI
    machine) and at most 10 s.
    """
    return min(10.0, max(1.0, 0.1 * test_timeout))


def test_time_left() -> float | None:
    """Seconds left before the running test's pytest-timeout (``None`` outside a test with one)."""
    pinned = _test_deadline
    return None if pinned is None else max(0.0, pinned[0] - time.monotonic())


def _clamp_to_test(timeout: float) -> tuple[float, str | None]:
    """``timeout`` shortened so the wait ends a margin before the test's deadline, and a note when it was."""
    pinned = _test_deadline
    if pinned is None:
        return timeout, None
    deadline, test_timeout = pinned
    margin = test_margin(test_timeout)
    left = max(0.0, deadline - margin - time.monotonic())
    if left >= timeout:
        return timeout, None
    return left, (
        f"budget clamped from {seconds(timeout)}s to {seconds(left)}s: what was left of the test's "
        f"{seconds(test_timeout)}s pytest-timeout, less {seconds(margin)}s for its teardown"
    )


# --- recording for the pytest plugin -------------------------------------------------------------------

_recorded_lock = threading.Lock()
_recorded: collections.deque[WaitSummary] = collections.deque(
    maxlen=1000
)  # bounded outside pytest, where nobody takes them


def take_recorded() -> list[WaitSummary]:
    """Return and clear the summaries of waits that ended since the last call (the plugin calls it per test)."""
    with _recorded_lock:
        taken = list(_recorded)
        _recorded.clear()
    return taken


def _record(summary: WaitSummary) -> None:
    current = os.environ.get("PYTEST_CURRENT_TEST")
    summary.spec = current.rsplit(" (", 1)[0] if current else None
    with _recorded_lock:
        _recorded.append(summary)


# --- the wait ------------------------------------------------------------------------------------------


@overload
async def wait_for(
    describe: str,
    probe: Callable[[], Awaitable[Done[T] | None]],
    *,
    timeout: float = 120.0,
    interval: float = 2.0,
    probe_timeout: float = 30.0,
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None = None,
) -> T: ...


@overload
async def wait_for(
    describe: str,
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = 120.0,
    interval: float = 2.0,
    probe_timeout: float = 30.0,
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None = None,
) -> T: ...


@overload
async def wait_for(
    describe: str,
    probe: Callable[[], Done[T] | None],
    *,
    timeout: float = 120.0,
    interval: float = 2.0,
    probe_timeout: float = 30.0,
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None = None,
) -> T: ...


@overload
async def wait_for(
    describe: str,
    probe: Callable[[], T | None],
    *,
    timeout: float = 120.0,
    interval: float = 2.0,
    probe_timeout: float = 30.0,
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None = None,
) -> T: ...


# The overloads tell a type checker that an async probe's value is what it awaits to, a sync one's what it returns,
# and a Done's is what it wraps.
async def wait_for(
    describe: str,
    probe: Callable[[], Awaitable[T | Done[T] | None]] | Callable[[], T | Done[T] | None],
    *,
    timeout: float = 120.0,
    interval: float = 2.0,
    probe_timeout: float = 30.0,
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None = None,
) -> T:
    """Call ``probe`` until it answers something truthy, or a :class:`Done`, and return that (a ``Done`` unwrapped).

    A falsy answer (``None``, ``False``, ``0``, ``""``, an empty collection) is "not yet": the wait goes on. A probe
    whose real answer may be falsy returns ``Done(answer)`` (``Done(0)``, ``Done(False)``, ``Done(None)``), which
    ends the wait with ``answer``.

    ``describe`` completes "waiting for ..." (e.g. ``"a Job to be created"``). ``timeout`` is the
    whole budget, ``interval`` the pause between attempts, ``probe_timeout`` the per-attempt ceiling, all
    in seconds. Inside a pytest test the budget is shortened to end before the test's pytest-timeout (and
    the message says so). A probe reads its own bound with :func:`harness.current_attempt`. Async probes
    are cancelled at their bound; sync probes run in a daemon thread and are abandoned at it.

    Raises :class:`WaitTimeout` (an ``AssertionError``) when the budget runs out; re-raises
    :class:`StopWaiting` from the probe at once; raises :class:`WaitStopped` (a ``StopWaiting``) when
    :data:`UNRECOVERABLE_REPEATS` attempts in a row failed with an error waiting cannot fix. At the call, before any
    attempt: :class:`ProbeNotCallable` (a ``TypeError``) when ``probe`` cannot be called without arguments;
    ``ValueError`` for a ``timeout``, ``probe_timeout`` or ``interval`` that is not finite and > 0 (a wait never
    spins). ``TypeError`` if a sync probe returns an awaitable, or an answer that has no truth value.
    ``explain`` (default: the probe's own ``explain`` attribute, e.g. :func:`harness.rollout.rollout_complete`'s)
    is called, synchronously, when the wait times out or stops; the exception it returns is raised instead, chained
    to the original (a deployment's wait raises :class:`harness.RolloutFailed` with the explanation). A wait running
    longer than a few seconds shows its progress (:mod:`harness.progress`).
    """
    __tracebackhide__ = True
    _check_arguments("wait_for", describe, probe, timeout=timeout, interval=interval, probe_timeout=probe_timeout)
    timeout, clamped = _clamp_to_test(float(timeout))
    summary = WaitSummary(describe, timeout, float(interval), float(probe_timeout))
    if clamped:
        summary.notes.append(clamped)
    runner: _AsyncRunner | _ThreadRunner = (
        _AsyncRunner(cast(Callable[[], Awaitable[Any]], probe)) if _is_async(probe) else _ThreadRunner(probe)
    )
    explain = explain or getattr(probe, "explain", None)
    shown = progress.watch(summary)
    start = summary._started = time.monotonic()  # the budget starts once the wait is set up, not before
    deadline = start + timeout
    cannot_fix = 0  # consecutive attempts that failed with an error waiting cannot fix
    try:
        while (remaining := deadline - time.monotonic()) >= MIN_ATTEMPT_SECONDS:
            attempt = attempt_context.Attempt(len(summary.attempts) + 1, min(probe_timeout, remaining), 0.0)
            outcome, value, error = await runner.run(attempt, summary, start)
            if outcome == "ok":
                summary.outcome = "ok"
                return value  # type: ignore[no-any-return]
            if outcome == "stopped":
                summary.outcome = "stopped"
                raise _explained(explain, summary, error, start)
            cannot_fix = cannot_fix + 1 if outcome == "failed" and waiting_cannot_fix(error) else 0
            if cannot_fix >= UNRECOVERABLE_REPEATS:
                summary.outcome = "stopped"
                raise _explained(explain, summary, WaitStopped(summary.stopped_message(error), summary, error), start)
            remaining = deadline - time.monotonic()
            if remaining < MIN_ATTEMPT_SECONDS:
                break
            await anyio.sleep(min(interval, remaining))
        summary.outcome = "timeout"
        summary.still_running = runner.still_running()
        raise _explained(explain, summary, WaitTimeout(summary.timeout_message(), summary), start)
    finally:
        summary.elapsed = summary.elapsed or time.monotonic() - start  # an explained failure's stops before explaining
        summary.still_running = runner.still_running()
        shown.close()
        _record(summary)


def wait_for_sync(
    describe: str,
    probe: Callable[[], Any],
    *,
    timeout: float = 120.0,
    interval: float = 2.0,
    probe_timeout: float = 30.0,
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None = None,
) -> Any:
    """:func:`wait_for` for sync tests: runs it in its own event loop (``anyio.run``); same arguments and errors.

    Called from inside a running event loop it raises :class:`harness.errors.SyncCallInEventLoop` at once (use
    ``await wait_for(...)`` there). The wait's own errors are raised without the event loop's frames, so a
    failure's traceback ends at the caller's line.
    """
    __tracebackhide__ = True
    refuse_inside_event_loop("wait_for_sync", "wait_for")
    _check_arguments("wait_for_sync", describe, probe, timeout=timeout, interval=interval, probe_timeout=probe_timeout)
    return run_blocking(
        functools.partial(
            wait_for, describe, probe, timeout=timeout, interval=interval, probe_timeout=probe_timeout, explain=explain
        ),
        entry="wait_for_sync",
        instead="wait_for",
        spec_facing=(AssertionError, StopWaiting),
    )


def _check_arguments(
    entry: str, describe: str, probe: object, *, timeout: float, interval: float, probe_timeout: float
) -> None:
    """Refuse misuse at the call, one line naming the fix: a probe that cannot be called, a budget that is not finite
    and > 0, an interval <= 0 (a wait never spins)."""
    __tracebackhide__ = True
    if not callable(probe):
        raise ProbeNotCallable(
            f"{entry}({describe!r}): the probe must be a function to call, got {_short(probe)} "
            f"({type(probe).__name__}); pass the function itself (is_ready, or lambda: is_ready()), not its result"
        )
    try:
        inspect.signature(probe).bind()
    except TypeError as exc:
        raise ProbeNotCallable(
            f"{entry}({describe!r}): the probe {_short(probe)} cannot be called without arguments ({exc}); "
            f"wrap it, e.g. lambda: probe(kube)"
        ) from None
    except ValueError:
        pass  # no signature to read (some builtins): the first attempt will tell
    for name, value in (("timeout", timeout), ("probe_timeout", probe_timeout)):
        if not _finite_positive(value):
            raise ValueError(f"{entry}({describe!r}): {name} must be finite seconds > 0, got {value!r}")
    if not _finite_positive(interval):
        raise ValueError(
            f"{entry}({describe!r}): interval must be finite seconds > 0, got {interval!r}: a wait never spins; "
            f"pass the pause between attempts, e.g. interval=0.1"
        )


def _finite_positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _settled(probe: object, value: Any) -> tuple[bool, Any]:
    """Whether ``value`` ends the wait, and what the wait returns: a :class:`Done` unwrapped, a truthy value as is;
    a falsy one is "not yet". Raises ``TypeError`` for a value with no truth value (a NumPy array, a pandas frame)."""
    if isinstance(value, Done):
        return True, value.value
    try:
        return bool(value), value
    except Exception as exc:
        raise TypeError(
            f"probe {_short(probe)} answered {_short(value)}, which has no truth value ({type(exc).__name__}: {exc}); "
            f"answer None for not yet, or Done(answer) to end the wait with it"
        ) from exc


def _explained(
    explain: Callable[[WaitSummary, BaseException], BaseException | None] | None,
    summary: WaitSummary,
    error: BaseException,
    start: float,
) -> BaseException:
    """What a failed wait raises: ``explain``'s exception (chained to ``error``), or ``error`` when there is none."""
    if explain is None:
        return error
    summary.elapsed = time.monotonic() - start
    try:
        better = explain(summary, error)
    except Exception as exc:  # an explanation must never hide the failure it explains
        summary.notes.append(f"explaining this failure failed: {type(exc).__name__}: {exc}")
        return error
    if better is None:
        return error
    better.__cause__ = None if getattr(better, "carries_cause", False) else error  # its message holds it
    better.__suppress_context__ = True
    return better


def _is_async(probe: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(probe) or inspect.iscoroutinefunction(type(probe).__call__)


class _AsyncRunner:
    """Runs an async probe under a cancel scope: at its bound it is cancelled, so nothing stays running."""

    def __init__(self, probe: Callable[[], Awaitable[Any]]) -> None:
        self.probe = probe

    def still_running(self) -> int:
        return 0

    async def run(
        self, attempt: attempt_context.Attempt, summary: WaitSummary, start: float
    ) -> tuple[Outcome, Any, Any]:
        began = time.monotonic()
        attempt.deadline = began + attempt.bound
        token = attempt_context.enter(attempt)
        outcome: Outcome = "not-yet"
        value: Any = None
        error: BaseException | None = None
        try:
            with anyio.move_on_after(attempt.bound) as scope:
                value = await self.probe()
                outcome = "ok"
            if scope.cancelled_caught:
                outcome, value = "hung", None
        except StopWaiting as exc:
            outcome, error = "stopped", exc
        except Exception as exc:  # a failed attempt; BaseException (Ctrl-C, cancellation) propagates
            outcome, error = "failed", exc
        finally:
            attempt_context.leave(token)
        if outcome == "ok":
            settled, value = _settled(self.probe, value)
            outcome = "ok" if settled else "not-yet"
        outcome = _append(summary, attempt, start, began, outcome, error, value)
        return outcome, value, error


def _forget_event_loop() -> None:
    """In a copied context, drop the marker that says "an event loop runs here".

    sniffio keeps the running async library in a context variable, so a sync probe's thread would inherit
    "asyncio" from the waiting loop and ``anyio.run`` (e.g. ``fetch_through_sync``) inside the probe would refuse
    with ``Already running asyncio in this thread``. The probe's thread runs no loop.
    """
    try:
        import sniffio
    except ImportError:  # without sniffio, anyio asks asyncio itself, which sees no loop in a new thread
        return
    sniffio.current_async_library_cvar.set(None)


class _ThreadRunner:
    """Runs a sync probe in a daemon thread; at its bound the attempt is abandoned and counted while it runs on.

    Daemon threads (not anyio's worker pool) so an abandoned probe that never returns cannot keep the
    process from exiting. At most ``_MAX_ABANDONED`` of one wait's abandoned attempts run at once: at the cap,
    an attempt waits (within its bound) for one of them to end, and fails without starting a thread if none
    does, so a wait never spins through thousands of instant failures.
    """

    def __init__(self, probe: Callable[[], Any]) -> None:
        self.probe = probe
        self._lock = threading.Lock()
        self._abandoned_running = 0
        self._slot_waiters: list[Callable[[], None]] = []

    def still_running(self) -> int:
        with self._lock:
            return self._abandoned_running

    async def _slot(self, bound: float) -> bool:
        """True once fewer than ``_MAX_ABANDONED`` abandoned attempts run; False if none ended within ``bound``."""
        freed = anyio.Event()
        with self._lock:
            if self._abandoned_running < _MAX_ABANDONED:
                return True
            self._slot_waiters.append(_waker(anyio.lowlevel.current_token(), freed.set))
        with anyio.move_on_after(bound):
            await freed.wait()
        return self.still_running() < _MAX_ABANDONED

    async def run(
        self, attempt: attempt_context.Attempt, summary: WaitSummary, start: float
    ) -> tuple[Outcome, Any, Any]:
        began = time.monotonic()
        attempt.deadline = began + attempt.bound
        if self.still_running() >= _MAX_ABANDONED:
            if not await self._slot(attempt.bound):
                refused = RuntimeError(
                    f"{self.still_running()} abandoned attempts of this probe are still running and "
                    f"none ended within {seconds(attempt.bound)}s; not starting another thread"
                )
                _append(summary, attempt, start, began, "failed", refused)
                return "failed", None, refused
            attempt.bound = max(0.0, attempt.deadline - time.monotonic())  # what is left after waiting for a slot
        token = attempt_context.enter(attempt)
        try:
            context = contextvars.copy_context()  # the probe sees its attempt (harness.current_attempt)
        finally:
            attempt_context.leave(token)
        context.run(_forget_event_loop)
        box: dict[str, Any] = {"done": False, "abandoned": False}
        finished = anyio.Event()
        wake = _waker(anyio.lowlevel.current_token(), finished.set)

        def body() -> None:
            try:
                box["value"] = context.run(self.probe)
            except BaseException as exc:  # handed to the awaiting side, which classifies it
                box["error"] = exc
            finally:
                with self._lock:
                    box["done"] = True
                    waiters: list[Callable[[], None]] = []
                    if box["abandoned"]:
                        self._abandoned_running -= 1
                        waiters, self._slot_waiters = self._slot_waiters, []
                wake()
                for waiter in waiters:
                    waiter()

        threading.Thread(
            target=body, name=f"wait_for probe #{attempt.number}: {summary.describe}"[:80], daemon=True
        ).start()
        with anyio.move_on_after(max(0.0, attempt.deadline - time.monotonic())) as scope:
            await finished.wait()
        outcome, value, error = self._classify(scope.cancelled_caught, box)
        if inspect.isawaitable(value):
            _close(value)
            raise TypeError(f"probe {self.probe!r} is sync but returned an awaitable; pass the async function itself")
        if outcome == "ok":
            settled, value = _settled(self.probe, value)
            outcome = "ok" if settled else "not-yet"
        outcome = _append(summary, attempt, start, began, outcome, error, value)
        if error is not None and not isinstance(error, Exception):
            raise error  # KeyboardInterrupt, SystemExit from the probe: not an attempt's failure
        return outcome, value, error

    def _classify(self, timed_out: bool, box: dict[str, Any]) -> tuple[Outcome, Any, BaseException | None]:
        with self._lock:
            if timed_out and not box["done"]:
                box["abandoned"] = True
                self._abandoned_running += 1
                return "hung", None, None
        if "error" in box:
            error = box["error"]
            return ("stopped" if isinstance(error, StopWaiting) else "failed"), None, error
        return "ok", box.get("value"), None  # answered: whether the answer settles the wait is decided by the caller


def _waker(token: anyio.lowlevel.EventLoopToken, callback: Callable[[], None]) -> Callable[[], None]:
    """A thread-safe, non-blocking ``callback`` scheduler for the event loop of ``token`` (asyncio or trio).

    Calling it after that loop has closed does nothing: the wait that started the thread has moved on.
    """
    native: Any = token.native_token  # an asyncio loop or a trio token
    schedule = getattr(native, "call_soon_threadsafe", None) or native.run_sync_soon

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed (trio's RunFinishedError is a RuntimeError too)
            schedule(callback)

    return wake


def _append(
    summary: WaitSummary,
    attempt: attempt_context.Attempt,
    start: float,
    began: float,
    outcome: Outcome,
    error: BaseException | None,
    value: Any = None,
) -> Outcome:
    """Record the attempt; returns its outcome as recorded (a timeout at the bound is a hang, a hang the deadline
    cut is ``cut``), which the runner then reports."""
    if outcome == "failed" and _timed_out_at_bound(error, attempt):
        outcome = "hung"
    if outcome == "hung" and attempt.bound < summary.probe_timeout:
        outcome = "cut"  # its bound was the rest of the budget: the deadline came first, not a hang
    summary.attempts.append(
        AttemptRecord(
            attempt.number,
            began - start,
            time.monotonic() - began,
            attempt.bound,
            outcome,
            _describe_error(error),
            _describe_answer(value) if outcome == "not-yet" else None,
        )
    )
    summary.notes.extend(attempt.notes)
    return outcome


_TIMEOUTS = (TimeoutError, ProcessTimeout, KubectlTimeout, ServiceTimeout)


def _timed_out_at_bound(error: BaseException | None, attempt: attempt_context.Attempt) -> bool:
    """A probe's own bounded call (its timeout clamped to the attempt: :mod:`harness.attempts`) that timed out once
    the attempt's bound ran out is a hang at the bound, as when the wait's own bound fires first: the same hang
    tallies the same whichever side notices it first."""
    return isinstance(error, _TIMEOUTS) and time.monotonic() >= attempt.deadline


ANSWER_CHARS = 200
"""Characters of a "not yet" answer kept on its attempt's record."""


def _describe_answer(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= ANSWER_CHARS else text[: ANSWER_CHARS - 3] + "..."


def _describe_error(error: BaseException | None) -> str | None:
    if error is None:
        return None
    text = str(error).strip() or "(no message)"
    return f"{type(error).__name__}: {text}"


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()
