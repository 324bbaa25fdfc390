"""Issue numbers that never repeat, so a spec never re-attaches to an old session.

A number such as ``Date.now() % 100000`` repeats, and a service's sessions can outlive specs: a reused number
re-attaches to an old session, and the spec waits for something that session will never do. Here numbers
come from a counter in a state file under an exclusive ``flock``, shared by every pytest-xdist worker and every
run on the machine, so they are distinct by construction. A fresh state file starts at a random point, so two
machines (or a wiped cache) are unlikely to meet.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import time
from pathlib import Path

FIRST = 1_000_000
"""Smallest number handed out (far above any real issue in the fake's seeded repos)."""
LAST = 2_147_483_646
"""Largest number handed out (fits a signed 32-bit int, as some gateways store it); then it wraps to FIRST."""


def state_dir() -> Path:
    """The harness's state directory: ``$HARNESS_STATE_DIR``, else ``$XDG_CACHE_HOME/stack-harness``, else
    ``~/.cache/stack-harness``. It holds the issue-number counter and the cluster lock files."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("HARNESS_STATE_DIR") or os.path.join(cache, "stack-harness"))


def default_state_file() -> Path:
    """``issue-numbers`` in :func:`state_dir`. Delete it to reset the counter (the next number then starts at a
    random point in the lower half of the range)."""
    return state_dir() / "issue-numbers"


def unique_issue_number(state_file: Path | None = None, *, lock_timeout: float = 10.0) -> int:
    """A number in ``[FIRST, LAST]`` never returned before on this machine (until ~2.1e9 calls wrap it).

    Distinct across calls, runs and pytest-xdist workers: the counter in ``state_file`` (default
    :func:`default_state_file`) is read and advanced under an exclusive ``flock`` on a sibling ``.lock`` file,
    and replaced atomically (write, fsync, rename), so a crash mid-update leaves the old value, never a torn
    one. Raises ``TimeoutError`` when the lock is not had within ``lock_timeout`` seconds, ``OSError`` when
    the files cannot be created.
    """
    path = state_file or default_state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        lock_within(lock, lock_timeout, path)
        current = _read(path)
        following = current + 1 if current < LAST else FIRST
        scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        scratch.write_text(str(following), encoding="ascii")
        with open(scratch, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(scratch, path)
        return current
    finally:
        os.close(lock)  # closing the descriptor releases the flock


def lock_within(fd: int, timeout: float, path: Path) -> None:
    """An exclusive ``flock`` on ``fd`` within ``timeout`` seconds, else ``TimeoutError`` naming ``path``'s lock."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"could not lock {path}.lock within {timeout:.1f}s: another process holds it"
                ) from None
            time.sleep(0.005)  # lock contention back-off between non-blocking tries


def _read(path: Path) -> int:
    """The stored counter; a missing or unreadable file starts at a random point in the lower half of the range."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        text = ""
    if text.isdigit() and FIRST <= int(text) <= LAST:
        return int(text)
    return FIRST + secrets.randbelow(LAST - FIRST) // 2
