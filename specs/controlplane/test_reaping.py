"""Nothing of a control plane outlives the pytest that started it, however that pytest ends: Ctrl-C (SIGINT),
SIGTERM, SIGKILL, or the SIGKILL of one xdist worker under ``--target control-plane``. Each case is a real inner
pytest run holding a real plane; afterwards no component process, no listening port and no folder of it (data,
certificates, kubeconfigs, logs) is left. After a SIGKILL only the harness's watchdog can clean up, so those checks
poll, bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness import process
from harness.controlplane.assets import find
from harness.controlplane.build import cache_root
from harness.controlplane.plane import Settings
from harness.errors import BinariesMissing

pytestmark = [pytest.mark.control_plane, pytest.mark.timeout(600)]

GONE_BOUND = 60.0
"""Seconds everything may take to be gone after the inner pytest ended: the watchdog notices its parent's end at
once, then kills and removes; a component's stop after SIGINT is bounded by its own stop timeout."""

HOLDS = """
import json, os, threading

def test_holds_a_plane(control_plane):
    ready = dict(control_plane.ready, run_dir=str(control_plane.run_dir))
    ready["root"] = str(control_plane.plane.root) if control_plane.plane is not None else None
    with open(os.environ["MARKER"] + ".partial", "w") as f:
        json.dump(ready, f)
    os.replace(os.environ["MARKER"] + ".partial", os.environ["MARKER"])
    threading.Event().wait(float(os.environ["HOLD"]))
"""

KILLS_ITS_WORKER = """
import json, os, signal, time
import pytest

@pytest.mark.cluster
def test_holds_the_run_plane(control_plane, kube):
    kube.kubectl("get", "nodes")
    with open(os.environ["MARKER"] + ".partial", "w") as f:
        json.dump(dict(control_plane.ready, run_dir=str(control_plane.run_dir)), f)
    os.replace(os.environ["MARKER"] + ".partial", os.environ["MARKER"])

@pytest.mark.cluster
def test_kills_its_worker(kube):
    kube.kubectl("get", "nodes")
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture(autouse=True)
def _binaries() -> None:
    try:
        find().require()
    except BinariesMissing as exc:
        pytest.skip(str(exc))


def _env(tmp_path: Path, marker: Path, hold: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(MARKER=str(marker), HOLD=str(hold), HOME=str(tmp_path), HARNESS_STATE_DIR=str(tmp_path / "state"))
    env["HARNESS_CONTROL_PLANE_CACHE"] = str(cache_root())  # HOME is the spec's own: keep finding the user's build
    return env


def _inner(tmp_path: Path, specs: str, *args: str) -> tuple[list[str], Path]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_inner.py").write_text(specs)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args, str(project)]
    return argv, tmp_path / "ready.json"


def _wait_for_marker(child: subprocess.Popen[bytes], marker: Path, bound: float) -> dict[str, Any]:
    deadline = time.monotonic() + bound
    while not marker.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            out, err = child.communicate(timeout=10)
            raise AssertionError(f"the inner run never held a plane:\n{out.decode()[-3000:]}\n{err.decode()[-2000:]}")
        time.sleep(0.1)  # another process's progress: nothing to wait on but its file
    result: dict[str, Any] = json.loads(marker.read_text())
    return result


def _left(ready: dict[str, Any]) -> list[str]:
    """What of the plane is still there: live component processes, its API server's port, its folders."""
    left = [f"{name} (pid {c['pid']})" for name, c in ready["components"].items() if process.group_alive(c["pid"])]
    server = urlsplit(ready["server"])
    with socket.socket() as sock:
        sock.settimeout(2.0)
        if sock.connect_ex((server.hostname or "127.0.0.1", server.port or 443)) == 0:
            left.append(f"a listener on {ready['server']}")
    folders = [
        ready.get("run_dir"),
        ready.get("root"),
        *(str(Path(c["log"]).parents[1]) for c in ready["components"].values()),
    ]
    left += [f"folder {f}" for f in dict.fromkeys(folders) if f and os.path.exists(f)]
    return left


def _nothing_left(ready: dict[str, Any]) -> None:
    deadline = time.monotonic() + GONE_BOUND
    while (left := _left(ready)) and time.monotonic() < deadline:
        time.sleep(0.2)  # the watchdog's work in another process: polled, bounded
    assert left == [], f"left {GONE_BOUND:.0f}s after the inner pytest ended"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_pytest_ended_by_a_signal_leaves_nothing_of_its_control_plane(tmp_path: Path, sig: int) -> None:
    argv, marker = _inner(tmp_path, HOLDS, "-p", "no:xdist")
    bound = Settings().start_timeout + 60
    child = subprocess.Popen(
        argv,
        env=_env(tmp_path, marker, hold=bound),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        ready = _wait_for_marker(child, marker, bound)
        alive = _left(ready)
        assert len([a for a in alive if "pid" in a]) == 5, alive  # the checks see a live plane for what it is
        assert any(a.startswith("a listener on") for a in alive), alive
        assert any(a.startswith("folder") for a in alive), alive
        child.send_signal(sig)
        child.communicate(timeout=bound)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
    _nothing_left(ready)


def test_a_killed_xdist_worker_leaves_nothing_of_the_runs_control_plane(tmp_path: Path) -> None:
    argv, marker = _inner(tmp_path, KILLS_ITS_WORKER, "-n", "2", "--target", "control-plane")
    bound = Settings().start_timeout + 120
    done = subprocess.run(argv, env=_env(tmp_path, marker, hold=0), capture_output=True, text=True, timeout=bound)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out  # a worker crashed: xdist reports it
    assert re.search(r"(worker '?gw\d'? crashed|node down)", out, re.I), out
    assert marker.exists(), out
    _nothing_left(json.loads(marker.read_text()))
