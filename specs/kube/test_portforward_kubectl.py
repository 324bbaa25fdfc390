"""The harness's port-forward code (``PortForward``, ``ForwardPool``, ``fetch_through``) driving the real kubectl
builds against the Kubernetes API double: what used to be scripted by the kubectl stand-in, now for real.

Every test runs once per kubectl build of the matrix (``kubectl_build``; see :mod:`fakes.kube.kubectl_builds`):
1.27-1.30 port-forward over the ``Upgrade: SPDY/3.1`` request, 1.31+ over the WebSocket tunnel.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import anyio
import pytest

from fakes.kube import KubeHandle, kubectl_builds
from fakes.kube.kubectl_builds import KubectlBuild
from harness.errors import (
    PortForwardBroken,
    PortForwardDied,
    PortForwardGone,
    PortForwardNotReady,
    ServiceTimeout,
    ServiceUnreachable,
)
from harness.fetch import fetch_through, fetch_through_sync
from harness.forward_pool import ForwardPool
from harness.portforward import PortForward, port_forward
from harness.testing.target import TargetServer
from harness.waiting import wait_for
from specs.kube.kube_streams import (
    double_for,
    forwarding,
    kube_for,
    no_leaks,
    running_pod,
    service,
    sigkill_during_a_hung_request,
    wait_until,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kdb(kubectl_env: KubectlBuild) -> Iterator[KubeHandle]:
    with no_leaks(), double_for(kubectl_env) as handle:
        yield handle


@pytest.fixture
def target() -> Iterator[TargetServer]:
    with TargetServer() as server:
        yield server


def test_a_forward_reaches_the_pods_mapped_port(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "web-0", ports={8080: target.port})
    with port_forward(kube_for(kdb, kubectl_env), "pod/web-0", 8080, ready_path="/healthz") as fwd:
        answer = fetch_through_sync(fwd, "GET", "/ok", timeout=10.0)
        tunnels = forwarding(kdb).tunnels(kdb.namespace, "web-0")
    assert answer.status_code == 200
    assert answer.text == "ok"
    assert target.requests == ["/healthz", "/ok"]
    assert [t.transport for t in tunnels] == [kubectl_env.portforward_transport]


def test_a_service_forward_resolves_the_selector_and_target_port(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "api-7d9f", labels={"app": "api"}, ports={8080: target.port})
    service(kdb, "api", {"app": "api"}, 80, 8080)
    with port_forward(kube_for(kdb, kubectl_env), "svc/api", 80) as fwd:
        assert fetch_through_sync(fwd, "GET", "/status/204", timeout=10.0).status_code == 204
    assert wait_until(lambda: forwarding(kdb).tunnels() == [], timeout=10.0)  # the tunnel ended with kubectl


def test_kubectl_sigkilled_during_a_hung_request_is_port_forward_died(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "web-0", ports={8080: target.port})
    with PortForward(kube_for(kdb, kubectl_env), "pod/web-0", 8080) as fwd:
        assert fwd.proc is not None

        died = sigkill_during_a_hung_request(fwd, target, timeout=20.0)
        assert died.exit_code == -signal.SIGKILL
        assert "kubectl killed by SIGKILL" in str(died)
        with pytest.raises(PortForwardGone):
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)


def test_a_stream_failed_by_the_double_mid_request_carries_kubectls_real_stderr(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "web-0", ports={8080: target.port})
    hub = forwarding(kdb)
    with PortForward(kube_for(kdb, kubectl_env), "pod/web-0", 8080) as fwd:

        async def main() -> None:
            async def fail_once_the_request_hangs() -> None:
                while "/hang" not in target.requests:
                    await anyio.sleep(0.01)
                await anyio.to_thread.run_sync(hub.fail_open, kdb.namespace, "web-0")

            async with anyio.create_task_group() as tg:
                tg.start_soon(fail_once_the_request_hangs)
                with pytest.raises((PortForwardDied, PortForwardBroken)) as caught:
                    await fetch_through(fwd, "GET", "/hang", timeout=20.0)
            stderr = caught.value.stderr_tail
            assert f"an error occurred forwarding {fwd.local_port} -> 8080" in stderr
            assert "read: connection reset by peer" in stderr

        anyio.run(main)
        assert wait_until(lambda: fwd.exit is not None, timeout=10.0)
        assert fwd.exit is not None
        assert fwd.exit.returncode == kubectl_env.lost_connection_exit_code
        assert "lost connection to pod" in fwd.exit.stderr_tail


def test_a_port_nothing_listens_on_is_not_ready_with_the_nodes_refusal(
    kdb: KubeHandle, kubectl_env: KubectlBuild
) -> None:
    running_pod(kdb, "web-0")  # no mapping for 9090: nothing listens there
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(kube_for(kdb, kubectl_env), "pod/web-0", 9090, ready_timeout=20.0).start()
    assert caught.value.exit_code == kubectl_env.lost_connection_exit_code  # the readiness probe's connection
    assert "dial tcp4 127.0.0.1:9090: connect: connection refused" in caught.value.stderr_tail
    assert "lost connection to pod" in caught.value.stderr_tail


def test_the_pool_reopens_on_the_new_pod_after_the_pod_is_replaced(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "api-aaaa", labels={"app": "api"}, ports={8080: target.port})
    service(kdb, "api", {"app": "api"}, 80, 8080)
    kube = kube_for(kdb, kubectl_env)
    pool = ForwardPool(backoff=0.1, max_backoff=0.5)
    errors: list[BaseException] = []
    try:
        first = pool.get(kube, "svc/api", 80)
        assert fetch_through_sync(first, "GET", "/ok", timeout=10.0).status_code == 200
        with TargetServer() as replacement:
            kdb.store.delete("pods", kdb.namespace, "api-aaaa", grace_seconds=30)  # as `kubectl delete pod` does
            assert wait_until(lambda: kdb.store.get("pods", kdb.namespace, "api-aaaa") is None, timeout=10.0)
            running_pod(kdb, "api-bbbb", labels={"app": "api"}, ports={8080: replacement.port})

            async def probe() -> int | None:
                fwd = await pool.aget(kube, "svc/api", 80)
                try:
                    answer = await fetch_through(fwd, "GET", "/ok", timeout=10.0)
                except AssertionError as exc:
                    errors.append(exc)
                    raise
                return answer.status_code if answer.status_code == 200 else None

            status = anyio.run(
                lambda: wait_for("the service through a pooled forward", probe, timeout=60.0, interval=0.05)
            )
            assert status == 200
            assert replacement.requests == ["/ok"]
        assert errors, "the forward pinned to the deleted pod should have failed once"
        assert all(isinstance(e, (PortForwardDied, PortForwardBroken, PortForwardGone)) for e in errors)
        assert "failed to find sandbox" in errors[0].stderr_tail  # type: ignore[attr-defined]
        assert pool.opened == 2
        assert wait_until(lambda: [t.pod for t in forwarding(kdb).tunnels()] == ["api-bbbb"], timeout=10.0)
    finally:
        pool.close()


def test_a_wedged_tunnel_leaves_kubectl_up_and_the_request_times_out(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "web-0", ports={8080: target.port})
    hub = forwarding(kdb)
    with PortForward(kube_for(kdb, kubectl_env), "pod/web-0", 8080) as fwd:
        hub.wedge(kdb.namespace, "web-0")
        with pytest.raises(ServiceTimeout):
            fetch_through_sync(fwd, "GET", "/ok", timeout=1.5)
        assert fwd.exit is None  # kubectl waits 30 s for the stream's reply, staying up meanwhile
        assert "/ok" not in target.requests
        hub.wedge(kdb.namespace, "web-0", False)
        assert fetch_through_sync(fwd, "GET", "/ok", timeout=10.0).status_code == 200
        assert hub.tunnels()[0].streams_ignored >= 1


def test_stopping_the_double_ends_the_forward_as_a_lost_connection(
    kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    with no_leaks():
        with double_for(kubectl_env) as kd:
            running_pod(kd, "web-0", ports={8080: target.port})
            fwd = PortForward(kube_for(kd, kubectl_env), "pod/web-0", 8080).start()
            try:
                assert fetch_through_sync(fwd, "GET", "/ok", timeout=10.0).status_code == 200
            except BaseException:
                fwd.close()
                raise
        try:  # the double said GOAWAY and closed the tunnel on its way out
            assert wait_until(lambda: fwd.exit is not None, timeout=10.0)
            assert fwd.exit is not None
            assert fwd.exit.returncode == kubectl_env.lost_connection_exit_code
            assert "lost connection to pod" in fwd.exit.stderr_tail
        finally:
            fwd.close()


def test_a_forward_over_tls_with_the_token(kubectl_env: KubectlBuild, target: TargetServer) -> None:
    with no_leaks(), double_for(kubectl_env, tls=True) as kd:
        running_pod(kd, "web-0", ports={8080: target.port})
        with port_forward(kube_for(kd, kubectl_env), "pod/web-0", 8080) as fwd:
            assert fetch_through_sync(fwd, "GET", "/ok", timeout=10.0).text == "ok"
        sent = kd.requests(path_prefix="/api/v1/namespaces/default/pods/web-0")
    assert sent
    assert all(e.headers.get("authorization") == "<redacted>" for e in sent)  # over TLS kubectl sends its token


def test_a_wedged_tunnel_is_marked_broken_once_kubectl_gives_up_on_the_stream(
    request: pytest.FixtureRequest, kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    if kubectl_builds.selection(request.config) != "all":
        pytest.skip("waits out kubectl's 30 s stream creation timeout: runs in `make matrix` only")
    running_pod(kdb, "web-0", ports={8080: target.port})
    with PortForward(kube_for(kdb, kubectl_env), "pod/web-0", 8080) as fwd:
        forwarding(kdb).wedge(kdb.namespace, "web-0")
        with pytest.raises(ServiceTimeout):
            fetch_through_sync(fwd, "GET", "/ok", timeout=1.0)
        assert wait_until(lambda: fwd.broken_reason() is not None, timeout=60.0, interval=0.1)
        assert "error creating error stream" in (fwd.broken_reason() or "")
        assert fwd.exit is None  # kubectl stays up: only the harness knows this forward is useless now
        with pytest.raises(PortForwardBroken, match="refused before sending"):
            fetch_through_sync(fwd, "GET", "/ok", timeout=5.0)


def test_deleting_the_pod_closes_its_open_connections_and_the_next_one_ends_kubectl(
    kdb: KubeHandle, kubectl_env: KubectlBuild, target: TargetServer
) -> None:
    running_pod(kdb, "web-0", ports={8080: target.port})
    with PortForward(kube_for(kdb, kubectl_env), "pod/web-0", 8080) as fwd:

        async def main() -> None:
            async def delete_once_the_request_hangs() -> None:
                while "/hang" not in target.requests:
                    await anyio.sleep(0.01)
                kdb.store.delete("pods", kdb.namespace, "web-0", grace_seconds=30)

            async with anyio.create_task_group() as tg:
                tg.start_soon(delete_once_the_request_hangs)
                with pytest.raises(ServiceUnreachable, match="closed without a complete answer"):
                    await fetch_through(fwd, "GET", "/hang", timeout=20.0)

        anyio.run(main)  # the app's socket died with its pod: an empty reply, kubectl still up (pinned to the pod)
        assert fwd.exit is None
        with pytest.raises((PortForwardDied, PortForwardBroken)) as caught:
            fetch_through_sync(fwd, "GET", "/ok", timeout=10.0)
        assert "failed to find sandbox" in caught.value.stderr_tail
