"""``PortForward``: a supervised ``kubectl port-forward`` that cannot hang a run or outlive it.

Known kubectl behaviours this guards against:

- the banner is not readiness: ready = banner parsed *and* a TCP connection (or an HTTP answer on
  ``ready_path``) succeeded, raced against the child's exit, within a budget (default 30 s);
- kubectl picks the local port (``:REMOTE``) and prints it (``Forwarding from 127.0.0.1:NNNNN -> R``): no
  fixed port map, no probe-and-release race; only 127.0.0.1 is used (``--address 127.0.0.1``);
- since v1.23 kubectl exits on the first forwarding error (kubernetes/kubernetes#103526), with code 1 only
  since kubernetes/kubernetes#114460 (0 before): any exit is death, recorded the moment it happens by a watcher
  thread (pidfd);
- a ``svc/`` forward stays pinned to the pod it resolved at start and, after that pod dies, may stay alive
  resetting every connection (kubernetes/kubectl#686, kubernetes/kubernetes#67059), and a forward whose
  tunnel to the API server is wedged stays alive while every request hangs and kubectl prints ``error
  creating error stream ... Timeout occurred``. Every line kubectl's ``portforward.go`` prints for a broken
  tunnel (:data:`BROKEN_MARKERS`), or several resets in a row, marks the forward broken; a request in flight
  then ends as the forward's failure, and the pool reopens it;
- shells and single-PID kills leave orphans holding ports: no shell, own process group, parent-death
  signal, stop = SIGINT, short grace, SIGKILL of the group, reap (harness.process).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import selectors
import signal
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

import anyio

from harness import process, timeline
from harness.errors import HarnessError, HopFailure, PortForwardNotReady, hide_for_named_failures

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator

    from harness.kube import Kube

DEFAULT_READY_TIMEOUT = 30.0
"""Seconds a forward may take to become ready."""

DEFAULT_STOP_GRACE = 1.0
"""Seconds kubectl gets to exit on SIGINT before its group is SIGKILLed."""

DEFAULT_RESET_LIMIT = 3
"""Consecutive reset or empty answers (with kubectl alive) that mark a forward broken."""

READY_POLL = 0.05
"""Seconds between readiness checks (banner, TCP connect, HTTP answer)."""

TCP_HOLD = 0.2
"""Seconds the TCP readiness probe holds its connection open: a forward whose pod side fails closes it (or exits)."""

_BANNER = re.compile(r"^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)")
BROKEN_MARKERS = (
    "error creating error stream",  # the tunnel could not open a stream (often "...: Timeout occurred")
    "error creating forwarding stream",
    "error reading from error stream",
    "an error occurred forwarding",  # the pod side refused or failed (kubelet's "error forwarding port ...")
    "error forwarding port",
    "lost connection to pod",  # kubectl closes the tunnel (and exits since v1.23)
    "error upgrading connection",
    "error creating websocket transports",
    "Timeout occurred",  # a stream that the API server never opened
)
"""Substrings of kubectl port-forward's stderr lines (client-go ``tools/portforward/portforward.go``, kubectl
1.27 to 1.33) that mean the tunnel is broken. Left out on purpose: ``error copying from local connection to
remote stream`` and its twin, which a local client that resets its own connection also causes."""
_STDERR_LINES = 200


@dataclass(frozen=True)
class ForwardExit:
    """How kubectl ended: ``returncode`` (Popen's: negative = killed by that signal), ``signal`` name or
    ``None``, ``stderr_tail`` (last lines, `` | ``-joined), ``at`` (``time.monotonic()`` when the watcher saw it),
    ``stopped_by_harness`` (the exit followed :meth:`PortForward.close`)."""

    returncode: int
    signal: str | None
    stderr_tail: str
    at: float
    stopped_by_harness: bool = False

    def how(self) -> str:
        """``kubectl exited rc=N`` or ``kubectl killed by SIGNAL``, plus who stopped it."""
        how = f"killed by {self.signal}" if self.signal else f"exited rc={self.returncode}"
        who = " after the harness stopped it" if self.stopped_by_harness else ""
        return f"kubectl {how}{who}"

    def summary(self) -> str:
        """:meth:`how` and the stderr tail, for one-line messages."""
        return f"{self.how()}: {self.stderr_tail or '(no stderr)'}"


class PortForward:
    """One ``kubectl port-forward TARGET :REMOTE`` child, supervised from start to reap.

    Use ``with port_forward(kube, "svc/fake-github", 80) as fwd:`` (or ``async with``), or call
    :meth:`start` / :meth:`astart` and :meth:`close` / :meth:`aclose` yourself. Once ready: ``local_port``
    (int) and ``base_url`` (``http://127.0.0.1:NNNNN``). ``exit`` is the recorded :class:`ForwardExit` or
    ``None``; :meth:`broken_reason` says why a live forward is known broken. ``banner_at``, ``ready_at`` and
    ``broken_at`` are ``time.monotonic()`` stamps. ``close()`` is idempotent and bounded (grace + about 5 s).

    Raises ``ValueError`` (``TypeError`` for a wrong type) naming the argument, before anything is spawned,
    for what :func:`check_forward_args` refuses.
    """

    def __init__(
        self,
        kube: Kube,
        target: str,
        remote_port: int,
        *,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        ready_path: str | None = None,
        reset_limit: int = DEFAULT_RESET_LIMIT,
        stop_grace: float = DEFAULT_STOP_GRACE,
    ) -> None:
        check_forward_args(
            target,
            remote_port,
            ready_timeout=ready_timeout,
            stop_grace=stop_grace,
            reset_limit=reset_limit,
            ready_path=ready_path,
        )
        self.kube = kube
        self.target = target
        self.remote_port = remote_port
        self.ready_timeout = ready_timeout
        self.ready_path = ready_path
        self.reset_limit = reset_limit
        self.stop_grace = stop_grace
        self.argv: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.local_port: int | None = None
        self.exit: ForwardExit | None = None
        self.started_at: float | None = None
        self.banner_at: float | None = None
        self.ready_at: float | None = None
        self.answers = 0
        self.broken_at: float | None = None
        self._resets = 0
        self._broken: str | None = None
        self._service_checked = False
        self._closed = False
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._lock = threading.Lock()
        self._spawned = threading.Event()
        self._banner = threading.Event()
        self._spawn_error: OSError | None = None
        self._thread: threading.Thread | None = None
        self._wakers: set[socket.socket] = set()

    # --- what fetch_through reads --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<local_port>``; raises ``RuntimeError`` before the banner was read."""
        if self.local_port is None:
            raise RuntimeError(f"port-forward {self.target} has no local port yet: start() it first")
        return f"http://127.0.0.1:{self.local_port}"

    def gone_reason(self) -> str | None:
        """Why this forward can no longer carry a request (exited or closed), or ``None``."""
        if self.exit is not None:
            return self.exit.summary()
        if self._closed:
            return "closed by the harness"
        return None

    def exit_summary(self) -> str | None:
        """``kubectl exited rc=N: <stderr tail>`` once the child exited, else ``None``."""
        return self.exit.summary() if self.exit is not None else None

    def exit_code(self) -> int | None:
        """The child's Popen return code once it exited (negative: killed by that signal), else ``None``."""
        return self.exit.returncode if self.exit is not None else None

    def broken_reason(self) -> str | None:
        """Why a still-running forward is known broken (a kubectl error line, or resets in a row), or ``None``."""
        return self._broken

    def stderr_tail(self, lines: int = 8) -> str:
        """kubectl's last ``lines`` stderr lines, `` | ``-joined (``""`` if none)."""
        return process.tail("\n".join(list(self._stderr)), lines)

    @contextlib.contextmanager
    def change_signal(self) -> Iterator[socket.socket]:
        """A socket that turns readable when this forward exits or is found broken (at once if it already has): a
        request in flight waits on it instead of polling, so the exit reaches it as the watcher records it. Read
        it empty before waiting again. Closed at the end of the block."""
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        with self._lock:
            self._wakers.add(theirs)
            now = self.exit is not None or self._broken is not None
        if now:
            _poke(theirs)
        try:
            yield ours
        finally:
            with self._lock:
                self._wakers.discard(theirs)
            ours.close()
            theirs.close()

    def _changed(self) -> None:
        with self._lock:
            wakers = list(self._wakers)
        for waker in wakers:
            _poke(waker)

    def note_answer(self) -> None:
        """A request through this forward got a complete HTTP answer: resets are no longer consecutive."""
        self.answers += 1
        self._resets = 0

    def note_reset(self) -> None:
        """A request was reset or closed without an answer with kubectl alive; ``reset_limit`` in a row = broken."""
        self._resets += 1
        if self._resets >= self.reset_limit and self._broken is None and self.exit is None:
            self._broken = (
                f"{self._resets} requests in a row were reset or closed without an answer while kubectl stayed up"
            )
            self.broken_at = time.monotonic()

    @property
    def alive(self) -> bool:
        """True while kubectl runs and the forward is neither closed nor known broken."""
        return self.gone_reason() is None and self._broken is None

    # --- life cycle ----------------------------------------------------------------------------------

    def start(self) -> PortForward:
        """Spawn kubectl and block until ready. Raises :class:`PortForwardNotReady` (group killed first),
        ``ContextNotAllowed`` from the guard. Any other exception (Ctrl-C included) closes the forward too."""
        __tracebackhide__ = hide_for_named_failures  # the caller's line and the message, not this module's source
        deadline = self._launch()
        try:
            while True:
                step = self._ready_step(deadline)
                if step is _CHECK_SERVICE:
                    self._require_selected_pods(deadline)
                elif (
                    step is _PROBE_TCP
                    and self._tcp_ready_sync(deadline)
                    and (not self.ready_path or self._http_ready_sync(deadline))
                ):
                    self._check_running()  # it may have died or broken during the probe
                    break
                self._wait_a_little(deadline)
        except BaseException:
            self.close()
            raise
        return self._became_ready()

    async def astart(self) -> PortForward:
        """The async :meth:`start`: same readiness, errors and clean-up; cancellation closes the forward."""
        __tracebackhide__ = hide_for_named_failures
        deadline = self._launch()
        try:
            while True:
                step = self._ready_step(deadline)
                if step is _CHECK_SERVICE:  # two bounded kubectl calls: off the event loop
                    await anyio.to_thread.run_sync(self._require_selected_pods, deadline)
                elif (
                    step is _PROBE_TCP
                    and await self._tcp_ready_async(deadline)
                    and (not self.ready_path or await self._http_ready_async(deadline))
                ):
                    self._check_running()
                    break
                await anyio.sleep(min(READY_POLL, max(0.0, deadline - time.monotonic())))
        except BaseException:
            await self.aclose()
            raise
        return self._became_ready()

    def close(self) -> None:
        """Stop kubectl: SIGINT, ``stop_grace`` seconds, SIGKILL of the group, reap; join the watcher. Idempotent."""
        with self._lock:
            self._closed = True
            proc = self.proc
        if proc is not None:
            process.kill_group(proc, first=signal.SIGINT, grace=self.stop_grace)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    async def aclose(self) -> None:
        """The async :meth:`close`: waits for the grace without blocking the event loop; shielded from cancellation."""
        with anyio.CancelScope(shield=True):
            with self._lock:
                self._closed = True
                proc = self.proc
            if proc is not None and self.exit is None:
                _signal(proc, signal.SIGINT)
                end = time.monotonic() + self.stop_grace
                while self.exit is None and time.monotonic() < end:
                    await anyio.sleep(0.02)
            self.close()  # SIGKILLs whatever is left of the group and reaps: immediate by now

    def __enter__(self) -> PortForward:
        __tracebackhide__ = hide_for_named_failures
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> PortForward:
        __tracebackhide__ = hide_for_named_failures
        return await self.astart()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "ready" if self.ready_at and self.alive else (self.gone_reason() or self._broken or "starting")
        return f"PortForward({self.target} :{self.remote_port} -> {self.local_port}, {state})"

    # --- internals: spawning and watching ------------------------------------------------------------

    def _launch(self) -> float:
        if self._thread is not None:
            raise RuntimeError(f"port-forward {self.target} was already started; open a new PortForward to reopen")
        self.kube.guard()
        self.argv = self.kube.argv("port-forward", self.target, f":{self.remote_port}", "--address", "127.0.0.1")
        self.started_at = time.monotonic()
        # The watcher thread spawns the child itself: PR_SET_PDEATHSIG fires when the *spawning thread* exits,
        # and this thread lives exactly as long as the child.
        self._thread = threading.Thread(target=self._supervise, name=f"port-forward {self.target}", daemon=True)
        self._thread.start()
        return self.started_at + self.ready_timeout

    def _supervise(self) -> None:
        with self._lock:
            if self._closed:
                self._spawned.set()
                return
            try:
                self.proc = process.spawn(self.argv, env=self.kube.env)
            except OSError as exc:
                self._spawn_error = exc
            finally:
                self._spawned.set()
        if self.proc is not None:
            self._watch(self.proc)

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        """Read stdout (banner) and stderr (errors) as they come; record the exit the moment it happens."""
        assert proc.stdout is not None
        assert proc.stderr is not None
        pidfd = _pidfd(proc.pid)
        buffers = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
        with selectors.DefaultSelector() as sel:
            for fd in buffers:
                os.set_blocking(fd, False)
                sel.register(fd, selectors.EVENT_READ)
            if pidfd is not None:
                sel.register(pidfd, selectors.EVENT_READ)
            try:
                while True:
                    events = sel.select(timeout=None if pidfd is not None else 0.05)
                    if any(key.fd == pidfd for key, _ in events) or (pidfd is None and proc.poll() is not None):
                        break
                    for key, _ in events:
                        if not self._read(key.fd, buffers[key.fd], proc):
                            sel.unregister(key.fd)
            finally:
                if pidfd is not None:
                    os.close(pidfd)
        for fd, buffer in buffers.items():  # what it wrote just before dying is already in the pipes
            while self._read(fd, buffer, proc):
                pass
            if buffer:
                self._line(fd, bytes(buffer), proc)
        self._record_exit(proc)

    def _read(self, fd: int, buffer: bytearray, proc: subprocess.Popen[bytes]) -> bool:
        """Read what is available on ``fd``; False at EOF or when nothing more is there right now."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            return False
        if not chunk:
            return False
        buffer.extend(chunk)
        while (newline := buffer.find(b"\n")) >= 0:
            self._line(fd, bytes(buffer[:newline]), proc)
            del buffer[: newline + 1]
        return True

    def _line(self, fd: int, raw: bytes, proc: subprocess.Popen[bytes]) -> None:
        line = raw.decode(errors="replace").rstrip("\r")
        assert proc.stdout is not None
        if fd == proc.stdout.fileno():
            match = _BANNER.match(line)
            if match and self.local_port is None:
                self.local_port = int(match.group(1))
                self.banner_at = time.monotonic()
                self._banner.set()
            return
        self._stderr.append(line)
        if self._broken is None and any(marker in line for marker in BROKEN_MARKERS):
            self._broken = f"kubectl reported: {line.strip()}"
            self.broken_at = time.monotonic()
            self._changed()

    def _record_exit(self, proc: subprocess.Popen[bytes]) -> None:
        # Whatever the leader left in its group (a helper it started) must not outlive it; the group is
        # signalled while the leader is still an unreaped zombie, so its pid cannot have been reused.
        process.kill_group(proc, reap_timeout=5.0)
        returncode = proc.returncode
        if returncode is None:  # unreapable within 5 s: close() and the leak audit deal with it
            return
        sig = (
            signal.Signals(-returncode).name
            if returncode < 0 and -returncode in signal.Signals._value2member_map_
            else None
        )
        self.exit = ForwardExit(returncode, sig, self.stderr_tail(), time.monotonic(), stopped_by_harness=self._closed)
        self._changed()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    # --- internals: readiness ------------------------------------------------------------------------

    def _ready_step(self, deadline: float) -> object:
        """One readiness check: :data:`_PROBE_TCP` when the banner is in and a probe is due, else ``"banner"``.
        Raises :class:`PortForwardNotReady` when it can no longer become ready (exited, broken, out of budget)."""
        __tracebackhide__ = hide_for_named_failures
        if not self._spawned.wait(timeout=max(0.0, min(5.0, deadline - time.monotonic()))):
            self._not_ready("the watcher thread did not spawn kubectl")
        self._check_running()
        if time.monotonic() >= deadline:
            stage = (
                "its banner (`Forwarding from 127.0.0.1:...`)"
                if self.local_port is None
                else "a TCP answer on its local port"
            )
            self._not_ready(f"no ready forward within {self.ready_timeout:.1f}s: still waiting for {stage}")
        if self.local_port is None:
            waited = time.monotonic() - (self.started_at or time.monotonic())
            if not self._service_checked and waited >= SERVICE_CHECK_AFTER and _service_name(self.target):
                self._service_checked = True
                return _CHECK_SERVICE
            return "banner"
        return _PROBE_TCP

    def _require_selected_pods(self, deadline: float) -> None:
        """Raise :class:`PortForwardNotReady` when the forward's Service selects no pod: kubectl itself waits for
        one, silently, up to its ``--pod-running-timeout`` (kubectl ``polymorphichelpers/attachablepodforobject.go``
        and ``GetFirstPod``). Two bounded reads; one that fails leaves kubectl's own wait to run."""
        __tracebackhide__ = hide_for_named_failures
        name = _service_name(self.target) or ""
        bound = max(0.1, min(SERVICE_CHECK_TIMEOUT, deadline - time.monotonic()))
        try:
            service = self.kube.kubectl_json("get", "service", name, "--ignore-not-found", timeout=bound)
            selector = ((service or {}).get("spec") or {}).get("selector") or {}
            if not selector:  # absent, or no selector: kubectl says so itself, at once
                return
            labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
            pods = self.kube.kubectl_json("get", "pods", "-l", labels, timeout=bound) or {}
        except HarnessError:
            return
        if not pods.get("items"):
            self._not_ready(
                f"Service {name} selects no pod (selector {labels}), and kubectl waits silently up to its "
                "--pod-running-timeout for one: deploy a pod with those labels, or fix the Service's selector",
                cause=f"Service {name} selects no pod (selector {labels})",
            )

    def _tcp_ready_sync(self, deadline: float) -> bool:
        """Connect and hold the connection :data:`TCP_HOLD` seconds: kubectl accepts before it dials the pod,
        so a pod-side refusal only shows as the forward closing or resetting the connection (or exiting)."""
        assert self.local_port is not None
        budget = max(0.01, deadline - time.monotonic())
        try:
            with socket.create_connection(("127.0.0.1", self.local_port), timeout=min(1.0, budget)) as conn:
                conn.settimeout(min(TCP_HOLD, budget))
                try:
                    return conn.recv(1) != b""  # data: a server-speaks-first protocol answered; b"": closed on us
                except TimeoutError:
                    return True  # held open and silent, as an HTTP or gRPC server waiting for the client is
        except OSError:
            return False

    async def _tcp_ready_async(self, deadline: float) -> bool:
        """The async :meth:`_tcp_ready_sync`."""
        assert self.local_port is not None
        budget = max(0.01, deadline - time.monotonic())
        try:
            with anyio.fail_after(min(1.0, budget)):
                stream = await anyio.connect_tcp("127.0.0.1", self.local_port)
        except (OSError, TimeoutError):
            return False
        async with stream:
            with anyio.move_on_after(min(TCP_HOLD, budget)):
                try:
                    await stream.receive(1)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    return False
            return True

    def _check_running(self) -> None:
        __tracebackhide__ = hide_for_named_failures
        if self._spawn_error is not None:
            self._not_ready(f"kubectl could not be started ({self._spawn_error})")
        if self.exit is not None:
            self._not_ready(f"kubectl exited before the forward was ready ({self.exit.how()})")
        if self._broken is not None:
            self._not_ready(f"kubectl reported a forwarding error before the forward was ready ({self._broken})")

    def _wait_a_little(self, deadline: float) -> None:
        pause = min(READY_POLL, max(0.0, deadline - time.monotonic()))
        if self.local_port is None:
            self._banner.wait(pause)  # wakes as soon as the banner is parsed
        else:
            time.sleep(pause)  # polling a real condition (TCP/HTTP answer), bounded by the deadline

    def _http_ready_sync(self, deadline: float) -> bool:
        from harness.fetch import fetch_through_sync

        try:
            fetch_through_sync(
                self, "GET", self.ready_path or "/", timeout=min(2.0, max(0.01, deadline - time.monotonic()))
            )
        except HopFailure:
            return False
        return True

    async def _http_ready_async(self, deadline: float) -> bool:
        from harness.fetch import fetch_through

        try:
            await fetch_through(
                self, "GET", self.ready_path or "/", timeout=min(2.0, max(0.01, deadline - time.monotonic()))
            )
        except HopFailure:
            return False
        return True

    def _became_ready(self) -> PortForward:
        self.ready_at = time.monotonic()
        timeline.note_forward(self)  # the spec's evidence and report.html list it, pool or not
        return self

    def _not_ready(self, why: str, cause: str | None = None) -> None:
        """Close and raise :class:`PortForwardNotReady`: its first line the cause (``cause``, else the pod side's
        words when kubectl reported a forwarding error, else ``why``), then the details."""
        __tracebackhide__ = hide_for_named_failures
        timeline.note_forward(self)
        waited = time.monotonic() - (self.started_at or time.monotonic())
        self.close()
        exit_code = self.exit.returncode if self.exit is not None else None
        stopped = " (after the harness stopped it)" if self.exit is None or self.exit.stopped_by_harness else ""
        stderr = self.stderr_tail()
        version = client_version(self.kube.kubectl_path)
        first = cause or _root_cause(self._broken or "") or why
        raise PortForwardNotReady(
            f"port-forward {self.target} :{self.remote_port} not ready: {first}\n"
            f"  context {self.kube.context}, namespace {self.kube.namespace}; "
            f"after {waited:.1f}s: {why}. kubectl client {version}; exit code {exit_code}{stopped}; "
            f"stderr: {stderr or '(empty)'}",
            target=self.target,
            budget=self.ready_timeout,
            exit_code=exit_code,
            stderr_tail=stderr,
            kubectl_version=version,
        )


_PROBE_TCP = object()
_CHECK_SERVICE = object()
SERVICE_CHECK_AFTER = 0.5
"""Seconds without kubectl's banner after which a Service forward checks, once, that its selector matches a pod."""
SERVICE_CHECK_TIMEOUT = 5.0
"""Seconds each of that check's two kubectl reads may take."""
_ROOT_CAUSES = ("dial tcp", "forward not found", "no forward found", "failed to find sandbox", "connection refused")
"""Where the pod side's own words start in kubectl's ``an error occurred forwarding ...`` line (the kubelet's or
kwok's error, after kubectl's wrapping)."""


def _service_name(target: str) -> str | None:
    kind, _, name = target.partition("/")
    return name if kind.lower() in ("svc", "service", "services") else None


def _root_cause(broken: str) -> str | None:
    """The pod side's words in a forwarding error line (``dial tcp4 127.0.0.1:9090: connect: connection refused``),
    without kubectl's and klog's wrapping; ``None`` when no known start is there."""
    starts = [broken.find(marker) for marker in _ROOT_CAUSES if marker in broken]
    if not starts:
        return None
    return broken[min(starts) :].strip().rstrip('"').replace('\\"', '"')


_TARGET_TYPES = frozenset(
    {
        "po",
        "pod",
        "pods",
        "svc",
        "service",
        "services",
        "deploy",
        "deployment",
        "deployments",
        "rs",
        "replicaset",
        "replicasets",
        "sts",
        "statefulset",
        "statefulsets",
        "rc",
        "replicationcontroller",
        "replicationcontrollers",
        "ds",
        "daemonset",
        "daemonsets",
        "job",
        "jobs",
    }
)
"""Resource types kubectl port-forward can resolve to a pod (kubectl's AttachablePodForObject), with aliases."""

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NAME = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
"""An object name as Kubernetes validates pods and deployments: an RFC 1123 subdomain (at most 253 characters)."""


def check_forward_args(
    target: str,
    remote_port: int,
    *,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    stop_grace: float = DEFAULT_STOP_GRACE,
    reset_limit: int = DEFAULT_RESET_LIMIT,
    ready_path: str | None = None,
) -> None:
    """Refuse a port-forward kubectl could never open, before anything is spawned.

    ``target`` is kubectl's ``TYPE/NAME`` (``svc/x``, ``pod/x``, ``deployment/x``, ... optionally
    ``TYPE.GROUP/NAME`` such as ``deployments.apps/x``) or a bare ``NAME``, which kubectl reads as a pod; the
    name must be an RFC 1123 subdomain. ``remote_port`` is an int in 1..65535; ``ready_timeout`` and
    ``stop_grace`` finite seconds > 0; ``reset_limit`` an int >= 1; ``ready_path`` ``None`` or starting with
    ``/``. Raises ``ValueError`` (``TypeError`` for a wrong type) naming the argument and what was given.
    Without this, ``remote_port=70000`` or ``target="; rm -rf /"`` waited out the whole ready timeout.
    """
    if not isinstance(target, str):
        raise TypeError(f"port-forward: target must be a str such as 'svc/NAME', got {target!r}")
    kind, slash, name = target.rpartition("/")
    if slash and kind.split(".", 1)[0].lower() not in _TARGET_TYPES:
        raise ValueError(
            f"port-forward: target {target!r}: kubectl cannot forward to a {kind!r}; use TYPE/NAME with TYPE one of "
            f"pod, svc, deployment, replicaset, statefulset, replicationcontroller, daemonset, job (or a bare pod name)"
        )
    if len(name) > 253 or not _NAME.fullmatch(name):
        raise ValueError(
            f"port-forward: target {target!r}: {name!r} is not a Kubernetes object name "
            f"(RFC 1123: lowercase letters, digits, '-' and '.', at most 253 characters)"
        )
    if isinstance(remote_port, bool) or not isinstance(remote_port, int):
        raise TypeError(f"port-forward {target}: remote_port must be an int, got {remote_port!r}")
    if not 1 <= remote_port <= 65535:
        raise ValueError(f"port-forward {target}: remote_port must be in 1..65535, got {remote_port}")
    for arg, seconds in (("ready_timeout", ready_timeout), ("stop_grace", stop_grace)):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise TypeError(f"port-forward {target}: {arg} must be seconds as a float, got {seconds!r}")
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"port-forward {target}: {arg} must be finite and > 0 seconds, got {seconds!r}")
    if isinstance(reset_limit, bool) or not isinstance(reset_limit, int) or reset_limit < 1:
        raise ValueError(f"port-forward {target}: reset_limit must be an int >= 1, got {reset_limit!r}")
    if ready_path is not None and (not isinstance(ready_path, str) or not ready_path.startswith("/")):
        raise ValueError(
            f"port-forward {target}: ready_path must be None or a path starting with '/', got {ready_path!r}"
        )


def port_forward(
    kube: Kube,
    target: str,
    remote_port: int,
    *,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    ready_path: str | None = None,
    reset_limit: int = DEFAULT_RESET_LIMIT,
    stop_grace: float = DEFAULT_STOP_GRACE,
) -> PortForward:
    """A not-yet-started :class:`PortForward` to use as ``with`` or ``async with`` (starts on enter, closes on exit).

    ``target`` is ``svc/NAME``, ``pod/NAME`` or ``deploy/NAME``; ``remote_port`` the port in the pod or
    service. ``ready_path`` adds an HTTP readiness probe (any status counts) to the TCP one; leave it
    ``None`` for non-HTTP ports (gRPC), where an HTTP probe would never succeed.
    Raises ``ValueError`` / ``TypeError`` at once for arguments :func:`check_forward_args` refuses.
    """
    return PortForward(
        kube,
        target,
        remote_port,
        ready_timeout=ready_timeout,
        ready_path=ready_path,
        reset_limit=reset_limit,
        stop_grace=stop_grace,
    )


@functools.lru_cache(maxsize=8)
def client_version(kubectl_path: str) -> str:
    """The kubectl client's ``gitVersion`` (``kubectl version --client -o json``, 10 s bound), or why it is unknown.

    Recorded in every readiness failure: kubectl's exit semantics changed twice (kubernetes/kubernetes#103526,
    kubernetes/kubernetes#114460).
    """
    import json

    from harness.kube import kubectl_environment

    try:
        done = process.run_bounded(
            [kubectl_path, "version", "--client", "-o", "json"], timeout=10.0, env=kubectl_environment()
        )
        return str(json.loads(done.stdout)["clientVersion"]["gitVersion"])
    except (OSError, process.Timeout, ValueError, KeyError, TypeError) as exc:
        return f"unknown ({type(exc).__name__}: {exc})"


def _poke(waker: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed by its waiter meanwhile, or already full of pokes: either is fine
        waker.send(b"!", socket.MSG_DONTWAIT)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: the watcher polls instead
        return None


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
