"""The double's lifecycle: nothing left behind (threads, sockets, temporary files), the kubeconfig it writes
(mode 0600 when it creates the file; merged into an existing file, whose mode is kept, and taken out again),
``python -m fakes.kube`` (URL on stdout, exit 0 after SIGTERM), and an exact-path fixture."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import stat
import sys
import threading
import time

import httpx
import yaml

import fakes.kube
from harness import process
from specs.kube.conftest import require_kubectl


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _settled(threads: set[threading.Thread], fds: int, deadline: float = 5.0) -> tuple[list[str], int]:
    end = time.monotonic() + deadline
    while True:
        extra = [t.name for t in set(threading.enumerate()) - threads]
        if (not extra and _fds() <= fds) or time.monotonic() > end:
            return extra, _fds() - fds
        time.sleep(0.05)


def test_stopping_leaves_no_thread_socket_or_file() -> None:
    require_kubectl()
    threads, fds = set(threading.enumerate()), _fds()
    with fakes.kube.serve() as kd:
        workdir = os.path.dirname(kd.cache_dir)
        assert kd.kubectl("get", "namespaces").returncode == 0
        with httpx.stream("GET", f"{kd.url}/api/v1/pods?watch=true&timeoutSeconds=60", timeout=10.0) as watch:
            assert watch.status_code == 200
            with httpx.Client(base_url=kd.url, timeout=5.0) as client:
                assert client.get("/version").status_code == 200
            kd.fault("hang", "/api/v1/namespaces/*/configmaps")
            hung = threading.Thread(
                target=lambda: _swallow(
                    lambda: httpx.get(f"{kd.url}/api/v1/namespaces/default/configmaps", timeout=30.0)
                ),
                daemon=True,
            )
            hung.start()
            end = time.monotonic() + 5.0
            while not any(e.fault == "hang" for e in kd.requests()) and time.monotonic() < end:
                time.sleep(0.02)
            url = kd.url
    hung.join(10.0)
    assert not hung.is_alive(), "a hung request outlived the double"
    extra, fd_delta = _settled(threads, fds)
    assert extra == [], f"threads left: {extra}"
    assert fd_delta <= 0, f"{fd_delta} file descriptors left open"
    assert not os.path.exists(workdir)
    try:
        httpx.get(f"{url}/version", timeout=2.0)
        raise AssertionError("the double still answers after stop")
    except httpx.ConnectError:
        pass


def _swallow(call) -> None:
    with contextlib.suppress(httpx.HTTPError):
        call()


def test_the_kubeconfig_is_0600_and_merged_entries_are_removed_again(tmp_path) -> None:
    path = tmp_path / "config"
    other = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "minikube",
        "clusters": [{"name": "minikube", "cluster": {"server": "https://192.0.2.1:8443"}}],
        "users": [{"name": "minikube", "user": {"token": "x"}}],
        "contexts": [{"name": "minikube", "context": {"cluster": "minikube", "user": "minikube"}}],
    }
    path.write_text(yaml.safe_dump(other))
    path.chmod(0o644)
    with fakes.kube.serve(kubeconfig=path, context="double", namespace="team") as kd:
        merged = yaml.safe_load(path.read_text())
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644  # the user's file keeps its mode
        assert {c["name"] for c in merged["contexts"]} == {"minikube", "double"}
        assert merged["current-context"] == "minikube"  # the user's choice is kept
        ours = next(c for c in merged["contexts"] if c["name"] == "double")
        assert ours["context"]["namespace"] == "team"
        assert kd.store.get("namespaces", None, "team") is not None
    after = yaml.safe_load(path.read_text())
    assert {c["name"] for c in after["contexts"]} == {"minikube"}
    assert after["clusters"] == other["clusters"]
    fresh = tmp_path / "fresh"
    with fakes.kube.serve(kubeconfig=fresh):
        assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o600
    assert not fresh.exists()


def _read_line(proc, timeout: float) -> str:
    assert proc.stdout is not None
    chooser = selectors.DefaultSelector()
    chooser.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not chooser.select(timeout):
            raise AssertionError(f"python -m fakes.kube printed nothing within {timeout} s")
        return proc.stdout.readline().decode()
    finally:
        chooser.close()


def test_the_command_line_serves_until_sigterm_then_cleans_up(tmp_path) -> None:
    require_kubectl()
    kubeconfig = tmp_path / "kc"
    proc = process.spawn(
        [
            sys.executable,
            "-m",
            "fakes.kube",
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            "cli",
            "--kubectl-version",
            "1.31.2",
        ]
    )
    try:
        first = _read_line(proc, 20.0)
        assert first.startswith("fake kube listening on http://127.0.0.1:"), first
        assert stat.S_IMODE(os.stat(kubeconfig).st_mode) == 0o600
        done = process.run_bounded(
            [
                "kubectl",
                "--kubeconfig",
                str(kubeconfig),
                "--context",
                "cli",
                "--cache-dir",
                str(tmp_path / "cache"),
                "version",
                "-o",
                "json",
            ],
            timeout=30.0,
        )
        assert '"gitVersion": "v1.31.2"' in done.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15.0) == 0
    finally:
        process.kill_group(proc)
    assert not kubeconfig.exists()


def test_the_fixture_gives_a_running_double(fake_kube) -> None:
    assert httpx.get(f"{fake_kube.url}/version", timeout=5.0).json()["gitVersion"] == "v1.32.4"
    assert os.path.isfile(fake_kube.kubeconfig)
    assert os.path.isdir(fake_kube.cache_dir)
