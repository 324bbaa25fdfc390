"""Port-forward guard specs: leak checks after every test, a scripted target server, the kubectl stand-in.

The autouse ``no_leaks`` fixture snapshots this process's children (``harness.process.LIVE_CHILDREN`` and
``/proc``), its listening sockets and its threads before each test, and after the test (teardowns of the
other fixtures included, failing tests included) waits a bounded time for them to return to baseline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.testing.leaks import snapshot
from harness.testing.target import TargetServer

SETTLE = 5.0
"""Seconds the leak check lets reaped children, closed sockets and ending threads settle."""


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail the test if it leaves a child process, a listening socket or a thread behind."""
    base = snapshot()
    yield
    deadline = time.monotonic() + SETTLE
    while True:
        extra = snapshot().extra_over(base)
        if not extra or time.monotonic() >= deadline:
            break
        time.sleep(0.02)  # polling a real condition (the leak set), bounded by SETTLE
    assert not extra, f"test left behind (after {SETTLE:.0f}s of settling): {extra}"


@pytest.fixture
def target() -> Iterator[TargetServer]:
    """The "pod" behind the stand-in: a local HTTP server with scripted faults (see harness.testing.target)."""
    with TargetServer() as server:
        yield server
