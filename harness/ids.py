"""Issue numbers that never repeat, so a spec never re-attaches to an old session.

Upstream used ``Date.now() % 100000``, which repeats, and sessions outlive specs: a reused number
re-attached to an old awaiting-reply anchor ("timed out waiting for an AgentRun", stack-under-test.md §9,
failure mode 7). Here numbers come from a counter in a state file under an exclusive ``flock``, shared by
every pytest-xdist worker and every run on the machine, so they are distinct by construction. A fresh
state file starts at a random point, so two machines (or a wiped cache) are unlikely to meet.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from pathlib import Path

FIRST = 1_000_000
"""Smallest number handed out (far above any real issue in the fake's seeded repos)."""
LAST = 2_147_483_646
"""Largest number handed out (fits a signed 32-bit int, as some gateways store it); then it wraps to FIRST."""


def default_state_file() -> Path:
    """``$HARNESS_STATE_DIR/issue-numbers``, else ``$XDG_CACHE_HOME/stack-harness/issue-numbers`` (``~/.cache``)."""
    base = os.environ.get("HARNESS_STATE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "stack-harness")
    return Path(base) / "issue-numbers"


def unique_issue_number(state_file: Path | None = None) -> int:
    """A number in ``[FIRST, LAST]`` never returned before on this machine (until ~2.1e9 calls wrap it).

    Distinct across calls, runs and pytest-xdist workers: the counter is read and advanced under an
    exclusive ``flock`` on ``state_file`` (default :func:`default_state_file`). Raises ``OSError`` when
    the state file cannot be created or locked.
    """
    path = state_file or default_state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="ascii") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            text = handle.read().strip()
            current = int(text) if text.isdigit() and FIRST <= int(text) <= LAST else FIRST + secrets.randbelow(LAST - FIRST) // 2
            following = current + 1 if current < LAST else FIRST
            handle.seek(0)
            handle.truncate()
            handle.write(str(following))
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return current
