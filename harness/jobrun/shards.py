"""Each shard of a running Job as the run sees it: its pod, its log read so far, and why it ended.

One :class:`Shard` per completion index. Its pod's log is followed by ``kubectl logs -f`` (a child in its own process
group, :func:`harness.process.spawn`) from the moment the container has started; a follower that ends while the pod
still runs (the API server's connection to the node dropped) is started again, and reading the log again from its
start changes nothing (:class:`harness.jobrun.wire.Reading` keeps the last of each record). A pod's end is judged
from its status as a kubelet and the controllers write it (``pkg/apis/core/types.go`` ``PodStatus``, the
``DisruptionTarget`` condition of the Kubernetes "Pod disruption conditions" docs).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from harness import process
from harness.jobrun import wire
from harness.jobrun.plan import CONTAINER
from harness.kube import Kube

Obj = dict[str, Any]
FOLLOW_RESTARTS = 5
"""Times a pod's log follower is started again while the pod runs, before the shard is reported unreadable."""


def pod_cause(pod: Obj) -> str:
    """Why a pod that did not succeed ended, in one line: deleted, evicted (the ``DisruptionTarget`` condition's
    reason and message), the pod's own ``reason`` (``DeadlineExceeded``), or its container's termination."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    parts: list[str] = [f"deleted at {meta['deletionTimestamp']}"] if meta.get("deletionTimestamp") else []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            parts.append(f"{condition.get('reason')}: {condition.get('message', '')}".rstrip(": "))
    if status.get("reason"):
        parts.append(f"{status['reason']}: {status.get('message', '')}".rstrip(": "))
    for container in status.get("containerStatuses") or []:
        ended = (container.get("state") or {}).get("terminated")
        if ended:
            parts.append(f"container {container.get('name')} exited {ended.get('exitCode')} ({ended.get('reason')})")
    return "; ".join(parts) or f"phase {status.get('phase', 'unknown')}"


def started(pod: Obj) -> bool:
    """Whether the pod's container has started (a log exists to follow)."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        state = container.get("state") or {}
        if "running" in state or "terminated" in state:
            return True
    return False


@dataclass
class Shard:
    """Shard ``index``: ``pod`` (its name, once seen), ``reading`` (its log so far), ``ended`` (``None`` while it
    runs, else ``"succeeded"`` / ``"failed"``), ``cause`` (why it failed), ``log`` (every line read, for its folder)."""

    index: int
    pod: str = ""
    reading: wire.Reading = field(default_factory=wire.Reading)
    ended: str | None = None
    cause: str = ""
    log: list[str] = field(default_factory=list)
    follow_error: str = ""
    _follower: subprocess.Popen[bytes] | None = None
    _thread: threading.Thread | None = None
    _restarts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def follow(self, kube: Kube) -> None:
        """Start (or start again) following the pod's log, unless a follower runs. Raises nothing."""
        if self._thread is not None and self._thread.is_alive():
            return
        if self._restarts > FOLLOW_RESTARTS:
            return
        self._restarts += 1
        try:
            kube.guard()
            self._follower = process.spawn(kube.argv("logs", "-f", self.pod, "-c", CONTAINER), env=kube.env)
        except OSError as exc:
            self.cause = self.cause or f"cannot follow the log of pod {self.pod}: {exc}"
            return
        self._thread = threading.Thread(target=self._read, args=(self._follower,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        lines: list[str] = []
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            with self._lock:
                self.reading.feed([line])
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
        if proc.returncode and proc.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                self.follow_error = proc.stderr.read(4096).decode(errors="replace").strip()
        with self._lock:
            if len(lines) >= len(self.log):  # a follower started again reads from the start: keep the longest
                self.log = lines

    def following(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def drained(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the follower to read the log's end; whether it did."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Kill the follower's group, bounded. Idempotent."""
        if self._follower is not None:
            process.kill_group(self._follower, reap_timeout=5.0)
        if self._thread is not None:
            self._thread.join(5.0)

    def judge(self, pod: Obj | None, gone: bool) -> None:
        """Record the end from the pod's status (``None`` with ``gone`` once the pod was deleted)."""
        if self.ended is not None:
            return
        phase = ((pod or {}).get("status") or {}).get("phase")
        if pod is not None and phase == "Succeeded":
            self.ended = "succeeded"
        elif pod is not None and phase == "Failed":
            self.ended, self.cause = "failed", pod_cause(pod)
        elif pod is not None and (pod.get("metadata") or {}).get("deletionTimestamp"):
            self.cause = pod_cause(pod)  # ends as Failed, or goes: the next look decides
        elif gone:
            self.ended, self.cause = "failed", self.cause or "deleted (gone from the API before its end was seen)"

    def summary(self) -> Obj:
        """This shard's line of the merged summary."""
        with self._lock:
            counts = self.reading.counts()
            return {
                "index": self.index,
                "pod": self.pod,
                "ended": self.ended,
                "cause": self.cause,
                "follow_error": self.follow_error,
                "exit": self.reading.exit,
                "counts": counts,
                "results": dict(self.reading.results),
            }
