"""ForwardPool and the ``forwards`` fixture: one forward per key, reopened when dead or broken."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import anyio
import pytest

from harness.errors import ForwardLeak, PortForwardDied, PortForwardNotReady
from harness.fetch import fetch_through, fetch_through_sync
from harness.forward_pool import ForwardPool
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer
from harness.waiting import wait_for


@pytest.fixture
def pool() -> Iterator[ForwardPool]:
    pool = ForwardPool(backoff=0.2, max_backoff=0.4)
    yield pool
    pool.close()


def _wait_exit(fwd, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while fwd.exit is None and time.monotonic() < deadline:
        time.sleep(0.01)


def test_one_forward_per_key(pool: ForwardPool, kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    kube = kubectl_standin.kube()
    first = pool.get(kube, "svc/fake-github", 80)
    assert pool.get(kube, "svc/fake-github", 80) is first
    other = pool.get(kube, "svc/fake-github", 8080)
    assert other is not first
    assert pool.opened == 2
    assert pool.kubectl_versions == {kubectl_standin.path: "v1.32.0-standin"}
    assert fetch_through_sync(first, "GET", "/ok", timeout=5.0).status_code == 200


def test_dead_forward_is_reopened_as_a_new_child(
    pool: ForwardPool, kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port)
    kube = kubectl_standin.kube()
    first = pool.get(kube, "svc/x", 80)
    assert first.proc is not None
    os.kill(first.proc.pid, signal.SIGKILL)
    _wait_exit(first)
    second = pool.get(kube, "svc/x", 80)
    assert second is not first
    assert second.proc is not None
    assert second.proc.pid != first.proc.pid
    assert second.alive
    assert pool.opened == 2
    assert fetch_through_sync(second, "GET", "/ok", timeout=5.0).status_code == 200


def test_broken_forward_is_reopened(pool: ForwardPool, kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(mode="reset-all", after=1, target_port=target.port)
    kube = kubectl_standin.kube()
    first = pool.get(kube, "svc/x", 80)
    with pytest.raises(AssertionError):
        fetch_through_sync(first, "GET", "/ok", timeout=5.0)
    assert first.broken_reason() is not None
    assert first.proc is not None
    assert first.proc.poll() is None
    kubectl_standin.script(target_port=target.port)  # the replacement pod is healthy
    second = pool.get(kube, "svc/x", 80)
    assert second is not first
    assert first.exit is not None
    assert first.exit.stopped_by_harness
    assert fetch_through_sync(second, "GET", "/ok", timeout=5.0).text == "ok"


def test_failing_reopens_back_off_within_bounds(pool: ForwardPool, kubectl_standin: KubectlStandIn) -> None:
    kubectl_standin.script(mode="port-in-use")
    kube = kubectl_standin.kube()
    with pytest.raises(PortForwardNotReady):
        pool.get(kube, "svc/x", 80)
    start = time.monotonic()
    with pytest.raises(PortForwardNotReady):
        pool.get(kube, "svc/x", 80)
    second = time.monotonic() - start
    start = time.monotonic()
    with pytest.raises(PortForwardNotReady):
        pool.get(kube, "svc/x", 80)
    third = time.monotonic() - start
    assert second >= 0.15  # 0.2 s, then doubled...
    assert third >= 0.3
    assert third < 3.0  # ...but capped at max_backoff (0.4 s) plus the failed start itself


def test_close_fails_loudly_when_a_child_survives(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    pool = ForwardPool()
    fwd = pool.get(kubectl_standin.kube(), "svc/x", 80)
    real_close = fwd.close
    fwd.close = lambda: None  # type: ignore[method-assign]  # a stop that silently failed
    try:
        with pytest.raises(ForwardLeak, match=f"pid {fwd.proc.pid if fwd.proc else '?'}"):
            pool.close()
    finally:
        real_close()


def test_session_fixture_is_a_pool(forwards: ForwardPool) -> None:
    assert isinstance(forwards, ForwardPool)


def test_as_a_wait_for_probe_errors_are_failed_attempts_and_the_pool_reopens(
    pool: ForwardPool, kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kube = kubectl_standin.kube()
    kubectl_standin.script(mode="die-mid-request", after=1, delay=0.2, target_port=target.port)
    first = pool.get(kube, "svc/x", 80)
    kubectl_standin.script(target_port=target.port)  # the next kubectl finds a healthy pod
    errors: list[BaseException] = []

    async def probe() -> int | None:
        fwd = await pool.aget(kube, "svc/x", 80)
        try:
            answer = await fetch_through(fwd, "GET", "/hang" if fwd is first else "/ok", timeout=10.0)
        except AssertionError as exc:
            errors.append(exc)
            raise
        return answer.status_code if answer.status_code == 200 else None

    status = anyio.run(
        lambda: wait_for("the service to answer through the forward", probe, timeout=20.0, interval=0.05)
    )
    assert status == 200
    assert [type(e) for e in errors] == [PortForwardDied]
    assert pool.opened == 2
    assert first.exit is not None


def test_concurrent_async_gets_share_one_forward(
    pool: ForwardPool, kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(target_port=target.port)
    kube = kubectl_standin.kube()
    got = []

    async def main() -> None:
        async def one() -> None:
            got.append(await pool.aget(kube, "svc/x", 80))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)

    anyio.run(main)
    assert len({id(f) for f in got}) == 1
    assert pool.opened == 1
