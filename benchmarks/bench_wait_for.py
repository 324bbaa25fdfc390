"""How far past its budget does WaitTimeout arrive, and how fast does wait_for poll?

Prints figures; asserts nothing. Run: `make bench` or `.venv/bin/python benchmarks/bench_wait_for.py`.

1. Overrun of WaitTimeout past the budget for a never-settling probe (budgets 0.5, 2 and 5 s, 30 runs
   each, async and sync; median, p99, max in ms). The probe's ceiling is 1.0 s and the interval 0.1 s,
   so the budget, not the ceiling, ends the last attempt.
2. Attempts per second of a probe that always answers None with interval 0, beside tenacity running
   the same loop (retry while None, stop after the same delay), as a ratio.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import anyio
import tenacity

from harness import WaitTimeout, wait_for_sync


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def overrun(kind: str, budget: float, runs: int) -> list[float]:
    release = threading.Event()

    async def never_async() -> None:
        await anyio.sleep(3600)

    def never_sync() -> None:
        release.wait(budget + 5)

    probe = never_async if kind == "async" else never_sync
    samples = []
    for _ in range(runs):
        started = time.monotonic()
        try:
            wait_for_sync("a never-settling probe", probe, timeout=budget, interval=0.1, probe_timeout=1.0)
        except WaitTimeout:
            samples.append((time.monotonic() - started - budget) * 1000)
    release.set()
    return samples


def harness_rate(seconds: float, kind: str) -> float:
    count = 0

    def sync_probe() -> None:
        nonlocal count
        count += 1

    async def async_probe() -> None:
        nonlocal count
        count += 1

    try:
        wait_for_sync("rate", async_probe if kind == "async" else sync_probe, timeout=seconds, interval=0.0)
    except WaitTimeout:
        pass
    return count / seconds


def tenacity_rate(seconds: float) -> float:
    with_tenacity = 0

    @tenacity.retry(retry=tenacity.retry_if_result(lambda r: r is None), stop=tenacity.stop_after_delay(seconds), wait=tenacity.wait_none())
    def tenacity_probe() -> None:
        nonlocal with_tenacity
        with_tenacity += 1

    try:
        tenacity_probe()
    except tenacity.RetryError:
        pass
    return with_tenacity / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rate-seconds", type=float, default=2.0)
    args = parser.parse_args()
    overrun("async", 0.05, 1)  # warm-up: the first anyio.run pays ~100 ms of one-off imports
    print(f"WaitTimeout overrun past the budget, never-settling probe, {args.runs} runs each (ms)")
    print(f"{'probe':<6} {'budget':>7} {'median':>8} {'p99':>8} {'max':>8}")
    worst_p99 = 0.0
    for kind in ("async", "sync"):
        for budget in (0.5, 2.0, 5.0):
            samples = overrun(kind, budget, args.runs)
            p99 = percentile(samples, 0.99)
            worst_p99 = max(worst_p99, p99)
            print(f"{kind:<6} {budget:>6.1f}s {statistics.median(samples):>8.2f} {p99:>8.2f} {max(samples):>8.2f}")
    print(f"worst p99 overrun: {worst_p99:.2f} ms (target: <= 20 ms)")
    theirs = tenacity_rate(args.rate_seconds)
    print(f"attempts/s, None probe, interval 0 (tenacity, same loop: {theirs:,.0f}/s)")
    for kind in ("async", "sync"):
        ours = harness_rate(args.rate_seconds, kind)
        print(f"  wait_for, {kind} probe{' (a daemon thread per attempt)' if kind == 'sync' else ''}: {ours:,.0f}/s, ratio to tenacity {ours / theirs:.3f}")


if __name__ == "__main__":
    main()
