"""The harness's port-forward code (``PortForward``, ``ForwardPool``, ``fetch_through``) through the kubectl on PATH,
on both targets (specs/targets.py): the API double's kubelet, or the real kube-apiserver proxying to kwok.

A pod's container port reaches a local :class:`~harness.testing.target.TargetServer` through
:func:`specs.targets.route_ports` (the double's port annotation, or kwok's ``PortForward``). What differs is the
node's words, each asserted per target: the double's kubelet says what a real kubelet says (``failed to find
sandbox``, a refused dial); kwok says it has no route (``forward not found for port P``, ``no forward found ...``).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from harness import Kube
from harness.errors import PortForwardBroken, PortForwardDied, PortForwardGone, PortForwardNotReady
from harness.fetch import fetch_through, fetch_through_sync
from harness.forward_pool import ForwardPool
from harness.portforward import PortForward, port_forward
from harness.testing.target import TargetServer
from harness.waiting import wait_for
from specs.kube.kube_streams import no_leaks, sigkill_during_a_hung_request
from specs.targets import Target, double_with_kubectl, route_ports, unroute

pytestmark = pytest.mark.timeout(180)

READY = 60.0
"""Seconds a pod may take to be Ready: an upper bound that fails loudly, not a pace (both nodes start at once)."""
FETCH = 10.0
"""Seconds one request through a forward may take."""
NOT_ROUTED = {  # what the node says for a port nothing serves, by target
    "double": "dial tcp4 127.0.0.1:9090: connect: connection refused",
    "control-plane": "forward not found for port 9090 in pod",  # the pod has a route, not for this port
}
GONE = {  # what the node says for a stream to a pod whose container is gone, by target
    "double": "failed to find sandbox",
    "control-plane": "no forward found for port 8080 in pod",  # the pod has no route at all
}


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    yield from double_with_kubectl()


@pytest.fixture
def server() -> Iterator[TargetServer]:
    with no_leaks(), TargetServer() as serving:
        yield serving


def pod(target: Target, name: str, ports: dict[int, int], labels: dict[str, str] | None = None) -> None:
    """Create pod ``name`` (container ``app``) whose ``ports`` reach local ports; return once it is Ready."""
    notes = route_ports(target, name, ports)
    container = {"name": "app", "image": "registry.local/app:1", "ports": [{"containerPort": p} for p in ports]}
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": notes},
        "spec": {"containers": [container]},
    }
    target.kube.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    target.kube.kubectl("wait", "--for=condition=Ready", f"pod/{name}", f"--timeout={READY:.0f}s", timeout=READY + 10)


def service(kube: Kube, name: str, selector: dict[str, str], port: int, target_port: int) -> None:
    spec = {"selector": selector, "ports": [{"name": "http", "port": port, "targetPort": target_port}]}
    kube.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}),
    )


def test_a_forward_reaches_the_pods_port(target: Target, server: TargetServer) -> None:
    pod(target, "web-0", {8080: server.port})
    with port_forward(target.kube, "pod/web-0", 8080, ready_path="/healthz") as fwd:
        answer = fetch_through_sync(fwd, "GET", "/ok", timeout=FETCH)
    assert (answer.status_code, answer.text) == (200, "ok")
    assert server.requests == ["/healthz", "/ok"]


def test_a_service_forward_resolves_the_selector_and_target_port(target: Target, server: TargetServer) -> None:
    pod(target, "api-7d9f", {8080: server.port}, labels={"app": "api"})
    service(target.kube, "api", {"app": "api"}, 80, 8080)
    with port_forward(target.kube, "svc/api", 80) as fwd:
        assert fetch_through_sync(fwd, "GET", "/status/204", timeout=FETCH).status_code == 204
    assert server.requests[-1] == "/status/204"


def test_kubectl_sigkilled_during_a_hung_request_is_port_forward_died(target: Target, server: TargetServer) -> None:
    pod(target, "web-0", {8080: server.port})
    with PortForward(target.kube, "pod/web-0", 8080) as fwd:
        assert fwd.proc is not None

        died = sigkill_during_a_hung_request(fwd, server, timeout=2 * FETCH)
        assert died.exit_code == -signal.SIGKILL
        assert "kubectl killed by SIGKILL" in str(died)
        with pytest.raises(PortForwardGone):
            fetch_through_sync(fwd, "GET", "/ok", timeout=FETCH)


def test_a_port_nothing_serves_is_not_ready_with_the_nodes_words(target: Target, server: TargetServer) -> None:
    pod(target, "web-0", {8080: server.port})  # nothing routes 9090
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(target.kube, "pod/web-0", 9090, ready_timeout=READY / 3).start()
    assert NOT_ROUTED[target.name] in caught.value.stderr_tail
    assert "9090" in str(caught.value)


def test_the_pool_reopens_on_the_new_pod_after_the_pod_is_replaced(target: Target, server: TargetServer) -> None:
    kube = target.kube
    pod(target, "api-aaaa", {8080: server.port}, labels={"app": "api"})
    service(kube, "api", {"app": "api"}, 80, 8080)
    pool = ForwardPool(backoff=0.1, max_backoff=0.5)
    errors: list[BaseException] = []
    try:
        first = pool.get(kube, "svc/api", 80)
        assert fetch_through_sync(first, "GET", "/ok", timeout=FETCH).status_code == 200
        with TargetServer() as replacement:
            kube.kubectl("delete", "pod", "api-aaaa", "--wait=true", f"--timeout={READY:.0f}s", timeout=READY + 10)
            unroute(target, "api-aaaa")
            pod(target, "api-bbbb", {8080: replacement.port}, labels={"app": "api"})

            async def probe() -> int | None:
                fwd = await pool.aget(kube, "svc/api", 80)
                try:
                    answer = await fetch_through(fwd, "GET", "/ok", timeout=FETCH)
                except AssertionError as exc:
                    errors.append(exc)
                    raise
                return answer.status_code if answer.status_code == 200 else None

            status = anyio.run(
                lambda: wait_for("the service through a pooled forward", probe, timeout=READY, interval=0.05)
            )
            assert status == 200
            assert replacement.requests == ["/ok"]
        assert errors, "the forward pinned to the deleted pod should have failed once"
        assert all(isinstance(e, (PortForwardDied, PortForwardBroken, PortForwardGone)) for e in errors)
        assert GONE[target.name] in errors[0].stderr_tail  # type: ignore[attr-defined]
        assert pool.opened == 2
    finally:
        pool.close()


def test_a_service_that_selects_no_pod_fails_fast_naming_its_selector(target: Target) -> None:
    service(target.kube, "api", {"app": "nobody"}, 80, 8080)
    started = time.monotonic()
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(target.kube, "svc/api", 80, ready_timeout=READY).start()
    assert time.monotonic() - started < READY / 2  # not kubectl's silent minute, nor the whole budget
    first = str(caught.value).splitlines()[0]
    assert first == "port-forward svc/api :80 not ready: Service api selects no pod (selector app=nobody)"


def test_a_refused_forward_leads_with_the_nodes_words(target: Target, server: TargetServer) -> None:
    pod(target, "web-0", {8080: server.port})
    with pytest.raises(PortForwardNotReady) as caught:
        PortForward(target.kube, "pod/web-0", 9090, ready_timeout=READY / 3).start()
    first = str(caught.value).splitlines()[0]
    assert first.startswith(f"port-forward pod/web-0 :9090 not ready: {NOT_ROUTED[target.name]}"), first
