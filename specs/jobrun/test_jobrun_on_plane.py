"""The sharded run as an Indexed Job on the real control plane of this machine (``python -m harness.jobrun``): its
pods run by a local node (specs/targets.py ``local_node_plane``), each shard's results and files collected, the
run's Namespace gone on every path. The Job's semantics (``completionMode: Indexed``, ``backoffLimitPerIndex``, a
deleted pod failing its index) are the real kube-controller-manager's, so these run on the control plane only.

Each run gets a small suite of its own (written under ``tmp_path``): how it splits is computed here with the same
function the shards use (:func:`harness.jobrun.select.keep`), so every expectation names its shard.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness import process
from harness.artifacts import RUN_LABEL
from harness.jobrun.select import JobShard, keep
from harness.waiting import wait_for_sync

pytestmark = [pytest.mark.control_plane, pytest.mark.timeout(300)]
RUN_TIMEOUT = 240.0
"""Seconds one sharded run of a small suite may take on a loaded 2-core machine (pods start in a few seconds each)."""
GONE_TIMEOUT = 60.0


def suite(root: Path, modules: dict[str, str]) -> Path:
    folder = root / "suite"
    folder.mkdir()
    for name, body in modules.items():
        (folder / f"test_{name}.py").write_text(body)
    return folder


PASSING = "def test_one():\n    assert 1 + 1 == 2\n\ndef test_two():\n    assert 'a' < 'b'\n"


def jobrun(plane: Any, shards: int, folder: Path, artifacts: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "harness.jobrun", "--context", plane.context, "--kubeconfig", str(plane.kubeconfig),
        "--shards", str(shards), "--artifacts", str(artifacts), *extra,
        "--", str(folder), f"--rootdir={folder}", "-p", "no:cacheprovider",
    ]  # fmt: skip


def finish(argv: list[str]) -> process.Completed:
    return process.run_bounded(argv, timeout=RUN_TIMEOUT, cwd=str(Path.cwd()))


def run_folder(artifacts: Path) -> Path:
    (folder,) = [p for p in artifacts.iterdir() if p.is_dir()]
    return folder


def namespace_of(output: str) -> str:
    line = next(line for line in output.splitlines() if " as Job " in line)
    return line.split(" as Job ", 1)[1].split("/", 1)[0]


def assert_gone(plane: Any, namespace: str) -> None:
    found = plane.kube("default").kubectl("get", "namespace", namespace, "--ignore-not-found", "-o", "name")
    assert found.stdout.strip() == "", f"namespace {namespace} outlived its run"


def run_namespace(plane: Any, *, allow_none: bool = False) -> str:
    """The one run Namespace on the plane (labelled with its run id), or "" with ``allow_none``."""
    found = plane.kube("default").kubectl("get", "namespaces", "-l", RUN_LABEL, "-o", "name").stdout.split()
    if allow_none and not found:
        return ""
    (name,) = found
    return str(name).removeprefix("namespace/")


def expected_split(folder: Path, shards: int) -> list[set[str]]:
    ids = sorted(
        f"{path.name}::{line[4:].split('(')[0]}"
        for path in folder.glob("test_*.py")
        for line in path.read_text().splitlines()
        if line.startswith("def test_")
    )
    return [set(keep(ids, set(), {}, JobShard(i, shards))[0]) for i in range(shards)]


@pytest.mark.parametrize("shards", [2, 4])
def test_every_spec_runs_exactly_once_across_the_shards(local_node_plane: Any, tmp_path: Path, shards: int) -> None:
    folder = suite(tmp_path, dict.fromkeys("abcde", PASSING))
    done = finish(jobrun(local_node_plane, shards, folder, tmp_path / "artifacts"))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((run_folder(tmp_path / "artifacts") / "summary.json").read_text())["shards"]
    assert [set(line["results"]) for line in summary] == expected_split(folder, shards)
    assert all(set(line["results"].values()) <= {"passed"} for line in summary)
    for line in summary:
        junit = run_folder(tmp_path / "artifacts") / f"shard-{line['index']}" / "junit.xml"
        assert junit.read_text().count("<testcase ") == len(line["results"])
    assert f"{shards}/{shards} shards done; specs: 10 passed, 0 failed" in done.stdout
    assert_gone(local_node_plane, namespace_of(done.stdout))


def test_a_failing_spec_fails_the_run_and_names_its_shard(local_node_plane: Any, tmp_path: Path) -> None:
    folder = suite(tmp_path, {"a": PASSING, "b": "def test_broken():\n    assert 'promised' == 'delivered'\n"})
    (shard,) = [i for i, ids in enumerate(expected_split(folder, 2)) if "test_b.py::test_broken" in ids]
    done = finish(jobrun(local_node_plane, 2, folder, tmp_path / "artifacts"))
    assert done.returncode == 1
    assert f"shard {shard} (pod " in done.stdout
    assert "failed: pytest exited 1; its specs so far: 1 failed" in done.stdout
    junit = run_folder(tmp_path / "artifacts") / f"shard-{shard}" / "junit.xml"
    assert "assert 'promised' == 'delivered'" in junit.read_text()


class Said:
    """The lines a child printed so far, read on a thread (its stdout and stderr)."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.lines: list[str] = []
        self.threads = [threading.Thread(target=self._read, args=(pipe,), daemon=True)
                        for pipe in (child.stdout, child.stderr)]  # fmt: skip
        for thread in self.threads:
            thread.start()

    def _read(self, pipe: Any) -> None:
        for raw in pipe:
            self.lines.append(raw.decode(errors="replace"))

    def has(self, text: str) -> bool | None:
        return any(text in line for line in list(self.lines)) or None

    def text(self) -> str:
        return "".join(self.lines)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(10.0)


def blocking(marker: Path) -> str:
    return (
        "import os, pathlib, time\n\n"
        "def test_first():\n    assert True\n\n"
        "def test_blocks():\n"
        f"    pathlib.Path({str(marker)!r}).write_text(os.environ['HOSTNAME'])\n"
        "    end = time.monotonic() + 120\n"
        "    while time.monotonic() < end:\n        time.sleep(0.2)\n"
    )


def test_a_shard_whose_pod_is_deleted_mid_run_is_named_with_its_cause_and_results_so_far(
    local_node_plane: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    folder = suite(tmp_path, {"a": PASSING, "z": blocking(marker)})
    (shard,) = [i for i, ids in enumerate(expected_split(folder, 2)) if "test_z.py::test_blocks" in ids]
    child = process.spawn(jobrun(local_node_plane, 2, folder, tmp_path / "artifacts"))
    said = Said(child)
    try:
        # Deleted once the run has read the shard's first result (a pod's log goes with the pod).
        wait_for_sync(
            "the run to report the shard's first result", lambda: said.has(f"shard {shard}: 1 passed"), timeout=120
        )
        wait_for_sync("the blocking spec to start in its shard's pod", lambda: marker.exists() or None, timeout=60)
        pod = marker.read_text()  # the pod's name (HOSTNAME), written by the blocking spec
        local_node_plane.kube(run_namespace(local_node_plane)).kubectl("delete", "pod", pod, "--wait=false")
        child.wait(timeout=RUN_TIMEOUT)
    finally:
        process.kill_group(child)
        said.join()
    text = said.text()
    assert child.returncode == 1, text
    assert f"shard {shard} (pod {pod}) failed: deleted" in text
    assert "its specs so far: 1 passed" in text
    summary = json.loads((run_folder(tmp_path / "artifacts") / "summary.json").read_text())["shards"]
    assert summary[shard]["results"] == {"test_z.py::test_first": "passed"}
    assert summary[1 - shard]["ended"] == "succeeded"
    assert_gone(local_node_plane, namespace_of(text))


def test_sigterm_mid_run_deletes_the_run_and_exits_130(local_node_plane: Any, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    folder = suite(tmp_path, {"z": blocking(marker)})
    child = process.spawn(jobrun(local_node_plane, 1, folder, tmp_path / "artifacts"))
    try:
        wait_for_sync("the blocking spec to start in its pod", lambda: marker.exists() or None, timeout=120)
        os.kill(child.pid, signal.SIGTERM)
        out, _ = child.communicate(timeout=GONE_TIMEOUT + 200)
    except subprocess.TimeoutExpired:
        pytest.fail("the run did not end after SIGTERM")
    finally:
        process.kill_group(child)
    assert child.returncode == 130
    namespace = namespace_of(out.decode())
    assert_gone(local_node_plane, namespace)
    assert run_namespace(local_node_plane, allow_none=True) == ""
