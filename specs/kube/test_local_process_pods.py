"""Pods whose containers are local processes (the contract in :mod:`fakes.kube.local_process`), driven with the real
kubectl builds and the ``kubernetes`` client: exec, port-forward, logs across a restart, exit codes, deletion with a
grace period, and no process left behind after any spec.

On both targets (specs/targets.py ``local_target``): the API double, and a real control plane whose one node is
the harness's local node (:mod:`fakes.kube.node`). The same manifests, the same assertions.
"""

from __future__ import annotations

import json
import os
import select
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as kube_client
from kubernetes import config as kube_config

from harness import Kube, wait_for_sync
from harness.fetch import fetch_through_sync
from harness.portforward import port_forward
from harness.process import LIVE_CHILDREN, group_alive, kill_group, spawn
from specs.kube.conftest import kubectl_build
from specs.targets import Target, double_with_kubectl

pytestmark = pytest.mark.timeout(180)

ANNOTATION = "stack-harness.dev/local-process"
READY = 60.0
"""Seconds a pod may take to be Ready or to end: an upper bound that fails loudly, not a pace."""
GONE = 60.0
"""Seconds a deleted pod (and its processes) may take to go."""
BUILDS = (32, 33)
"""The real kubectl builds the exec and port-forward specs run (the machine ships both beside ``kubectl``)."""
SLEEP = "import signal; print('up', flush=True); signal.pause()"


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    yield from double_with_kubectl()


@pytest.fixture
def target(local_target: Target) -> Target:
    """The double, or the control plane with the local node (not the session's kwok plane)."""
    return local_target


def _local_children() -> set[int]:
    return {pid for pid, argv in list(LIVE_CHILDREN.items()) if argv[:1] == ["python3"]}


@pytest.fixture(autouse=True)
def no_process_left(target: Target) -> Iterator[None]:
    """After the spec its pods are deleted and every process they ran is reaped, its group gone."""
    before = _local_children()
    seen: set[int] = set()
    yield
    seen |= _local_children() - before
    target.kube.kubectl("delete", "pods", "--all", "--grace-period=1", "--wait", f"--timeout={GONE:.0f}s")

    def left() -> bool | None:
        alive = (_local_children() - before) | {pid for pid in seen if group_alive(pid)}
        return True if not alive else None

    wait_for_sync("every local process of the spec to be gone", left, timeout=GONE, interval=0.1)


@pytest.fixture(params=BUILDS, ids=[f"kubectl-1.{m}" for m in BUILDS])
def kube(request: pytest.FixtureRequest, target: Target) -> Kube:
    """``target.kube`` running one real kubectl build."""
    path = kubectl_build(int(request.param))
    if path is None:
        pytest.skip(f"no kubectl.1.{request.param} beside the kubectl on PATH")
    base = target.kube
    return Kube(
        base.context,
        base.namespace,
        allowed=base.allowed,
        kubectl_path=path,
        kubeconfig=base.kubeconfig,
        cache_dir=base.cache_dir,
    )


def core(target: Target) -> kube_client.CoreV1Api:
    api = kube_config.new_client_from_config(config_file=target.kube.kubeconfig, context=target.kube.context)
    return kube_client.CoreV1Api(api)


def pod_yaml(name: str, program: str, *, restart: str = "Always", extra: str = "", ports: str = "") -> str:
    """A pod of the contract whose one container ``app`` runs ``python3 -c program``."""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations:
    {ANNOTATION}: "true"
spec:
  restartPolicy: {restart}
  containers:
  - name: app
    image: local/python:3
    command: ["python3", "-c", {json.dumps(program)}]
{extra}{ports}"""


def apply(kube: Kube, manifest: str) -> None:
    kube.kubectl("apply", "-f", "-", input=manifest)


def ready(kube: Kube, name: str) -> None:
    kube.kubectl("wait", "--for=condition=Ready", f"pod/{name}", f"--timeout={READY:.0f}s", timeout=READY + 10)


def logs(kube: Kube, name: str, expected: str, *flags: str) -> str:
    """``kubectl logs`` once it reads ``expected`` (a process's line reaches the log a moment after it is Ready)."""

    def read() -> str | None:
        out = kube.kubectl("logs", name, *flags).stdout
        return out if out == expected else None

    found: str = wait_for_sync(f"the logs of {name} to read {expected!r}", read, timeout=READY, interval=0.1)
    return found


def status_of(target: Target, name: str) -> Any:
    return core(target).read_namespaced_pod_status(name, target.kube.namespace).status


# --- exec ------------------------------------------------------------------------------------------------------


def test_exec_exits_with_the_commands_exit_code(target: Target, kube: Kube) -> None:
    apply(kube, pod_yaml("exec-code", SLEEP))
    ready(kube, "exec-code")
    done = kube.kubectl("exec", "exec-code", "--", "python3", "-c", "import sys; sys.exit(3)", check=False)
    assert done.returncode == 3
    assert "command terminated with exit code 3" in done.stderr


def test_exec_passes_stdin_and_closes_the_channel_at_its_end(target: Target, kube: Kube) -> None:
    apply(kube, pod_yaml("exec-stdin", SLEEP))
    ready(kube, "exec-stdin")
    done = kube.kubectl("exec", "-i", "exec-stdin", "--", "cat", input="hello\nworld\n")
    assert (done.returncode, done.stdout) == (0, "hello\nworld\n")


def test_exec_sees_the_pods_environment_and_working_directory(target: Target, kube: Kube) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}
    apply(kube, json.dumps(config))
    env = """    env:
    - {name: GREETING, value: hello}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: settings, key: mode}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
"""
    program = "import os, signal; open('marker', 'w').write(os.getcwd()); print('up', flush=True); signal.pause()"
    apply(kube, pod_yaml("exec-env", program, extra=env))
    ready(kube, "exec-env")
    logs(kube, "exec-env", "up\n")  # the marker is written
    shown = "import json, os; print(json.dumps([os.environ.get(k) for k in ('GREETING', 'MODE', 'POD_NAME')]))"
    assert json.loads(kube.kubectl("exec", "exec-env", "--", "python3", "-c", shown).stdout) == [
        "hello",
        "fast",
        "exec-env",
    ]
    where = "import os; print(os.getcwd() == open('marker').read())"  # the marker the container wrote, relative
    assert kube.kubectl("exec", "exec-env", "--", "python3", "-c", where).stdout == "True\n"


def test_exec_into_a_container_waiting_to_restart_is_refused_as_by_a_kubelet(target: Target) -> None:
    kube = target.kube
    crash = pod_yaml("exec-down", "import sys; sys.exit(1)").replace(
        f'{ANNOTATION}: "true"', f'{ANNOTATION}: "true"\n    double.stack-harness.dev/backoff: "120"'
    )
    apply(kube, crash)

    def backing_off() -> bool | None:
        states = status_of(target, "exec-down").container_statuses or []
        waiting = states[0].state.waiting if states else None
        return True if waiting is not None and waiting.reason == "CrashLoopBackOff" else None

    wait_for_sync("exec-down to back off", backing_off, timeout=READY, interval=0.1)
    done = kube.kubectl("exec", "exec-down", "--", "true", check=False)
    assert done.returncode == 1
    assert 'unable to upgrade connection: container not found ("app")' in done.stderr


# --- port-forward ----------------------------------------------------------------------------------------------

HTTP = """import http.server, os
open('hello.txt', 'w').write('hello from the pod')
address = ('127.0.0.1', int(os.environ['PORT']))
http.server.ThreadingHTTPServer(address, http.server.SimpleHTTPRequestHandler).serve_forever()
"""
ECHO = """import os, socket, threading
server = socket.create_server(('127.0.0.1', int(os.environ['PORT'])))
def echo(conn):
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)
while True:
    threading.Thread(target=echo, args=(server.accept()[0],), daemon=True).start()
"""


def test_port_forward_carries_http_to_the_processs_server(target: Target, kube: Kube) -> None:
    apply(kube, pod_yaml("web", HTTP, ports="    ports:\n    - containerPort: 8080\n"))
    ready(kube, "web")
    with port_forward(kube, "pod/web", 8080, ready_path="/") as fwd:
        answer = fetch_through_sync(fwd, "GET", "/hello.txt", timeout=10)
    assert (answer.status_code, answer.text) == (200, "hello from the pod")

    def logged() -> str | None:  # http.server logs each request to stderr
        out = kube.kubectl("logs", "web").stdout
        return out if '"GET /hello.txt HTTP/1.1" 200' in out else None

    wait_for_sync("web to log the request", logged, timeout=READY, interval=0.1)


def test_port_forward_carries_raw_tcp_both_ways(target: Target, kube: Kube) -> None:
    apply(kube, pod_yaml("echo", ECHO, ports="    ports:\n    - containerPort: 7000\n"))
    ready(kube, "echo")
    with port_forward(kube, "pod/echo", 7000) as fwd:
        assert fwd.local_port is not None
        with socket.create_connection(("127.0.0.1", fwd.local_port), timeout=10) as conn:
            conn.sendall(b"ping\n" * 1000)
            got = b""
            while len(got) < 5000 and (chunk := conn.recv(65536)):
                got += chunk
    assert got == b"ping\n" * 1000


# --- logs, exits, restarts ---------------------------------------------------------------------------------------

CRASH_ONCE = """import os, signal, sys
if not os.path.exists('ran'):
    open('ran', 'w').close()
    print('first run', flush=True)
    sys.exit(1)
print('second run', flush=True)
signal.pause()
"""


def test_logs_and_previous_logs_after_a_crash_and_its_restart(target: Target) -> None:
    kube = target.kube
    apply(kube, pod_yaml("crash-once", CRASH_ONCE))  # the working directory is kept: the second run sees 'ran'

    def restarted_and_ready() -> Any:  # with no port, its first run is Ready too (as with no readiness probe)
        states = status_of(target, "crash-once").container_statuses or []
        return states[0] if states and states[0].restart_count >= 1 and states[0].ready else None

    state = wait_for_sync("crash-once to run again, Ready", restarted_and_ready, timeout=READY, interval=0.1)
    assert state.restart_count == 1
    assert (state.last_state.terminated.exit_code, state.last_state.terminated.reason) == (1, "Error")
    assert logs(kube, "crash-once", "second run\n") == "second run\n"
    assert kube.kubectl("logs", "crash-once", "--previous").stdout == "first run\n"  # that run has ended


@pytest.mark.parametrize("code, phase", [(0, "Succeeded"), (4, "Failed")])
def test_a_pod_that_never_restarts_ends_by_its_exit_code(target: Target, code: int, phase: str) -> None:
    name = f"job-{code}"
    apply(target.kube, pod_yaml(name, f"import sys; print('done'); sys.exit({code})", restart="Never"))

    def ended() -> Any:
        found = status_of(target, name)
        return found if found.phase in ("Succeeded", "Failed") else None

    found = wait_for_sync(f"{name} to end", ended, timeout=READY, interval=0.1)
    assert found.phase == phase
    terminated = found.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (code, "Completed" if code == 0 else "Error")
    assert target.kube.kubectl("logs", name).stdout == "done\n"


def test_an_init_container_runs_first_and_its_exit_code_decides(target: Target, tmp_path: Path) -> None:
    init = f"""  initContainers:
  - name: setup
    image: local/python:3
    workingDir: {tmp_path}
    command: ["python3", "-c", "open('setup', 'w').write('set up')"]
"""
    program = "import signal; print(open('setup').read(), flush=True); signal.pause()"
    manifest = pod_yaml("with-init", program, extra=f"    workingDir: {tmp_path}\n") + init
    apply(target.kube, manifest)
    ready(target.kube, "with-init")
    (setup,) = status_of(target, "with-init").init_container_statuses
    assert (setup.state.terminated.exit_code, setup.state.terminated.reason) == (0, "Completed")
    assert logs(target.kube, "with-init", "set up\n") == "set up\n"


def test_a_container_without_a_command_fails_to_start(target: Target) -> None:
    manifest = pod_yaml("no-command", "", restart="Never").replace('    command: ["python3", "-c", ""]\n', "")
    apply(target.kube, manifest)

    def ended() -> Any:
        found = status_of(target, "no-command")
        return found if found.phase == "Failed" else None

    terminated = wait_for_sync("no-command to fail", ended, timeout=READY, interval=0.1).container_statuses[0]
    assert (terminated.state.terminated.exit_code, terminated.state.terminated.reason) == (128, "StartError")
    events = target.kube.kubectl("get", "events", "--field-selector", "involvedObject.name=no-command").stdout
    assert "has no command" in events


# --- deletion ------------------------------------------------------------------------------------------------------

TRAP = """import signal, sys
def stop(*_):
    print('got SIGTERM', flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print('up', flush=True)
while True:
    signal.pause()
"""
STUBBORN = """import os, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open('pid', 'w').write(str(os.getpid()))
print('up', flush=True)
while True:
    signal.pause()
"""


def test_deletion_sends_sigterm_and_the_process_is_seen_exiting(target: Target) -> None:
    kube = target.kube
    apply(kube, pod_yaml("trap", TRAP))
    ready(kube, "trap")
    follower = spawn(kube.argv("logs", "-f", "trap"), env=kube.env)
    try:
        assert follower.stdout is not None
        # The follow is open (it printed the first line) before the deletion: it then sees the run to its end.
        assert select.select([follower.stdout], [], [], READY)[0], "kubectl logs -f printed nothing"
        first = follower.stdout.readline()
        kube.kubectl("delete", "pod", "trap", "--grace-period=30", "--wait", f"--timeout={GONE:.0f}s")
        rest, _ = follower.communicate(timeout=GONE)  # the follow ends with the run
    finally:
        kill_group(follower)
    assert (first + rest).decode().splitlines() == ["up", "got SIGTERM"]


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(target: Target, tmp_path: Path) -> None:
    kube = target.kube
    apply(kube, pod_yaml("stubborn", STUBBORN, extra=f"    workingDir: {tmp_path}\n"))
    ready(kube, "stubborn")
    logs(kube, "stubborn", "up\n")  # SIGTERM is ignored from here on, the pid written
    pid = int((tmp_path / "pid").read_text())
    kube.kubectl("delete", "pod", "stubborn", "--grace-period=2", "--wait", f"--timeout={GONE:.0f}s")

    def gone() -> bool | None:
        return True if not group_alive(pid) else None

    wait_for_sync("the stubborn process to be killed", gone, timeout=GONE, interval=0.1)


def test_the_pod_working_directory_goes_with_the_pod(target: Target) -> None:
    kube = target.kube
    program = "import os, signal; print(os.getcwd(), flush=True); signal.pause()"
    apply(kube, pod_yaml("workdir", program))
    ready(kube, "workdir")
    folder = wait_for_sync(
        "the cwd line", lambda: kube.kubectl("logs", "workdir").stdout.strip() or None, timeout=READY
    )
    assert os.path.isdir(folder)
    kube.kubectl("delete", "pod", "workdir", "--grace-period=5", "--wait", f"--timeout={GONE:.0f}s")
    assert not os.path.exists(folder)


# --- the adoption docs' example ------------------------------------------------------------------------------------


def test_the_documented_web_deployment_behaves_alike_on_both_targets(target: Target) -> None:
    from specs.guard.test_adoption import double_examples

    kube = target.kube
    apply(kube, double_examples()["local-process"]["tests/web.yaml"])  # verbatim from docs/your-stack.md
    kube.rollout_status("web", timeout=READY)
    (pod,) = kube.kubectl("get", "pods", "-l", "app=web", "-o", "name").stdout.split()
    with port_forward(kube, "deployment/web", 8080, ready_path="/") as fwd:
        assert "Directory listing" in fetch_through_sync(fwd, "GET", "/", timeout=10).text

    def logged() -> str | None:  # http.server logs each request to stderr
        out = kube.kubectl("logs", pod).stdout
        return out if '"GET / HTTP/1.1" 200' in out else None

    wait_for_sync("web to log the request", logged, timeout=READY, interval=0.1)
    failed = kube.kubectl("exec", pod, "--", "python3", "-c", "raise SystemExit(3)", check=False)
    assert failed.returncode == 3
    kube.kubectl("delete", "deployment", "web", "--wait=true", f"--timeout={GONE:.0f}s", timeout=GONE + 10)
