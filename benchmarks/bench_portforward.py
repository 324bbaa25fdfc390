"""Port-forward figures (issue #3): death detection during a hung request, refusal of a dead forward,
banner-to-ready time, and what ``max_body`` costs against an endless answer (trial finding 8).

Runs against the kubectl stand-in (harness.testing.kubectl_standin) relaying to a local target server,
so it needs no cluster. For each run: open a forward, send ``GET /hang`` through it with a 20 s budget,
wait until the target has the request, SIGKILL kubectl, and time from the kill to ``PortForwardDied``.
Then time a second request on the dead forward to ``PortForwardGone`` (refused before sending). Prints
median and p99 in milliseconds (nearest-rank p99: with 30 runs it is the slowest run). The old harness
needed its full 20 s request timeout for this, and before that, forever. Last, one ``GET /flood`` (a
chunked body without end) with the default ``max_body``: seconds to ``ServiceAnswerTooLarge`` and the
peak of Python allocations (tracemalloc) meanwhile.

Usage: ``python benchmarks/bench_portforward.py [--runs 30]``. Prints figures; asserts nothing.
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

from harness.errors import PortForwardDied, PortForwardGone, ServiceAnswerTooLarge
from harness.fetch import DEFAULT_MAX_BODY, fetch_through
from harness.portforward import TCP_HOLD, PortForward, client_version
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
        assert fwd.proc is not None and fwd.banner_at is not None and fwd.ready_at is not None
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


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, TargetServer() as target:
        standin = KubectlStandIn(Path(tmp))
        standin.script(target_port=target.port)
        detections, refusals, readies = [], [], []
        for _ in range(runs):
            detected, refused, ready = await one_run(standin, target)
            detections.append(detected * 1000)
            refusals.append(refused * 1000)
            readies.append(ready * 1000)
        took, received, peak = await flood(target)
        standin_version = client_version(standin.path)
    print(f"python {sys.version.split()[0]}; kubectl stand-in {standin_version}; installed kubectl client {client_version('kubectl')}")
    print(f"death during a hung request -> PortForwardDied over {runs} runs: "
          f"median {statistics.median(detections):.1f} ms, p99 {percentile(detections, 99):.1f} ms, "
          f"max {max(detections):.1f} ms (request budget 20000 ms)")
    print(f"request on the dead forward -> PortForwardGone over {runs} runs: "
          f"median {statistics.median(refusals):.2f} ms, p99 {percentile(refusals, 99):.2f} ms")
    print(f"endless chunked answer -> ServiceAnswerTooLarge (max_body {DEFAULT_MAX_BODY / 2**20:.0f} MiB): "
          f"{took * 1000:.0f} ms, {received / 2**20:.2f} MiB read, Python allocation peak {peak / 2**20:.1f} MiB")
    print(f"banner line -> ready (TCP connection held {TCP_HOLD * 1000:.0f} ms) over {runs} runs: "
          f"median {statistics.median(readies):.1f} ms, p99 {percentile(readies, 99):.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    anyio.run(main, parser.parse_args().runs)
