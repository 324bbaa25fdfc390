"""Guard specs for issue #3: leak checks after every test, a scripted target server, the kubectl stand-in.

The autouse ``no_leaks`` fixture snapshots this process's children (``harness.process.LIVE_CHILDREN`` and
``/proc``), its listening sockets and its threads before each test, and after the test (teardowns of the
other fixtures included, failing tests included) waits a bounded time for them to return to baseline.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from harness import process
from harness.forward_fixtures import forwards, kubectl_standin  # noqa: F401 (fixtures for these specs)
from harness.testing.target import TargetServer


SETTLE = 5.0
"""Seconds the leak check lets reaped children, closed sockets and ending threads settle."""


@dataclass(frozen=True)
class Snapshot:
    children: frozenset[int]
    registered: frozenset[int]
    listening: frozenset[int]
    threads: frozenset[int]

    def extra_over(self, base: Snapshot) -> dict[str, list[str]]:
        extra = {
            "child processes": [_describe_pid(p) for p in self.children - base.children],
            "harness LIVE_CHILDREN": [f"{p}: {' '.join(process.LIVE_CHILDREN.get(p, []))}" for p in self.registered - base.registered],
            "listening sockets (inode)": [str(i) for i in self.listening - base.listening],
            "threads": [t.name for t in threading.enumerate() if t.ident in self.threads - base.threads],
        }
        return {k: v for k, v in extra.items() if v}


def snapshot() -> Snapshot:
    return Snapshot(
        children=frozenset(_live_children()),
        registered=frozenset(process.LIVE_CHILDREN),
        listening=frozenset(_listening_inodes()),
        threads=frozenset(t.ident for t in threading.enumerate() if t.ident is not None),
    )


def _live_children() -> set[int]:
    pids: set[int] = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            continue
    return pids


def _describe_pid(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        return f"{pid}: {cmdline[:200]}"
    except OSError:
        return f"{pid}: (gone)"


def _listening_inodes() -> set[int]:
    """Inodes of TCP sockets in LISTEN state that this process holds a descriptor to."""
    listening: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A":
                        listening.add(int(fields[9]))
        except OSError:
            continue
    ours: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            ours.add(int(link[8:-1]))
    return listening & ours


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
