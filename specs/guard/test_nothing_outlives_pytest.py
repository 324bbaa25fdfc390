"""No process the harness started, nor any descendant, outlives the pytest process, however it ends.

Each case runs an inner pytest whose spec calls the *real* kubectl 1.33 through a wrapper script (``sh`` running
kubectl as its child, as version managers and ``gcloud`` shims do), with a kubeconfig whose user gets its token
from an exec credential plugin that never answers (kubectl runs it as its own child). With the chain
wrapper -> kubectl -> plugin up, the inner pytest is ended by SIGTERM, by SIGKILL, or by pytest-timeout's
``thread`` method (``os._exit``, no teardown). Then every process of the chain must be gone.

The kernel's parent-death signal reaches only the wrapper (the harness's direct child); the harness's watchdog,
which SIGKILLs every registered process group when the pytest process's end closes its pipe, reaches the rest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing.apiserver import silent_port, write_kubeconfig
from harness.testing.kubectl_builds import real_kubectl

KUBECTL = real_kubectl(33)
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl 1.33 is not installed beside the kubectl on PATH")

INNER = """
import os
import pytest
from harness import Kube

KUBE = Kube("minikube", "controller-agent", allowed=("minikube",), kubectl_path=os.environ["WRAPPER"],
            kubeconfig=os.environ["KUBECONFIG_FOR_SPEC"])

@pytest.mark.timeout(float(os.environ["INNER_TIMEOUT"]), method="thread")
def test_hangs_in_kubectl():
    KUBE.kubectl("get", "pods", timeout=120.0)
"""

CHAIN = ("wrapper", "kubectl", "plugin")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_until(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)  # polling a real condition, bounded by the deadline
    return bool(condition())  # type: ignore[operator]


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """The inner spec's environment and the directory where the chain writes its pids."""
    pids = tmp_path / "pids"
    pids.mkdir()
    wrapper = tmp_path / "kubectl-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho $$ > {pids}/wrapper\n{KUBECTL} "$@"\nexit $?\n')
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(f"#!/bin/sh\necho $PPID > {pids}/kubectl\necho $$ > {pids}/plugin\nexec sleep 300\n")
    for script in (wrapper, plugin):
        script.chmod(0o755)
    spec = tmp_path / "inner" / "test_inner.py"
    spec.parent.mkdir()
    spec.write_text(INNER)
    with silent_port() as port:
        kubeconfig = write_kubeconfig(
            tmp_path / "kubeconfig", f"https://127.0.0.1:{port}", exec_command=[str(plugin)], context="minikube"
        )
        env = {
            **os.environ,
            "WRAPPER": str(wrapper),
            "KUBECONFIG_FOR_SPEC": str(kubeconfig),
            "INNER_TIMEOUT": "600",
            "PYTHONDONTWRITEBYTECODE": "1",
            "HARNESS_STATE_DIR": str(tmp_path / "state"),
        }
        yield env, pids
    for name in CHAIN:  # never leave the chain behind, whatever the spec found
        path = pids / name
        if path.exists() and _alive(pid := int(path.read_text())):
            os.kill(pid, signal.SIGKILL)


def _start_inner(env: dict[str, str], spec_dir: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-s",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--rootdir",
        str(spec_dir),
        str(spec_dir / "test_inner.py"),
    ]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@pytest.mark.parametrize("ending", ["SIGTERM", "SIGKILL", "os._exit"])
def test_no_descendant_of_kubectl_outlives_pytest(chain: tuple[dict[str, str], Path], ending: str) -> None:
    env, pids = chain
    if ending == "os._exit":
        # pytest-timeout's thread method: dump stacks, os._exit(1). Its timer starts with the inner spec, and the chain
        # (sh, kubectl, the plugin) is up well inside a second when idle and a few seconds on a loaded machine.
        env["INNER_TIMEOUT"] = "8"
    inner = _start_inner(env, pids.parent / "inner")
    try:
        assert _wait_until(lambda: all((pids / name).exists() for name in CHAIN), 60.0), "the chain never came up"
        chain_pids = {name: int((pids / name).read_text()) for name in CHAIN}
        assert all(_alive(pid) for pid in chain_pids.values()), chain_pids
        if ending != "os._exit":
            os.kill(inner.pid, getattr(signal, ending))
        inner.wait(timeout=90.0)
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait(timeout=10.0)
    if ending == "os._exit":
        assert inner.returncode == 1  # pytest-timeout's os._exit(1), not a normal end
    else:
        assert inner.returncode == -getattr(signal, ending)
    assert _wait_until(lambda: not any(_alive(pid) for pid in chain_pids.values()), 10.0), (
        f"outlived pytest ({ending}): {[name for name, pid in chain_pids.items() if _alive(pid)]}"
    )


REGISTER_AND_DIE = """
import os, signal, sys
from harness import process
process.remove_when_gone(sys.argv[1])
if sys.argv[2] == "keep":
    process.forget_folder(sys.argv[1])
os.kill(os.getpid(), getattr(signal, sys.argv[3]))
"""


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_registered_folder_is_removed_when_its_process_is_killed(tmp_path: Path, how: str) -> None:
    folder = tmp_path / "stack-twin-x"
    (folder / "cache").mkdir(parents=True)
    (folder / "kubeconfig").write_text("token: secret\n")
    subprocess.run([sys.executable, "-c", REGISTER_AND_DIE, str(folder), "remove", how], timeout=30, check=False)
    assert _wait_until(lambda: not folder.exists(), 10.0), "the watchdog did not remove the killed process's folder"


def test_a_forgotten_folder_is_kept(tmp_path: Path) -> None:
    folder = tmp_path / "kept"
    folder.mkdir()
    probe = tmp_path / "dead-marker"
    probe.mkdir()  # registered and killed alongside, to know when the watchdog has finished
    script = REGISTER_AND_DIE.replace(
        "process.remove_when_gone(sys.argv[1])",
        f"process.remove_when_gone(sys.argv[1]); process.remove_when_gone({str(probe)!r})",
    )
    subprocess.run([sys.executable, "-c", script, str(folder), "keep", "SIGKILL"], timeout=30, check=False)
    assert _wait_until(lambda: not probe.exists(), 10.0)
    assert folder.exists()


def test_a_twin_session_without_kubectl_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.errors import KubectlNotFound
    from specs.agent_controller.twin import TwinSession

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(KubectlNotFound):
        TwinSession()
    assert list(tmp_path.glob("stack-twin-*")) == []
