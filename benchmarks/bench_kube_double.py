"""Benchmark of the Kubernetes API double: what a real kubectl verb costs against it, how fast a watch delivers a
change, and how long a list of 1,000 objects takes.

- kubectl verbs: p50 wall time of each verb (``RUNS`` runs) through the installed ``kubectl`` (the dispatcher: it
  asks ``/version`` and execs the matching build) and through the 1.32 build directly, next to ``kubectl version
  --client`` of the same binary as the floor (process start, no server). The double's share is verb minus floor.
- watch event latency: from ``store.create`` in this process to the ``ADDED`` line read by a client on a raw
  watch stream (httpx), ``EVENTS`` events, p50/p99.
- list of 1,000 ConfigMaps: ``GET`` through httpx (``LISTS`` runs), and ``kubectl get configmaps -o json``.

Figures, not asserts (house rules); each line prints a target and a verdict beside the figure. Other helpers
append their own sections (port-forward throughput, forward-death detection) below ``main``'s.
Run: ``.venv/bin/python benchmarks/bench_kube_double.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fakes.kube  # noqa: E402
from fakes.kube import KubeHandle  # noqa: E402

RUNS, EVENTS, LISTS, OBJECTS = 9, 200, 15, 1000
MANIFEST = str(Path(__file__).resolve().parents[1] / "specs" / "kube" / "manifests" / "api.yaml")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"


def _line(name: str, value_ms: float, target_ms: float, extra: str = "") -> None:
    print(f"  {name:<44} {value_ms:9.1f} ms   target <= {target_ms:7.0f} ms   {_verdict(value_ms, target_ms):<11}"
          f" {extra}")


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
        url = f"{kd.url}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=120" \
              f"&resourceVersion={kd.store.resource_version}"
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
        kd.store.create("configmaps", {"metadata": {"name": f"bulk-{i:04d}", "namespace": "bulk",
                                                    "labels": {"n": str(i % 10)}}, "data": {"k": "v" * 64}})
    with httpx.Client(base_url=kd.url, timeout=30.0) as client:
        def listing() -> object:
            response = client.get("/api/v1/namespaces/bulk/configmaps")
            assert len(response.json()["items"]) == OBJECTS
            return response
        api_p50 = _p50_of(listing, LISTS)
    kubectl_p50 = _p50_of(lambda: kd.kubectl("get", "configmaps", "-o", "json", kubectl=kubectl, namespace="bulk",
                                             timeout=60.0), 5)
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


if __name__ == "__main__":
    main()
