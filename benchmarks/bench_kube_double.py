"""Benchmark of the Kubernetes API double: what a real kubectl verb costs against it, how fast a watch delivers a
change, and how long a list of 1,000 objects takes.

- kubectl verbs: p50 wall time of each verb (``RUNS`` runs) through the installed ``kubectl`` (the dispatcher: it
  asks ``/version`` and execs the matching build) and through the 1.32 build directly, next to ``kubectl version
  --client`` of the same binary as the floor (process start, no server). The double's share is verb minus floor.
- watch event latency: from ``store.create`` in this process to the ``ADDED`` line read by a client on a raw
  watch stream (httpx), ``EVENTS`` events, p50/p99.
- list of 1,000 ConfigMaps: ``GET`` through httpx (``LISTS`` runs), and ``kubectl get configmaps -o json``.

- controllers (``controllers_main``): a new Deployment to Available, a rollout restart to a complete rollout and a
  bare pod to Ready, in process (through a store subscription) and through the real kubectl (``apply`` + ``wait
  --for=condition=Available``, ``rollout restart`` + ``rollout status``) beside its ``version --client`` floor.
- port-forward (``portforward_main``), per kubectl build (installed default, oldest, newest; ``all`` as the first
  argument: every build): throughput through kubectl and the double against direct TCP to the same target (64 MiB
  transfers, ratio), time from spawning ``kubectl port-forward`` to its banner and to the first forwarded byte
  (discovery cache warm), and forward-death detection during a hung request (kubectl SIGKILLed; the double failing
  the stream, so kubectl prints its error and exits), p50/p99 from the fault to ``PortForwardDied`` /
  ``PortForwardBroken`` against their targets (10 ms for kubectl's death, 200 ms for a failed stream). Run
  ``bench_kube_double.py death [all]`` for the death figures alone.

Figures, not asserts (house rules); each line prints a target and a verdict beside the figure.
Run: ``.venv/bin/python benchmarks/bench_kube_double.py [all]``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio

import fakes.kube
from fakes.kube import KubeHandle, kubectl_builds
from fakes.kube.kubectl_builds import KubectlBuild
from harness import process
from harness.errors import PortForwardBroken, PortForwardDied
from harness.fetch import fetch_through
from harness.portforward import PortForward
from harness.testing.target import TargetServer
from specs.kube.kube_streams import double_for, kube_for, running_pod

RUNS, EVENTS, LISTS, OBJECTS = 9, 200, 15, 1000
MANIFEST = str(Path(__file__).resolve().parents[1] / "specs" / "kube" / "manifests" / "api.yaml")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"


def _line(name: str, value_ms: float, target_ms: float, extra: str = "") -> None:
    print(
        f"  {name:<44} {value_ms:9.1f} ms   target <= {target_ms:7.0f} ms   {_verdict(value_ms, target_ms):<11} {extra}"
    )


def _p50_of(run: Callable[[], object], runs: int = RUNS) -> float:
    run()  # warm-up (discovery cache, connection)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return _pct(samples, 0.5) * 1e3


def _kubectl_verbs(kd: KubeHandle, kubectl: str, label: str) -> None:
    def run(*args: str) -> Callable[[], object]:
        def call() -> object:
            done = kd.kubectl(*args, kubectl=kubectl, namespace="default", timeout=60.0)
            if done.returncode not in (0, 1):
                raise RuntimeError(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr}")
            return done

        return call

    floor = _p50_of(lambda: kd.kubectl("version", "--client", kubectl=kubectl, timeout=60.0))
    print(f"kubectl verbs through {label} ({kubectl}), p50 of {RUNS} runs:")
    _line("version --client (floor: no server)", floor, 150)
    kd.kubectl("apply", "-f", MANIFEST, kubectl=kubectl, namespace="default")
    verbs: list[tuple[str, tuple[str, ...]]] = [
        ("get deployments -o json", ("get", "deployments", "-o", "json")),
        ("get deployments (Table)", ("get", "deployments")),
        ("get configmaps -l tier=web", ("get", "configmaps", "-l", "tier=web")),
        ("apply -f (unchanged)", ("apply", "-f", MANIFEST)),
        ("apply --server-side", ("apply", "--server-side", "--force-conflicts", "-f", MANIFEST)),
        ("patch --type merge", ("patch", "configmap", "api-config", "--type", "merge", "-p", '{"data":{"a":"1"}}')),
        ("rollout restart", ("rollout", "restart", "deployment/api")),
        ("describe deployment", ("describe", "deployment", "api")),
        ("delete --ignore-not-found (absent)", ("delete", "configmap", "absent", "--ignore-not-found")),
    ]
    for name, args in verbs:
        p50 = _p50_of(run(*args))
        _line(name, p50, floor + 250, f"(double's share ~{max(p50 - floor, 0):.0f} ms)")


def _watch_latency(kd: KubeHandle) -> None:
    samples: list[float] = []
    sent: dict[str, float] = {}
    ready = threading.Event()
    done = threading.Event()

    def reader() -> None:
        url = (
            f"{kd.url}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=120"
            f"&resourceVersion={kd.store.resource_version}"
        )
        with httpx.stream("GET", url, timeout=httpx.Timeout(60.0)) as response:
            ready.set()
            for line in response.iter_lines():
                arrived = time.perf_counter()
                name = json.loads(line)["object"]["metadata"]["name"]
                if name in sent:
                    samples.append(arrived - sent[name])
                if len(samples) >= EVENTS:
                    break
        done.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    ready.wait(10.0)
    time.sleep(0.2)  # let the server register the watch before the first change (a benchmark pacing, not a wait)
    for i in range(EVENTS):
        name = f"w{i}"
        sent[name] = time.perf_counter()
        kd.store.create("configmaps", {"metadata": {"name": name, "namespace": "default"}})
        time.sleep(0.005)  # one change at a time: latency, not throughput
    done.wait(30.0)
    print(f"watch event latency (store change -> event line at the client), {len(samples)} events:")
    _line("p50", _pct(samples, 0.5) * 1e3, 10)
    _line("p99", _pct(samples, 0.99) * 1e3, 50)


def _list_time(kd: KubeHandle, kubectl: str) -> None:
    for i in range(OBJECTS):
        kd.store.create(
            "configmaps",
            {
                "metadata": {"name": f"bulk-{i:04d}", "namespace": "bulk", "labels": {"n": str(i % 10)}},
                "data": {"k": "v" * 64},
            },
        )
    with httpx.Client(base_url=kd.url, timeout=30.0) as client:

        def listing() -> object:
            response = client.get("/api/v1/namespaces/bulk/configmaps")
            assert len(response.json()["items"]) == OBJECTS
            return response

        api_p50 = _p50_of(listing, LISTS)
    kubectl_p50 = _p50_of(
        lambda: kd.kubectl("get", "configmaps", "-o", "json", kubectl=kubectl, namespace="bulk", timeout=60.0), 5
    )
    print(f"list of {OBJECTS} ConfigMaps:")
    _line("GET (httpx, keep-alive), p50", api_p50, 150)
    _line("kubectl get -o json, p50", kubectl_p50, 1500)


def main() -> None:
    installed = shutil.which("kubectl")
    if installed is None:
        print("no kubectl on PATH: nothing to measure")
        return
    build = os.path.join(os.path.dirname(os.path.realpath(installed)), "kubectl.1.32")
    with fakes.kube.serve() as kd:
        kd.store.create("namespaces", {"metadata": {"name": "bulk"}})
        _kubectl_verbs(kd, installed, "the installed kubectl (dispatcher)")
        if os.access(build, os.X_OK):
            _kubectl_verbs(kd, build, "kubectl 1.32 directly")
        _watch_latency(kd)
        _list_time(kd, installed)


# --- port-forward through real kubectl and the double (figures of the streaming side) -------------------------
#
# Throughput against direct TCP to the same target, time from `kubectl port-forward` start to the first forwarded
# byte, and forward-death detection (PortForwardDied / PortForwardBroken) for kubectl SIGKILLed during a hung request
# and for a stream failed by the double, against their targets (DEATH_TARGETS). Runs on the installed default
# kubectl and the oldest and newest builds present (SPDY upgrade and WebSocket tunnel).

PF_SIZE, PF_RUNS, DEATH_RUNS = 64 * 2**20, 5, 30


class _BlobServer:
    """A TCP server that sends ``size`` bytes to each connection after its first byte arrives, then closes."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, name="blob-server")

    def __enter__(self) -> _BlobServer:
        self._accept.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._accept.join(5.0)
        for thread in self._threads:
            thread.join(5.0)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._send, args=(conn,), name="blob-send")
            thread.start()
            self._threads.append(thread)

    def _send(self, conn: socket.socket) -> None:
        block = b"\0" * 65536
        with conn:
            conn.settimeout(10.0)
            try:
                if not conn.recv(1):
                    return  # a readiness probe: connected and left without asking
                left = self.size
                while left > 0 and not self._stop.is_set():
                    conn.sendall(block[: min(left, len(block))])
                    left -= min(left, len(block))
            except OSError:
                pass


def _read_blob(port: int, size: int) -> float:
    """Seconds to receive ``size`` bytes from ``127.0.0.1:port`` (after sending one byte)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30.0) as conn:
        conn.sendall(b"!")
        got = 0
        while got < size:
            chunk = conn.recv(1 << 20)
            if not chunk:
                raise SystemExit(f"the blob ended after {got} of {size} bytes: the benchmark is broken")
            got += len(chunk)
    return time.monotonic() - start


def _pf_builds(which: str) -> list[KubectlBuild]:
    builds = kubectl_builds.discover()
    default = kubectl_builds.default_build()
    picked = [default] if default is not None else []
    if which == "all":
        return picked + builds
    return picked + [b for b in (builds[:1] + builds[-1:]) if b not in picked]


def _pod(kd: KubeHandle, port: int) -> None:
    running_pod(kd, "bench-0", ports={8080: port})


def bench_portforward_throughput(build: KubectlBuild, size: int, runs: int) -> tuple[float, float]:
    """(median MB/s through kubectl + the double, median MB/s direct) for ``size``-byte transfers."""
    with _BlobServer(size) as blob, double_for(build) as kd:
        _pod(kd, blob.port)
        direct = [size / _read_blob(blob.port, size) / 1e6 for _ in range(runs)]
        with PortForward(kube_for(kd, build), "pod/bench-0", 8080, ready_timeout=30.0) as fwd:
            assert fwd.local_port is not None
            forwarded = [size / _read_blob(fwd.local_port, size) / 1e6 for _ in range(runs)]
    return statistics.median(forwarded), statistics.median(direct)


def bench_first_byte(build: KubectlBuild, runs: int) -> tuple[list[float], list[float]]:
    """Per run: seconds from spawning ``kubectl port-forward`` to its banner, and to the first forwarded byte."""
    banners, firsts = [], []
    with TargetServer() as target, double_for(build) as kd:
        _pod(kd, target.port)
        kube = kube_for(kd, build)
        kd.kubectl("get", "pods", kubectl=build.path)  # warm kubectl's discovery cache, as a run's earlier calls do
        for _ in range(runs):
            start = time.monotonic()
            proc = process.spawn(kube.argv("port-forward", "pod/bench-0", ":8080", "--address", "127.0.0.1"))
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline().decode()
                banners.append(time.monotonic() - start)
                port = int(line.split("127.0.0.1:")[1].split()[0])
                with socket.create_connection(("127.0.0.1", port), timeout=10.0) as conn:
                    conn.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    conn.settimeout(10.0)
                    if not conn.recv(1):
                        raise SystemExit("no byte came through the forward: the benchmark is broken")
                firsts.append(time.monotonic() - start)
            finally:
                process.kill_group(proc, first=signal.SIGINT, grace=1.0)
    return banners, firsts


def bench_death_detection(build: KubectlBuild, runs: int, how: str) -> list[float]:
    """Seconds from the fault to ``PortForwardDied``/``PortForwardBroken`` during a hung request, per run.
    ``how``: ``sigkill`` (kubectl killed) or ``stream`` (the double fails the stream: kubectl's own exit)."""
    detections = []
    with TargetServer() as target, double_for(build) as kd:
        _pod(kd, target.port)
        kube = kube_for(kd, build)
        for _ in range(runs):
            with PortForward(kube, "pod/bench-0", 8080, ready_timeout=30.0) as fwd:
                detections.append(anyio.run(_one_death, kd, fwd, target, how))
    return detections


async def _one_death(kd: KubeHandle, fwd: PortForward, target: TargetServer, how: str) -> float:
    seen = len(target.requests)
    faulted_at = 0.0

    async def fault_when_the_request_is_in() -> None:
        nonlocal faulted_at
        while len(target.requests) <= seen:
            await anyio.sleep(0.005)
        await anyio.sleep(0.05)  # let the request settle into its hang
        faulted_at = time.monotonic()
        if how == "sigkill":
            os.kill(fwd.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        else:
            await anyio.to_thread.run_sync(kd.portforward.fail_open, kd.namespace, "bench-0")

    async with anyio.create_task_group() as tg:
        tg.start_soon(fault_when_the_request_is_in)
        try:
            await fetch_through(fwd, "GET", "/hang", timeout=20.0)
        except (PortForwardDied, PortForwardBroken):
            return time.monotonic() - faulted_at
    raise SystemExit("the hung request answered: the benchmark is broken")


def portforward_main(which: str = "edges") -> None:
    """The port-forward figures for the installed default kubectl and the oldest and newest builds (``all``: every
    build present)."""
    for build in _pf_builds(which):
        print(f"port-forward through kubectl {build.label} ({build.portforward_transport}, {build.path}):")
        forwarded, direct = bench_portforward_throughput(build, PF_SIZE, PF_RUNS)
        print(
            f"  {'throughput (64 MiB, median of ' + str(PF_RUNS) + ')':<44} {forwarded:9.0f} MB/s "
            f"vs direct TCP {direct:.0f} MB/s: ratio {forwarded / direct:.3f}"
        )
        banners, firsts = bench_first_byte(build, PF_RUNS)
        _line("start -> banner line, p50", _pct(banners, 0.5) * 1e3, 1000)
        _line("start -> first forwarded byte, p50", _pct(firsts, 0.5) * 1e3, 1000)
        _death_lines(build, DEATH_RUNS)


DEATH_TARGETS = {"sigkill": 10.0, "stream": 200.0}
"""Milliseconds from the fault to the request's error: kubectl's exit wakes the request (10 ms); a failed stream
first takes kubectl's own time to notice and exit."""


def _death_lines(build: KubectlBuild, runs: int) -> None:
    for how, what in (("sigkill", "SIGKILL in a hung request"), ("stream", "stream failed by the double")):
        times = bench_death_detection(build, runs, how)
        _line(f"{what} -> Died/Broken, p50", _pct(times, 0.5) * 1e3, DEATH_TARGETS[how])
        _line(f"{what} -> Died/Broken, p99", _pct(times, 0.99) * 1e3, DEATH_TARGETS[how], f"({runs} runs)")
        _line(f"{what} -> Died/Broken, slowest", max(times) * 1e3, DEATH_TARGETS[how], f"({runs} runs)")


def death_main(which: str = "edges", runs: int = 20) -> None:
    """Forward-death detection alone (``death`` as the first argument), per build."""
    for build in _pf_builds(which):
        print(f"port-forward death through kubectl {build.label} ({build.portforward_transport}):")
        _death_lines(build, runs)


# --- controllers: how long the simulated cluster takes (figures of the rollout side) ----------------------------
#
# In process (store change -> status seen through a store subscription, so no kubectl start-up is counted): a new
# Deployment of CTRL_REPLICAS to Available=True, a rollout restart to a complete rollout (every replica updated and
# available, no old pod left), a bare pod to Ready; then the same through the real kubectl: `apply` + `wait
# --for=condition=Available` and `rollout restart` + `rollout status`, beside `kubectl version --client` as the floor.

CTRL_RUNS, CTRL_REPLICAS = 9, 3


def _deployment_manifest(name: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": CTRL_REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.local/app:1"}]},
            },
        },
    }


def _restarted_at(stamp: str, deployment: dict[str, Any]) -> None:
    deployment["spec"]["template"]["metadata"].setdefault("annotations", {})["restartedAt"] = stamp


def _rolled_out(kd: KubeHandle, name: str) -> bool:
    pods = [p for p in kd.store.list("pods", "default")[0] if (p["metadata"].get("labels") or {}).get("app") == name]
    return _complete(kd, name) and len(pods) == CTRL_REPLICAS


def _pod_ready(kd: KubeHandle, name: str) -> bool:
    status = (kd.store.get("pods", "default", name) or {}).get("status") or {}
    return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])


def _until(
    kd: KubeHandle, keys: list[str], done: Callable[[], bool], start: Callable[[], object], timeout: float = 30.0
) -> float:
    """Seconds from ``start()`` until ``done()`` holds, checked on every store change of ``keys``."""
    reached = threading.Event()

    def check(_event: object) -> None:
        if not reached.is_set() and done():
            reached.set()

    sub = kd.store.subscribe(check, keys)
    try:
        began = time.perf_counter()
        start()
        if done():
            reached.set()
        if not reached.wait(timeout):
            raise RuntimeError(f"not reached within {timeout:.0f} s")
        return time.perf_counter() - began
    finally:
        sub.cancel()


def _complete(kd: KubeHandle, name: str) -> bool:
    d = kd.store.get("deployments", "default", name) or {}
    status = d.get("status") or {}
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    progressing = conditions.get("Progressing") or {}
    return (
        status.get("observedGeneration") == d["metadata"]["generation"]
        and status.get("updatedReplicas") == status.get("replicas") == status.get("availableReplicas") == CTRL_REPLICAS
        and progressing.get("reason") == "NewReplicaSetAvailable"
    )


def controllers_main() -> None:
    installed = shutil.which("kubectl")
    with fakes.kube.serve() as kd:
        available, rollout, ready = [], [], []
        for i in range(CTRL_RUNS):
            name = f"c{i}"
            manifest = _deployment_manifest(name)
            available.append(
                _until(
                    kd,
                    ["apps/deployments"],
                    partial(_complete, kd, name),
                    partial(kd.store.create, "deployments", manifest),
                )
            )
            restart = partial(kd.store.mutate, "deployments", "default", name, partial(_restarted_at, str(i)))
            rollout.append(_until(kd, ["apps/deployments", "/pods"], partial(_rolled_out, kd, name), restart))
            pod = {
                "metadata": {"name": f"p{i}", "namespace": "default"},
                "spec": {"containers": [{"name": "app", "image": "registry.local/app:1"}]},
            }
            ready.append(_until(kd, ["/pods"], partial(_pod_ready, kd, f"p{i}"), partial(kd.store.create, "pods", pod)))
        print(f"controllers, in process ({CTRL_RUNS} runs, {CTRL_REPLICAS} replicas):")
        _line("new Deployment -> Available, p50", _pct(available, 0.5) * 1e3, 1000)
        _line("rollout restart -> rollout complete, p50", _pct(rollout, 0.5) * 1e3, 1000)
        _line("bare pod -> Ready, p50", _pct(ready, 0.5) * 1e3, 500)
        if installed is None:
            return
        floor = _p50_of(lambda: kd.kubectl("version", "--client", timeout=60.0))
        counter = iter(range(1000))

        def apply_and_wait() -> object:
            name = f"k{next(counter)}"
            body = json.dumps(_deployment_manifest(name))
            kd.kubectl("apply", "-f", "-", input=body, timeout=60.0)
            return kd.kubectl("wait", "--for=condition=Available", f"deployment/{name}", "--timeout=60s", timeout=70.0)

        def restart_and_status() -> object:
            kd.kubectl("rollout", "restart", "deployment/c0", timeout=60.0)
            return kd.kubectl("rollout", "status", "deployment/c0", "--timeout=60s", timeout=70.0)

        print(f"controllers through the installed kubectl ({installed}), p50 of {RUNS} runs:")
        _line("version --client (floor: no server)", floor, 150)
        _line(
            "apply + wait --for=condition=Available",
            _p50_of(apply_and_wait),
            2 * floor + 1000,
            "(two kubectl processes)",
        )
        _line(
            "rollout restart + rollout status", _p50_of(restart_and_status), 2 * floor + 1000, "(two kubectl processes)"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["death"]:
        death_main(sys.argv[2] if len(sys.argv) > 2 else "edges")
    else:
        main()
        controllers_main()
        portforward_main(sys.argv[1] if len(sys.argv) > 1 else "edges")
