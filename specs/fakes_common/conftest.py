"""Fixtures for specs of the shared fake machinery: an echo fake served on a socket, and a leak check."""

from __future__ import annotations

import os
import threading
import time

import pytest

from fakes.server import serve_fake
from specs.fakes_common.echo import EchoFake


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_leaks():
    """Fail the test if threads or file descriptors are not back to baseline (bounded settle: 5 s)."""
    threads, fds = set(threading.enumerate()), _fds()
    yield
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        extra = set(threading.enumerate()) - threads
        if not extra and _fds() <= fds:
            return
        time.sleep(0.05)
    raise AssertionError(f"leaked threads {sorted(t.name for t in extra)} / fds {_fds()} > {fds}")


@pytest.fixture
def echo(no_leaks):
    with serve_fake(EchoFake()) as handle:
        yield handle
