"""The agent-controller stack's twin as a stand-in target (:class:`harness.targets.StandIn`).

The generic harness chooses the target (:func:`harness.targets.choose_target`); this repository's ``[tool.harness]
twin`` names :mod:`specs.agent_controller.twin_plugin`, whose ``make_stand_in`` builds a :class:`TwinSession`.

:class:`TwinSession` owns the twin: ``python -m fakes.stack`` in its own process group (dies with pytest), started
lazily before the first cluster spec, stopped at the end of the session. Its kube context is accepted for this
session only: the :class:`~harness.kube.Kube` it hands out allows that one context and nothing else, and no
configuration or environment variable can put a twin's context on the allow-list of a cluster run.

The twin runs at a time scale (``python -m fakes.stack --time-scale K``): every timing of the stack's profile divided
by K, floors kept, the scaled values deployed in its objects (what :func:`specs.agent_controller.timing.read_profile`
reads). :data:`DEFAULT_TIME_SCALE` unless the session says otherwise; 1 is the stack's own cadence.

Once up, a :class:`TwinSession` writes its twin's ready line and pid to :attr:`TwinSession.ready_file`, in its own
working directory. Another pytest session on this machine can run its cluster specs against that running twin with
``--twin-attach PATH`` (:class:`AttachedTwin`): accepted only when the file names a live ``python -m fakes.stack``
process of this user whose command line carries that very kubeconfig and context, so no file, configuration or
environment variable can point a cluster run at anything but a twin. The attached session never stops the twin.
"""

from __future__ import annotations

import inspect
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness import process
from harness.kube import Kube, kubeconfig_server, resolve_kubectl
from specs.agent_controller.errors import TwinAttachRefused as TwinAttachRefused
from specs.agent_controller.errors import TwinStartFailed as TwinStartFailed

TWIN_START_TIMEOUT = 180.0
"""Seconds the twin may take to come up (API double, kubectl applies, every Deployment Available)."""
TWIN_STOP_TIMEOUT = 30.0
READY_FILE = "ready.json"
NAMESPACE = "controller-agent"
DEFAULT_TIME_SCALE = 5.0
"""The twin's time scale unless ``--time-scale`` says otherwise: the largest at which every cluster spec stays
meaningful (its waits are formulas over the deployed profile; the floors keep whole-second fields and the windows
real kubectl must act inside)."""


_ON_WORDS = {"double": "the API double", "control-plane": "the real control plane with a local node"}
ON_ENV = "STACK_TWIN_ON"
"""What new twins run on (``double`` or ``control-plane``) when not told: the pytest option ``--twin-on`` sets it,
so the pytest sessions a spec starts (the bug-switch specs') inherit it."""


@dataclass
class TwinInfo:
    """What the twin reported when it came up."""

    context: str
    kubeconfig: str
    start_seconds: float
    steps: dict[str, float] = field(default_factory=dict)
    bugs: tuple[str, ...] = ()
    time_scale: float = 1.0
    profile: dict[str, float] = field(default_factory=dict)
    """The twin's effective timing profile as it reported it (name -> seconds, counts as numbers)."""
    logs: dict[str, str] = field(default_factory=dict)
    """The control plane's log files by component (a twin on the control plane; none on the double)."""


class TwinSession:
    """One twin for one pytest session (process). ``kube`` exists at once; the twin starts on :meth:`ensure_started`."""

    def __init__(
        self,
        *,
        bugs: tuple[str, ...] = (),
        time_scale: float = DEFAULT_TIME_SCALE,
        overrides: Mapping[str, float] | None = None,
        python: str = sys.executable,
        start_timeout: float = TWIN_START_TIMEOUT,
        on: str | None = None,
    ) -> None:
        """``time_scale``: the twin's ``--time-scale``; ``overrides``: deployed values to mis-set (name -> seconds,
        as deployed: the twin's ``--set NAME=SECONDS``); ``on``: ``double`` or ``control-plane`` (the twin's
        ``--on``; default :data:`ON_ENV` from the environment, else ``double``)."""
        self.on = on or os.environ.get(ON_ENV) or "double"
        self.bugs = bugs
        self.time_scale = time_scale
        self.overrides = dict(overrides or {})
        self.python = python
        self.start_timeout = start_timeout
        self.workdir = Path(tempfile.mkdtemp(prefix="stack-twin-"))
        self.context = f"stack-twin-{os.getpid()}-{secrets.token_hex(3)}"
        self.kubeconfig = str(self.workdir / "kubeconfig")
        try:
            self.kube = make_kube(self.context, self.kubeconfig, str(self.workdir / "cache"))
        except BaseException:  # no kubectl: no twin, and no working directory left behind
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        process.remove_when_gone(str(self.workdir))  # a killed pytest never reaches stop()
        self.info: TwinInfo | None = None
        self.failure: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.wall_start: float | None = None
        self._drainer: threading.Thread | None = None
        self._stderr: deque[str] = deque(maxlen=200)
        self._stdout: deque[str] = deque(maxlen=50)
        self._lock = threading.Lock()

    @property
    def ready_file(self) -> Path:
        """Where the running twin's ready line and pid are, for ``--twin-attach`` (written once it is up)."""
        return self.workdir / READY_FILE

    # --- lifecycle --------------------------------------------------------------------------------------------

    def ensure_started(self) -> TwinInfo:
        """Start the twin once; later calls return its info, or raise the first failure again."""
        with self._lock:
            if self.info is not None:
                return self.info
            if self.failure is not None:
                raise TwinStartFailed(self.failure)
            try:
                self.info = self._start()
            except TwinStartFailed as exc:
                self.failure = str(exc)
                self.stop()
                raise
            return self.info

    # --- as a harness.targets.StandIn ---------------------------------------------------------------------------

    def start(self) -> None:
        """:meth:`ensure_started`, as the harness calls it before the first cluster spec."""
        self.ensure_started()

    def report(self) -> dict[str, Any] | None:
        """How this process's twin did (``None``: never asked to start), measured while it still runs."""
        if self.info is None:
            return {"failed": self.failure} if self.failure else None
        return {
            "seconds": self.wall_start or 0.0,
            "memory": self.memory_bytes(),
            "bugs": list(self.bugs),
            "context": self.context,
            "time_scale": self.time_scale,
        }

    def header(self) -> list[str]:
        return [
            f"harness: cluster specs use the stack twin this run starts on {_ON_WORDS[self.on]} "
            f"(kube context {self.context!r}, "
            f"namespace {self.kube.namespace!r}, {scale_words(self.time_scale)})"
        ]

    def describe(self, reports: list[dict[str, Any]]) -> str:
        """How each twin this session started did: start time, memory, bugs switched on."""
        parts = []
        for twin in reports:
            if twin.get("failed"):
                parts.append("a twin did not start")
                continue
            memory = f", {twin['memory'] / 2**20:.0f} MiB resident" if twin.get("memory") else ""
            bugs = f", bugs switched on: {', '.join(twin['bugs'])}" if twin.get("bugs") else ""
            scale = f", time scale {twin['time_scale']:g}" if twin.get("time_scale") else ""
            parts.append(f"the stack twin came up in {twin['seconds']:.1f}s{memory}{scale}{bugs}")
        return "; ".join(parts)

    def _start(self) -> TwinInfo:
        argv = [self.python, "-m", "fakes.stack", "--kubeconfig", self.kubeconfig, "--context", self.context]
        for bug in self.bugs:
            argv += ["--bug", bug]
        argv += ["--time-scale", f"{self.time_scale:g}", "--on", self.on]
        for name, seconds in sorted(self.overrides.items()):
            argv += ["--set", f"{name}={seconds!r}"]
        began = time.monotonic()
        self.proc = process.spawn(argv)
        process.forget(self.proc)  # owned by this session (stopped at its end), not a per-test child
        ready = self._read_ready(time.monotonic() + self.start_timeout)
        self.wall_start = time.monotonic() - began
        self.ready_file.write_text(json.dumps({**ready, "pid": self.proc.pid}))
        self._drainer = threading.Thread(target=self._drain, name="stack-twin-output", daemon=True)
        self._drainer.start()
        return TwinInfo(
            ready["context"],
            ready["kubeconfig"],
            float(ready.get("start_seconds", 0.0)),
            dict(ready.get("steps") or {}),
            tuple(ready.get("bugs") or ()),
            float(ready.get("time_scale", 1.0)),
            dict(ready.get("profile") or {}),
            {str(k): str(v) for k, v in (ready.get("logs") or {}).items()},
        )

    def _read_ready(self, deadline: float) -> dict[str, Any]:
        assert self.proc is not None
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        buffers = {self.proc.stdout.fileno(): b"", self.proc.stderr.fileno(): b""}
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TwinStartFailed(
                    f"the stack twin did not report ready within {self.start_timeout:.0f}s{self._stderr_tail()}"
                )
            readable, _, _ = select.select(list(buffers), [], [], min(left, 0.5))
            for fd in readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    buffers.pop(fd)
                    continue
                buffers[fd] += chunk
                *lines, buffers[fd] = buffers[fd].split(b"\n")
                for raw in lines:
                    line = raw.decode("utf-8", "replace")
                    if fd == self.proc.stderr.fileno():
                        self._stderr.append(line)
                        continue
                    event = _event(line)
                    if event.get("event") == "ready":
                        return event
                    if event.get("event") == "failed":
                        raise TwinStartFailed(
                            f"the stack twin failed to start: {event.get('error')}{self._stderr_tail()}"
                        )
                    self._stdout.append(line)
            if self.proc.poll() is not None and not readable:
                raise TwinStartFailed(
                    f"the stack twin exited with code {self.proc.returncode} before it was ready{self._stderr_tail()}"
                )

    def _drain(self) -> None:
        """Keep reading the twin's output after start (a full pipe would stall it); keeps a bounded tail."""
        proc = self.proc
        if proc is None or proc.stdout is None or proc.stderr is None:
            return
        fds = {proc.stdout.fileno(): self._stdout, proc.stderr.fileno(): self._stderr}
        while fds:
            try:
                readable, _, _ = select.select(list(fds), [], [], 1.0)
            except (OSError, ValueError):
                return
            for fd in readable:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    fds.pop(fd)
                    continue
                fds[fd].extend(chunk.decode("utf-8", "replace").splitlines())

    def _stderr_tail(self, lines: int = 12) -> str:
        tail = list(self._stderr)[-lines:]
        return ("; its stderr ends:\n  " + "\n  ".join(tail)) if tail else ""

    def memory_bytes(self) -> int | None:
        """Resident memory of the twin's process (Linux ``VmRSS``), or ``None`` when unknown."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def stop(self) -> None:
        """SIGTERM the twin's group, SIGKILL after a grace; remove its working directory. Idempotent, bounded."""
        if self.proc is not None:
            process.kill_group(self.proc, first=signal.SIGTERM, grace=TWIN_STOP_TIMEOUT)
            if self._drainer is not None:
                self._drainer.join(5.0)  # it ends at the pipes' EOF, which the exit gives
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
            self.proc = None
        shutil.rmtree(self.workdir, ignore_errors=True)
        process.forget_folder(str(self.workdir))


class AttachedTwin:
    """A twin another session runs, as this session's stand-in (``--twin-attach PATH``); never started or stopped
    here. :meth:`open` checks the ready file names a live twin process; :meth:`start` checks it is still alive."""

    def __init__(self, ready_file: Path, ready: dict[str, Any]) -> None:
        self.ready_file = ready_file
        self.pid = int(ready["pid"])
        self.context = str(ready["context"])
        self.kubeconfig = str(ready["kubeconfig"])
        self.time_scale = float(ready.get("time_scale", 1.0))
        self.cache = Path(tempfile.mkdtemp(prefix="stack-twin-attached-"))
        try:
            self.kube = make_kube(self.context, self.kubeconfig, str(self.cache / "cache"))
        except BaseException:
            shutil.rmtree(self.cache, ignore_errors=True)
            raise
        process.remove_when_gone(str(self.cache))
        self.bugs: tuple[str, ...] | None = None

    @classmethod
    def open(cls, path: str | Path) -> AttachedTwin:
        """The twin the ready file at ``path`` names. Raises :class:`TwinAttachRefused` saying why when the file is
        unreadable, or its pid is not a live ``python -m fakes.stack`` of this user with that kubeconfig and
        context, or the kubeconfig is not beside the file (a :class:`TwinSession`'s working directory holds both),
        or the context's API server is not on the loopback (the twin's API double listens on 127.0.0.1)."""
        ready_file = Path(path).resolve()
        try:
            ready = json.loads(ready_file.read_text())
            pid, context, kubeconfig = int(ready["pid"]), str(ready["context"]), str(ready["kubeconfig"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TwinAttachRefused(f"--twin-attach {path}: not a stack twin's ready file ({exc})") from None
        if Path(kubeconfig).resolve().parent != ready_file.parent:
            raise TwinAttachRefused(f"--twin-attach {path}: its kubeconfig {kubeconfig} is not beside it")
        why = _not_a_twin(pid, kubeconfig, context)
        if why:
            raise TwinAttachRefused(f"--twin-attach {path}: {why}")
        server = kubeconfig_server(kubeconfig, context)
        if urlsplit(server).hostname not in ("127.0.0.1", "localhost"):
            raise TwinAttachRefused(
                f"--twin-attach {path}: context {context!r} in {kubeconfig} points at {server}, not at a twin on "
                "this machine's loopback"
            )
        return cls(ready_file, ready)

    def start(self) -> None:
        """Check the twin still runs (the cluster specs need it) and read the bugs switched on now."""
        why = _not_a_twin(self.pid, self.kubeconfig, self.context)
        if why:
            raise TwinStartFailed(f"the attached stack twin ({self.ready_file}) is gone: {why}")
        if self.bugs is None:
            from specs.agent_controller.twin_bugs import switched_bugs

            self.bugs = tuple(sorted(switched_bugs(self.kube)))

    def stop(self) -> None:
        """Remove this session's kubectl cache; the twin is its owner's to stop."""
        shutil.rmtree(self.cache, ignore_errors=True)
        process.forget_folder(str(self.cache))

    def report(self) -> dict[str, Any] | None:
        if self.bugs is None:
            return None
        return {"attached": self.pid, "bugs": list(self.bugs), "time_scale": self.time_scale}

    def header(self) -> list[str]:
        return [
            f"harness: cluster specs use the running stack twin attached from {self.ready_file} (pid {self.pid}, "
            f"kube context {self.context!r}, namespace {self.kube.namespace!r}, {scale_words(self.time_scale)})"
        ]

    def describe(self, reports: list[dict[str, Any]]) -> str:
        parts = []
        for twin in reports:
            bugs = f", bugs switched on: {', '.join(twin['bugs'])}" if twin.get("bugs") else ""
            parts.append(
                f"attached to the running stack twin (pid {twin['attached']}), time scale {twin['time_scale']:g}{bugs}"
            )
        return "; ".join(parts)


def _not_a_twin(pid: int, kubeconfig: str, context: str) -> str | None:
    """Why process ``pid`` is not a live stack twin of this user serving ``kubeconfig``/``context`` (else ``None``),
    read from ``/proc`` (Linux)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return f"process {pid} belongs to another user"
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [part.decode("utf-8", "replace") for part in f.read().split(b"\0") if part]
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return f"no process {pid} runs"
    if state == "Z":
        return f"process {pid} has exited"
    pairs = set(zip(argv, argv[1:], strict=False))
    if ("-m", "fakes.stack") not in pairs:
        return f"process {pid} is not python -m fakes.stack (it runs {' '.join(argv)[:120]!r})"
    if ("--kubeconfig", kubeconfig) not in pairs or ("--context", context) not in pairs:
        return f"process {pid} is a stack twin, but not the one serving {kubeconfig} (context {context!r})"
    return None


def scale_words(scale: float) -> str:
    """How a header names the time scale: what it does, and how to run at the stack's own cadence."""
    if scale == 1:
        return "time scale 1: the stack's own cadence"
    return f"time scale {scale:g}: every stack timing divided by {scale:g}, floors kept; --time-scale 1 for its own"


def make_kube(context: str, kubeconfig: str, cache_dir: str, namespace: str = NAMESPACE) -> Kube:
    """A :class:`Kube` that allows exactly ``context`` (the twin's), for ``kubeconfig`` only."""
    kwargs: dict[str, Any] = {"allowed": (context,), "kubectl_path": resolve_kubectl(), "kubeconfig": kubeconfig}
    if "cache_dir" in inspect.signature(Kube.__init__).parameters:
        kwargs["cache_dir"] = cache_dir  # kubectl's discovery cache for this twin alone
    return Kube(context, namespace, **kwargs)


def _event(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
