"""Leak snapshots for guard specs: child processes, listening sockets and threads of this process.

Linux only (reads ``/proc``). ``snapshot()`` before, ``snapshot().extra_over(before)`` after: what is new.
The harness's watchdog process (:func:`harness.process.watchdog_pid`), which lives as long as this process by
design, is not counted.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from harness import process


@dataclass(frozen=True)
class Snapshot:
    """Pids of live children (``/proc``), pids in ``LIVE_CHILDREN``, inodes of listening sockets, thread idents."""

    children: frozenset[int]
    registered: frozenset[int]
    listening: frozenset[int]
    threads: frozenset[int]

    def extra_over(self, base: Snapshot) -> dict[str, list[str]]:
        """What this snapshot holds beyond ``base``, described by kind (empty kinds left out)."""
        extra = {
            "child processes": [_describe_pid(p) for p in self.children - base.children],
            "harness LIVE_CHILDREN": [
                f"{p}: {' '.join(process.LIVE_CHILDREN.get(p, []))}" for p in self.registered - base.registered
            ],
            "listening sockets (inode)": [str(i) for i in self.listening - base.listening],
            "threads": [t.name for t in threading.enumerate() if t.ident in self.threads - base.threads],
        }
        return {k: v for k, v in extra.items() if v}


def snapshot() -> Snapshot:
    """What this process holds now."""
    return Snapshot(
        children=frozenset(_live_children()),
        registered=frozenset(process.LIVE_CHILDREN),
        listening=frozenset(_listening_inodes()),
        threads=frozenset(t.ident for t in threading.enumerate() if t.ident is not None),
    )


def _live_children() -> set[int]:
    pids: set[int] = set()
    watchdog = process.watchdog_pid()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            continue
    pids.discard(watchdog or -1)
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
