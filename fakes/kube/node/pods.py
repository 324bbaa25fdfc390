"""One pod on the node: its containers run as local processes (:mod:`fakes.kube.local_process`), its status written
as a kubelet writes it.

The life (``pkg/kubelet/kubelet.go`` ``SyncPod``, ``status/generate.go``, ``kuberuntime/kuberuntime_manager.go``):
``Pending`` with containers ``waiting: ContainerCreating``; init containers one at a time (a failed one is run again
by ``restartPolicy``, or fails the pod under ``Never``); then every container started, ``Running``; a container
``Ready`` once its process is (:meth:`~fakes.kube.local_process.LocalProcess.ready`); an exit is a
``terminated`` state (``Completed`` / ``Error``, the exit code, start and finish times), restarted by
``restartPolicy`` after the kubelet's back-off (10 s doubling to 300 s; the ``double.stack-harness.dev/backoff``
annotation sets the first, as on the API double), ``waiting: CrashLoopBackOff`` meanwhile; with nothing left to
restart the pod is ``Succeeded`` (every container exited 0) or ``Failed``. A container of a pod that is not of the
contract (or not listed in its annotation) is simulated: running and ready until the pod goes.

Deletion: once the pod has a ``deletionTimestamp``, every process gets SIGTERM and, after
``deletionGracePeriodSeconds``, SIGKILL; when all have exited the node deletes the pod with grace period 0 and the
pod's uid as precondition, as the kubelet's status manager does, which removes it from the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from fakes.kube.local_process import (
    ConfigError,
    Launch,
    LocalProcess,
    StartError,
    is_local,
    prepare,
    remove_workdir,
)

log = logging.getLogger("fakes.kube.node")
Obj = dict[str, Any]
POLL_SECONDS = 0.1
"""How often a pod's processes are looked at (exit, readiness, deletion)."""
BACKOFF_SECONDS, MAX_BACKOFF_SECONDS = 10.0, 300.0
"""The kubelet's container restart back-off: first delay, doubling up to the cap (``pkg/kubelet/kubelet.go``)."""
BACKOFF_ANNOTATION = "double.stack-harness.dev/backoff"
REAP_MARGIN = 5.0
"""Seconds past the grace period a killed process has to be reaped before the pod is deleted anyway."""


def rfc3339(when: float) -> str:
    return datetime.fromtimestamp(int(when), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Run(Protocol):
    """One run of a container as the worker watches it (:class:`~fakes.kube.local_process.LocalProcess`, or what a
    :attr:`Hooks.runtime` gives): ``exit_code`` (``None`` while it runs), ``started_at`` (epoch seconds)."""

    @property
    def exit_code(self) -> int | None: ...

    started_at: float

    def ready(self) -> bool: ...

    def terminate(self, grace: float) -> None: ...

    def wait(self, timeout: float) -> int | None: ...

    def kill(self) -> None: ...


@dataclass
class Container:
    """One container's state as the kubelet keeps it."""

    name: str
    image: str
    init: bool
    local: bool
    restarts: int = 0
    state: Obj = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: Obj = field(default_factory=dict)
    container_id: str = ""
    ready: bool = False
    started: bool = False
    process: Run | None = None
    launch: Launch | None = None
    workdir: str | None = None
    backoff: float = 0.0
    restart_at: float | None = None

    @property
    def running(self) -> bool:
        return "running" in self.state

    @property
    def exited(self) -> bool:
        return "terminated" in self.state

    def status(self) -> Obj:
        image = self.image or "local"
        out: Obj = {
            "name": self.name,
            "image": image,
            "imageID": f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
            "ready": self.ready,
            "restartCount": self.restarts,
            "started": self.started,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass
class Hooks:
    """What a pod needs of its node: ``patch_status(pod, status)`` (awaitable; the pod as written), ``delete(pod)``
    (awaitable), ``sources(pod)`` (awaitable; the Secrets and ConfigMaps its environment reads, as a
    :class:`~fakes.kube.local_process.Sources`), ``on_run(pod, container)`` (a run began: its log, its ports),
    ``on_output(pod, container name, container id, stream, line)`` (from the run's reading thread), ``on_end(pod,
    container)`` (the run ended), ``event(pod, type, reason, message)`` (a kubelet's event on the pod), the node's
    ``host_ip`` (also the pods' IP unless ``pod_ip(pod)`` gives one), and ``runtime(pod, container name)``: a
    :class:`Run` for a container that is not of the local-process contract but that the node runs another way (the
    stack twin's services), or ``None`` to simulate it."""

    patch_status: Callable[[Obj, Obj], Any]
    delete: Callable[[Obj], Any]
    sources: Callable[[Obj], Any]
    on_run: Callable[[Obj, Container], None]
    on_output: Callable[[Obj, str, str, str, bytes], None]
    on_end: Callable[[Obj, Container], None]
    event: Callable[[Obj, str, str, str], None]
    host_ip: str = "127.0.0.1"
    runtime: Callable[[Obj, str], Any] = lambda _pod, _name: None
    pod_ip: Callable[[Obj], str] | None = None


class PodWorker:
    """Runs one pod until it is gone. :meth:`update` gives it the pod as last read; :meth:`run` is its task."""

    def __init__(self, pod: Obj, hooks: Hooks) -> None:
        self.pod = pod
        self.hooks = hooks
        self.started = time.time()
        spec = pod.get("spec") or {}
        self.init = [self._container(c, True) for c in spec.get("initContainers") or []]
        self.main = [self._container(c, False) for c in spec.get("containers") or []]
        self.gone = asyncio.Event()
        self._written: Obj | None = None

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    def _container(self, spec: Obj, init: bool) -> Container:
        name = str(spec.get("name"))
        return Container(name, str(spec.get("image") or ""), init, is_local(self.pod, name))

    def update(self, pod: Obj) -> None:
        self.pod = pod

    @property
    def deleting(self) -> bool:
        return bool(self.pod["metadata"].get("deletionTimestamp"))

    @property
    def policy(self) -> str:
        return str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")

    # --- the task ----------------------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self._write()
            if await self._run_init():
                for c in self.main:
                    await self._start(c)
                await self._write()
                await self._supervise()
            await self._end()
        finally:
            self._kill_all()
            for c in self.init + self.main:
                if c.launch is not None:
                    remove_workdir(c.launch)

    async def _run_init(self) -> bool:
        """Each init container to a 0 exit, in order; False when the pod is deleted or fails first."""
        for c in self.init:
            await self._start(c)
            await self._write()
            while not (c.exited and c.state["terminated"]["exitCode"] == 0):
                if self.deleting or self.gone.is_set():
                    return False
                await self._step(c)
                if c.exited and c.state["terminated"]["exitCode"] != 0 and self.policy == "Never":
                    await self._write()
                    return False
                await self._tick()
            await self._write()
        return True

    async def _supervise(self) -> None:
        while not self.deleting and not self.gone.is_set():
            for c in self.main:
                await self._step(c)
            await self._write()
            if all(c.exited and c.restart_at is None for c in self.main):
                return
            await self._tick()

    async def _tick(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.gone.wait(), POLL_SECONDS)

    # --- one container -----------------------------------------------------------------------------------------

    async def _start(self, c: Container) -> None:
        c.restart_at = None
        now = time.time()
        c.container_id = (
            "local://"
            + hashlib.sha256(f"{self.pod['metadata']['uid']}/{c.name}/{c.restarts}/{now}".encode()).hexdigest()[:32]
        )
        if not c.local:
            c.process = self.hooks.runtime(self.pod, c.name)
            c.state, c.started, c.ready = {"running": {"startedAt": rfc3339(now)}}, True, c.process is None
            self.hooks.on_run(self.pod, c)
            if c.process is not None:
                self.hooks.event(self.pod, "Normal", "Started", f"Started container {c.name}")
            return
        try:
            sources = await self.hooks.sources(self.pod)
            launch = await asyncio.to_thread(prepare, self.pod, c.name, sources, c.workdir)
        except StartError as exc:
            self.hooks.event(self.pod, "Warning", "Failed", f"Error: {exc}")
            self._exited(c, 128, "StartError", str(exc), now)
            return
        except ConfigError as exc:  # tried again at every sync, as the kubelet does
            self.hooks.event(self.pod, "Warning", "Failed", f"Error: {exc}")
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}}
            c.restart_at = time.monotonic() + _seconds(
                (self.pod["metadata"].get("annotations") or {}).get(BACKOFF_ANNOTATION), BACKOFF_SECONDS
            )
            return
        c.launch, c.workdir = launch, launch.cwd
        self.hooks.on_run(self.pod, c)
        pod, name, run = self.pod, c.name, c.container_id
        try:
            c.process = LocalProcess(launch, lambda stream, line: self.hooks.on_output(pod, name, run, stream, line))
        except OSError as exc:
            reason = "executable file not found in $PATH" if isinstance(exc, FileNotFoundError) else str(exc)
            message = (
                f"failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                f'exec: "{launch.argv[0]}": {reason}'
            )
            self.hooks.event(self.pod, "Warning", "Failed", f"Error: {message}")
            self._exited(c, 128, "StartError", message, now)
            return
        self.hooks.event(self.pod, "Normal", "Started", f"Started container {c.name}")
        c.state, c.started, c.ready = {"running": {"startedAt": rfc3339(now)}}, True, False

    async def _step(self, c: Container) -> None:
        """Exit, readiness and restart of ``c``, as they stand now."""
        if c.restart_at is not None:
            if time.monotonic() >= c.restart_at and not self.deleting:
                backed_off = (c.state.get("waiting") or {}).get("reason") == "CrashLoopBackOff"
                if c.exited:
                    c.last_state = {"terminated": c.state["terminated"]}
                if c.exited or backed_off:
                    c.restarts += 1
                await self._start(c)
            return
        if c.process is None or not c.running:
            return
        code = c.process.exit_code
        if code is not None:
            self._exited(c, code, "Completed" if code == 0 else "Error", "", c.process.started_at)
            return
        if not c.init and not c.ready:
            c.ready = await asyncio.to_thread(c.process.ready)

    def _exited(self, c: Container, code: int, reason: str, message: str, started: float) -> None:
        terminated: Obj = {
            "exitCode": code,
            "reason": reason,
            "startedAt": rfc3339(started),
            "finishedAt": rfc3339(time.time()),
            "containerID": c.container_id,
        }
        if message:
            terminated["message"] = message
        c.state, c.ready, c.started, c.process = {"terminated": terminated}, False, False, None
        self.hooks.on_end(self.pod, c)
        if self._restarts(c, code):
            self._back_off(c)

    def _back_off(self, c: Container) -> None:
        """The kubelet's crash back-off (``kuberuntime_manager.go`` ``doBackOff``): the first restart at once, then
        ``waiting: CrashLoopBackOff`` for 10 s (or the annotation's) doubling to 300 s."""
        first = _seconds(((self.pod["metadata"].get("annotations") or {}).get(BACKOFF_ANNOTATION)), BACKOFF_SECONDS)
        wait, c.backoff = c.backoff, (first if c.backoff <= 0 else min(MAX_BACKOFF_SECONDS, c.backoff * 2))
        c.restart_at = time.monotonic() + wait
        if wait > 0 and "terminated" in c.state:
            uid = self.pod["metadata"]["uid"]
            where = f"{self.name}_{self.namespace}({uid})"
            self.hooks.event(
                self.pod, "Warning", "BackOff", f"Back-off restarting failed container {c.name} in pod {where}"
            )
            c.last_state, c.state = (
                {"terminated": c.state["terminated"]},
                {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off {wait:g}s restarting failed container={c.name} "
                        f"pod={self.name}_{self.namespace}({uid})",
                    }
                },
            )

    def _restarts(self, c: Container, code: int) -> bool:
        if self.deleting:
            return False
        return (
            self.policy == "Always"
            or (self.policy == "OnFailure" and code != 0)
            or (c.init and code != 0 and self.policy != "Never")
        )

    # --- deletion ----------------------------------------------------------------------------------------------

    async def _end(self) -> None:
        """Wait for the deletion (a finished pod stays until deleted), stop every process within its grace, then
        delete the pod for good."""
        while not self.deleting and not self.gone.is_set():
            await self._tick()
        if self.gone.is_set():
            return
        grace = float(self.pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        running = [c for c in self.init + self.main if c.process is not None and c.process.exit_code is None]
        for c in running:
            assert c.process is not None
            self.hooks.event(self.pod, "Normal", "Killing", f"Stopping container {c.name}")
            c.process.terminate(grace)
        deadline = time.monotonic() + grace + REAP_MARGIN
        for c in running:
            assert c.process is not None
            process = c.process
            await asyncio.to_thread(process.wait, max(0.0, deadline - time.monotonic()))
            code = process.exit_code if process.exit_code is not None else 137
            self._exited(c, code, "Completed" if code == 0 else "Error", "", process.started_at)
        for c in self.init + self.main:
            if c.running:  # a simulated container stops at once
                self._exited(c, 0, "Completed", "", time.time())
        await self._write()
        await self.hooks.delete(self.pod)

    def _kill_all(self) -> None:
        for c in self.init + self.main:
            if c.process is not None:
                c.process.kill()

    # --- status ------------------------------------------------------------------------------------------------

    async def _write(self) -> None:
        status = self._status()
        if status == self._written or self.gone.is_set():
            return
        try:
            written = await self.hooks.patch_status(self.pod, status)
        except Exception as exc:  # the next change writes it again; a pod gone from the API ends the worker
            log.warning("status of pod %s/%s not written: %s", self.namespace, self.name, exc)
            return
        self._written = status
        if written:
            self.pod = written

    def _status(self) -> Obj:
        initialized = all(c.exited and c.state["terminated"]["exitCode"] == 0 for c in self.init)
        ready = initialized and all(c.ready for c in self.main)
        phase = self._phase(initialized)
        old = (self.pod.get("status") or {}).get("conditions") or []
        kept = [
            c
            for c in old
            if c.get("type") not in ("Initialized", "Ready", "ContainersReady", "PodReadyToStartContainers")
        ]
        now = rfc3339(time.time())
        pod_ip = self.hooks.pod_ip(self.pod) if self.hooks.pod_ip is not None else self.hooks.host_ip

        def condition(kind: str, true: bool) -> Obj:
            before: Obj = next((c for c in old if c.get("type") == kind), {})
            value = "True" if true else "False"
            since = before.get("lastTransitionTime") if before.get("status") == value else now
            return {"type": kind, "status": value, "lastProbeTime": None, "lastTransitionTime": since}

        status: Obj = {
            "phase": phase,
            "conditions": [
                condition("PodReadyToStartContainers", True),
                condition("Initialized", initialized),
                condition("Ready", ready and phase == "Running"),
                condition("ContainersReady", ready),
                *kept,
            ],
            "hostIP": self.hooks.host_ip,
            "hostIPs": [{"ip": self.hooks.host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": rfc3339(self.started),
            "containerStatuses": [c.status() for c in self.main],
        }
        if self.init:
            status["initContainerStatuses"] = [c.status() for c in self.init]
        return status

    def _phase(self, initialized: bool) -> str:
        if any(c.exited and c.restart_at is None and c.state["terminated"]["exitCode"] != 0 for c in self.init):
            return "Failed"
        if not initialized or not all(c.started or c.exited for c in self.main):
            return "Pending" if not any(c.started or c.exited for c in self.main) else "Running"
        if all(c.exited and c.restart_at is None for c in self.main):
            codes = [c.state["terminated"]["exitCode"] for c in self.main]
            return "Succeeded" if all(code == 0 for code in codes) else "Failed"
        return "Running"


def _seconds(value: object, default: float) -> float:
    try:
        seconds = float(str(value)) if value is not None else default
    except ValueError:
        return default
    return seconds if seconds >= 0 else default
