"""``fetch_through``: one bounded HTTP exchange through a port-forward (or to a plain base URL) that says which hop died.

Upstream's bare ``fetch`` had no timeout, so a forward dropped by a busy API server left a socket nobody
answered and the run waited forever (stack-under-test.md §9, failure modes 2 and 45). httpx's own timeouts
only measure inactivity per phase (encode/httpx#1450: a server dripping one byte every 0.5 s never times
out), so here one total deadline covers connect, headers and the whole body. While the request runs, the
forward's recorded exit is watched, so a kubectl that dies mid-request is reported within about 200 ms of
its exit, not at the request timeout (issue #3). Every failure is a :class:`~harness.errors.HopFailure`
whose ``hop`` names the forward or the service.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import httpx

from harness.attempts import clamp_to_attempt
from harness.errors import PortForwardBroken, PortForwardDied, PortForwardGone, ServiceTimeout, ServiceUnreachable

DEFAULT_TIMEOUT = 20.0
"""Seconds for one whole exchange (upstream ``fetchThrough``'s 20 s)."""

WATCH_INTERVAL = 0.02
"""How often an in-flight request looks at the forward's recorded exit (seconds); bounds death detection."""

SETTLE = 0.2
"""After a reset or refusal, how long (seconds) to let kubectl's exit or error line arrive before blaming the service.

kubectl closes the local socket a few milliseconds before it exits or logs why; without this window a dying
forward would be misreported as an unreachable service."""


class Forward(Protocol):
    """What ``fetch_through`` needs from a port-forward (:class:`harness.portforward.PortForward` provides it)."""

    target: str
    base_url: str

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


async def fetch_through(
    forward: Forward | str, method: str, path: str, *, timeout: float = DEFAULT_TIMEOUT, **request: Any
) -> httpx.Response:
    """Send ``method path`` through ``forward`` and read the whole answer within ``timeout`` seconds in total.

    ``forward`` is a :class:`harness.PortForward` or a base URL such as ``"http://127.0.0.1:8123"``.
    ``request`` goes to ``httpx.AsyncClient.stream`` (``params``, ``headers``, ``content``, ``json``, ...).
    The budget is shortened to what is left of the current ``wait_for`` attempt. Returns the response with
    its body read (any status: a 500 is an answer, not a hop failure); the stream is always closed.

    Raises (all :class:`~harness.errors.HopFailure`, so ``AssertionError``):

    - :class:`PortForwardGone` at once when the forward already exited or was closed;
      :class:`PortForwardBroken` when it is alive but known broken (kubectl logged a forwarding error, or
      several requests in a row were reset);
    - :class:`PortForwardDied` when kubectl exits during the request (within ~200 ms of the exit), with its
      exit code and stderr tail;
    - :class:`ServiceTimeout` when the forward stays alive but the answer is not complete within the budget;
    - :class:`ServiceUnreachable` when the connection is refused, reset or closed with the forward alive.
    """
    budget = clamp_to_attempt(timeout)
    fwd = None if isinstance(forward, str) else forward
    base_url = forward if isinstance(forward, str) else forward.base_url
    where = _where(fwd, base_url, method, path)
    if fwd is not None:
        _refuse_if_unusable(fwd, where, path, budget)

    progress = _Progress()
    outcome: httpx.Response | BaseException | None = None
    died = False
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=base_url, timeout=httpx.Timeout(budget), trust_env=False) as client:
        with anyio.CancelScope(deadline=anyio.current_time() + budget) as scope:
            async with anyio.create_task_group() as tg:
                if fwd is not None:
                    tg.start_soon(_watch_exit, fwd, scope)
                try:
                    outcome = await _exchange(client, method, path, request, progress)
                except Exception as exc:  # kept, classified below: raising here would wrap it in an ExceptionGroup
                    outcome = exc
                tg.cancel_scope.cancel()
        if fwd is not None and fwd.exit_summary() is not None and not isinstance(outcome, httpx.Response):
            died = True

    elapsed = time.monotonic() - started
    if isinstance(outcome, Exception) and not isinstance(outcome, (httpx.TransportError, OSError)):
        raise outcome  # a caller's mistake (bad URL, bad argument) or a decoding error: not a hop failure
    if isinstance(outcome, httpx.Response):
        if fwd is not None:
            fwd.note_answer()
        return outcome
    if fwd is not None and not died and (outcome is not None and not isinstance(outcome, httpx.TimeoutException)):
        died = await _settle(fwd)
    if died:
        assert fwd is not None
        raise PortForwardDied(
            f"{where}: the port-forward died mid-request after {elapsed:.2f}s ({fwd.exit_summary()}); "
            f"{progress.describe()}. The hop that failed is kubectl port-forward, not the service.",
            target=fwd.target, path=path, budget=budget, exit_code=fwd.exit_code(), stderr_tail=fwd.stderr_tail(),
        )
    raise _service_failure(fwd, base_url, where, path, budget, elapsed, progress, outcome)


def fetch_through_sync(
    forward: Forward | str, method: str, path: str, *, timeout: float = DEFAULT_TIMEOUT, **request: Any
) -> httpx.Response:
    """The blocking twin of :func:`fetch_through` (same arguments, result and errors).

    Runs the exchange on a private event loop in the calling thread (the current ``wait_for`` attempt is
    still seen). Raises ``RuntimeError`` when called from a thread that is already running an event loop:
    await :func:`fetch_through` there instead.
    """
    return anyio.run(functools.partial(fetch_through, forward, method, path, timeout=timeout, **request))


async def _exchange(
    client: httpx.AsyncClient, method: str, path: str, request: dict[str, Any], progress: _Progress
) -> httpx.Response:
    """Send and read the whole body; httpx closes the stream on every path, cancellation included."""

    async def headers_in(response: httpx.Response) -> None:
        progress.status = response.status_code

    client.event_hooks["response"] = [headers_in]
    progress.stage = "waiting for response headers"
    return await client.request(method, path, **request)


async def _watch_exit(fwd: Forward, scope: anyio.CancelScope) -> None:
    """Cancel the exchange as soon as the forward's exit is recorded (its watcher records it as it happens)."""
    while fwd.exit_summary() is None:
        await anyio.sleep(WATCH_INTERVAL)
    scope.cancel()


async def _settle(fwd: Forward) -> bool:
    """After a reset or refusal, wait up to :data:`SETTLE` seconds for kubectl to exit; True if it exited.

    A logged forwarding error does not end the wait early: ``lost connection to pod`` precedes the exit."""
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline:
        if fwd.exit_summary() is not None:
            return True
        await anyio.sleep(WATCH_INTERVAL)
    return fwd.exit_summary() is not None


def _refuse_if_unusable(fwd: Forward, where: str, path: str, budget: float) -> None:
    gone = fwd.gone_reason()
    if gone is not None:
        raise PortForwardGone(
            f"{where}: refused before sending: the port-forward is gone ({gone}). "
            f"Reopen it (the `forwards` pool does this on the next attempt).",
            target=fwd.target, path=path, budget=budget, exit_code=fwd.exit_code(), stderr_tail=fwd.stderr_tail(),
        )
    broken = fwd.broken_reason()
    if broken is not None:
        raise PortForwardBroken(
            f"{where}: refused before sending: kubectl is alive but the port-forward is broken ({broken}); "
            f"it never recovers (kubernetes/kubectl#686). Reopen it.",
            target=fwd.target, path=path, budget=budget, stderr_tail=fwd.stderr_tail(),
        )


def _service_failure(
    fwd: Forward | None, base_url: str, where: str, path: str, budget: float, elapsed: float,
    progress: _Progress, outcome: BaseException | None,
) -> Exception:
    target = fwd.target if fwd is not None else base_url
    stderr = fwd.stderr_tail() if fwd is not None else ""
    alive = " (the port-forward is alive)" if fwd is not None else ""
    said = f"; kubectl stderr: {stderr}" if stderr else ""
    if outcome is None or isinstance(outcome, httpx.TimeoutException):
        return ServiceTimeout(
            f"{where}: the service did not finish answering within the {budget:.2f}s total budget{alive}: "
            f"{progress.describe()}{said}",
            target=target, path=path, budget=budget, stderr_tail=stderr,
        )
    if fwd is not None:
        fwd.note_reset()
        broken = fwd.broken_reason()
        if broken is not None:
            return PortForwardBroken(
                f"{where}: connection {_kind(outcome)} after {elapsed:.2f}s and the port-forward is broken "
                f"({broken}); the hop that failed is kubectl port-forward (pod gone or not listening). Reopen it.",
                target=target, path=path, budget=budget, stderr_tail=stderr,
            )
    return ServiceUnreachable(
        f"{where}: connection {_kind(outcome)} after {elapsed:.2f}s{alive}: {progress.describe()}: "
        f"{type(outcome).__name__}: {outcome}{said}",
        target=target, path=path, budget=budget, stderr_tail=stderr,
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
