"""Misuse fails at the call, in one line that names the fix, before anything is polled or sent.

Before: a non-callable probe showed ``TypeError: 'int' object is not callable`` only at the timeout (as the last
error of every failed attempt); ``interval=0`` was accepted (3,988 attempts in a second); a sync entry point inside
an async spec gave anyio's bare ``Already running asyncio in this thread``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness import (
    ProbeNotCallable,
    QdrantView,
    SyncCallInEventLoop,
    chat_turn_sync,
    fetch_through_sync,
    wait_for,
    wait_for_sync,
)
from harness.testing.target import TargetServer
from specs.agent_controller.invoke import InvokeClient

AT_ONCE = 5.0
"""Seconds within which a refusal "at the call" must arrive; every wait below has a far longer budget."""


def is_ready() -> bool:
    return False


@pytest.fixture
def target() -> Iterator[TargetServer]:
    """A real HTTP server: a refused call must not reach it."""
    with TargetServer() as server:
        yield server


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize("probe", [42, is_ready(), None, "deployment/web"], ids=repr)
def test_a_probe_that_is_not_callable_is_refused_at_the_call(probe: object) -> None:
    started = time.monotonic()
    with pytest.raises(ProbeNotCallable) as caught:
        wait_for_sync("deployment/web to be Available", probe, timeout=60.0, interval=0.5)  # type: ignore[arg-type]  # the misuse itself
    assert time.monotonic() - started < AT_ONCE  # not at the 60 s timeout
    message = _one_line(caught.value)
    assert message.startswith("wait_for_sync('deployment/web to be Available'): the probe must be a function")
    assert "pass the function itself (is_ready, or lambda: is_ready()), not its result" in message
    assert isinstance(caught.value, TypeError)


@pytest.mark.anyio
async def test_the_async_wait_refuses_it_too() -> None:
    with pytest.raises(ProbeNotCallable, match=r"^wait_for\('x'\): the probe must be a function"):
        await wait_for("x", is_ready(), timeout=60.0)  # type: ignore[call-overload]


def test_a_probe_that_needs_arguments_is_refused_at_the_call() -> None:
    def pods_ready(selector: str) -> bool:
        raise AssertionError("never called")

    with pytest.raises(ProbeNotCallable) as caught:
        wait_for_sync("pods to be ready", pods_ready, timeout=60.0)  # type: ignore[arg-type]
    message = _one_line(caught.value)
    assert "cannot be called without arguments (missing a required argument: 'selector')" in message
    assert "wrap it, e.g. lambda: probe(kube)" in message


@pytest.mark.parametrize("interval", [0, 0.0, -0.5, float("nan")], ids=repr)
def test_an_interval_that_would_spin_is_refused_before_any_attempt(interval: float) -> None:
    calls: list[int] = []

    def probe() -> None:
        calls.append(1)

    with pytest.raises(ValueError, match="a wait never spins") as caught:
        wait_for_sync("pods to be listed", probe, timeout=1.0, interval=interval)
    message = _one_line(caught.value)
    assert message.startswith(
        f"wait_for_sync('pods to be listed'): interval must be finite seconds > 0, got {interval}"
    )
    assert "a wait never spins; pass the pause between attempts, e.g. interval=0.1" in message
    assert calls == []


@pytest.mark.anyio
async def test_an_async_wait_refuses_interval_zero_too() -> None:
    with pytest.raises(ValueError, match="a wait never spins"):
        await wait_for("x", lambda: True, timeout=1.0, interval=0)


@pytest.mark.anyio
async def test_wait_for_sync_inside_an_event_loop_names_wait_for() -> None:
    calls: list[int] = []
    with pytest.raises(SyncCallInEventLoop) as caught:
        wait_for_sync("pods to be listed", lambda: calls.append(1), timeout=60.0, interval=0.5)
    message = _one_line(caught.value)
    assert message.startswith("wait_for_sync() blocks to run its own event loop, but asyncio is already running")
    assert "use `await wait_for(...)` there" in message
    assert "Already running" not in message
    assert calls == []


@pytest.mark.anyio
async def test_fetch_through_sync_inside_an_event_loop_names_fetch_through(target: TargetServer) -> None:
    with pytest.raises(SyncCallInEventLoop) as caught:
        fetch_through_sync(target.url, "GET", "/ok", timeout=10.0)
    assert "use `await fetch_through(...)` there" in _one_line(caught.value)
    assert target.requests == []  # refused before sending


@pytest.mark.anyio
async def test_chat_turn_sync_inside_an_event_loop_names_chat_turn(target: TargetServer) -> None:
    with pytest.raises(SyncCallInEventLoop) as caught:
        chat_turn_sync(target.url, [{"role": "user", "content": "hi"}], chat_id="c-1", timeout=10.0)
    assert "use `await chat_turn(...)` there" in _one_line(caught.value)
    assert target.requests == []


@pytest.mark.anyio
async def test_the_sync_clients_inside_an_event_loop_say_so_too(target: TargetServer) -> None:
    """The stack clients are blocking: called from async code they refuse with the same error (the fix: a worker
    thread, which the message names)."""
    for call in (lambda: QdrantView(target.url).collections(), lambda: InvokeClient(target.url).post({"x": 1})):
        with pytest.raises(SyncCallInEventLoop) as caught:
            call()
        assert "anyio.to_thread.run_sync" in _one_line(caught.value)
    assert target.requests == []


def test_a_sync_probe_under_an_async_wait_may_still_call_the_sync_entry_points(target: TargetServer) -> None:
    """The probe's thread runs no event loop, so the check must not refuse there (nested use keeps working)."""
    import anyio

    async def main() -> int:
        return int(
            await wait_for(
                "the target to answer",
                lambda: fetch_through_sync(target.url, "GET", "/ok", timeout=10.0).status_code,
                timeout=30.0,
                interval=0.05,
            )
        )

    assert anyio.run(main) == 200
