"""Helpers for the streaming specs (port-forward, exec) that run the real kubectl builds against the double.

Not a test module: imported by ``test_portforward_*.py`` and ``test_exec_*.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import anyio

import fakes.kube
from fakes.kube import DEFAULT_KUBECTL_VERSION, KubeHandle
from fakes.kube.clock import rfc3339
from fakes.kube.kubectl_builds import KubectlBuild
from fakes.kube.portforward import PortForwarding
from harness.errors import PortForwardDied
from harness.fetch import fetch_through
from harness.kube import Kube
from harness.portforward import PortForward
from harness.testing.leaks import snapshot
from harness.testing.target import TargetServer

SETTLE = 5.0
"""Seconds the leak check lets children, sockets and threads settle after a test."""


@contextlib.contextmanager
def double_for(build: KubectlBuild, **options: Any) -> Iterator[KubeHandle]:
    """A fresh double whose ``gitVersion`` suits ``build`` (the dispatcher then runs the build of that minor;
    the installed default gets the double's default version); ``options`` go to ``fakes.kube.serve``."""
    version = DEFAULT_KUBECTL_VERSION if build.label == "default" else build.server_git_version()
    with fakes.kube.serve(kubectl_version=version, **options) as handle:
        yield handle


def forwarding(kd: KubeHandle) -> PortForwarding:
    """The double's port-forward hub."""
    return kd.portforward


def kube_for(kd: KubeHandle, build: KubectlBuild) -> Kube:
    """A harness ``Kube`` running ``build`` against the double."""
    return Kube(
        kd.context,
        kd.namespace,
        allowed=(kd.context,),
        kubectl_path=build.path,
        kubeconfig=kd.kubeconfig,
        cache_dir=kd.cache_dir,
    )


def running_pod(
    kd: KubeHandle,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    ports: dict[int, int] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Create pod ``name`` (one container ``app``) whose container ports forward to local ports (``{container port:
    local port}``, through ``double.stack-harness.dev/port-P`` annotations); returns it once Running and Ready."""
    ports = ports or {}
    notes = dict(annotations or {})
    notes.update({f"double.stack-harness.dev/port-{p}": f"127.0.0.1:{local}" for p, local in ports.items()})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": kd.namespace, "labels": labels or {}, "annotations": notes},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/app:1",
                    "ports": [{"containerPort": p, "name": f"p{p}"} for p in ports],
                }
            ]
        },
    }
    kd.store.create("pods", pod)
    if _has_kubelet(kd):  # the double's kubelet starts it (within milliseconds): wait for Running and Ready
        assert wait_until(lambda: _running(kd.store.get("pods", kd.namespace, name)), timeout=10.0), (
            f"pod {name} did not get Running and Ready: {kd.store.get('pods', kd.namespace, name)}"
        )
    else:  # a bare double: play the kubelet
        kd.store.mutate("pods", kd.namespace, name, _mark_running(rfc3339(kd.clock.time())), subresource="status")
    return kd.store.require("pods", kd.namespace, name)


def _has_kubelet(kd: KubeHandle) -> bool:
    try:
        kd.controllers  # noqa: B018 - raises for a double served without controllers
    except RuntimeError:
        return False
    return True


def _running(pod: dict[str, Any] | None) -> bool:
    status = (pod or {}).get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return status.get("phase") == "Running" and ready


def _mark_running(now: str) -> Any:
    def run(obj: dict[str, Any]) -> None:
        status = obj.setdefault("status", {})
        status.update({"phase": "Running", "podIP": "10.244.0.10", "startTime": now})
        status["conditions"] = [
            {"type": t, "status": "True"} for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
        status["containerStatuses"] = [
            {
                "name": "app",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "image": "registry.example/app:1",
                "imageID": "",
                "state": {"running": {}},
            }
        ]

    return run


def service(kd: KubeHandle, name: str, selector: dict[str, str], port: int, target_port: int | str) -> None:
    kd.store.create(
        "services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": kd.namespace},
            "spec": {"selector": selector, "ports": [{"name": "http", "port": port, "targetPort": target_port}]},
        },
    )


def wait_until(condition: Any, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll ``condition()`` until true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


@contextlib.contextmanager
def no_leaks() -> Iterator[None]:
    """Fail if the block leaves a child process, a listening socket or a thread behind (bounded settling)."""
    base = snapshot()
    yield
    deadline = time.monotonic() + SETTLE
    while True:
        extra = snapshot().extra_over(base)
        if not extra or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    assert not extra, f"left behind (after {SETTLE:.0f}s of settling): {extra}"


def sigkill_during_a_hung_request(fwd: PortForward, server: TargetServer, timeout: float) -> PortForwardDied:
    """SIGKILL ``fwd``'s kubectl once ``server`` holds a ``/hang`` request sent through it; returns the
    :class:`PortForwardDied` that request raised (``AssertionError`` if it raised nothing)."""
    proc = fwd.proc
    assert proc is not None
    died: list[PortForwardDied] = []

    async def main() -> None:
        async def kill_once_the_request_hangs() -> None:
            while "/hang" not in server.requests:
                await anyio.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)

        async with anyio.create_task_group() as tg:
            tg.start_soon(kill_once_the_request_hangs)
            try:
                await fetch_through(fwd, "GET", "/hang", timeout=timeout)
            except PortForwardDied as exc:
                died.append(exc)

    anyio.run(main)
    assert died, "the request through a SIGKILLed kubectl did not raise PortForwardDied"
    return died[0]
