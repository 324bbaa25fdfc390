"""The fake Qdrant leaves nothing behind: threads, file descriptors and its shard directories (house rules)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx

import fakes.qdrant


def _state() -> tuple[set, int]:
    return set(threading.enumerate()), len(os.listdir("/proc/self/fd"))


def test_serve_cleans_up_threads_sockets_and_files_even_mid_drip():
    threads, fds = _state()
    dirs: list[Path] = []
    for _ in range(3):
        with fakes.qdrant.serve() as fq, httpx.Client(base_url=fq.url, timeout=5) as http:
            dirs.append(fq.app.data_dir)
            http.put("/collections/c", json={"vectors": {"size": 2, "distance": "Dot"}})
            http.put("/collections/c/points?wait=true", json={"points": [{"id": 1, "vector": [1, 1]}]})
            fq.fault("drip", interval=1.0)
            with http.stream("POST", "/collections/c/points/count", json={}) as response:
                assert response.status_code == 200
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        now_threads, now_fds = _state()
        left = [d for d in dirs if d.exists()]
        if not (now_threads - threads) and now_fds <= fds and not left:
            return
        time.sleep(0.05)
    raise AssertionError(f"left behind: threads {now_threads - threads}, fds {now_fds} > {fds}, dirs {left}")


def test_reset_drops_collections_journal_and_faults(fake_qdrant, raw):
    raw.put("/collections/c", json={"vectors": {"size": 2, "distance": "Dot"}})
    fake_qdrant.fault("status", "/nowhere", status=500)
    fake_qdrant.reset()
    assert raw.get("/collections").json()["result"] == {"collections": []}
    assert [e.path for e in fake_qdrant.requests()] == ["/collections"]
    assert fake_qdrant.runtime.faults.list() == []
