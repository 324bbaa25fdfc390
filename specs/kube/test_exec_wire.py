"""``pods/<name>/exec`` on the wire: WebSocket channel framing (v5 and v4), SPDY streams, and a client that leaves."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.exec import ExecRequest, ExecResult
from fakes.kube.spdy import DataFrame, FrameDecoder, FrameEncoder, GoAway, SynReply, SynStream
from specs.kube.kube_streams import no_leaks, running_pod, wait_until

BOUND = 10.0


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    with no_leaks(), fakes.kube.serve() as handle:
        yield handle


def exec_url(kd: KubeHandle, pod: str, command: list[str], **flags: str) -> str:
    query = urlencode([("command", c) for c in command] + list(flags.items()))
    return f"{kd.url}/api/v1/namespaces/{kd.namespace}/pods/{pod}/exec?{query}".replace("http", "ws", 1)


async def converse(url: str, protocol: str, send: list[bytes]) -> tuple[dict[int, bytes], aiohttp.WSMsgType]:
    """Send ``send`` messages, then collect output per channel until the server closes."""
    out: dict[int, bytes] = {}
    async with aiohttp.ClientSession() as session, session.ws_connect(url, protocols=(protocol,)) as ws:
        assert ws.protocol == protocol
        for chunk in send:
            await ws.send_bytes(chunk)
        while True:
            message = await asyncio.wait_for(ws.receive(), BOUND)
            if message.type != aiohttp.WSMsgType.BINARY:
                return out, message.type
            out[message.data[0]] = out.get(message.data[0], b"") + message.data[1:]


def test_v5_stdin_ends_with_the_close_message_and_the_status_comes_last(kd: KubeHandle) -> None:
    running_pod(kd, "api-0")

    async def echo(request: ExecRequest) -> int:
        data = b""
        while chunk := await request.read_stdin():
            data += chunk
        await request.write_stdout(data[::-1])
        await request.write_stderr(b"done")
        return 0

    kd.double.exec_handlers.set(kd.namespace, "api-0", echo)
    url = exec_url(kd, "api-0", ["rev"], stdin="true", stdout="true", stderr="true")
    out, end = asyncio.run(
        converse(url, "v5.channel.k8s.io", [b"\x00abc", b'\x04{"Width":80,"Height":24}', b"\x00def", b"\xff\x00"])
    )
    assert out[1] == b"fedcba"
    assert out[2] == b"done"
    assert json.loads(out[3])["status"] == "Success"
    assert end == aiohttp.WSMsgType.CLOSE


def test_v4_is_served_too(kd: KubeHandle) -> None:
    running_pod(kd, "api-0")
    kd.double.exec_handlers.set(kd.namespace, "api-0", lambda request: 9)
    out, _ = asyncio.run(converse(exec_url(kd, "api-0", ["x"], stdout="true"), "v4.channel.k8s.io", []))
    status = json.loads(out[3])
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "9"}]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"stdout": "true"}, "you must specify at least 1 command"),
        ({"command": "ls"}, "you must specify at least 1 of stdin, stdout, stderr"),
        ({"command": "ls", "stdout": "true", "container": "other"}, "container other is not valid for pod api-0"),
    ],
)
def test_requests_a_server_refuses_are_400_before_the_upgrade(
    kd: KubeHandle, query: dict[str, str], message: str
) -> None:
    running_pod(kd, "api-0")
    raw = kd.kubectl("get", "--raw", f"/api/v1/namespaces/{kd.namespace}/pods/api-0/exec?{urlencode(query)}")
    assert message in raw.stderr


def test_a_client_that_leaves_takes_the_host_command_with_it(kd: KubeHandle, tmp_path: Path) -> None:
    running_pod(kd, "tools-0", annotations={"double.stack-harness.dev/exec": "host"})
    pidfile = tmp_path / "pid"
    url = exec_url(kd, "tools-0", ["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], stdout="true")

    async def leave_early() -> None:
        async with aiohttp.ClientSession() as session, session.ws_connect(url, protocols=("v5.channel.k8s.io",)):
            deadline = time.monotonic() + BOUND
            while not pidfile.exists() or not pidfile.read_text().strip():
                assert time.monotonic() < deadline, "the host command never started"
                await asyncio.sleep(0.02)

    asyncio.run(leave_early())
    pid = int(pidfile.read_text())
    assert wait_until(lambda: not _alive(pid), timeout=BOUND), "the host command outlived its client"


def test_spdy_exec_answers_each_stream_then_writes_the_status_and_says_goaway(kd: KubeHandle) -> None:
    running_pod(kd, "api-0")
    kd.double.exec_handlers.set(kd.namespace, "api-0", lambda request: ExecResult(2, stdout="hi\n"))
    port = int(kd.url.rsplit(":", 1)[1])
    query = urlencode([("command", "x"), ("stdout", "true"), ("stderr", "true")])
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        sock.sendall(
            f"POST /api/v1/namespaces/{kd.namespace}/pods/api-0/exec?{query} HTTP/1.1\r\nHost: x\r\n"
            f"Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
            f"Content-Length: 0\r\n\r\n".encode()
        )
        raw = b""
        while b"\r\n\r\n" not in raw:  # like kubectl, wait for the 101 before speaking SPDY
            raw += sock.recv(4096)
        head, _, rest = raw.partition(b"\r\n\r\n")
        assert b"x-stream-protocol-version: v4.channel.k8s.io" in head.lower()
        encoder, decoder = FrameEncoder(), FrameDecoder()
        streams = [
            SynStream(1, {"streamtype": ["error"]}),
            SynStream(3, {"streamtype": ["stdout"]}),
            SynStream(5, {"streamtype": ["stderr"]}),
        ]
        sock.sendall(b"".join(encoder.encode(s) for s in streams))
        frames = decoder.feed(rest)
        while not any(isinstance(f, GoAway) for f in frames):
            chunk = sock.recv(65536)
            if not chunk:
                break
            frames += decoder.feed(chunk)
    assert [f for f in frames if isinstance(f, SynReply)] == [SynReply(1), SynReply(3), SynReply(5)]
    assert b"".join(f.data for f in frames if isinstance(f, DataFrame) and f.stream_id == 3) == b"hi\n"
    status = json.loads(b"".join(f.data for f in frames if isinstance(f, DataFrame) and f.stream_id == 1))
    assert status["details"]["causes"][0]["message"] == "2"
    assert isinstance(frames[-1], GoAway)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
