"""Benchmark: filtered query latency and throughput of the fake Qdrant through its REST (a real socket,
httpx keep-alive), beside the same query on the engine called directly (qdrant-edge, in-process).

10,000 points of dimension 384 (Cosine), payload ``group`` in 0..9; each query is a nearest-vector query with
``filter: {must: [{key: group, match: {value: g}}]}`` (1,000 candidates), ``limit`` 10, payload on. Prints p50 and
p99 latency (ms), sequential queries per second, 4-thread QPS for the REST path, and the REST/engine ratios.
Figures, not asserts: timing is measured here, never asserted in a spec.
Run: ``.venv/bin/python benchmarks/bench_fake_qdrant.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import qdrant_edge as qe

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fakes.qdrant

POINTS, DIM, GROUPS, QUERIES, WARMUP, THREADS = 10_000, 384, 10, 400, 30, 4
#: One query: the vector and the ``group`` to filter on.
Query = tuple[list[float], int]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _report(name: str, samples: list[float], wall: float) -> dict[str, float]:
    p50, p99 = _percentile(samples, 0.50) * 1e3, _percentile(samples, 0.99) * 1e3
    qps = len(samples) / wall
    print(
        f"{name:<28} p50 {p50:8.3f} ms   p99 {p99:8.3f} ms   mean {statistics.mean(samples) * 1e3:8.3f} ms   "
        f"{qps:9.1f} q/s"
    )
    return {"p50": p50, "p99": p99, "qps": qps}


def _timed(call: Callable[[Query], object], queries: list[Query]) -> tuple[list[float], float]:
    for q in queries[:WARMUP]:
        call(q)
    samples = []
    started = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        call(q)
        samples.append(time.perf_counter() - t)
    return samples, time.perf_counter() - started


def main() -> None:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((POINTS, DIM)).astype(np.float32)
    groups = [i % GROUPS for i in range(POINTS)]
    queries = [
        (rng.standard_normal(DIM).astype(np.float32).tolist(), int(rng.integers(GROUPS))) for _ in range(QUERIES)
    ]
    print(
        f"fake qdrant benchmark: {POINTS} points x {DIM} dims, Cosine, filter match group (1/{GROUPS}), limit 10, "
        f"{QUERIES} queries after {WARMUP} warm-up"
    )

    with tempfile.TemporaryDirectory() as tmp:
        shard = qe.EdgeShard.create(
            str(Path(tmp) / "s"),
            qe.EdgeConfig(vectors={"": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}),
        )
        for start in range(0, POINTS, 1000):
            shard.update(
                qe.UpdateOperation.upsert_points(
                    [qe.Point(i, vectors[i].tolist(), {"group": groups[i]}) for i in range(start, start + 1000)]
                )
            )

        def direct(q: Query) -> object:
            vector, group = q
            return shard.query(
                qe.QueryRequest(
                    limit=10,
                    query=qe.Query.Nearest(vector),
                    with_payload=True,
                    filter=qe.Filter(must=[qe.FieldCondition(key="group", match=qe.MatchValue(group))]),
                )
            )

        engine = _report("engine (qdrant-edge direct)", *_timed(direct, queries))
        shard.close()

    with fakes.qdrant.serve() as fq, httpx.Client(base_url=fq.url, timeout=30) as http:
        http.put("/collections/bench", json={"vectors": {"size": DIM, "distance": "Cosine"}}).raise_for_status()
        for start in range(0, POINTS, 500):
            http.put(
                "/collections/bench/points?wait=true",
                json={
                    "batch": {
                        "ids": list(range(start, start + 500)),
                        "vectors": vectors[start : start + 500].tolist(),
                        "payloads": [{"group": g} for g in groups[start : start + 500]],
                    }
                },
            ).raise_for_status()
        assert http.post("/collections/bench/points/count", json={"exact": True}).json()["result"]["count"] == POINTS

        def rest(q: Query, client: httpx.Client = http) -> None:
            vector, group = q
            response = client.post(
                "/collections/bench/points/query",
                json={
                    "query": vector,
                    "limit": 10,
                    "with_payload": True,
                    "filter": {"must": [{"key": "group", "match": {"value": group}}]},
                },
            )
            assert response.status_code == 200
            assert len(response.json()["result"]["points"]) == 10

        fake = _report("fake REST (1 client)", *_timed(rest, queries))

        def worker(chunk: list[Query]) -> list[float]:
            with httpx.Client(base_url=fq.url, timeout=30) as own:
                return [_timed_one(rest, q, own) for q in chunk]

        chunks = [queries[i::THREADS] for i in range(THREADS)]
        started = time.perf_counter()
        with ThreadPoolExecutor(THREADS) as pool:
            samples = [s for chunk in pool.map(worker, chunks) for s in chunk]
        concurrent = _report(f"fake REST ({THREADS} clients)", samples, time.perf_counter() - started)

    print(
        f"ratio fake/engine: p50 x{fake['p50'] / engine['p50']:.1f}, p99 x{fake['p99'] / engine['p99']:.1f}, "
        f"QPS x{fake['qps'] / engine['qps']:.2f} (1 client), x{concurrent['qps'] / engine['qps']:.2f} "
        f"({THREADS} clients)"
    )


def _timed_one(call: Callable[[Query, httpx.Client], object], q: Query, client: httpx.Client) -> float:
    t = time.perf_counter()
    call(q, client)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
