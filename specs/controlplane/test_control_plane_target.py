"""`--target control-plane`: one real control plane per run, shared by the xdist workers, its context the run's own,
its components' logs in a failed spec's evidence. Inner pytest runs in a project of their own (no [tool.harness]).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.controlplane.assets import find
from harness.controlplane.build import cache_root
from harness.controlplane.plane import Settings
from harness.controlplane.release import pinned
from harness.errors import BinariesMissing

pytestmark = [pytest.mark.control_plane, pytest.mark.timeout(600)]

INNER = """
import os
import pytest

@pytest.mark.cluster
def test_deploys_and_rolls_out(kube):
    kube.kubectl("create", "deployment", "web", "--image=registry.invalid/web:1")
    kube.rollout_status("deployment/web", timeout=120)
    with open(os.path.join(os.environ["WORKERS_SEEN"], os.environ.get("PYTEST_XDIST_WORKER", "main")), "w") as f:
        f.write(kube.context)

@pytest.mark.cluster
def test_fails_on_purpose(kube):
    with open(os.path.join(os.environ["WORKERS_SEEN"], os.environ.get("PYTEST_XDIST_WORKER", "main") + "-2"), "w") as f:
        f.write(kube.context)
    assert kube.kubectl("get", "deployment", "absent", check=False).returncode == 0, "no such deployment"
"""


def _inner_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    project, seen, artifacts = tmp_path / "project", tmp_path / "seen", tmp_path / "artifacts"
    for folder in (project, seen):
        folder.mkdir()
    (project / "test_on_plane.py").write_text(INNER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(WORKERS_SEEN=str(seen), HOME=str(tmp_path), HARNESS_STATE_DIR=str(tmp_path / "state"))
    env["HARNESS_CONTROL_PLANE_CACHE"] = str(cache_root())  # HOME is the spec's own: keep finding the user's build
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--target", "control-plane"]
    done = subprocess.run(
        [*argv, "--artifacts", str(artifacts), "-p", "no:randomly", *args, "."],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=Settings().start_timeout + 300,
    )
    return done, seen, artifacts


def test_one_plane_serves_every_worker_and_a_failure_keeps_every_components_log(tmp_path: Path) -> None:
    try:
        find().require()
    except BinariesMissing as exc:
        pytest.skip(str(exc))
    done, seen, artifacts = _inner_run(tmp_path, "-n", "2")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out  # one spec fails on purpose
    assert "1 failed, 1 passed" in done.stdout, out
    contexts = {p.read_text() for p in seen.iterdir()}
    assert len(contexts) == 1, contexts  # the same plane for both specs, whichever worker ran them
    assert contexts.pop().startswith("harness-control-plane-")
    assert f"target: control-plane (forced by --target control-plane); Kubernetes {pinned().kubernetes}" in out
    kept = list(artifacts.rglob("control-plane-logs.txt"))
    assert len(kept) == 1, out
    text = kept[0].read_text()
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
        assert f"==> {name}: " in text
