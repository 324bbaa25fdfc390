"""Port-forward over the WebSocket channel protocols (``v4.channel.k8s.io``, ``v4.base64.channel.k8s.io``): the
``kubernetes`` Python client's ``stream.portforward()`` reaches a pod's port through the double, and the framing is
checked byte by byte against the kubelet's (``pkg/kubelet/cri/streaming/portforward/websocket.go``: two channels per
port, the port number little-endian as each channel's first message, ``ports`` from the query) and apimachinery's
``pkg/util/httpstream/wsstream/conn.go`` (channel byte, or ASCII digit plus base64 in the text protocol)."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import Iterator
from typing import Any

import aiohttp
import httpx
import pytest
from kubernetes import config as kube_config

import fakes.kube
from fakes.kube import KubeHandle
from harness.testing.target import TargetServer
from specs.kube.kube_streams import no_leaks, running_pod, wait_until

BOUND = 10.0


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    with no_leaks(), fakes.kube.serve() as handle:
        yield handle


@pytest.fixture
def target() -> Iterator[TargetServer]:
    with TargetServer() as server:
        yield server


def _http_get(sock: socket.socket, path: str) -> bytes:
    """An HTTP/1.0 exchange over ``sock``: the whole answer, up to the server's close."""
    sock.settimeout(BOUND)
    sock.sendall(f"GET {path} HTTP/1.0\r\nHost: pod\r\n\r\n".encode())
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def _python_client_forward(api: Any, namespace: str, port: str) -> Any:
    """``kubernetes.stream.portforward`` to pod web-0. Imported here: the client's API classes load every model, half
    a second of each xdist worker's collection for the two specs that use them."""
    from kubernetes.client import CoreV1Api
    from kubernetes.stream import portforward

    return portforward(CoreV1Api(api).connect_get_namespaced_pod_portforward, "web-0", namespace, ports=port)


def test_the_python_client_portforward_reaches_the_pods_port(kd: KubeHandle, target: TargetServer) -> None:
    running_pod(kd, "web-0", ports={8080: target.port})
    api = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
    try:
        forward = _python_client_forward(api, kd.namespace, "8080")
        answer = _http_get(forward.socket(8080), "/ok")
        assert answer.startswith(b"HTTP/1.0 200"), answer[:200]
        assert answer.endswith(b"ok")
        assert forward.error(8080) is None
        assert target.requests == ["/ok"]
        forward.close()
    finally:
        api.close()
    assert wait_until(lambda: kd.portforward.tunnels() == [], timeout=BOUND)


def test_an_unreachable_port_reports_the_kubelets_error_to_the_python_client(kd: KubeHandle) -> None:
    running_pod(kd, "web-0")
    api = kube_config.new_client_from_config(config_file=kd.kubeconfig, context=kd.context)
    try:
        forward = _python_client_forward(api, kd.namespace, "9999")
        sock = forward.socket(9999)
        sock.settimeout(BOUND)
        assert sock.recv(10) == b""  # the client closes the local socket when the error channel speaks
        assert wait_until(lambda: forward.error(9999) is not None, timeout=BOUND)
        error = forward.error(9999) or ""
        assert error.startswith("error forwarding port 9999 to pod "), error
        assert "connect: connection refused" in error
        forward.close()
    finally:
        api.close()
    assert wait_until(lambda: kd.portforward.tunnels() == [], timeout=BOUND)


def _url(kd: KubeHandle, query: str) -> str:
    base = f"{kd.url}/api/v1/namespaces/{kd.namespace}/pods/web-0/portforward".replace("http", "ws", 1)
    return f"{base}?{query}"


async def _exchange(kd: KubeHandle, protocol: str | None, query: str) -> list[tuple[int, bytes]]:
    """Open the WebSocket, send one HTTP request on each data channel (0 and 2), and collect ``(channel, data)``
    until it closes."""
    received: list[tuple[int, bytes]] = []
    text = protocol == "v4.base64.channel.k8s.io"
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            _url(kd, query), protocols=(protocol,) if protocol else (), timeout=aiohttp.ClientWSTimeout(BOUND)
        ) as ws,
    ):
        assert ws.protocol == protocol
        request = b"GET /ok HTTP/1.0\r\n\r\n"
        for channel in (0, 2):  # each port's connection answers one request, then its target closes it
            if text:
                await ws.send_str(str(channel) + base64.b64encode(request).decode())
            else:
                await ws.send_bytes(bytes((channel,)) + request)
        while True:
            message = await asyncio.wait_for(ws.receive(), BOUND)
            if message.type == aiohttp.WSMsgType.TEXT:
                assert text, "a text message on the binary protocol"
                received.append((ord(message.data[0]) - ord("0"), base64.b64decode(message.data[1:])))
            elif message.type == aiohttp.WSMsgType.BINARY:
                assert not text, "a binary message on the base64 protocol"
                received.append((message.data[0], bytes(message.data[1:])))
            else:
                return received


@pytest.mark.parametrize("protocol", ["v4.channel.k8s.io", "v4.base64.channel.k8s.io", None])
def test_channel_framing_matches_the_kubelets(kd: KubeHandle, target: TargetServer, protocol: str | None) -> None:
    running_pod(kd, "web-0", ports={8080: target.port, 8081: target.port})
    received = asyncio.run(_exchange(kd, protocol, "ports=8080,8081"))
    port_bytes = {0: b"\x90\x1f", 1: b"\x90\x1f", 2: b"\x91\x1f", 3: b"\x91\x1f"}  # 8080, 8081 little-endian
    assert sorted(received[:4]) == sorted(port_bytes.items())
    for channel in (0, 2):
        data = b"".join(d for c, d in received[4:] if c == channel)
        assert data.startswith(b"HTTP/1.0 200")
        assert data.endswith(b"ok")
    assert [c for c, d in received[4:] if c % 2 and d] == []  # no error text on any error channel
    assert wait_until(lambda: kd.portforward.tunnels() == [], timeout=BOUND)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", 'query parameter "port" is required'),
        ("ports=http", 'unable to parse "http" as a port'),
        ("ports=0", 'port "0" must be > 0'),
    ],
)
def test_bad_ports_are_400s_in_the_kubelets_words(kd: KubeHandle, query: str, message: str) -> None:
    running_pod(kd, "web-0")
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": base64.b64encode(b"0123456789abcdef").decode(),
        "Sec-WebSocket-Protocol": "v4.channel.k8s.io",
    }
    url = _url(kd, query).replace("ws", "http", 1)
    with httpx.Client(verify=False, timeout=BOUND) as http:
        answer = http.get(url, headers=upgrade)
    assert answer.status_code == 400
    assert answer.json()["kind"] == "Status"
    assert message in answer.json()["message"]


def test_a_websocket_offering_no_port_forward_protocol_is_refused(kd: KubeHandle) -> None:
    running_pod(kd, "web-0")

    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await session.ws_connect(_url(kd, "ports=8080"), protocols=("v5.channel.k8s.io",))
            assert caught.value.status == 400

    asyncio.run(asyncio.wait_for(main(), BOUND))
