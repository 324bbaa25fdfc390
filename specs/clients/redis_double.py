"""The orchestrator's Redis pod, for sweep specs against the Kubernetes API double: an exec handler that runs the
command kubectl sent under the host's POSIX ``sh`` (dash on the test machines) with a stand-in ``redis-cli``
(:mod:`specs.clients.fake_redis_cli`) first on ``PATH``, so the sweep script itself runs for real.

Not a test module. ``RedisPod(kd, workdir).install(name)`` creates a Running pod labelled as the chart labels Redis
and registers the handler for it; ``keys``/``set_keys`` read and write the store; ``execs`` lists the commands
kubectl sent; ``redis_cli_calls()`` lists each ``redis-cli`` run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from fakes.kube import KubeHandle
from fakes.kube.clock import rfc3339
from fakes.kube.exec import ExecRequest, ExecResult
from harness import process
from specs.agent_controller.redis_sessions import REDIS_SELECTOR

FAKE_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_redis_cli.py")
EXEC_TIMEOUT = 30.0
LABELS = dict([REDIS_SELECTOR.split("=", 1)])


class RedisPod:
    """One Redis pod double in ``kd``'s namespace, its state under ``workdir``."""

    def __init__(self, kd: KubeHandle, workdir: str) -> None:
        self.kd = kd
        self.state_path = os.path.join(workdir, "redis-state.json")
        self.bin = os.path.join(workdir, "bin")
        os.makedirs(self.bin, exist_ok=True)
        wrapper = os.path.join(self.bin, "redis-cli")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLI}" "$@"\n')
        os.chmod(wrapper, 0o755)
        self.execs: list[list[str]] = []
        self._lock = threading.Lock()
        self._write({"keys": {}, "reachable": True, "fail_del": False, "log": []})

    def install(self, name: str = "agent-orchestrator-redis-0", *, labels: dict[str, str] | None = None) -> str:
        """Create a Running pod ``name`` (labels default to the chart's) and serve its exec with this double."""
        pod(self.kd, name, labels=LABELS if labels is None else labels, phase="Running")
        self.kd.double.exec_handlers.set(self.kd.namespace, name, self.handle)
        return name

    def handle(self, request: ExecRequest) -> ExecResult:
        with self._lock:
            self.execs.append(list(request.command))
        env = {
            "PATH": f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LC_ALL": "C",
            "REDIS_DOUBLE_STATE": self.state_path,
        }
        try:
            done = process.run_bounded(request.command, timeout=EXEC_TIMEOUT, env=env)
        except process.Timeout as exc:
            return ExecResult(137, exc.stdout, exc.stderr + f"\n(killed after {EXEC_TIMEOUT:.0f} s)\n")
        except FileNotFoundError as exc:
            return ExecResult(127, "", f"{exc}\n")
        return ExecResult(done.returncode, done.stdout, done.stderr)

    @property
    def keys(self) -> dict[str, str]:
        return dict(self._read()["keys"])

    def set_keys(self, keys: dict[str, str]) -> None:
        self._update(lambda s: s.__setitem__("keys", dict(keys)))

    def configure(self, **flags: bool) -> None:
        """``reachable=False``: redis-cli cannot connect; ``fail_del=True``: every ``DEL`` is an error reply."""
        self._update(lambda s: s.update(flags))

    def redis_cli_calls(self) -> list[list[str]]:
        return [list(c) for c in self._read()["log"]]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The lock the stand-in redis-cli takes around each command."""
        with open(self.state_path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _read(self) -> dict[str, Any]:
        with self._locked(), open(self.state_path) as f:
            return dict(json.load(f))

    def _write(self, state: dict[str, Any]) -> None:
        with open(self.state_path, "w") as f:
            json.dump(state, f)

    def _update(self, change: Any) -> None:
        with self._locked():
            with open(self.state_path) as f:
                state = json.load(f)
            change(state)
            self._write(state)


def pod(kd: KubeHandle, name: str, *, labels: dict[str, str], phase: str, terminating: bool = False) -> None:
    """Create pod ``name`` (one container ``redis``, on a node) in ``phase``; ``terminating`` deletes it with a
    grace period, so it stays listed with a ``deletionTimestamp``, as a pod being replaced does."""
    kd.store.create(
        "pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": kd.namespace, "labels": labels},
            "spec": {"nodeName": "minikube", "containers": [{"name": "redis", "image": "redis:7-alpine"}]},
        },
    )
    now = rfc3339(kd.clock.time())

    def set_phase(obj: dict[str, Any]) -> None:
        status = obj.setdefault("status", {})
        status.update({"phase": phase, "startTime": now})
        ready = "True" if phase == "Running" else "False"
        status["conditions"] = [{"type": "Ready", "status": ready}]

    kd.store.mutate("pods", kd.namespace, name, set_phase, subresource="status")
    if terminating:
        kd.store.delete("pods", kd.namespace, name, grace_seconds=30)
