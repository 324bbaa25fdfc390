"""Test support shared by the specs: a bounded leak check, and the depth of the hypothesis runs.

``no_leaks()`` is a context manager: it takes a snapshot before its block and, after it, polls until a new snapshot
holds nothing beyond the first (a thread still ending, a socket still closing) or ``settle`` seconds pass, then raises
``AssertionError`` naming what was left behind. The default snapshot is this process's threads and open file
descriptors (Linux: ``/proc/self/fd``); any object with ``extra_over(base) -> {kind: [description, ...]}`` can be
checked instead, e.g. ``harness.testing.leaks.snapshot`` (child processes, listening sockets, threads)::

    @pytest.fixture
    def no_leaks() -> Iterator[None]:
        with fakes.testing.no_leaks():
            yield

``examples(default, deep)`` is a hypothesis ``max_examples``: ``default`` in ``make test`` (with ``derandomize``: a
fixed seed), ``deep`` when the environment variable ``FAKES_FUZZ`` is ``1`` (``make fuzz``: fresh random inputs), so
both runs use the same spec code. Deep specs carry the ``fuzz`` marker (:data:`FUZZ_MARKER`), which ``make fuzz``
selects; a spec directory registers it with ``register_fuzz_marker(config)`` in its ``pytest_configure``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, Self

import pytest

SETTLE = 5.0
"""Seconds the leak check lets ending threads and closing sockets settle before it fails."""
POLL = 0.02
"""Seconds between two snapshots while settling (a poll of a real condition, bounded by ``SETTLE``)."""
FUZZ_ENV = "FAKES_FUZZ"
"""Environment variable that selects the deep hypothesis runs (``FAKES_FUZZ=1``)."""
FUZZ_MARKER = "fuzz: a hypothesis spec run shallow with a fixed seed in make test, deep under FAKES_FUZZ=1 (make fuzz)"
"""The ``fuzz`` marker's registration line (``pytest --markers`` shows it)."""


class Snapshot(Protocol):
    """What a leak check compares: ``extra_over(base)`` describes, by kind, what this snapshot holds beyond ``base``
    (empty kinds left out; an empty mapping means nothing leaked)."""

    def extra_over(self, base: Self) -> Mapping[str, Sequence[str]]: ...


@dataclass(frozen=True)
class ThreadsAndFds:
    """Live threads and open file descriptors (number to what it points at) of this process."""

    threads: frozenset[threading.Thread]
    fds: Mapping[int, str]

    def extra_over(self, base: ThreadsAndFds) -> dict[str, list[str]]:
        """New threads by name; new descriptors when there are more than in ``base`` (a number reused for another
        file is not a leak), each as ``fd -> target``."""
        extra: dict[str, list[str]] = {}
        threads = [t.name for t in self.threads - base.threads]
        if threads:
            extra["threads"] = sorted(threads)
        if len(self.fds) > len(base.fds):
            new = [f"{fd} -> {target}" for fd, target in sorted(self.fds.items()) if base.fds.get(fd) != target]
            extra[f"file descriptors ({len(self.fds)} open, {len(base.fds)} before)"] = new
        return extra


def threads_and_fds() -> ThreadsAndFds:
    """This process's live threads and open file descriptors, now."""
    return ThreadsAndFds(frozenset(t for t in threading.enumerate() if t.is_alive()), _open_fds())


def _open_fds() -> dict[int, str]:
    fds: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listdir itself used, or one closed meanwhile
            continue
    return fds


@contextlib.contextmanager
def no_leaks(snapshot: Callable[[], Snapshot] = threads_and_fds, *, settle: float = SETTLE) -> Iterator[None]:
    """Fail (``AssertionError``) if, after the block and up to ``settle`` seconds of settling, a new snapshot holds
    more than the one taken before it. The block's own exception, if any, propagates unchecked."""
    base = snapshot()
    yield
    deadline = time.monotonic() + settle
    while True:
        extra = snapshot().extra_over(base)
        if not extra or time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    assert not extra, f"left behind after {settle:.0f} s of settling: {dict(extra)}"


def examples(default: int, deep: int) -> int:
    """A hypothesis ``max_examples``: ``deep`` when ``FAKES_FUZZ=1`` (``make fuzz``), else ``default``."""
    return deep if fuzzing() else default


def fuzzing() -> bool:
    """True when the deep hypothesis runs are selected (``FAKES_FUZZ=1``)."""
    return os.environ.get(FUZZ_ENV, "") == "1"


def register_fuzz_marker(config: pytest.Config) -> None:
    """Register the ``fuzz`` marker (call from a conftest's ``pytest_configure``; registering twice is harmless)."""
    config.addinivalue_line("markers", FUZZ_MARKER)
