"""Bounded child processes: each in its own process group, tied to the parent's life, killed as a group.

Every child the harness starts goes through :func:`spawn`, so that:

- it runs without a shell, in a new session (its own process group), so one ``killpg`` reaches every
  descendant that stays in the group: a wrapper script's kubectl, kubectl's exec credential plugin (a
  ``sh -c`` wrapper's child survives a single-PID kill);
- it cannot outlive the pytest process, however that ends. On Linux it gets ``PR_SET_PDEATHSIG(SIGKILL)``,
  which kills the child itself (the signal fires when the *thread* that spawned it exits, so long-lived
  children such as port-forwards are spawned from a long-lived thread). util-linux's ``setpriv --pdeathsig KILL``
  sets it and then execs the program, so the child is started by ``vfork``: setting it from Python between
  ``fork`` and ``exec`` (``preexec_fn``) forces a full ``fork`` of the pytest process, about 22 ms of CPU per
  child for a 300 MB pytest worker against 2 ms (``benchmarks/bench_spawn.py``). setpriv sets it a moment
  after :func:`spawn` returns (just before its exec), not before: a thread that ends in that moment is not seen,
  and a pytest process killed in it leaves the child to the watchdog. Without ``setpriv`` the signal is set from
  ``preexec_fn`` before ``spawn`` returns. That signal does not reach the
  child's own children, so every group is also registered with a *watchdog*: one small process per
  pytest process, in its own session, that reads a pipe from its parent and SIGKILLs every registered
  group when that pipe closes, which the kernel does when the parent exits by any path (SIGTERM, SIGKILL,
  ``os._exit`` from pytest-timeout's thread method). Normal interpreter exit also kills what is left
  (``atexit``). The watchdog also removes the directories registered with :func:`remove_when_gone` (a twin's
  kubeconfig and kubectl cache), so a killed pytest leaves no working directory behind either;
- it is registered in :data:`LIVE_CHILDREN` until reaped, for the end-of-session leak audit.

:func:`run_bounded` ends a call when the child *exits*, not when its output pipes close: a process it left
behind that holds the pipes open (a daemonised helper) would otherwise turn a finished call into a timeout.
What the child printed is read while it runs and, after its exit, for a short bound; whatever its group
still holds is killed and reported in :attr:`Completed.strays`.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import functools
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import ProcessTimeout
from harness.stderr_text import condense as condense  # re-exported: moved to harness.stderr_text
from harness.stderr_text import final_line as final_line  # re-exported: moved to harness.stderr_text
from harness.stderr_text import tail as tail  # re-exported: moved to harness.stderr_text

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None

_lock = threading.Lock()
LIVE_CHILDREN: dict[int, list[str]] = {}
"""pid -> argv of every child spawned by the harness and not yet reaped."""

DRAIN = 0.5
"""Seconds :func:`run_bounded` keeps reading a finished child's pipes after its group was killed."""

EXIT_POLL = 0.01
"""Seconds between exit checks where the kernel has no pidfd (Linux < 5.3, other systems)."""


def _die_with_parent() -> None:  # runs in the child between fork and exec: no allocation-heavy work
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@functools.cache
def _pdeathsig_launcher() -> str | None:
    """The path of a ``setpriv`` that understands ``--pdeathsig`` (util-linux 2.33 or later), or ``None``."""
    if _libc is None:
        return None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    try:
        shown = subprocess.run([setpriv, "--help"], capture_output=True, text=True, timeout=10.0, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return setpriv if "--pdeathsig" in shown.stdout else None


def _resolve(program: str, env: dict[str, str] | None) -> str:
    """``program``'s path as ``Popen`` would find it (on the child's ``PATH``); raises what ``Popen`` raises when it
    cannot: ``FileNotFoundError`` for a program that is not there, ``PermissionError`` for one that cannot run."""
    if os.sep in program:
        if not os.path.exists(program):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if os.path.isdir(program) or not os.access(program, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return program
    found = shutil.which(program, path=os.pathsep.join(os.get_exec_path(env)))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    return found


def spawn(
    argv: list[str],
    *,
    stdin: int | None = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    output: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (no shell) in its own process group, stdout and stderr piped. Raises ``FileNotFoundError``.

    ``env`` is the child's whole environment (``None``: this process's); ``cwd`` its working directory;
    ``output`` a file descriptor that gets both stdout and stderr instead of pipes (a long-lived server's log
    file: a pipe nobody reads would stall it). The group is registered with the watchdog, so it dies with this
    process however this process ends.
    """
    launcher = _pdeathsig_launcher()
    proc = subprocess.Popen(
        [launcher, "--pdeathsig", "KILL", "--", _resolve(argv[0], env), *argv[1:]] if launcher else argv,
        stdin=stdin,
        stdout=subprocess.PIPE if output is None else output,
        stderr=subprocess.PIPE if output is None else subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=_die_with_parent if _libc is not None and launcher is None else None,
    )
    with _lock:
        LIVE_CHILDREN[proc.pid] = list(argv)
    _WATCHDOG.register(proc.pid)
    return proc


def kill_group(
    proc: subprocess.Popen[bytes], *, first: int = signal.SIGKILL, grace: float = 0.0, reap_timeout: float = 5.0
) -> None:
    """Signal ``proc``'s whole process group with ``first``; after ``grace`` seconds SIGKILL the group; reap.

    Idempotent and safe on an already-exited child. Never blocks longer than ``grace + reap_timeout``
    (plus a little): a child that is still not reaped then stays in :data:`LIVE_CHILDREN` for the audit.
    """
    if proc.returncode is None:
        _signal_group(proc.pid, first)
        if first != signal.SIGKILL and grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
    # The leader may have exited on the first signal while descendants in its group live on.
    _signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=reap_timeout)
    except subprocess.TimeoutExpired:
        return
    forget(proc)


def kill_pid_group(pgid: int, *, gone_timeout: float = 5.0) -> bool:
    """SIGKILL process group ``pgid`` (a child spawned by :func:`spawn` leads its own group), wait up to
    ``gone_timeout`` seconds for its members to be gone (a signal is delivered when the process next runs, which on a
    loaded machine is not at once), and forget it. Returns False if a member was still alive at the end (a process
    in uninterruptible sleep)."""
    _signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + gone_timeout
    while (alive := group_alive(pgid)) and time.monotonic() < deadline:
        time.sleep(0.02)  # bounded by the deadline; nothing to wait on for another process's end
    with _lock:
        LIVE_CHILDREN.pop(pgid, None)
    _WATCHDOG.forget(pgid)
    return not alive


def forget(proc: subprocess.Popen[bytes]) -> None:
    """Drop a reaped child from :data:`LIVE_CHILDREN` (and from the watchdog's list)."""
    with _lock:
        LIVE_CHILDREN.pop(proc.pid, None)
    _WATCHDOG.forget(proc.pid)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


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
    return bool(group_members(pgid))


def group_members(pgid: int, *, exclude: int | None = None) -> list[str]:
    """``"pid: command line"`` of each live (non-zombie) process in group ``pgid`` but ``exclude`` (Linux ``/proc``)."""
    found: list[str] = []
    if not os.path.isdir("/proc"):
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == exclude:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid or fields[0] == b"Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        found.append(f"{entry}: {cmdline[:200] or '?'}")
    return found


# --- the watchdog: kills every registered group when this process ends, by any path ---------------------

_WATCHDOG_CODE = """
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups, folders, pending = set(), set(), b""
while True:
    try:
        chunk = os.read(0, 4096)
    except InterruptedError:
        continue
    except OSError:
        chunk = b""
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
        elif line[:1] == b"D":
            folders.add(os.fsdecode(line[1:]))
        elif line[:1] == b"d":
            folders.discard(os.fsdecode(line[1:]))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
if folders:
    import shutil
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
"""


class _Watchdog:
    """The parent side of the watchdog process: started at the first :func:`spawn`, told ``+PGID`` / ``-PGID``.

    The pipe's write end is close-on-exec and reset in forked children, so only this process holds it: the
    watchdog reads end-of-file exactly when this process is gone.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def pid(self) -> int | None:
        """The watchdog's pid, or ``None`` before the first spawn."""
        proc = self._proc
        return proc.pid if proc is not None else None

    def register(self, pgid: int) -> None:
        self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        self._send(f"-{pgid}\n")

    def remove_folder(self, path: str) -> None:
        self._send(f"D{path}\n")

    def keep_folder(self, path: str) -> None:
        self._send(f"d{path}\n")

    def _send(self, line: str) -> None:
        with self._lock:
            for _ in range(2):  # a watchdog that died is replaced once, with every live group re-registered
                proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
                if proc is None or proc.stdin is None:
                    return
                try:
                    os.write(proc.stdin.fileno(), line.encode())
                    return
                except OSError:
                    self._proc = None

    def _start(self) -> subprocess.Popen[bytes] | None:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG_CODE],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            return None
        self._proc = proc
        assert proc.stdin is not None
        with _lock:
            live = list(LIVE_CHILDREN)
            folders = list(_FOLDERS)
        lines = [f"+{pgid}\n" for pgid in live] + [f"D{path}\n" for path in folders]
        with contextlib.suppress(OSError):
            os.write(proc.stdin.fileno(), "".join(lines).encode())
        return proc

    def _after_fork_in_child(self) -> None:
        proc, self._proc, self._lock = self._proc, None, threading.Lock()
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()


_WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=_WATCHDOG._after_fork_in_child)


_FOLDERS: set[str] = set()


def watch_group(pgid: int) -> None:
    """Have the watchdog SIGKILL process group ``pgid`` if this process ends before :func:`unwatch_group`: for a
    child started in a session of its own without :func:`spawn` (asyncio's subprocesses), so it cannot outlive
    this process either. Call :func:`unwatch_group` once it is reaped (its id may be reused)."""
    _WATCHDOG.register(pgid)


def unwatch_group(pgid: int) -> None:
    """Forget a group :func:`watch_group` registered (it has been reaped)."""
    _WATCHDOG.forget(pgid)


def remove_when_gone(path: str) -> None:
    """Have the watchdog delete directory ``path`` (recursively) if this process ends without calling
    :func:`forget_folder` (SIGTERM, SIGKILL, ``os._exit``). Raises ``ValueError`` for a path with a newline."""
    if "\n" in path:
        raise ValueError(f"remove_when_gone: a path with a newline cannot be registered: {path!r}")
    with _lock:
        _FOLDERS.add(path)
    _WATCHDOG.remove_folder(path)


def forget_folder(path: str) -> None:
    """Undo :func:`remove_when_gone` (the caller removed the directory itself, or wants it kept)."""
    with _lock:
        _FOLDERS.discard(path)
    _WATCHDOG.keep_folder(path)


def watchdog_pid() -> int | None:
    """The pid of this process's watchdog (``None`` before the first child): leak checks leave it out."""
    return _WATCHDOG.pid()


@atexit.register
def _kill_what_is_left() -> None:
    """Normal interpreter exit: no registered child outlives it (the watchdog covers every other way out)."""
    with _lock:
        left = list(LIVE_CHILDREN)
    for pgid in left:
        _signal_group(pgid, signal.SIGKILL)


# --- bounded one-shot calls ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Completed:
    """A finished child: ``argv``, ``returncode``, decoded ``stdout`` and ``stderr``, ``duration`` in seconds, and
    ``strays``: processes of its group still alive when it exited (``"pid: command"``; killed since)."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration: float
    strays: tuple[str, ...] = ()


Timeout = ProcessTimeout
"""What :func:`run_bounded` raises at its bound (:class:`harness.errors.ProcessTimeout`, under its old name)."""


def run_bounded(
    argv: list[str],
    *,
    timeout: float,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    drain: float = DRAIN,
    while_running: Callable[[], None] | None = None,
    every: float = 2.0,
) -> Completed:
    """Run ``argv`` until it exits, within ``timeout`` seconds.

    Completion is the child's exit. Its output is read while it runs and for at most ``drain`` seconds after;
    anything still alive in its process group then is killed and listed in ``strays``. Raises
    :class:`~harness.errors.ProcessTimeout` (after killing and reaping the whole group) when the child has not
    exited within ``timeout``, and ``FileNotFoundError`` when the binary does not exist. Ctrl-C or any other
    exception while waiting kills the group too, then propagates.

    ``while_running`` is called every ``every`` seconds while the child runs (never after ``timeout``); an
    exception it raises kills the group and propagates (how a caller stops a child it no longer needs).
    """
    start = time.monotonic()
    proc = spawn(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL, env=env, cwd=cwd)
    pipes = _Pipes(proc, input)
    try:
        exited = pipes.until_exit(start + timeout if while_running is None else min(start + timeout, start + every))
        while not exited and while_running is not None and time.monotonic() < start + timeout:
            while_running()
            exited = pipes.until_exit(min(start + timeout, time.monotonic() + every))
        strays = group_members(proc.pid, exclude=proc.pid) if exited else []
        kill_group(proc)  # the leader is a zombie until now, so its group id cannot have been reused
        if not pipes.drain(drain):
            strays.append(f"(a process outside its group kept its output open; reading stopped after {drain:.1f}s)")
    except BaseException:
        kill_group(proc)
        pipes.close()
        raise
    pipes.close()
    out, err = pipes.text()
    if not exited:
        raise ProcessTimeout(argv, timeout, out, err)
    return Completed(argv, proc.returncode, out, err, time.monotonic() - start, tuple(strays))


class _Pipes:
    """Reads a child's stdout and stderr (and feeds its stdin) without blocking; sees its exit without reaping it."""

    def __init__(self, proc: subprocess.Popen[bytes], input: bytes | None) -> None:
        assert proc.stdout is not None
        assert proc.stderr is not None
        self.proc = proc
        self.out_fd, self.err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        self.in_fd = proc.stdin.fileno() if proc.stdin is not None else None
        self.chunks: dict[int, list[bytes]] = {self.out_fd: [], self.err_fd: []}
        self.sel = selectors.DefaultSelector()
        for fd in self.chunks:
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ)
        self.pending = memoryview(input or b"")
        if self.in_fd is not None:
            os.set_blocking(self.in_fd, False)
            self.sel.register(self.in_fd, selectors.EVENT_WRITE)
        self.pidfd = _pidfd(proc.pid)
        if self.pidfd is not None:
            self.sel.register(self.pidfd, selectors.EVENT_READ)

    def until_exit(self, deadline: float) -> bool:
        """Serve the pipes until the child exits (True) or ``deadline`` (``time.monotonic()``) passes (False)."""
        while True:
            if self._exited():
                self._read_available()
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            wait = remaining if self.pidfd is not None else min(remaining, EXIT_POLL)
            for key, _ in self.sel.select(timeout=wait):
                if key.fd != self.pidfd:
                    self._serve(key.fd)

    def drain(self, bound: float) -> bool:
        """Read until both output pipes are at end-of-file, at most ``bound`` seconds. True if they got there."""
        deadline = time.monotonic() + bound
        if self.pidfd is not None:
            self.sel.unregister(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None
        while self._open_outputs():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for key, _ in self.sel.select(timeout=remaining):
                self._serve(key.fd)
        return True

    def text(self) -> tuple[str, str]:
        out, err = b"".join(self.chunks[self.out_fd]), b"".join(self.chunks[self.err_fd])
        return out.decode(errors="replace"), err.decode(errors="replace")

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        self.sel.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _open_outputs(self) -> list[int]:
        return [fd for fd in (self.out_fd, self.err_fd) if fd in self.sel.get_map()]

    def _exited(self) -> bool:
        if self.pidfd is not None:
            return bool(select.select([self.pidfd], [], [], 0)[0])
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _read_available(self) -> None:
        for fd in self._open_outputs():
            self._serve(fd)

    def _serve(self, fd: int) -> None:
        if fd == self.in_fd:
            self._write(fd)
            return
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.sel.unregister(fd)
                return
            self.chunks[fd].append(chunk)

    def _write(self, fd: int) -> None:
        try:
            written = os.write(fd, self.pending[:65536])
            self.pending = self.pending[written:]
        except BlockingIOError:
            return
        except OSError:  # the child closed its stdin or exited: it did not want the rest
            self.pending = memoryview(b"")
        if not self.pending:
            self.sel.unregister(fd)
            assert self.proc.stdin is not None
            self.proc.stdin.close()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: exits are polled with waitid(WNOWAIT)
        return None
