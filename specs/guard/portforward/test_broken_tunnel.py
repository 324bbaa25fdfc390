"""A port-forward that stays alive but stops forwarding: every broken-tunnel line kubectl prints marks it broken,
a request hanging on it fails as the forward's failure (not the service's timeout), and the pool reopens it.

The lines are those client-go's ``tools/portforward/portforward.go`` prints in kubectl 1.27 to 1.33, with the
klog header kubectl puts in front of them; the stand-in prints them while it holds the request's connection.
"""

from __future__ import annotations

import time

import pytest

from harness.errors import PortForwardBroken, ServiceTimeout
from harness.fetch import fetch_through_sync
from harness.forward_pool import ForwardPool
from harness.portforward import BROKEN_MARKERS, port_forward
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer

BROKEN_LINES = [
    "error creating error stream for port 41234 -> 80: Timeout occurred",
    "error creating forwarding stream for port 41234 -> 80: Timeout occurred",
    "error reading from error stream for port 41234 -> 80: read tcp 10.0.0.2:50412->10.0.0.1:6443: i/o timeout",
    "an error occurred forwarding 41234 -> 80: error forwarding port 80 to pod 0123abcd, uid : failed to find "
    'sandbox "0123abcd" in store: not found',
    "error forwarding port 80 to pod 0123abcd, uid : exit status 1",
    "lost connection to pod",
    'error upgrading connection: error sending request: Post "https://127.0.0.1:6443/api/v1/namespaces/x/pods/'
    'p/portforward": dial tcp 127.0.0.1:6443: connect: connection refused',
    "error creating websocket transports: failed to dial: context deadline exceeded",
    "Timeout occurred",
]


def test_every_marker_has_a_real_line() -> None:
    assert all(any(marker in line for line in BROKEN_LINES) for marker in BROKEN_MARKERS)


@pytest.mark.parametrize("line", BROKEN_LINES)
def test_a_request_hanging_when_kubectl_reports_a_broken_tunnel_fails_as_the_forward(
    kubectl_standin: KubectlStandIn, target: TargetServer, line: str
) -> None:
    kubectl_standin.script(mode="tunnel-error", after=1, delay=0.3, line=line, keep_open=True, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        started = time.monotonic()
        with pytest.raises(PortForwardBroken) as caught:
            fetch_through_sync(fwd, "GET", "/ok", timeout=20.0)
        assert time.monotonic() - started < 10.0  # ended by the line, not by the 20 s budget
        assert caught.value.hop == "port-forward"
        assert "kubectl reported the tunnel broken while the request hung" in str(caught.value)
        assert line in str(caught.value)
        assert fwd.proc is not None
        assert fwd.proc.poll() is None  # kubectl is still running...
        assert not fwd.alive  # ...but the forward is known broken
        with pytest.raises(PortForwardBroken, match="refused before sending"):  # the next request is refused at once
            fetch_through_sync(fwd, "GET", "/ok", timeout=20.0)


def test_stream_creation_timeouts_fail_the_forward_and_the_pool_reopens_it(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    kubectl_standin.script(mode="tunnel-error", after=1, delay=0.3, target_port=target.port)
    pool = ForwardPool(backoff=0.1, max_backoff=0.2)
    try:
        kube = kubectl_standin.kube()
        first = pool.get(kube, "svc/x", 80)
        with pytest.raises(PortForwardBroken) as caught:
            fetch_through_sync(first, "GET", "/ok", timeout=20.0)
        assert "error creating error stream for port" in str(caught.value)
        assert "Timeout occurred" in str(caught.value)
        kubectl_standin.script(target_port=target.port)  # the tunnel of the new kubectl is healthy
        second = pool.get(kube, "svc/x", 80)
        assert second is not first
        assert pool.opened == 2
        assert fetch_through_sync(second, "GET", "/ok", timeout=10.0).text == "ok"
    finally:
        pool.close()


def test_a_local_client_reset_line_is_not_a_broken_tunnel(
    kubectl_standin: KubectlStandIn, target: TargetServer
) -> None:
    line = (
        "error copying from local connection to remote stream: read tcp4 127.0.0.1:41234->127.0.0.1:50122: "
        "read: connection reset by peer"
    )
    kubectl_standin.script(mode="tunnel-error", after=1, delay=0.1, line=line, keep_open=True, target_port=target.port)
    with port_forward(kubectl_standin.kube(), "svc/x", 80) as fwd:
        with pytest.raises(ServiceTimeout):
            fetch_through_sync(fwd, "GET", "/ok", timeout=1.5)
        assert fwd.broken_reason() is None
