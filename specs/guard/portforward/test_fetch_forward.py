"""fetch_through a port-forward: every failure names its hop."""

from __future__ import annotations

import os
import signal
import time

import anyio
import pytest

from harness.errors import PortForwardBroken, PortForwardDied, PortForwardGone, ServiceTimeout, ServiceUnreachable
from harness.fetch import fetch_through, fetch_through_sync
from harness.portforward import port_forward
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer


def test_exited_forward_is_refused_at_once(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port, stderr_banner="W1130 a client warning")
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        assert fwd.proc is not None
        os.kill(fwd.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while fwd.exit is None and time.monotonic() < deadline:
            time.sleep(0.01)
        start = time.monotonic()
        with pytest.raises(PortForwardGone, match="refused before sending") as caught:
            fetch_through_sync(fwd, "GET", "/ok", timeout=60.0)
        assert time.monotonic() - start < 10.0  # not the 60 s budget; the benchmark gives the real figure
        assert caught.value.hop == "port-forward"
        assert caught.value.exit_code == -9
        assert "W1130 a client warning" in caught.value.stderr_tail
    assert target.requests == []  # nothing was sent
    with pytest.raises(PortForwardGone):
        fetch_through_sync(fwd, "GET", "/ok", timeout=10.0)


def test_forward_closed_by_the_harness_is_refused(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        pass
    with pytest.raises(PortForwardGone, match="after the harness stopped it"):
        fetch_through_sync(fwd, "GET", "/ok", timeout=10.0)
    assert target.requests == []


def test_forward_dying_mid_request_is_reported_near_the_exit_not_at_the_timeout(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(mode="die-mid-request", after=1, delay=0.3, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        start = time.monotonic()
        with pytest.raises(PortForwardDied) as caught:
            fetch_through_sync(fwd, "GET", "/hang", timeout=20.0)
        raised = time.monotonic()
        assert raised - start < 10.0  # not the 20 s budget: the exit ended it (the benchmark gives the real figure)
        assert fwd.exit is not None
        assert not fwd.exit.stopped_by_harness
        assert fwd.exit.at <= raised
        err = caught.value
        assert err.hop == "port-forward"
        assert err.exit_code == 1
        assert "lost connection to pod" in err.stderr_tail
        assert "died mid-request" in str(err)
        assert "/hang" in str(err)


def test_forward_killed_during_a_hung_request_async(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    async def main() -> None:
        kubectl_standin.script(target_port=target.port)
        async with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
            assert fwd.proc is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_when_hung, target, fwd.proc.pid)
                start = time.monotonic()
                with pytest.raises(PortForwardDied) as caught:
                    await fetch_through(fwd, "GET", "/hang", timeout=20.0)
            assert time.monotonic() - start < 5.0
            assert caught.value.exit_code == -9
            assert "SIGKILL" in str(caught.value)

    anyio.run(main)


def test_the_exit_wakes_the_request_it_does_not_poll_for_it(
    kubectl_standin: KubectlStandIn, target: TargetServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the poll interval at a minute, a kill still ends the hung request at once: the change signal woke it."""
    monkeypatch.setattr("harness.fetch.WATCH_INTERVAL", 60.0)
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        assert fwd.proc is not None
        pid = fwd.proc.pid

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_when_hung, target, pid)
                with pytest.raises(PortForwardDied):
                    await fetch_through(fwd, "GET", "/hang", timeout=30.0)

        start = time.monotonic()
        anyio.run(main)
        assert time.monotonic() - start < 20.0  # far under the 60 s poll and the 30 s budget
        with fwd.change_signal() as wake:  # an exited forward's signal is readable at once
            assert wake.recv(16) == b"!"


def test_silent_service_behind_a_live_forward_is_a_service_timeout(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        with pytest.raises(ServiceTimeout) as caught:
            fetch_through_sync(fwd, "GET", "/hang", timeout=0.5)
        assert caught.value.hop == "service"
        assert caught.value.budget == pytest.approx(0.5)
        assert "/hang" in str(caught.value)
        assert "0.50s" in str(caught.value)
        assert "port-forward is alive" in str(caught.value)
        with pytest.raises(ServiceTimeout, match="headers received"):
            fetch_through_sync(fwd, "GET", "/drip?every=0.2&size=40", timeout=0.6)
        assert fwd.alive


def test_reset_behind_a_live_forward_is_unreachable_service_with_stderr(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port, stderr_banner="W1130 a client warning")
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        with pytest.raises(ServiceUnreachable) as caught:
            fetch_through_sync(fwd, "GET", "/reset", timeout=5.0)
        assert caught.value.hop == "service"
        assert "W1130 a client warning" in caught.value.stderr_tail
        assert "W1130 a client warning" in str(caught.value)


def test_forward_resetting_every_connection_is_blamed_on_the_forward(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(mode="reset-all", after=1, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        with pytest.raises(PortForwardBroken) as caught:
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)
        assert caught.value.hop == "port-forward"
        assert "an error occurred forwarding" in str(caught.value)
        sent = len(target.requests)
        start = time.monotonic()
        with pytest.raises(PortForwardBroken, match="refused before sending"):
            fetch_through_sync(fwd, "GET", "/ok", timeout=60.0)
        assert time.monotonic() - start < 10.0  # no budget spent
        assert len(target.requests) == sent  # nothing sent


def test_streams_are_closed_on_every_path(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        fds_before = len(os.listdir("/proc/self/fd"))
        for _ in range(12):
            with pytest.raises(ServiceTimeout):
                fetch_through_sync(fwd, "GET", "/drip?every=0.05&size=1000", timeout=0.1)
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=5.0).status_code == 200
        # The target server runs in this process: a dripping handler only sees the hang-up at its next write,
        # so its socket may close a moment later. Client sockets left open would never close: poll, bounded.
        deadline = time.monotonic() + 5.0
        while len(os.listdir("/proc/self/fd")) > fds_before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(os.listdir("/proc/self/fd")) <= fds_before


class _ExitingForward:
    """A forward whose kubectl "exits" at ``exit_at`` while its socket stays open (a helper outside the group
    holding it): only the recorded exit can end the request, so this isolates fetch_through's exit watch."""

    target = "svc/x"

    def __init__(self, base_url: str, exit_at: float) -> None:
        self.base_url, self.exit_at = base_url, exit_at

    def exit_summary(self) -> str | None:
        return "kubectl exited rc=1: error: lost connection to pod" if time.monotonic() >= self.exit_at else None

    def gone_reason(self) -> str | None:
        return self.exit_summary()

    def exit_code(self) -> int | None:
        return 1 if self.exit_summary() else None

    def broken_reason(self) -> str | None:
        return None

    def stderr_tail(self) -> str:
        return "error: lost connection to pod" if self.exit_summary() else ""

    def note_answer(self) -> None:
        pass

    def note_reset(self) -> None:
        pass


def test_recorded_exit_ends_a_request_whose_socket_stays_open(target: TargetServer) -> None:
    fwd = _ExitingForward(target.url, exit_at=time.monotonic() + 0.3)
    with pytest.raises(PortForwardDied, match="died mid-request") as caught:
        fetch_through_sync(fwd, "GET", "/hang", timeout=60.0)
    assert time.monotonic() - fwd.exit_at < 10.0  # only the watched exit can end it before the 60 s budget
    assert caught.value.exit_code == 1
    assert "lost connection to pod" in caught.value.stderr_tail


async def kill_when_hung(target: TargetServer, pid: int) -> None:
    """SIGKILL kubectl ``pid`` once the target holds the hung request."""
    while "/hang" not in target.requests:
        await anyio.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
