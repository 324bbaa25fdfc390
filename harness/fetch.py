"""``fetch_through``: one bounded HTTP exchange through a port-forward (or to a base URL) that says which hop died.

A bare HTTP call has no overall timeout, so a forward dropped by a busy API server leaves a socket nobody
answers and the run waits forever. httpx's own timeouts
only measure inactivity per phase (encode/httpx#1450: a server dripping one byte every 0.5 s never times
out), so here one total deadline covers connect, headers and the whole body. While the request runs, the
forward's change signal wakes it, so a kubectl that dies mid-request is reported a few milliseconds after its
exit (``benchmarks/bench_kube_double.py death`` prints the figures), not at the request timeout. Every failure
is a :class:`~harness.errors.HopFailure` whose ``hop`` names the forward or the service; a caller's mistake (bad
timeout, URL or argument) is a ``ValueError`` / ``TypeError`` raised before anything is sent. The body is read up to
``max_body`` bytes only: a service streaming without end once pushed a probe to 1 GB of memory in 3 s.

``stream_through`` is the same exchange for a body read as it arrives (server-sent events): the caller's ``consume``
gets the response once its headers are in and reads it incrementally, still under the one total deadline, with the
same forward watch and the same hop errors.
"""

from __future__ import annotations

import contextlib
import functools
import math
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import anyio
import h11
import httpx

from harness.attempts import clamp_to_attempt
from harness.blocking import run_blocking
from harness.errors import (
    BodyOverLimit,
    PortForwardBroken,
    PortForwardDied,
    PortForwardGone,
    ServiceAnswerTooLarge,
    ServiceTimeout,
    ServiceUnreachable,
    hide_for_named_failures,
)

DEFAULT_TIMEOUT = 20.0
"""Seconds for one whole exchange, body included."""

DEFAULT_MAX_BODY = 64 * 1024 * 1024
"""Bytes of response body read before giving up (64 MiB): far above an API answer
(Qdrant scrolls and GitHub pages are kilobytes to a few MiB), far below what would exhaust a CI runner."""

WATCH_INTERVAL = 0.02
"""How often (seconds) an in-flight request polls a forward that has no change signal (a test double of one)."""

SETTLE = 0.2
"""After a reset or refusal, how long (seconds) to let kubectl's exit or error line arrive before blaming the service.

kubectl closes the local socket a few milliseconds before it exits or logs why; without this window a dying
forward would be misreported as an unreachable service."""


class Forward(Protocol):
    """What ``fetch_through`` needs from a port-forward (:class:`harness.portforward.PortForward` provides it)."""

    target: str

    @property
    def base_url(self) -> str: ...

    def gone_reason(self) -> str | None: ...
    def exit_summary(self) -> str | None: ...
    def exit_code(self) -> int | None: ...
    def broken_reason(self) -> str | None: ...
    def stderr_tail(self) -> str: ...
    def note_answer(self) -> None: ...
    def note_reset(self) -> None: ...


@dataclass
class _Progress:
    """How far the exchange got, for the error message."""

    stage: str = "connecting"
    status: int | None = None

    def describe(self) -> str:
        if self.status is None:
            return f"no response headers ({self.stage})"
        return f"headers received (HTTP {self.status}) but the body was not complete"


T = TypeVar("T")


@dataclass
class _Done(Generic[T]):
    """The consumer's result (a wrapper, so any value, a response included, reads as success)."""

    value: T


async def _read_whole(response: httpx.Response) -> httpx.Response:
    await response.aread()
    return response


async def fetch_through(
    forward: Forward | str,
    method: str,
    path: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_body: int = DEFAULT_MAX_BODY,
    transport: httpx.AsyncBaseTransport | None = None,
    **request: Any,
) -> httpx.Response:
    """Send ``method path`` through ``forward`` and read the whole answer within ``timeout`` seconds in total.

    ``forward`` is a :class:`harness.PortForward` or a base URL such as ``"http://127.0.0.1:8123"``.
    ``request`` goes to ``httpx.AsyncClient.request`` (``params``, ``headers``, ``content``, ``json``, ...).
    ``transport`` (rarely needed) replaces the socket, e.g. a fake's in-process transport at the fake's base URL.
    The budget is shortened to what is left of the current ``wait_for`` attempt. ``max_body`` caps the body
    in bytes (default :data:`DEFAULT_MAX_BODY`, 64 MiB), counted as the service sends them (after chunked
    framing, before any ``Content-Encoding`` is undone). Returns the response with its body read (any
    status: a 500 is an answer, not a hop failure); the stream is always closed.

    Raises, for the caller's mistakes, before or instead of sending (never as a hop failure):

    - ``ValueError`` when ``timeout`` is not a finite number of seconds > 0, ``max_body`` not an int > 0, the
      base URL not ``http(s)://HOST[:PORT]``, or httpx refuses the request (``httpx.InvalidURL``,
      ``httpx.UnsupportedProtocol``, ``httpx.LocalProtocolError`` or h11's, kept as ``__cause__``);
    - ``TypeError`` for a non-number ``timeout`` / ``max_body`` or an argument httpx does not take.

    Raises for a failed hop (all :class:`~harness.errors.HopFailure`, so ``AssertionError``):

    - :class:`PortForwardGone` at once when the forward already exited or was closed;
      :class:`PortForwardBroken` when it is alive but known broken (kubectl logged a forwarding error, or
      several requests in a row were reset);
    - :class:`PortForwardDied` when kubectl exits during the request (a few milliseconds after the exit), with its
      exit code and stderr tail;
    - :class:`PortForwardBroken` when kubectl, still alive, prints a broken-tunnel line while the request is in
      flight (``error creating error stream ... Timeout occurred``, ...): the request ends then, not at its budget;
    - :class:`ServiceTimeout` when the forward stays alive but the answer is not complete within the budget;
    - :class:`ServiceUnreachable` when the connection is refused, reset or closed with the forward alive;
    - :class:`ServiceAnswerTooLarge` when the ``Content-Length`` or the bytes read pass ``max_body``: at most
      ``max_body`` plus one read (64 KiB) is held, then the connection is closed.
    """
    __tracebackhide__ = hide_for_named_failures  # the caller's line and the message, not this module's source
    return await _bounded(forward, method, path, _read_whole, timeout, max_body, transport, request)


async def stream_through(
    forward: Forward | str,
    method: str,
    path: str,
    consume: Callable[[httpx.Response], Awaitable[T]],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_body: int = DEFAULT_MAX_BODY,
    transport: httpx.AsyncBaseTransport | None = None,
    **request: Any,
) -> T:
    """Send ``method path`` through ``forward`` and hand the response to ``consume`` as soon as its headers arrive.

    ``consume(response)`` reads the body incrementally (``response.aiter_bytes()``) and returns what it made of it;
    it may stop early (the stream is closed afterwards). One total deadline of ``timeout`` seconds covers connect,
    headers and everything ``consume`` reads; a stall mid-body is a :class:`ServiceTimeout` like any other, so a
    consumer that keeps its partial result outside (an object it fills) still has it. Arguments, caller-mistake
    errors and hop errors are those of :func:`fetch_through` (``max_body`` counts the bytes ``consume`` reads); an
    exception ``consume`` raises itself (not a transport error) propagates unchanged.
    """
    __tracebackhide__ = hide_for_named_failures
    return await _bounded(forward, method, path, consume, timeout, max_body, transport, request)


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's own default verification context (certifi's CA bundle, environment ignored as ``trust_env=False``
    asks), built once: building one reads the whole bundle, about 19 ms of CPU, and every fetch opens a client."""
    return httpx.create_ssl_context(trust_env=False)


async def _bounded(
    forward: Forward | str,
    method: str,
    path: str,
    consume: Callable[[httpx.Response], Awaitable[T]],
    timeout: float,
    max_body: int,
    transport: httpx.AsyncBaseTransport | None,
    request: dict[str, Any],
) -> T:
    __tracebackhide__ = hide_for_named_failures
    _check_positive("timeout", timeout, float)
    _check_positive("max_body", max_body, int)
    fwd = None if isinstance(forward, str) else forward
    base_url = forward if isinstance(forward, str) else forward.base_url
    if fwd is None:
        _check_base_url(base_url)
    budget = clamp_to_attempt(timeout)
    where = _where(fwd, base_url, method, path)
    if fwd is not None:
        _refuse_if_unusable(fwd, where, path, budget)

    progress = _Progress()
    outcome: _Done[T] | BaseException | None = None
    died = False
    started = time.monotonic()
    async with httpx.AsyncClient(
        base_url=base_url, timeout=httpx.Timeout(budget), trust_env=False, transport=transport, verify=_tls()
    ) as client:
        with anyio.CancelScope(deadline=anyio.current_time() + budget) as scope:
            async with anyio.create_task_group() as tg:
                if fwd is not None:
                    tg.start_soon(_watch_exit, fwd, scope)
                try:
                    outcome = _Done(await _exchange(client, method, path, request, progress, max_body, consume))
                except Exception as exc:  # kept, classified below: raising here would wrap it in an ExceptionGroup
                    outcome = exc
                tg.cancel_scope.cancel()
        if fwd is not None and fwd.exit_summary() is not None and not isinstance(outcome, (_Done, BodyOverLimit)):
            died = True

    elapsed = time.monotonic() - started
    if isinstance(outcome, BodyOverLimit):
        if fwd is not None:
            fwd.note_answer()  # the forward carried an answer: the service is the hop at fault
        raise _too_large(fwd, base_url, where, path, budget, max_body, outcome)
    if isinstance(outcome, _REFUSED_BY_HTTPX):
        raise ValueError(
            f"{where}: not sent: httpx refused the request as given ({type(outcome).__name__}: {outcome}); "
            f"this is the caller's mistake, not a failed hop"
        ) from outcome
    if isinstance(outcome, Exception) and not isinstance(outcome, (httpx.TransportError, OSError)):
        raise outcome  # a caller's mistake (bad argument) or a decoding error: not a hop failure
    if isinstance(outcome, _Done):
        if fwd is not None:
            fwd.note_answer()
        return outcome.value
    hung = outcome is None or isinstance(outcome, httpx.TimeoutException)
    broke = fwd is not None and fwd.broken_reason() is not None
    if fwd is not None and not died and (broke or not hung):
        died = await _settle(fwd)  # kubectl logs "lost connection to pod" just before it exits
    if died:
        assert fwd is not None
        raise PortForwardDied(
            f"{where}: the port-forward died mid-request after {elapsed:.2f}s ({fwd.exit_summary()}); "
            f"{progress.describe()}. The hop that failed is kubectl port-forward, not the service.",
            target=fwd.target,
            path=path,
            budget=budget,
            exit_code=fwd.exit_code(),
            stderr_tail=fwd.stderr_tail(),
        )
    if fwd is not None and broke and hung:
        raise PortForwardBroken(
            f"{where}: kubectl reported the tunnel broken while the request hung ({fwd.broken_reason()}); "
            f"{progress.describe()} after {elapsed:.2f}s. The hop that failed is kubectl port-forward, not the "
            f"service. Reopen it (the `forwards` pool does this on its next get).",
            target=fwd.target,
            path=path,
            budget=budget,
            stderr_tail=fwd.stderr_tail(),
        )
    raise _service_failure(fwd, base_url, where, path, budget, elapsed, progress, outcome)


def fetch_through_sync(
    forward: Forward | str,
    method: str,
    path: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_body: int = DEFAULT_MAX_BODY,
    transport: httpx.AsyncBaseTransport | None = None,
    **request: Any,
) -> httpx.Response:
    """The blocking twin of :func:`fetch_through` (same arguments, result and errors).

    Runs the exchange on a private event loop in the calling thread (the current ``wait_for`` attempt is
    still seen). Raises :class:`harness.errors.SyncCallInEventLoop` (a ``RuntimeError``) at once when called from a
    thread that is already running an event loop: await :func:`fetch_through` there instead. A hop failure is raised
    without the event loop's frames, so the traceback ends at the caller's line.
    """
    __tracebackhide__ = True
    return run_blocking(
        functools.partial(
            fetch_through, forward, method, path, timeout=timeout, max_body=max_body, transport=transport, **request
        ),
        entry="fetch_through_sync",
        instead="fetch_through",
    )


_REFUSED_BY_HTTPX = (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError, h11.LocalProtocolError)
"""Errors for a request httpx will not send as given. ``UnsupportedProtocol`` and ``LocalProtocolError`` are
``TransportError`` subclasses, so without this they would be blamed on the service; h11's own
``LocalProtocolError`` escapes httpx unwrapped when a body is shorter than its declared ``Content-Length``."""


def _check_positive(name: str, value: object, kind: type) -> None:
    """``value`` must be a finite number > 0 (an int when ``kind`` is ``int``); ``bool`` is not a number here."""
    allowed = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        unit = "bytes as an int" if kind is int else "seconds as a float"
        raise TypeError(f"fetch_through: {name} must be {unit}, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"fetch_through: {name} must be finite and > 0, got {value!r}")


def _check_base_url(base_url: str) -> None:
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"fetch_through: {base_url!r} is not a valid base URL ({exc})") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(
            f"fetch_through: {base_url!r} is not a base URL such as 'http://127.0.0.1:8123' "
            f"(scheme http or https and a host), nor a PortForward"
        )
    if url.port is not None and not 1 <= url.port <= 65535:
        raise ValueError(f"fetch_through: base URL {base_url!r} has port {url.port}, outside 1..65535")


class _CappedBody(httpx.AsyncByteStream):
    """The response's byte stream, stopped with :class:`BodyOverLimit` once more than ``max_body`` bytes came in."""

    def __init__(self, inner: httpx.AsyncByteStream, max_body: int, status: int) -> None:
        self._inner, self._max_body, self._status = inner, max_body, status

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._inner:
            received += len(chunk)
            if received > self._max_body:
                raise BodyOverLimit(received, None, self._status)  # httpx closes the stream on the way out
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _exchange(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    request: dict[str, Any],
    progress: _Progress,
    max_body: int,
    consume: Callable[[httpx.Response], Awaitable[T]],
) -> T:
    """Send, then let ``consume`` read the body (at most ``max_body`` bytes); the stream is closed on every path."""

    async def headers_in(response: httpx.Response) -> None:
        progress.status = response.status_code
        declared = _content_length(response)
        if declared is not None and declared > max_body:
            raise BodyOverLimit(0, declared, response.status_code)  # refused before reading a byte of it
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CappedBody(response.stream, max_body, response.status_code)

    client.event_hooks["response"] = [headers_in]
    progress.stage = "waiting for response headers"
    async with client.stream(method, path, **request) as response:
        return await consume(response)


def _content_length(response: httpx.Response) -> int | None:
    """The declared body size, or ``None`` (absent, unreadable, or no body follows: HEAD, 204, 304)."""
    if response.request.method == "HEAD" or response.status_code in (204, 304):
        return None
    value = response.headers.get("content-length", "").strip()
    return int(value) if value.isdigit() else None


async def _watch_exit(fwd: Forward, scope: anyio.CancelScope) -> None:
    """Cancel the exchange as soon as the forward's exit is recorded (its watcher records it as it happens) or
    kubectl prints a line that means the tunnel is broken: a request on a broken tunnel would only hang."""
    await _until(fwd, lambda: fwd.exit_summary() is not None or fwd.broken_reason() is not None)
    scope.cancel()


async def _settle(fwd: Forward) -> bool:
    """After a reset or refusal, wait up to :data:`SETTLE` seconds for kubectl to exit; True if it exited.

    A logged forwarding error does not end the wait early: ``lost connection to pod`` precedes the exit."""
    with anyio.move_on_after(SETTLE):
        await _until(fwd, lambda: fwd.exit_summary() is not None)
    return fwd.exit_summary() is not None


async def _until(fwd: Forward, done: Callable[[], bool]) -> None:
    """Return once ``done()``: woken by the forward's change signal (:meth:`harness.PortForward.change_signal`)
    the moment its watcher records an exit or a broken tunnel; a forward without one is polled every
    :data:`WATCH_INTERVAL` seconds."""
    signal = getattr(fwd, "change_signal", None)
    if signal is None:
        while not done():
            await anyio.sleep(WATCH_INTERVAL)
        return
    with signal() as wake:
        while not done():
            await _readable(wake)
            with contextlib.suppress(BlockingIOError):
                wake.recv(4096)  # read empty: the next wait sleeps until the next change


_readable = getattr(anyio, "wait_readable", None) or anyio.wait_socket_readable  # wait_readable: anyio >= 4.7


def _refuse_if_unusable(fwd: Forward, where: str, path: str, budget: float) -> None:
    gone = fwd.gone_reason()
    if gone is not None:
        raise PortForwardGone(
            f"{where}: refused before sending: the port-forward is gone ({gone}). "
            f"Reopen it (the `forwards` pool does this on the next attempt).",
            target=fwd.target,
            path=path,
            budget=budget,
            exit_code=fwd.exit_code(),
            stderr_tail=fwd.stderr_tail(),
        )
    broken = fwd.broken_reason()
    if broken is not None:
        raise PortForwardBroken(
            f"{where}: refused before sending: kubectl is alive but the port-forward is broken ({broken}); "
            f"it never recovers (kubernetes/kubectl#686). Reopen it.",
            target=fwd.target,
            path=path,
            budget=budget,
            stderr_tail=fwd.stderr_tail(),
        )


def _service_failure(
    fwd: Forward | None,
    base_url: str,
    where: str,
    path: str,
    budget: float,
    elapsed: float,
    progress: _Progress,
    outcome: BaseException | None,
) -> Exception:
    target = fwd.target if fwd is not None else base_url
    stderr = fwd.stderr_tail() if fwd is not None else ""
    alive = " (the port-forward is alive)" if fwd is not None else ""
    said = f"; kubectl stderr: {stderr}" if stderr else ""
    if outcome is None or isinstance(outcome, httpx.TimeoutException):
        return ServiceTimeout(
            f"{where}: the service did not finish answering within the {budget:.2f}s total budget{alive}: "
            f"{progress.describe()}{said}",
            target=target,
            path=path,
            budget=budget,
            stderr_tail=stderr,
        )
    if fwd is not None:
        fwd.note_reset()
        broken = fwd.broken_reason()
        if broken is not None:
            return PortForwardBroken(
                f"{where}: connection {_kind(outcome)} after {elapsed:.2f}s and the port-forward is broken "
                f"({broken}); the hop that failed is kubectl port-forward (pod gone or not listening). Reopen it.",
                target=target,
                path=path,
                budget=budget,
                stderr_tail=stderr,
            )
    return ServiceUnreachable(
        f"{where}: connection {_kind(outcome)} after {elapsed:.2f}s{alive}: {progress.describe()}: "
        f"{type(outcome).__name__}: {outcome}{said}",
        target=target,
        path=path,
        budget=budget,
        stderr_tail=stderr,
    )


def _too_large(
    fwd: Forward | None, base_url: str, where: str, path: str, budget: float, max_body: int, too_large: BodyOverLimit
) -> ServiceAnswerTooLarge:
    target = fwd.target if fwd is not None else base_url
    stderr = fwd.stderr_tail() if fwd is not None else ""
    if too_large.declared is not None:
        seen = f"its Content-Length is {too_large.declared:,} bytes; nothing of the body was read"
    else:
        seen = f"reading stopped after {too_large.received:,} bytes"
    return ServiceAnswerTooLarge(
        f"{where}: the service sent more than max_body={max_body:,} bytes (HTTP {too_large.status}; {seen}) and "
        f"the answer was dropped. The hop at fault is the service (an endless or runaway body); "
        f"pass a larger max_body= if an answer this big is expected.",
        target=target,
        path=path,
        budget=budget,
        stderr_tail=stderr,
        max_body=max_body,
        received=too_large.received,
        declared=too_large.declared,
        status=too_large.status,
    )


def _kind(exc: BaseException) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "closed without a complete answer"
    return "reset"


def _where(fwd: Forward | None, base_url: str, method: str, path: str) -> str:
    if fwd is None:
        return f"{method} {path} at {base_url}"
    return f"{method} {path} via port-forward {fwd.target} ({base_url})"
