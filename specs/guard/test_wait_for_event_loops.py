"""A sync probe may run its own event loop (``anyio.run``, ``fetch_through_sync``) whatever the waiting loop is.

sniffio records the running async library in a context variable; a probe thread started with a copy of the waiting
loop's context would inherit "asyncio" and ``anyio.run`` inside it would refuse with "Already running asyncio in
this thread". These specs need sniffio importable (the openai package brings it), which is how users run.
"""

from __future__ import annotations

import anyio
import pytest

from harness import wait_for, wait_for_sync

sniffio = pytest.importorskip("sniffio")


async def _answer() -> str:
    await anyio.sleep(0)
    return "ready"


def _probe_running_its_own_loop() -> str:
    return anyio.run(_answer)


def test_a_sync_probe_can_run_its_own_event_loop_under_wait_for_sync() -> None:
    assert (
        wait_for_sync("a probe with its own loop", _probe_running_its_own_loop, timeout=10.0, interval=0.01) == "ready"
    )


@pytest.mark.anyio
async def test_a_sync_probe_can_run_its_own_event_loop_under_async_wait_for() -> None:
    assert (
        await wait_for("a probe with its own loop", _probe_running_its_own_loop, timeout=10.0, interval=0.01) == "ready"
    )


def test_the_probe_thread_does_not_claim_a_running_async_library() -> None:
    seen = wait_for_sync(
        "the probe thread's async library",
        lambda: repr(sniffio.current_async_library_cvar.get()),
        timeout=10.0,
        interval=0.01,
    )
    assert seen == "None"
