"""The fake Qdrant leaves nothing behind: threads, file descriptors and its shard directories."""

from __future__ import annotations

import gc
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

import fakes.qdrant
from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle
from fakes.testing import ThreadsAndFds, no_leaks, threads_and_fds


@dataclass(frozen=True)
class _ProcessAndShards:
    """Threads and descriptors of this process, and which of the fakes' shard directories still exist."""

    process: ThreadsAndFds
    shard_dirs: frozenset[str]

    def extra_over(self, base: _ProcessAndShards) -> dict[str, list[str]]:
        extra = self.process.extra_over(base.process)
        if self.shard_dirs - base.shard_dirs:
            extra["shard directories"] = sorted(self.shard_dirs - base.shard_dirs)
        return extra


def test_serve_cleans_up_threads_sockets_and_files_even_mid_drip() -> None:
    dirs: list[Path] = []

    def snapshot() -> _ProcessAndShards:
        return _ProcessAndShards(threads_and_fds(), frozenset(str(d) for d in dirs if d.exists()))

    with no_leaks(snapshot):
        for _ in range(3):
            with fakes.qdrant.serve() as fq, httpx.Client(base_url=fq.url, timeout=5) as http:
                dirs.append(fq.app.data_dir)
                http.put("/collections/c", json={"vectors": {"size": 2, "distance": "Dot"}})
                http.put("/collections/c/points?wait=true", json={"points": [{"id": 1, "vector": [1, 1]}]})
                fq.fault("drip", interval=1.0)
                with http.stream("POST", "/collections/c/points/count", json={}) as response:
                    assert response.status_code == 200


def test_reset_drops_collections_journal_and_faults(fake_qdrant: FakeHandle[QdrantFake], raw: httpx.Client) -> None:
    raw.put("/collections/c", json={"vectors": {"size": 2, "distance": "Dot"}})
    fake_qdrant.fault("status", "/nowhere", status=500)
    fake_qdrant.reset()
    assert raw.get("/collections").json()["result"] == {"collections": []}
    assert [e.path for e in fake_qdrant.requests()] == ["/collections"]
    assert fake_qdrant.runtime.faults.list() == []


def _with_a_collection(fq: FakeHandle[QdrantFake]) -> Path:
    with fq.client() as http:
        assert http.put("/collections/c", json={"vectors": {"size": 2, "distance": "Dot"}}).status_code == 200
    assert any(fq.app.data_dir.iterdir())
    return fq.app.data_dir


def test_in_process_as_a_context_manager_removes_its_directory() -> None:
    with fakes.qdrant.in_process() as fq:
        data_dir = _with_a_collection(fq)
    assert not data_dir.exists()
    fq.close()  # idempotent


def test_a_forgotten_in_process_handle_is_cleaned_at_garbage_collection() -> None:
    """``fq = in_process()`` with no ``close()``: its /tmp/fake-qdrant-* directory goes when ``fq`` is collected."""
    fq = fakes.qdrant.in_process()
    data_dir = _with_a_collection(fq)
    del fq
    gc.collect()
    assert not data_dir.exists()


def test_a_forgotten_in_process_handle_is_cleaned_at_interpreter_exit(tmp_path: Path) -> None:
    script = (
        "import fakes.qdrant\n"
        "fq = fakes.qdrant.in_process()\n"
        "fq.client().put('/collections/c', json={'vectors': {'size': 2, 'distance': 'Dot'}})\n"
        "print(fq.app.data_dir, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(fakes.qdrant.__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    data_dir = Path(done.stdout.strip())
    assert data_dir.name.startswith("fake-qdrant-")
    assert not data_dir.exists()
