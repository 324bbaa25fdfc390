"""PortForward guard specs against the kubectl stand-in."""

from __future__ import annotations

import os
import signal
import time

import anyio
import pytest

from harness import process
from harness.errors import PortForwardNotReady
from harness.fetch import fetch_through, fetch_through_sync
from harness.portforward import PortForward, port_forward
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer


def _poll(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- spawning ------------------------------------------------------------------------------------------


def test_spawns_pinned_argv_without_shell_in_its_own_group(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/fake-github", 8080) as fwd:
        assert fwd.proc is not None
        pid = fwd.proc.pid
        assert fwd.argv[0] == kubectl_standin.path  # the binary itself, not sh -c
        assert os.getpgid(pid) == pid != os.getpgid(0)
        assert pid in process.LIVE_CHILDREN
    assert kubectl_standin.argvs()[0] == [
        "--context",
        "minikube",
        "-n",
        "controller-agent",
        "port-forward",
        "svc/fake-github",
        ":8080",
        "--address",
        "127.0.0.1",
    ]
    assert pid not in process.LIVE_CHILDREN
    assert not _pid_alive(pid)


def test_local_port_comes_from_the_127_0_0_1_banner_line(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    # kubectl may print the [::1] line first, with another port: only the 127.0.0.1 one may be used.
    kubectl_standin.script(target_port=target.port, ipv6_first_port_offset=1)
    with port_forward(kubectl_standin.kube(), "pod/x", 80) as fwd:
        assert fwd.base_url == f"http://127.0.0.1:{fwd.local_port}"
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).text == "ok"


def test_banner_is_not_readiness_a_tcp_answer_is(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port, listen_delay=0.6)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        assert fwd.banner_at is not None
        assert fwd.ready_at is not None
        assert fwd.ready_at - fwd.banner_at >= 0.4
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).status_code == 200


def test_http_readiness_path_is_probed(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80, ready_path="/healthz"):
        assert target.requests == ["/healthz"]


# --- not ready ---------------------------------------------------------------------------------------


def test_no_banner_within_budget_kills_the_group_and_says_so(kubectl_standin: KubectlStandIn) -> None:
    kubectl_standin.script(mode="no-banner", stderr_banner="W1130 client warning: example")
    start = time.monotonic()
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(kubectl_standin.kube(), "svc/x", 80, ready_timeout=0.8).start()
    assert time.monotonic() - start < 5.0
    err = caught.value
    assert err.hop == "port-forward"
    assert err.kubectl_version == "v1.32.0-standin"
    assert "banner" in str(err)
    assert "W1130 client warning" in err.stderr_tail
    pid = kubectl_standin.pids()[0]
    assert not _pid_alive(pid)


def test_local_port_busy_fails_fast_with_kubectl_text(kubectl_standin: KubectlStandIn) -> None:
    kubectl_standin.script(mode="port-in-use")
    start = time.monotonic()
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(kubectl_standin.kube(), "svc/x", 80, ready_timeout=10.0).start()
    assert time.monotonic() - start < 5.0  # raced against the exit, not the 10 s budget
    assert caught.value.exit_code == 1
    assert "address already in use" in caught.value.stderr_tail
    assert "exited rc=1" in str(caught.value)


def test_exit_on_the_first_probe_is_not_ready_with_lost_connection(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(mode="exit-after", after=0, target_port=target.port)
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(kubectl_standin.kube(), "svc/x", 80, ready_timeout=10.0).start()
    assert "lost connection to pod" in caught.value.stderr_tail


def test_missing_kubectl_is_not_ready_with_the_reason(tmp_path) -> None:
    from harness.kube import Kube

    kube = Kube("minikube", "controller-agent", allowed=("minikube",), kubectl_path=str(tmp_path / "no-kubectl"))
    with pytest.raises(PortForwardNotReady, match="could not be started"):
        PortForward(kube, "svc/x", 80, ready_timeout=2.0).start()


# --- watching ----------------------------------------------------------------------------------------


def test_exit_is_recorded_by_the_watcher_when_it_happens(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        exit_before, alive_before = fwd.exit, fwd.alive  # read once: the watcher thread changes both later
        assert exit_before is None
        assert alive_before
        assert fwd.proc is not None
        killed_at = time.monotonic()
        os.kill(fwd.proc.pid, signal.SIGKILL)
        assert _poll(lambda: fwd.exit is not None)  # nobody calls into fwd: the watcher records it
        assert fwd.exit is not None
        assert fwd.exit.signal == "SIGKILL"
        assert fwd.exit.returncode == -9
        assert not fwd.exit.stopped_by_harness
        assert killed_at <= fwd.exit.at  # stamped when it happened; the benchmark gives the latency figure
        assert not fwd.alive
        assert "killed by SIGKILL" in (fwd.gone_reason() or "")


@pytest.mark.parametrize(("code", "silent"), [(1, False), (0, True)], ids=["v1.23+ exit 1", "older exit 0 silently"])
def test_any_exit_is_death_rc_0_included(
    kubectl_standin: KubectlStandIn, target: TargetServer, code: int, silent: bool
) -> None:
    kubectl_standin.script(mode="exit-after", after=1, exit_code=code, silent=silent, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:  # readiness used connection 1
        with pytest.raises(AssertionError):
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)
        assert _poll(lambda: fwd.exit is not None)
        assert fwd.exit is not None
        assert fwd.exit.returncode == code
        assert fwd.gone_reason() is not None
        if not silent:
            assert "lost connection to pod" in fwd.exit.stderr_tail


def test_forwarding_error_line_marks_a_live_forward_broken(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(mode="reset-all", after=2, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).status_code == 200
        with pytest.raises(AssertionError):
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)
        assert fwd.proc is not None
        assert fwd.proc.poll() is None  # still running...
        assert not fwd.alive  # ...but broken
        assert "an error occurred forwarding" in (fwd.broken_reason() or "")


def test_consecutive_resets_mark_a_live_forward_broken(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80, reset_limit=3) as fwd:
        for _ in range(2):
            with pytest.raises(AssertionError):
                fetch_through_sync(fwd, "GET", "/reset", timeout=5.0)
        assert fwd.broken_reason() is None
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).status_code == 200  # an answer resets the count
        for _ in range(3):
            with pytest.raises(AssertionError):
                fetch_through_sync(fwd, "GET", "/reset", timeout=5.0)
        assert "3 requests in a row" in (fwd.broken_reason() or "")


# --- stopping ----------------------------------------------------------------------------------------


def test_close_sends_sigint_first_and_is_idempotent(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    fwd = port_forward(kubectl_standin.kube(), "svc/x", 80).start()
    fwd.close()
    fwd.close()
    assert fwd.exit is not None
    assert fwd.exit.returncode == 0  # the stand-in's SIGINT exit
    assert fwd.exit.stopped_by_harness


def test_close_escalates_to_sigkill_of_the_group_after_the_grace(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port, ignore_sigint=True, grandchild=True)
    fwd = port_forward(kubectl_standin.kube(), "svc/x", 80, stop_grace=0.3).start()
    helper = int((kubectl_standin.dir / "grandchildren").read_text().split()[0])
    assert _pid_alive(helper)
    start = time.monotonic()
    fwd.close()
    assert 0.25 <= time.monotonic() - start < 6.0
    assert fwd.exit is not None
    assert fwd.exit.signal == "SIGKILL"
    assert _poll(lambda: not _pid_alive(helper))  # the group, not just the leader


def test_a_leader_that_exits_by_itself_takes_its_group_along(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(mode="exit-after", after=1, grandchild=True, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        helper = int((kubectl_standin.dir / "grandchildren").read_text().split()[0])
        with pytest.raises(AssertionError):
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)
        assert _poll(lambda: fwd.exit is not None)
        assert _poll(lambda: not _pid_alive(helper))


def test_exception_in_the_body_closes_the_forward(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with pytest.raises(KeyboardInterrupt), port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        raise KeyboardInterrupt  # what Ctrl-C raises in the main thread
    assert fwd.exit is not None
    assert fwd.exit.stopped_by_harness


# --- async -------------------------------------------------------------------------------------------


def test_async_use_and_cancellation_during_start(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    async def main() -> None:
        kubectl_standin.script(target_port=target.port)
        async with port_forward(kubectl_standin.kube(), "svc/x", 80, ready_path="/healthz") as fwd:
            answer = await fetch_through(fwd, "GET", "/ok", timeout=5.0)
            assert answer.text == "ok"
        assert fwd.exit is not None
        kubectl_standin.script(mode="no-banner")
        hanging = port_forward(kubectl_standin.kube(), "svc/x", 80, ready_timeout=30.0)
        with anyio.move_on_after(0.5) as scope:
            async with hanging:
                pytest.fail("a forward with no banner cannot be ready")
        assert scope.cancelled_caught
        assert hanging.exit is not None
        assert hanging.exit.stopped_by_harness

    anyio.run(main)
