"""Port-forward figures, each with its target and a verdict: death detection during a hung request, refusal of
a dead forward, a broken tunnel during a hung request, banner-to-ready time, what ``max_body`` costs against an
endless answer, and how fast the real kubectl builds fail readiness against an API server that refuses.

Sections 1-4 run against the kubectl stand-in (harness.testing.kubectl_standin) relaying to a local target
server, so they measure the harness's own detection, not kubectl. For each run: open a forward, send ``GET
/hang`` through it with a 20 s budget, wait until the target has the request, SIGKILL kubectl, and time from the
kill to ``PortForwardDied``; then time a second request on the dead forward to ``PortForwardGone``. A forward
whose kubectl prints ``error creating error stream ... Timeout occurred`` while a request hangs is timed from
that line to ``PortForwardBroken``. Section 5 runs the real ``kubectl.1.NN`` builds (1.27 and 1.33; every
installed build with ``--long``) against a port nothing listens on.

Usage: ``make bench`` (quick: 10 runs), ``make bench LONG=1`` or ``--long`` (30 runs, every kubectl build).
Percentiles are nearest-rank (with 10 runs, p99 is the slowest run). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import anyio

from harness.errors import (
    PortForwardBroken,
    PortForwardDied,
    PortForwardGone,
    PortForwardNotReady,
    ServiceAnswerTooLarge,
)
from harness.fetch import DEFAULT_MAX_BODY, fetch_through
from harness.kube import Kube
from harness.portforward import TCP_HOLD, PortForward, client_version
from harness.testing.apiserver import refusing_port, write_kubeconfig
from harness.testing.kubectl_builds import installed
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


async def one_run(standin: KubectlStandIn, target: TargetServer) -> tuple[float, float, float]:
    """Returns (kill -> PortForwardDied, request on the dead forward -> PortForwardGone, banner -> ready) in seconds."""
    seen = len(target.requests)
    async with PortForward(standin.kube(), "svc/fake-github", 80, ready_timeout=10.0) as fwd:
        assert fwd.proc is not None
        assert fwd.banner_at is not None
        assert fwd.ready_at is not None
        banner_to_ready = fwd.ready_at - fwd.banner_at
        killed_at = 0.0

        async def kill_when_request_is_in() -> None:
            nonlocal killed_at
            while len(target.requests) <= seen:
                await anyio.sleep(0.005)
            await anyio.sleep(0.05)  # let the request settle into its hang
            killed_at = time.monotonic()
            os.kill(fwd.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]

        async with anyio.create_task_group() as tg:
            tg.start_soon(kill_when_request_is_in)
            try:
                await fetch_through(fwd, "GET", "/hang", timeout=20.0)
            except PortForwardDied:
                detected = time.monotonic() - killed_at
            else:
                raise SystemExit("the hung request answered: the benchmark is broken")
        start = time.monotonic()
        try:
            await fetch_through(fwd, "GET", "/ok", timeout=20.0)
        except PortForwardGone:
            refused = time.monotonic() - start
        else:
            raise SystemExit("a dead forward answered: the benchmark is broken")
    return detected, refused, banner_to_ready


async def flood(target: TargetServer) -> tuple[float, int, int]:
    """Returns (seconds to ServiceAnswerTooLarge, bytes read, peak traced bytes) for one endless answer."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        await fetch_through(target.url, "GET", "/flood", timeout=60.0)
    except ServiceAnswerTooLarge as exc:
        took, received = time.monotonic() - start, exc.received
    else:
        raise SystemExit("an endless answer completed: the benchmark is broken")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return took, received, peak


DIED_TARGET_MS = 250.0
"""kill -> PortForwardDied: the watcher sees the exit at once; requests look every 20 ms, settle up to 200 ms."""
GONE_TARGET_MS = 5.0
"""A request on a dead forward is refused before anything is sent."""
BROKEN_TARGET_MS = 250.0
"""broken-tunnel line -> PortForwardBroken for the request that hangs on it."""
READY_TARGET_MS = TCP_HOLD * 1000 + 150.0
"""banner -> ready: the TCP probe holds its connection TCP_HOLD, plus scheduling."""
FLOOD_PEAK_TARGET_MIB = DEFAULT_MAX_BODY / 2**20 + 16
"""Python allocations while refusing an endless answer: at most max_body plus a little."""
NOT_READY_TARGET_MS = 5000.0
"""Real kubectl, API server refusing: PortForwardNotReady raced against kubectl's own exit, not the 20 s budget."""


async def broken_run(standin: KubectlStandIn, target: TargetServer) -> float:
    """Seconds from kubectl's broken-tunnel line to PortForwardBroken for the request hanging on that connection."""
    standin.script(mode="tunnel-error", after=1, delay=0.2, target_port=target.port)
    try:
        async with PortForward(standin.kube(), "svc/fake-github", 80, ready_timeout=10.0) as fwd:
            try:
                await fetch_through(fwd, "GET", "/hang", timeout=20.0)
            except PortForwardBroken:
                ended = time.monotonic()
            else:
                raise SystemExit("a request on a broken tunnel answered: the benchmark is broken")
            line_at = fwd.broken_at
            assert line_at is not None
            return ended - line_at
    finally:
        standin.script(target_port=target.port)


def real_not_ready(kubectl: str, runs: int) -> list[float]:
    """Milliseconds to PortForwardNotReady with a real kubectl whose API server refuses connections."""
    samples = []
    with tempfile.TemporaryDirectory() as tmp, refusing_port() as port:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", f"https://127.0.0.1:{port}", context="minikube")
        kube = Kube(
            "minikube", "controller-agent", allowed=("minikube",), kubectl_path=kubectl, kubeconfig=str(kubeconfig)
        )
        for _ in range(runs):
            start = time.monotonic()
            try:
                PortForward(kube, "pod/fake-github", 80, ready_timeout=20.0).start()
            except PortForwardNotReady:
                samples.append((time.monotonic() - start) * 1000)
            else:
                raise SystemExit("a forward to a refusing API server became ready: the benchmark is broken")
    return samples


def line(what: str, samples: list[float], target: float, unit: str = "ms") -> str:
    p99 = percentile(samples, 99)
    met = "meets target" if p99 <= target else "MISSES target"
    return (
        f"   {what}: median {statistics.median(samples):.1f} {unit}, p99 {p99:.1f} {unit}, max {max(samples):.1f} "
        f"{unit} over {len(samples)} runs; target p99 <= {target:.0f} {unit}   {met}"
    )


async def main(long: bool) -> None:
    runs = 30 if long else 10
    with tempfile.TemporaryDirectory() as tmp, TargetServer() as target:
        standin = KubectlStandIn(Path(tmp))
        standin.script(target_port=target.port)
        standin_version = client_version(standin.path)
        print(
            f"python {sys.version.split()[0]}; {'long' if long else 'quick'} run; sections 1-4 measure kubectl "
            f"stand-in {standin_version} (the harness's own detection); section 5 the real kubectl builds"
        )
        detections, refusals, readies, broken = [], [], [], []
        for _ in range(runs):
            detected, refused, ready = await one_run(standin, target)
            detections.append(detected * 1000)
            refusals.append(refused * 1000)
            readies.append(ready * 1000)
            broken.append(await broken_run(standin, target) * 1000)
        took, received, peak = await flood(target)
    print("1. death during a hung request -> PortForwardDied (request budget 20000 ms)")
    print(line("kill -> error", detections, DIED_TARGET_MS))
    print("2. request on the dead forward -> PortForwardGone")
    print(line("refused before sending", refusals, GONE_TARGET_MS))
    print(
        "3. broken tunnel during a hung request (`error creating error stream ... Timeout occurred`)"
        " -> PortForwardBroken"
    )
    print(line("line -> error", broken, BROKEN_TARGET_MS))
    print(f"4. banner line -> ready (TCP connection held {TCP_HOLD * 1000:.0f} ms)")
    print(line("banner -> ready", readies, READY_TARGET_MS))
    met = "meets target" if peak / 2**20 <= FLOOD_PEAK_TARGET_MIB else "MISSES target"
    print(
        f"   endless chunked answer -> ServiceAnswerTooLarge (max_body {DEFAULT_MAX_BODY / 2**20:.0f} MiB): "
        f"{took * 1000:.0f} ms, {received / 2**20:.2f} MiB read, Python allocation peak {peak / 2**20:.1f} MiB; "
        f"target peak <= {FLOOD_PEAK_TARGET_MIB:.0f} MiB   {met}"
    )
    builds = installed()
    chosen = builds if long else {m: p for m, p in builds.items() if m in (27, 33)}
    print("5. real kubectl, API server refusing connections -> PortForwardNotReady (readiness budget 20000 ms)")
    if not chosen:
        print("   no kubectl.1.NN build installed beside the kubectl on PATH: skipped")
    for _minor, path in sorted(chosen.items()):
        print(
            line(
                f"kubectl {client_version(path)} ({os.path.basename(path)})",
                real_not_ready(path, 3 if not long else 10),
                NOT_READY_TARGET_MS,
            )
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help="30 runs and every installed kubectl build")
    arguments = parser.parse_args()
    anyio.run(main, arguments.long or os.environ.get("HARNESS_BENCH") == "long")
