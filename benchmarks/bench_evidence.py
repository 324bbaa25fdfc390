"""How long does evidence of a failed spec take to collect, how large is it, and does a slow API server stay in budget?

Prints figures; asserts nothing. Run: `make bench` or `.venv/bin/python benchmarks/bench_evidence.py`.

The failed spec touched one deployment with 3 pods, crash-looping on the Kubernetes API double (controllers on, real
kubectl), so the folder holds the events, describe and YAML of the deployment, its ReplicaSet and pods, each pod's
describe, current and ``--previous`` log, and the rollout explanation (:func:`harness.evidence.collect`, 4 kubectl
calls at a time).

1. The double answering normally: p50 and max of the collection time over ``--runs`` runs, default budget (60 s).
2. The double slowed by 2 s per request (a ``latency`` fault on every path): the collection time against its budget
   (``--slow-budget``, default 20 s, ``--slow-runs`` times; then once with the default 60 s), and what it cut.
3. The size of the evidence folder (bytes, files).

Each figure prints a target and a verdict beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fakes.kube
from harness.evidence import DEFAULT_BUDGET, Interest, Sources, collect

FAULT = "double.stack-harness.dev/"
MANIFEST = json.dumps(
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {
                    "labels": {"app": "web"},
                    "annotations": {
                        FAULT + "crash-loop": "true",
                        FAULT + "backoff": "0.2",
                        FAULT + "logs": "starting web\npanic: no redis",
                    },
                },
                "spec": {"containers": [{"name": "app", "image": "registry.local/web:2.0"}]},
            },
        },
    }
)


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"


def line(name: str, value: float, unit: str, target: float, extra: str = "") -> None:
    print(f"  {name:<46} {value:9.2f} {unit:<5} target <= {target:7.1f} {unit:<5} {verdict(value, target):<11} {extra}")


def one(kd: fakes.kube.KubeHandle, workdir: Path, n: int, budget: float) -> tuple[float, dict[str, Any], Path]:
    folder = workdir / f"run-{n}"
    sources = Sources(
        spec=f"bench::run{n}",
        phase="call",
        failure="AssertionError: bench",
        kube=kd.kube(),
        interest=Interest(refs=["deployment/web"]),
    )
    started = time.monotonic()
    index, _ = collect(folder, sources, budget=budget)
    return time.monotonic() - started, index.to_dict(), folder


def size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.iterdir() if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--slow-runs", type=int, default=2)
    parser.add_argument("--slow-budget", type=float, default=20.0)
    args = parser.parse_args()
    if shutil.which("kubectl") is None:
        print("no kubectl on PATH: nothing to measure")
        return
    workdir = Path(tempfile.mkdtemp(prefix="bench-evidence-"))
    try:
        with fakes.kube.serve() as kd:
            done = kd.kubectl("apply", "-f", "-", input=MANIFEST)
            assert done.returncode == 0, done.stderr
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # every pod has crashed at least once: previous logs exist
                pods = kd.store.list("pods", "default")[0]
                statuses = [(p.get("status") or {}).get("containerStatuses") or [] for p in pods]
                restarts = [sum(c.get("restartCount", 0) for c in s) for s in statuses]
                if len(pods) == 3 and all(restarts):
                    break
                time.sleep(0.1)
            one(kd, workdir, 0, DEFAULT_BUDGET)  # warm kubectl's discovery cache, as a session's earlier calls would
            print("== evidence of a failed spec: 1 deployment, 3 crash-looping pods (real kubectl, the double)")
            normal = [one(kd, workdir, n, DEFAULT_BUDGET) for n in range(1, args.runs + 1)]
            times = [t for t, _, _ in normal]
            line(f"collection, p50 of {len(times)}", statistics.median(times), "s", 5.0)
            line(f"collection, max of {len(times)}", max(times), "s", 10.0)
            steps = normal[-1][1]["steps"]
            failed = [s["step"] for s in steps if s["status"] == "failed"]
            print(f"  steps: {len(steps)}, failed: {len(failed)} {failed if failed else ''}")
            nbytes, nfiles = size(normal[-1][2])
            line("evidence folder size", nbytes / 1024, "KiB", 1024.0, f"({nfiles} files)")

            kd.fault("latency", "*", delay=2.0)
            budgets = [args.slow_budget] * args.slow_runs + [DEFAULT_BUDGET]
            for n, budget in enumerate(budgets):
                if n == 0 or budget != budgets[n - 1]:
                    print(f"== the same, the API server slowed by 2 s per request (budget {budget:.0f} s)")
                elapsed, data, folder = one(kd, workdir, 100 + n, budget)
                cut = [s["step"] for s in data["steps"] if s["status"] == "cut"]
                failed = [s["step"] for s in data["steps"] if s["status"] == "failed"]
                ok = sum(1 for s in data["steps"] if s["status"] == "ok")
                line(
                    f"collection, slow run {n + 1}",
                    elapsed,
                    "s",
                    budget + 2.0,
                    f"({ok} ok, {len(failed)} failed, {len(cut)} cut)",
                )
                for step in cut:
                    print(f"    cut: {step}")
                for step in failed:
                    error = next(s["error"] for s in data["steps"] if s["step"] == step)
                    print(f"    failed: {step}: {(error or '')[:100]}")
            kd.clear_faults()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
