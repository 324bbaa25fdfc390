"""Bounded child processes: each in its own process group, tied to the parent's life, killed as a group.

Every child the harness starts goes through :func:`spawn`, so that:

- it runs without a shell, in a new session (its own process group), so one ``killpg`` reaches every
  descendant (a ``sh -c`` wrapper's child survives a single-PID kill: skupperproject/skupper PR #67);
- on Linux it gets ``PR_SET_PDEATHSIG(SIGKILL)``, so a SIGKILLed pytest leaves no kubectl behind. The
  signal fires when the *thread* that spawned the child exits, so long-lived children (port-forwards)
  must be spawned from a long-lived thread; one-shot calls are safe because the spawning thread waits;
- it is registered in :data:`LIVE_CHILDREN` until reaped, for the end-of-session leak audit.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None

_lock = threading.Lock()
LIVE_CHILDREN: dict[int, list[str]] = {}
"""pid -> argv of every child spawned by the harness and not yet reaped."""


def _die_with_parent() -> None:  # runs in the child between fork and exec: no allocation-heavy work
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(argv: list[str], *, stdin: int | None = subprocess.DEVNULL, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` (no shell) in its own process group, stdout and stderr piped. Raises ``FileNotFoundError``."""
    proc = subprocess.Popen(
        argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent if _libc is not None else None,
    )
    with _lock:
        LIVE_CHILDREN[proc.pid] = list(argv)
    return proc


def kill_group(proc: subprocess.Popen[bytes], *, first: int = signal.SIGKILL, grace: float = 0.0, reap_timeout: float = 5.0) -> None:
    """Signal ``proc``'s whole process group with ``first``; after ``grace`` seconds SIGKILL the group; reap.

    Idempotent and safe on an already-exited child. Never blocks longer than ``grace + reap_timeout``
    (plus a little): a child that is still not reaped then stays in :data:`LIVE_CHILDREN` for the audit.
    """
    if proc.returncode is None:
        _signal_group(proc.pid, first)
        if first != signal.SIGKILL and grace > 0:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
    # The leader may have exited on the first signal while descendants in its group live on.
    _signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=reap_timeout)
    except subprocess.TimeoutExpired:
        return
    forget(proc)


def kill_pid_group(pgid: int) -> None:
    """SIGKILL process group ``pgid`` (a child spawned by :func:`spawn` leads its own group) and forget it."""
    _signal_group(pgid, signal.SIGKILL)
    with _lock:
        LIVE_CHILDREN.pop(pgid, None)


def forget(proc: subprocess.Popen[bytes]) -> None:
    """Drop a reaped child from :data:`LIVE_CHILDREN`."""
    with _lock:
        LIVE_CHILDREN.pop(proc.pid, None)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` exists (zombies excluded)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) also succeeds for zombies; look for a live member in /proc where we can.
    if not os.path.isdir("/proc"):
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


@dataclass(frozen=True)
class Completed:
    """A finished child: ``argv``, ``returncode``, decoded ``stdout`` and ``stderr``, ``duration`` in seconds."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration: float


class Timeout(Exception):
    """:func:`run_bounded` killed the child's group at its timeout. Carries what it had printed."""

    def __init__(self, argv: list[str], timeout: float, stdout: str, stderr: str) -> None:
        super().__init__(f"{argv[0]} did not finish within {timeout:.1f}s")
        self.argv, self.timeout, self.stdout, self.stderr = argv, timeout, stdout, stderr


def run_bounded(argv: list[str], *, timeout: float, input: bytes | None = None, env: dict[str, str] | None = None) -> Completed:
    """Run ``argv`` to completion within ``timeout`` seconds.

    Raises :class:`Timeout` (after killing and reaping the whole group) when it overruns, and
    ``FileNotFoundError`` when the binary does not exist. Ctrl-C or any other exception while waiting
    kills the group too, then propagates.
    """
    start = time.monotonic()
    proc = spawn(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL, env=env)
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = _drain(proc)
        raise Timeout(argv, timeout, out.decode(errors="replace"), err.decode(errors="replace")) from None
    except BaseException:
        kill_group(proc)
        raise
    # The leader is reaped; a descendant it left in the group (a daemonised helper) dies with it.
    kill_group(proc)
    return Completed(argv, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start)


def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a killed child printed; the pipes are at EOF once its group is dead, so this does not block."""
    try:
        return proc.communicate(timeout=1.0)
    except (subprocess.TimeoutExpired, ValueError):
        return b"", b""


def tail(text: str, lines: int = 8) -> str:
    """The last ``lines`` non-empty lines of ``text``, joined by `` | `` for one-line messages."""
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])
