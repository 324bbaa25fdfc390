"""How a control-plane component runs as a process: started, watched until ready, stopped and reaped.

Nothing here knows what a component is (that is :mod:`harness.controlplane.components`): a :class:`Server` is an
argv, a log file and a readiness probe. Every child goes through :func:`harness.process.spawn` (its own process
group, registered with the watchdog, so it dies with the process that started it however that ends). Ports are
picked by binding port 0 and closing; a component that loses the port to another process in between fails its
start with "address already in use" in its log, and :func:`start_together` tries again with new ports, bounded.

PDEATHSIG fires when the *thread* that spawned a child exits: start servers from a thread that lives as long as
they do (the main thread, or :class:`harness.controlplane.plane.ControlPlane`'s keeper thread).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import process
from harness.errors import ControlPlaneStartFailed

POLL = 0.1
"""Seconds between readiness probes of a starting component."""
STOP_GRACE = 15.0
"""Seconds a component has to exit after SIGTERM before its group is killed: kube-apiserver drains its requests
first (``--shutdown-delay-duration`` is 0 by default; its in-flight requests get up to 60 s, but a test control
plane has none worth waiting for)."""
LOG_TAIL = 25
"""Lines of a component's log quoted when it fails to start."""
PORT_RACE_WORDS = ("address already in use", "bind: address already in use")


def free_port() -> int:
    """A port the OS just gave out on 127.0.0.1 and that is free now (for components that cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Probe = Callable[[], bool]


class Server:
    """One long-lived component: ``name``, ``argv``, ``log`` (a file that gets its stdout and stderr)."""

    def __init__(self, name: str, argv: list[str], log: Path, *, env: dict[str, str] | None = None) -> None:
        self.name, self.argv, self.log, self.env = name, argv, log, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None
        self.ready_after: float | None = None
        """Seconds from spawn to ready (``None`` until ready)."""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        """Spawn it (raises :class:`ControlPlaneStartFailed` when the binary cannot be run)."""
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            self.proc = process.spawn(self.argv, env=self.env, output=fd, cwd=str(self.log.parent))
        except OSError as exc:
            raise ControlPlaneStartFailed(f"{self.name} cannot be started: {exc}", component=self.name) from None
        finally:
            os.close(fd)
        self.started_at = time.monotonic()

    def wait_ready(self, probe: Probe, deadline: float, *, what: str) -> None:
        """Probe until ``probe()`` is true; raises :class:`ControlPlaneStartFailed` (with the log's tail) when the
        process exits first or ``deadline`` (a ``time.monotonic()`` value) passes. ``what`` says what ready means."""
        while not self.check(probe, deadline, what=what):
            time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))  # the probe's pacing, bounded

    def check(self, probe: Probe, deadline: float, *, what: str) -> bool:
        """One readiness attempt: True once ready; raises as :meth:`wait_ready` does when it never can be."""
        assert self.proc is not None
        assert self.started_at is not None
        if self.ready_after is not None:
            return True
        if self.proc.poll() is not None:
            raise self.failure(f"{self.name} exited with code {self.proc.returncode} before {what}")
        if probe():
            self.ready_after = time.monotonic() - self.started_at
            return True
        if time.monotonic() >= deadline:
            waited = time.monotonic() - self.started_at
            raise self.failure(
                f"{self.name} was not ready ({what}) when the start's bound ran out, {waited:.1f}s after its spawn "
                "(KUBEBUILDER_CONTROLPLANE_START_TIMEOUT sets the bound)"
            )
        return False

    def failure(self, message: str) -> ControlPlaneStartFailed:
        tail = self.log_tail()
        quoted = "\n".join(f"    {line}" for line in tail.splitlines())
        return ControlPlaneStartFailed(
            f"{message}; the end of its log ({self.log}):\n{quoted}" if tail else f"{message}; its log is empty",
            component=self.name,
            log_tail=tail,
        )

    def lost_port_race(self) -> bool:
        text = self.log_tail().lower()
        return any(words in text for words in PORT_RACE_WORDS)

    def log_tail(self, lines: int = LOG_TAIL) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM its group, SIGKILL after ``grace`` seconds, reap; idempotent."""
        if self.proc is not None:
            process.kill_group(self.proc, first=signal.SIGTERM, grace=grace)


@dataclass(frozen=True)
class Plan:
    """How to start one server: ``make()`` builds it on freshly picked ports, ``probe(server)`` says when it is
    ready, ``what`` says what ready means (for the error)."""

    make: Callable[[], Server]
    probe: Callable[[Server], Probe]
    what: str


def start_together(plans: list[Plan], deadline: float, *, attempts: int = 3) -> list[Server]:
    """Spawn every plan's server at once and probe them side by side until ``deadline``; a server that exits
    because another process took one of its ports in between is started again on new ones, up to ``attempts``
    times. On any failure every server of ``plans`` is stopped and the first failure raised."""
    servers = [plan.make() for plan in plans]
    tries = [1] * len(plans)
    try:
        for server in servers:
            server.start()
        probes = [plan.probe(server) for plan, server in zip(plans, servers, strict=True)]
        while not all(server.ready_after is not None for server in servers):
            for index, plan in enumerate(plans):
                try:
                    servers[index].check(probes[index], deadline, what=plan.what)
                except ControlPlaneStartFailed:
                    servers[index].stop(grace=0.0)
                    if tries[index] == attempts or not servers[index].lost_port_race():
                        raise
                    tries[index] += 1
                    servers[index] = plan.make()
                    servers[index].start()
                    probes[index] = plan.probe(servers[index])
            time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))  # the probes' pacing, bounded
    except BaseException:
        for server in servers:
            server.stop(grace=0.0)
        raise
    return servers
