"""No kubectl outlives a failing test, a test stopped by pytest-timeout, or a killed pytest.

Each case runs an inner pytest (a bounded subprocess) on a small spec that opens a forward through the
kubectl stand-in, then checks that every stand-in process it started is gone. With
``--timeout-method=thread`` pytest-timeout calls ``os._exit``: no teardown runs (pytest-dev/pytest-timeout#134),
so only the parent-death signal can stop kubectl.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import process
from harness.testing.leaks import snapshot
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer

INNER = """
import os
from harness.fetch import fetch_through_sync
from harness.kube import Kube
from harness.portforward import port_forward

KUBE = Kube("minikube", "controller-agent", allowed=("minikube",), kubectl_path=os.environ["STANDIN_KUBECTL"])


def test_fails_inside_a_forward():
    with port_forward(KUBE, "svc/x", 80) as fwd:
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).status_code == 200
        assert False, "a failing assertion inside the forward"


def test_hangs_inside_a_forward():
    with port_forward(KUBE, "svc/x", 80) as fwd:
        fetch_through_sync(fwd, "GET", "/hang", timeout=60.0)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _run_inner(tmp_path: Path, standin: KubectlStandIn, *args: str) -> process.Completed:
    spec = tmp_path / "inner" / "test_inner.py"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(INNER)
    env = {**os.environ, "STANDIN_KUBECTL": standin.path, "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:harness",
        "-p",
        "no:randomly",
        "--rootdir",
        str(spec.parent),
        *args,
        str(spec),
    ]
    return process.run_bounded(argv, timeout=60.0, env=env)


def _all_gone(pids: list[int], timeout: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


def test_a_failing_test_leaves_no_kubectl(
    tmp_path: Path, kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port)
    done = _run_inner(tmp_path, kubectl_standin, "-k", "fails_inside")
    assert done.returncode == 1
    assert "a failing assertion inside the forward" in done.stdout
    pids = kubectl_standin.pids()
    assert pids
    assert _all_gone(pids) == []


@pytest.mark.parametrize("method", ["signal", "thread"])
def test_a_test_stopped_by_pytest_timeout_leaves_no_kubectl(
    tmp_path: Path, kubectl_standin: KubectlStandIn, target: TargetServer, method: str
) -> None:
    kubectl_standin.script(target_port=target.port)
    start = time.monotonic()
    done = _run_inner(tmp_path, kubectl_standin, "-k", "hangs_inside", "--timeout=2", f"--timeout-method={method}")
    assert time.monotonic() - start < 30.0
    assert done.returncode != 0
    assert "Timeout" in done.stdout + done.stderr
    pids = kubectl_standin.pids()
    assert pids, "the inner spec never started kubectl"
    assert _all_gone(pids) == [], f"kubectl stand-in survived pytest-timeout ({method}): {pids}"


def test_the_leak_check_sees_threads_and_listening_sockets() -> None:
    import socket

    base = snapshot()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(5.0,), name="deliberate-leak")
    thread.start()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        extra = snapshot().extra_over(base)
    stop.set()
    thread.join(timeout=5.0)
    assert extra.get("threads") == ["deliberate-leak"]
    assert len(extra.get("listening sockets (inode)", [])) == 1
