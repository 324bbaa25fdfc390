"""``pods/<name>/portforward`` on the wire, driven byte by byte: both transports, stream pairs, faults, bad input.

A scripted SPDY client (this repository's codec) talks to the double over a real socket, so what kubectl cannot be
made to send (garbage, one-byte WebSocket messages, a missing subprotocol) is covered too.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import aiohttp
import pytest

import fakes.kube
from fakes.kube import KubeHandle, spdy
from fakes.kube.portforward import annotated_ports, parse_target, sandbox_id
from fakes.kube.spdy import DataFrame, FrameDecoder, FrameEncoder, GoAway, Ping, RstStream, SynReply, SynStream
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


def pair(request_id: int, port: int) -> list[SynStream]:
    """kubectl's two streams for one local connection: error first, then data."""
    base = {"port": [str(port)], "requestid": [str(request_id)]}
    return [
        SynStream(4 * request_id + 1, {"streamtype": ["error"], **base}),
        SynStream(4 * request_id + 3, {"streamtype": ["data"], **base}),
    ]


class WsClient:
    """The WebSocket tunnel as kubectl >= 1.31 uses it, with SPDY bytes cut into messages of ``chunk`` bytes."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, chunk: int) -> None:
        self.ws, self.chunk = ws, chunk
        self.encoder, self.decoder = FrameEncoder(), FrameDecoder()

    async def send(self, *frames: spdy.Frame) -> None:
        wire = b"".join(self.encoder.encode(f) for f in frames)
        for at in range(0, len(wire), self.chunk):
            await self.ws.send_bytes(wire[at : at + self.chunk])

    async def frames_until(self, done: object) -> list[spdy.Frame]:
        got: list[spdy.Frame] = []
        while True:
            message = await asyncio.wait_for(self.ws.receive(), BOUND)
            if message.type != aiohttp.WSMsgType.BINARY:
                return got
            got += self.decoder.feed(message.data)
            if callable(done) and done(got):
                return got


def ws_url(kd: KubeHandle, pod: str) -> str:
    return f"{kd.url}/api/v1/namespaces/{kd.namespace}/pods/{pod}/portforward".replace("http", "ws", 1)


async def _tunnel(kd: KubeHandle, pod: str, chunk: int, exchange) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            ws_url(kd, pod), protocols=("SPDY/3.1+portforward.k8s.io",), timeout=aiohttp.ClientWSTimeout(BOUND)
        ) as ws,
    ):
        assert ws.protocol == "SPDY/3.1+portforward.k8s.io"
        await exchange(WsClient(ws, chunk))


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_the_websocket_tunnel_reassembles_spdy_cut_anywhere(kd: KubeHandle, target: TargetServer, chunk: int) -> None:
    running_pod(kd, "web-0", ports={8080: target.port})

    async def exchange(client: WsClient) -> None:
        error, data = pair(0, 8080)
        await client.send(error, data, DataFrame(data.stream_id, b"GET /ok HTTP/1.0\r\n\r\n"), Ping(1))
        got = await client.frames_until(lambda fs: sum(isinstance(f, DataFrame) and f.fin for f in fs) == 2)
        assert got.index(SynReply(error.stream_id)) < got.index(SynReply(data.stream_id))
        assert Ping(1) in got
        body = b"".join(f.data for f in got if isinstance(f, DataFrame) and f.stream_id == data.stream_id)
        assert body.startswith(b"HTTP/1.0 200")
        assert body.endswith(b"ok")
        fins = [f.stream_id for f in got if isinstance(f, DataFrame) and f.fin]
        assert fins == [error.stream_id, data.stream_id]  # the error stream ends too, first (kubectl waits on it)
        assert not [f for f in got if isinstance(f, DataFrame) and f.stream_id == error.stream_id and f.data]

    asyncio.run(asyncio.wait_for(_tunnel(kd, "web-0", chunk, exchange), 3 * BOUND))
    assert target.requests == ["/ok"]


def test_a_failed_stream_carries_the_nodes_message_on_the_error_stream(kd: KubeHandle, target: TargetServer) -> None:
    pod = running_pod(kd, "web-0", ports={8080: target.port})
    kd.portforward.fail_next(kd.namespace, "web-0", message="boom")

    async def exchange(client: WsClient) -> None:
        error, data = pair(0, 8080)
        await client.send(error, data, DataFrame(data.stream_id, b"GET /ok HTTP/1.0\r\n\r\n"))
        got = await client.frames_until(lambda fs: sum(isinstance(f, DataFrame) and f.fin for f in fs) == 2)
        text = b"".join(f.data for f in got if isinstance(f, DataFrame) and f.stream_id == error.stream_id)
        sandbox = sandbox_id(pod["metadata"]["uid"])
        assert text.decode() == f"error forwarding port 8080 to pod {sandbox}, uid : boom"

    asyncio.run(asyncio.wait_for(_tunnel(kd, "web-0", 4096, exchange), 3 * BOUND))
    assert target.requests == []  # failed before the request reached the pod


def test_garbage_in_the_tunnel_gets_goaway_and_the_double_serves_on(kd: KubeHandle) -> None:
    running_pod(kd, "web-0")

    async def exchange(client: WsClient) -> None:
        await client.ws.send_bytes(b"\x80\x09\x00\x01" + b"\x00" * 12)  # a control frame of SPDY version 9
        got = await client.frames_until(None)
        assert got == [GoAway(0, spdy.GoAwayStatus.PROTOCOL_ERROR)]

    asyncio.run(asyncio.wait_for(_tunnel(kd, "web-0", 4096, exchange), 3 * BOUND))
    assert kd.kubectl("get", "pod", "web-0", "-o", "name").stdout.strip() == "pod/web-0"
    assert wait_until(lambda: kd.portforward.tunnels() == [], timeout=BOUND)


def test_a_websocket_without_a_port_forward_subprotocol_is_refused_with_a_status(kd: KubeHandle) -> None:
    running_pod(kd, "web-0")

    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await session.ws_connect(ws_url(kd, "web-0"), protocols=("v5.channel.k8s.io",))
            assert caught.value.status == 400

    asyncio.run(asyncio.wait_for(main(), BOUND))


def _upgrade(kd: KubeHandle, pod: str, protocol: str = "portforward.k8s.io") -> tuple[socket.socket, bytes]:
    """POST with ``Upgrade: SPDY/3.1`` (kubectl <= 1.30); the socket and the response head."""
    port = int(kd.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    sock.sendall(
        f"POST /api/v1/namespaces/{kd.namespace}/pods/{pod}/portforward HTTP/1.1\r\nHost: x\r\n"
        f"Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: {protocol}\r\n"
        f"Content-Length: 0\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, f"connection closed after {head!r}"
        head += chunk
    return sock, head


def test_the_spdy_upgrade_switches_protocols_and_speaks_spdy_on_the_socket(
    kd: KubeHandle, target: TargetServer
) -> None:
    running_pod(kd, "web-0", ports={8080: target.port})
    sock, head = _upgrade(kd, "web-0")
    with sock:
        status, _, headers = head.partition(b"\r\n")
        assert status == b"HTTP/1.1 101 Switching Protocols"
        lowered = headers.lower()
        assert b"upgrade: spdy/3.1" in lowered
        assert b"x-stream-protocol-version: portforward.k8s.io" in lowered
        encoder, decoder = FrameEncoder(), FrameDecoder()
        error, data = pair(0, 8080)
        sock.sendall(
            b"".join(
                encoder.encode(f)
                for f in (error, data, DataFrame(data.stream_id, b"GET /ok HTTP/1.0\r\n\r\n"), Ping(3))
            )
        )
        got = decoder.feed(head.partition(b"\r\n\r\n")[2])
        while sum(isinstance(f, DataFrame) and f.fin for f in got) < 2:
            chunk = sock.recv(65536)
            assert chunk, f"closed early after {got}"
            got += decoder.feed(chunk)
        assert Ping(3) in got
        assert b"ok" in b"".join(f.data for f in got if isinstance(f, DataFrame))


def test_a_spdy_upgrade_for_another_stream_protocol_is_forbidden(kd: KubeHandle) -> None:
    running_pod(kd, "web-0")
    sock, head = _upgrade(kd, "web-0", protocol="v4.channel.k8s.io")
    with sock:
        assert head.startswith(b"HTTP/1.1 403")


def test_a_plain_get_is_told_to_upgrade_and_a_missing_pod_is_404(kd: KubeHandle) -> None:
    running_pod(kd, "web-0")
    assert (
        "Upgrade request required"
        in kd.kubectl("get", "--raw", f"/api/v1/namespaces/{kd.namespace}/pods/web-0/portforward").stderr
    )
    assert 'pods "nope" not found' in kd.kubectl("port-forward", "pod/nope", ":80").stderr


def test_mappings_from_python_win_over_annotations(kd: KubeHandle, target: TargetServer) -> None:
    running_pod(kd, "web-0", ports={8080: 9})  # the annotation points at the discard port
    kd.portforward.map(kd.namespace, "web-0", 8080, "127.0.0.1", target.port)

    async def exchange(client: WsClient) -> None:
        error, data = pair(0, 8080)
        await client.send(error, data, DataFrame(data.stream_id, b"GET /ok HTTP/1.0\r\n\r\n"))
        await client.frames_until(lambda fs: sum(isinstance(f, DataFrame) and f.fin for f in fs) == 2)

    asyncio.run(asyncio.wait_for(_tunnel(kd, "web-0", 4096, exchange), 3 * BOUND))
    assert target.requests == ["/ok"]


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("127.0.0.1:5555", ("127.0.0.1", 5555)),
        ("[::1]:80", ("::1", 80)),
        ("5555", ("127.0.0.1", 5555)),
        ("host:0", None),
        ("host:99999", None),
        ("nonsense", None),
    ],
)
def test_port_annotation_values(value: str, parsed: tuple[str, int] | None) -> None:
    assert parse_target(value) == parsed


def test_annotated_ports_read_only_the_port_annotations() -> None:
    pod = {
        "metadata": {
            "annotations": {
                "double.stack-harness.dev/port-8080": "127.0.0.1:1234",
                "double.stack-harness.dev/port-x": "127.0.0.1:1",
                "double.stack-harness.dev/port-90": "garbage",
                "other/port-70": "127.0.0.1:2",
            }
        }
    }
    assert annotated_ports(pod) == {8080: ("127.0.0.1", 1234)}


def test_fail_next_refuses_a_count_below_one(kd: KubeHandle) -> None:
    with pytest.raises(ValueError, match="times must be >= 1"):
        kd.portforward.fail_next(kd.namespace, "web-0", times=0)


class _HalfCloseTarget:
    """Reads until the client's FIN, then answers how many bytes it got and closes; records how each ended."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(BOUND)
        self.port = self.sock.getsockname()[1]
        self.ended: list[str] = []

    def serve_one(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(BOUND)
            got = 0
            try:
                while chunk := conn.recv(65536):
                    got += len(chunk)
                self.ended.append("fin")
                conn.sendall(f"got {got} bytes".encode())
            except ConnectionResetError:
                self.ended.append("reset")
            except TimeoutError:
                self.ended.append("timeout")


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_a_client_fin_half_closes_toward_the_pod_and_a_reset_closes(kd: KubeHandle, how: str) -> None:
    target = _HalfCloseTarget()
    serving = threading.Thread(target=target.serve_one)
    serving.start()
    running_pod(kd, "web-0", ports={8080: target.port})

    async def exchange(client: WsClient) -> None:
        error, data = pair(0, 8080)
        await client.send(error, data, DataFrame(data.stream_id, b"x" * 1000))
        if how == "fin":
            await client.send(DataFrame(data.stream_id, b"", fin=True))
            got = await client.frames_until(lambda fs: sum(isinstance(f, DataFrame) and f.fin for f in fs) == 2)
            answer = b"".join(f.data for f in got if isinstance(f, DataFrame) and f.stream_id == data.stream_id)
            assert answer == b"got 1000 bytes"  # the pod still answered after the client's half-close
        else:
            await client.frames_until(lambda fs: SynReply(data.stream_id) in fs)
            assert kd.portforward.wait_connections(kd.namespace, "web-0", 1, BOUND)
            await client.send(RstStream(data.stream_id, spdy.RstStatus.CANCEL))
            await asyncio.sleep(0.2)

    try:
        asyncio.run(asyncio.wait_for(_tunnel(kd, "web-0", 4096, exchange), 3 * BOUND))
    finally:
        serving.join(2 * BOUND)
        target.sock.close()
    assert target.ended == ["fin"]  # after a FIN the pod answered; after a reset its socket was closed (EOF there)
