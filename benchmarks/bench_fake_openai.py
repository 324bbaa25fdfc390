"""Benchmark: the fake OpenAI endpoint's own cost, in-process (httpx over ``FakeTransport``, no socket) and over a real
socket (uvicorn in a thread, httpx keep-alive), for

- a non-streaming chat completion (one user message, a text rule): requests per second, p50 and p99 latency;
- a 50-chunk stream (``stream: true``; a role chunk, 48 word deltas, the finish chunk, then ``[DONE]``): time to the
  first chunk and to the end (p50, p99), streams per second;

each figure beside its target and a verdict. Targets: the fake must never be what a chat spec waits on (a real model
takes 300-1000 ms to its first token), and must serve a spec making hundreds of calls in well under a second of
fake time: non-streaming >= 200 req/s and p99 <= 25 ms; stream first chunk p99 <= 25 ms, whole stream p99 <= 50 ms.
Figures, not asserts: timing is measured here, never asserted in a spec.
Run: ``.venv/bin/python benchmarks/bench_fake_openai.py``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fakes.openai
from fakes.openai import OpenAIFake
from fakes.server import FakeHandle

REQUESTS, WARMUP = 400, 40
WORDS = " ".join(f"w{i}" for i in range(48))
BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "benchmark"}]}
TARGETS = {
    "req/s": (200.0, "min"),
    "p50 ms": (10.0, "max"),
    "p99 ms": (25.0, "max"),
    "first p99 ms": (25.0, "max"),
    "total p99 ms": (50.0, "max"),
}


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _verdict(name: str, value: float) -> str:
    target = TARGETS.get(name)
    if target is None:
        return ""
    limit, kind = target
    ok = value >= limit if kind == "min" else value <= limit
    return f"(target {'>=' if kind == 'min' else '<='} {limit:g}: {'meets' if ok else 'MISSES'})"


def _show(label: str, figures: dict[str, float]) -> None:
    parts = [f"{name} {value:8.2f} {_verdict(name, value)}".rstrip() for name, value in figures.items()]
    print(f"{label:<34}" + "   ".join(parts))


def _timed(call: Callable[[], object]) -> tuple[list[float], float]:
    for _ in range(WARMUP):
        call()
    samples = []
    started = time.perf_counter()
    for _ in range(REQUESTS):
        t = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t)
    return samples, time.perf_counter() - started


def _completion(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", json=BODY)
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == WORDS


def _stream(client: httpx.Client, firsts: list[float], totals: list[float]) -> None:
    started = time.perf_counter()
    first = None
    received = b""
    with client.stream("POST", "/v1/chat/completions", json={**BODY, "stream": True}) as response:
        for piece in response.iter_raw():
            if first is None:
                first = time.perf_counter() - started
            received += piece
    totals.append(time.perf_counter() - started)
    firsts.append(first or 0.0)
    frames = received.split(b"\n\n")
    assert frames[-2] == b"data: [DONE]", frames[-2]
    assert len(frames) - 2 == 50, f"expected 50 chunks, got {len(frames) - 2}"


def _measure(label: str, handle: FakeHandle[OpenAIFake], client: httpx.Client) -> None:
    handle.app.set_default({"text": WORDS})
    samples, wall = _timed(lambda: _completion(client))
    _show(
        f"{label}: completion",
        {
            "req/s": len(samples) / wall,
            "p50 ms": _percentile(samples, 0.5) * 1e3,
            "p99 ms": _percentile(samples, 0.99) * 1e3,
        },
    )
    firsts: list[float] = []
    totals: list[float] = []
    _, wall = _timed(lambda: _stream(client, firsts, totals))
    firsts, totals = firsts[WARMUP:], totals[WARMUP:]
    _show(
        f"{label}: 50-chunk stream",
        {
            "streams/s": len(totals) / wall,
            "first p50 ms": _percentile(firsts, 0.5) * 1e3,
            "first p99 ms": _percentile(firsts, 0.99) * 1e3,
            "total p50 ms": _percentile(totals, 0.5) * 1e3,
            "total p99 ms": _percentile(totals, 0.99) * 1e3,
        },
    )
    handle.reset()


def main() -> None:
    print(f"fake openai benchmark: {REQUESTS} requests after {WARMUP} warm-up, one client, sequential")
    headers = {"authorization": "Bearer sk-bench"}
    with (
        fakes.openai.in_process() as handle,
        httpx.Client(base_url=handle.url, transport=handle.transport(), headers=headers, timeout=30) as client,
    ):
        _measure("in-process", handle, client)
    with fakes.openai.serve() as handle, httpx.Client(base_url=handle.url, headers=headers, timeout=30) as client:
        _measure("socket", handle, client)


if __name__ == "__main__":
    main()
