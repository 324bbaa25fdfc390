"""``ForwardPool``: one live port-forward per (context, namespace, target, port), reopened when it dies or breaks.

Forwards opened per spec and counted "active" at spawn let a tunnel that died mid-run turn the next group of
requests into bare ``Server disconnected`` errors. Here a forward that
exited or is known broken is closed and replaced by a new kubectl child, with a new local port, on the
next :meth:`ForwardPool.get`: callers never hold a port number, so nothing can reuse a dead one. Reopens
back off exponentially (bounded, and clamped to the current ``wait_for`` attempt) while forwards keep
failing before they answered anything. :meth:`ForwardPool.close` stops every child and raises
:class:`~harness.errors.ForwardLeak` if any survived.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

import anyio

from harness import process
from harness.attempts import clamp_to_attempt
from harness.errors import ForwardLeak, hide_for_named_failures
from harness.portforward import DEFAULT_READY_TIMEOUT, PortForward, check_forward_args, client_version

if TYPE_CHECKING:
    import subprocess

    from harness.kube import Kube

Key = tuple[str, str, str, int]


class ForwardPool:
    """Session-wide port-forwards, keyed by ``(context, namespace, target, remote_port)``.

    ``backoff`` is the first reopen delay in seconds, doubled per consecutive failure up to ``max_backoff``;
    a forward that answered at least one request resets it (all three: finite seconds > 0, else ``ValueError``).
    ``opened`` counts kubectl children started.
    Thread-safe: sync probes run in worker threads.
    """

    def __init__(
        self, *, ready_timeout: float = DEFAULT_READY_TIMEOUT, backoff: float = 0.25, max_backoff: float = 5.0
    ) -> None:
        for arg, seconds in (("ready_timeout", ready_timeout), ("backoff", backoff), ("max_backoff", max_backoff)):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
                raise ValueError(f"ForwardPool: {arg} must be finite seconds > 0, got {seconds!r}")
        self.ready_timeout = ready_timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.opened = 0
        self.kubectl_versions: dict[str, str] = {}
        """kubectl path -> client gitVersion, recorded at the first open (exit semantics changed twice)."""
        self._forwards: dict[Key, PortForward] = {}
        self._failures: dict[Key, int] = {}
        self._not_before: dict[Key, float] = {}
        self._children: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._key_locks: dict[Key, threading.Lock] = {}
        self._closed = False

    def get(self, kube: Kube, target: str, remote_port: int, *, ready_path: str | None = None) -> PortForward:
        """A ready forward for the key, reopening a dead or broken one (after its backoff).

        Raises :class:`~harness.errors.PortForwardNotReady` when the reopen fails (the next call retries,
        later), ``RuntimeError`` after :meth:`close`, ``ValueError`` / ``TypeError`` before any kubectl runs
        for arguments :func:`~harness.portforward.check_forward_args` refuses.
        """
        __tracebackhide__ = hide_for_named_failures  # a failed reopen shows the caller's line and why
        check_forward_args(target, remote_port, ready_path=ready_path)
        key = self._key(kube, target, remote_port)
        with self._key_lock(key):
            current = self._forwards.get(key)
            if current is not None and current.alive:
                return current
            fresh = self._replace(key, kube, target, remote_port, ready_path)
            pause = self._pause(key)
            if pause > 0:
                time.sleep(pause)  # the backoff itself, bounded by max_backoff and the attempt
            return self._started(key, fresh)

    async def aget(self, kube: Kube, target: str, remote_port: int, *, ready_path: str | None = None) -> PortForward:
        """The async :meth:`get` (readiness awaited on the event loop; cancellation closes the new forward)."""
        __tracebackhide__ = hide_for_named_failures
        check_forward_args(target, remote_port, ready_path=ready_path)
        key = self._key(kube, target, remote_port)
        lock = self._key_lock(key)
        # The key lock is a thread lock (sync probes run in worker threads): poll it instead of blocking the loop.
        deadline = time.monotonic() + clamp_to_attempt(self.ready_timeout + self.max_backoff)
        while not lock.acquire(blocking=False):
            if time.monotonic() >= deadline:
                raise RuntimeError(f"another caller has been opening the forward for {key} for too long")
            await anyio.sleep(0.01)
        try:
            current = self._forwards.get(key)
            if current is not None and current.alive:
                return current
            fresh = self._replace(key, kube, target, remote_port, ready_path)
            pause = self._pause(key)
            if pause > 0:
                await anyio.sleep(pause)
            try:
                await fresh.astart()
            except BaseException:
                self._failed(key, fresh)
                raise
            return self._succeeded(key, fresh)
        finally:
            lock.release()

    def close(self) -> None:
        """Stop every forward, then audit: raise :class:`ForwardLeak` naming each kubectl group still alive."""
        with self._lock:
            self._closed = True
            forwards = list(self._forwards.values())
            self._forwards.clear()
        for forward in forwards:
            forward.close()
        survivors = [p for p in self._children if process.group_alive(p.pid) or p.returncode is None]
        if survivors:
            listed = "; ".join(f"pid {p.pid} rc={p.returncode}: {_argv_text(p.args)}" for p in survivors)
            raise ForwardLeak(
                f"port-forward children survived the end of the session (their ports stay held): {listed}"
            )

    # --- internals -----------------------------------------------------------------------------------

    @staticmethod
    def _key(kube: Kube, target: str, remote_port: int) -> Key:
        return (kube.context, kube.namespace, target, int(remote_port))

    def _key_lock(self, key: Key) -> threading.Lock:
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def _replace(self, key: Key, kube: Kube, target: str, remote_port: int, ready_path: str | None) -> PortForward:
        with self._lock:
            if self._closed:
                raise RuntimeError("the forward pool is closed (the session is ending)")
            old = self._forwards.pop(key, None)
        if old is not None:
            if old.answers == 0:
                self._failures[key] = self._failures.get(key, 0) + 1
                self._schedule(key)
            else:
                self._failures[key] = 0
            old.close()
        if kube.kubectl_path not in self.kubectl_versions:
            self.kubectl_versions[kube.kubectl_path] = client_version(kube.kubectl_path)
        fresh = PortForward(
            kube, target, remote_port, ready_timeout=clamp_to_attempt(self.ready_timeout), ready_path=ready_path
        )
        self.opened += 1
        return fresh

    def _schedule(self, key: Key) -> None:
        failures = self._failures.get(key, 0)
        delay = min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1))
        self._not_before[key] = time.monotonic() + delay

    def _pause(self, key: Key) -> float:
        wait = self._not_before.get(key, 0.0) - time.monotonic()
        return clamp_to_attempt(wait) if wait > 0 else 0.0

    def _started(self, key: Key, fresh: PortForward) -> PortForward:
        __tracebackhide__ = hide_for_named_failures
        try:
            fresh.start()
        except BaseException:
            self._failed(key, fresh)
            raise
        return self._succeeded(key, fresh)

    def _failed(self, key: Key, fresh: PortForward) -> None:
        self._track(fresh)
        self._failures[key] = self._failures.get(key, 0) + 1
        self._schedule(key)

    def _track(self, fresh: PortForward) -> None:
        with self._lock:
            if fresh.proc is not None:
                self._children.append(fresh.proc)

    def _succeeded(self, key: Key, fresh: PortForward) -> PortForward:
        self._track(fresh)
        with self._lock:
            if self._closed:
                fresh.close()
                raise RuntimeError("the forward pool was closed while a forward was opening")
            self._forwards[key] = fresh
        return fresh

    def forwards(self) -> list[PortForward]:
        """The forwards currently held (alive or not yet noticed dead)."""
        with self._lock:
            return list(self._forwards.values())


def _argv_text(args: object) -> str:
    """A Popen's ``args`` (a list, or a single string) as one line."""
    return " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
