"""Specs of ``--twin-attach PATH`` (specs/agent_controller/twin.py ``AttachedTwin``): a ready file is accepted only
when it names a live ``python -m fakes.stack`` of this user serving the kubeconfig beside it, and the option's usage
errors. No twin starts: the refusals come before anything would touch one (the acceptance of a live twin is in
specs/twin/test_bug_switches.py, whose every case attaches to its module's twin).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import wait_for_sync
from specs.agent_controller.twin import AttachedTwin, TwinAttachRefused
from specs.helpers.twin_project import CLUSTER_SPEC, twin_project


def _ready(tmp_path: Path, pid: int, *, kubeconfig: Path | None = None) -> Path:
    kubeconfig = kubeconfig or tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    path = tmp_path / "ready.json"
    path.write_text(json.dumps({"pid": pid, "context": "stack-twin-1", "kubeconfig": str(kubeconfig)}))
    return path


def _exited_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


def test_a_pid_that_no_longer_runs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TwinAttachRefused, match=r"no process \d+ runs"):
        AttachedTwin.open(_ready(tmp_path, _exited_pid()))


def test_a_live_process_that_is_not_a_twin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TwinAttachRefused, match=rf"process {os.getpid()} is not python -m fakes.stack"):
        AttachedTwin.open(_ready(tmp_path, os.getpid()))


def test_a_kubeconfig_elsewhere_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    ready = _ready(tmp_path, os.getpid(), kubeconfig=elsewhere / "kubeconfig")
    with pytest.raises(TwinAttachRefused, match="is not beside it"):
        AttachedTwin.open(ready)


def test_a_context_off_the_loopback_is_refused(tmp_path: Path) -> None:
    """A live twin process serving that kubeconfig and context, but the context names a remote API server: the
    file was edited after the twin wrote it, and a cluster run must not follow it."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://10.0.0.1:6443'}\n"
        "contexts:\n- name: stack-twin-1\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {}\n"
    )
    fake_twin = tmp_path / "pkg" / "fakes" / "stack"
    fake_twin.mkdir(parents=True)
    (fake_twin.parent / "__init__.py").write_text("")
    (fake_twin / "__init__.py").write_text("")
    (fake_twin / "__main__.py").write_text("import time\ntime.sleep(60)\n")
    argv = [sys.executable, "-m", "fakes.stack", "--kubeconfig", str(kubeconfig), "--context", "stack-twin-1"]
    proc = subprocess.Popen(
        argv, cwd=fake_twin.parent.parent, env={**os.environ, "PYTHONPATH": ""}, start_new_session=True
    )
    try:
        # Between fork and exec /proc/PID/cmdline is empty: a real twin has long exec'd when it writes its ready file.
        wait_for_sync(
            "the stand-in twin process to exec",
            lambda: b"fakes.stack" in Path(f"/proc/{proc.pid}/cmdline").read_bytes() or None,
            timeout=30.0,
            interval=0.05,
        )
        ready = tmp_path / "ready.json"
        ready.write_text(json.dumps({"pid": proc.pid, "context": "stack-twin-1", "kubeconfig": str(kubeconfig)}))
        with pytest.raises(TwinAttachRefused, match=r"points at https://10\.0\.0\.1:6443, not at a twin"):
            AttachedTwin.open(ready)
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.parametrize("text", ["", "{}", '{"pid": "x", "context": "c", "kubeconfig": "k"}', "[1]"])
def test_a_file_that_is_no_ready_file_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ready.json"
    path.write_text(text)
    with pytest.raises(TwinAttachRefused, match="not a stack twin's ready file"):
        AttachedTwin.open(path)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ((), "is not python -m fakes.stack"),
        (("--twin-bug", "subject-keying"), "--twin-bug starts a new twin, but --twin-attach runs against a running"),
        (("--twin-set", "poll_budget=7"), "--twin-set starts a new twin"),
    ],
)
def test_usage_errors(pytester: pytest.Pytester, tmp_path: Path, extra: tuple[str, ...], says: str) -> None:
    twin_project(pytester)
    pytester.makepyfile(CLUSTER_SPEC)
    ready = _ready(tmp_path, os.getpid())
    result = pytester.runpytest("--target=twin", f"--twin-attach={ready}", *extra, "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert says in result.stderr.str(), result.stderr.str()
