"""``pods/<name>/portforward``: kubectl's port-forward served over SPDY/3.1, on both transports, with faults.

Transports (one handler serves both; which one a kubectl uses is in :mod:`fakes.kube.kubectl_builds`):

- the WebSocket tunnel (kubectl >= 1.31): ``GET`` upgrading to a WebSocket with subprotocol
  ``SPDY/3.1+portforward.k8s.io``; binary messages then carry raw SPDY bytes cut anywhere (client-go
  ``tools/portforward/tunneling_connection.go``), so frames are reassembled by :class:`~fakes.kube.spdy.FrameDecoder`.
  A request offering neither it nor a channel protocol gets a 400, which makes kubectl fall back to the SPDY
  upgrade; ``v4.channel.k8s.io`` and ``v4.base64.channel.k8s.io`` (the Python client) are served by
  :mod:`fakes.kube.portforward_channels`;
- the SPDY upgrade (kubectl <= 1.30, or ``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``): ``POST`` with ``Upgrade:
  SPDY/3.1`` and ``X-Stream-Protocol-Version: portforward.k8s.io``, answered ``101 Switching Protocols`` with the
  same headers; SPDY then runs on the raw socket.

The stream protocol (``portforward.k8s.io``, kubelet ``pkg/kubelet/cri/streaming/portforward/httpstream.go``): for
each local connection kubectl opens two streams sharing ``requestid`` and ``port`` headers, ``streamtype: error``
then ``streamtype: data``. Each is answered with an empty SYN_REPLY at once. The data stream relays bytes to the
pod's port; the error stream carries nothing unless forwarding fails, in which case it carries one message and
kubectl prints ``an error occurred forwarding L -> P: <message>``, then (since 1.23) ``lost connection to pod``, and
exits (code 1 since 1.27). When the target closes, the error stream and then the data stream are FINed (kubectl
waits for the error stream's end). A client FIN on the data stream half-closes the target socket; a client RST
closes it.

Where a pod's port goes: ``PortMap`` from Python (``double.ports.map(ns, pod, 8080, "127.0.0.1", 5555)``), else the
pod's annotation ``double.stack-harness.dev/port-8080: "127.0.0.1:5555"`` (set it on a pod template: controllers copy
template annotations to pods). With neither, or a target refusing the connection, the error stream carries the
connection-refused message a containerd node gives.

A pod of the local-process contract (:mod:`fakes.kube.local_process`, annotation ``stack-harness.dev/local-process``)
needs neither: the kubelet maps each run's container ports to the local ports its process listens on
(``Launch.ports``), replaces them when the container restarts and clears them when the pod goes, so ``kubectl
port-forward pod/x 8080`` reaches the process's socket.

Faults (:class:`PortForwarding`, thread-safe, from Python):

- :meth:`~PortForwarding.fail_open` fails the pod's connections open right now (a request in flight), and
  :meth:`~PortForwarding.fail_next` arms the next connections to fail once the client has sent its first bytes;
  either way the error stream carries ``read: connection reset by peer`` (or your text) as a node would;
- :meth:`~PortForwarding.wedge`: tunnels to the pod stop answering new streams (no SYN_REPLY) while staying open and
  answering pings; kubectl's stream creation times out after 30 s (``error creating error stream``);
- deleting the pod: its open connections are closed from the pod side (the app's sockets die with it), and any
  later connection over the same tunnel gets ``failed to find sandbox "<id>" in store: not found``, as kubectl,
  pinned to the pod it resolved at start, meets on a real cluster.

Messages follow the CRI streaming server's form ``error forwarding port P to pod <sandbox id>, uid : <cause>``
(the kubelet passes the sandbox id, not the pod name, and an empty uid); the sandbox id here is derived from the
pod's uid. Every tunnel ends when the client goes away or the double stops (GOAWAY, then close).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import WSMsgType, web

from fakes.kube import portforward_channels, spdy
from fakes.kube.errors import ApiError, bad_request
from fakes.kube.portforward_tunnels import Connection, Pair, Tunnel, netns_path
from fakes.kube.portforward_tunnels import TunnelInfo as TunnelInfo  # public here: tunnels() returns it
from fakes.kube.portforward_tunnels import sandbox_id as sandbox_id  # public here: the id in every message

if TYPE_CHECKING:
    from fakes.kube.double_api import DoubleApi as KubeDouble  # the double imports this module: no import back
    from fakes.kube.extensions import SubresourceContext
    from fakes.kube.store import StoreEvent

log = logging.getLogger("fakes.kube.portforward")

ANNOTATION_PREFIX = "double.stack-harness.dev/"
PORT_ANNOTATION = re.compile(r"^double\.stack-harness\.dev/port-(\d+)$")
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
"""WebSocket subprotocol of the tunnel (kubectl >= 1.31)."""
STREAM_PROTOCOL = "portforward.k8s.io"
"""``X-Stream-Protocol-Version`` of the SPDY upgrade."""

CONNECT_TIMEOUT = 5.0
"""Seconds to connect to a mapped target before reporting it unreachable."""
PAIR_TIMEOUT = 30.0
"""Seconds the first stream of a pair waits for its partner (the kubelet's stream creation timeout)."""
STOP_TIMEOUT = 2.0
"""Seconds a tunnel gets to say GOAWAY and close when the double stops."""

T = TypeVar("T")


def annotated_ports(pod: dict[str, Any]) -> dict[int, tuple[str, int]]:
    """``double.stack-harness.dev/port-<P>: "host:port"`` annotations of ``pod``, as ``{P: (host, port)}``.
    Malformed values are skipped (the pod then looks like nothing listens there)."""
    ports: dict[int, tuple[str, int]] = {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for key, value in annotations.items():
        match = PORT_ANNOTATION.match(str(key))
        target = parse_target(str(value))
        if match and target is not None:
            ports[int(match.group(1))] = target
    return ports


def parse_target(value: str) -> tuple[str, int] | None:
    """``"127.0.0.1:5555"`` / ``"[::1]:5555"`` / ``"5555"`` (127.0.0.1) as ``(host, port)``, or ``None``."""
    host, sep, port = value.strip().rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value.strip()
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


@dataclass
class _PodFaults:
    fail_next: int = 0
    """Connections still to fail on their first client bytes (-1: all, until cleared)."""
    fail_message: str | None = None
    wedged: bool = False


class PortForwarding:
    """Port-forward for one double: the ``pods/portforward`` handler, live tunnels, and the faults API.

    Build with :meth:`install` (registers the subresource handler). Every public method is thread-safe and
    bounded (it may be called from a test's thread while the double serves on its own loop).
    """

    def __init__(self, double: KubeDouble) -> None:
        self.double = double
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, str], _PodFaults] = {}
        self._tunnels: set[Tunnel] = set()
        self._changed = threading.Condition(self._lock)
        self._subscribed = False

    @classmethod
    def install(cls, double: KubeDouble) -> PortForwarding:
        """A hub for ``double`` serving ``pods/<name>/portforward``."""
        hub = cls(double)
        double.subresources.register("pods", "portforward", hub.handle)
        return hub

    # --- the Python API --------------------------------------------------------------------------------------

    def map(self, namespace: str, pod: str, container_port: int, host: str, port: int) -> None:
        """Forward ``container_port`` of ``pod`` to ``host:port`` (takes precedence over annotations)."""
        self.double.ports.map(namespace, pod, container_port, host, port)

    def fail_next(self, namespace: str, pod: str, *, times: int | None = 1, message: str | None = None) -> None:
        """Fail the next ``times`` connections to ``pod`` (``None``: every one until :meth:`clear_faults`) once the
        client has sent its first bytes (mid-request): ``message`` (default: a connection reset) goes on the error
        stream, both streams end, kubectl prints its error and ``lost connection to pod`` and exits."""
        if times is not None and times < 1:
            raise ValueError(f"fail_next: times must be >= 1 or None, got {times!r}")
        with self._lock:
            faults = self._faults.setdefault((namespace, pod), _PodFaults())
            faults.fail_next = -1 if times is None else times
            faults.fail_message = message

    def fail_open(self, namespace: str, pod: str, *, message: str | None = None, timeout: float = 5.0) -> int:
        """Fail every connection to ``pod`` open now (a request in flight); returns how many were failed."""

        def fail() -> int:
            count = 0
            for tunnel in self._tunnels_of(namespace, pod):
                for conn in list(tunnel.connections):
                    conn.fail(tunnel.error_text(conn.pair.port, message or _reset_cause(conn.pair.port)))
                    count += 1
            return count

        return self._on_loop(fail, timeout)

    def wedge(self, namespace: str, pod: str, wedged: bool = True) -> None:
        """Make tunnels to ``pod`` (open ones and later ones) stop answering new streams, staying open; ``wedged=
        False`` undoes it. Connections already relaying go on."""
        with self._lock:
            self._faults.setdefault((namespace, pod), _PodFaults()).wedged = wedged
            self._apply_wedges()

    def clear_faults(self, namespace: str | None = None, pod: str | None = None) -> None:
        """Forget armed failures and wedges (for one pod, or all). Open wedged tunnels answer again."""
        with self._lock:
            for key in [k for k in self._faults if namespace is None or k == (namespace, pod)]:
                del self._faults[key]
            self._apply_wedges()

    def tunnels(self, namespace: str | None = None, pod: str | None = None) -> list[TunnelInfo]:
        """Snapshots of the open tunnels (to one pod, or all)."""
        with self._lock:
            return [
                t.info()
                for t in self._tunnels
                if (namespace is None or t.namespace == namespace) and (pod is None or t.pod_name == pod)
            ]

    def wait_connections(self, namespace: str, pod: str, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` connections to ``pod`` are relaying; False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (
                sum(t.info().connections for t in self._tunnels if t.namespace == namespace and t.pod_name == pod)
                < count
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def reset(self) -> None:
        """Forget faults (the double's reset); tunnels stay until their clients go."""
        self.clear_faults()

    # --- the handler -------------------------------------------------------------------------------------------

    async def handle(self, ctx: SubresourceContext) -> web.StreamResponse:
        """Serve one ``pods/<name>/portforward`` request on either transport (400 for anything else)."""
        request = ctx.request
        upgrade = request.headers.get("Upgrade", "").lower()
        if upgrade == "websocket":
            offered = _tokens(request.headers.getall("Sec-WebSocket-Protocol", []))
            if TUNNEL_PROTOCOL in offered:
                return await self._serve_websocket(ctx)
            if portforward_channels.offered(offered):
                return await portforward_channels.serve(self, ctx, offered)
            raise bad_request(
                f"unable to upgrade connection: requested protocol(s) are not supported: {sorted(offered)}; "
                f"supports [{TUNNEL_PROTOCOL} {' '.join(portforward_channels.PROTOCOLS)}]"
            )
        if upgrade.startswith("spdy/3.1"):
            offered = _tokens(request.headers.getall("X-Stream-Protocol-Version", []))
            if STREAM_PROTOCOL not in offered:
                raise ApiError(
                    403,
                    "Forbidden",
                    f"unable to upgrade: unable to negotiate protocol: client supports "
                    f"{sorted(offered)}, server accepts [{STREAM_PROTOCOL}]",
                )
            return await self._serve_spdy(ctx)
        raise bad_request("Upgrade request required")

    async def _serve_websocket(self, ctx: SubresourceContext) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=(TUNNEL_PROTOCOL,), autoping=True, max_msg_size=spdy.MAX_LENGTH + 8)
        await ws.prepare(ctx.request)
        tunnel = Tunnel(ctx.namespace, ctx.object, "websocket")

        async def send(data: bytes) -> None:
            await ws.send_bytes(data)

        async def close_transport() -> None:
            await ws.close()

        async def pump(session: spdy.Session) -> None:
            async for message in ws:
                if message.type == WSMsgType.BINARY:
                    await session.feed(message.data)
                elif message.type != WSMsgType.TEXT:
                    break
                else:  # the tunnel is binary only: a text frame is the client's mistake
                    await session.goaway(spdy.GoAwayStatus.PROTOCOL_ERROR)
                    break

        await self._run(ctx, tunnel, send, pump, close_transport)
        return ws

    async def _serve_spdy(self, ctx: SubresourceContext) -> web.StreamResponse:
        upgraded = await spdy.accept_upgrade(ctx.request, STREAM_PROTOCOL)
        tunnel = Tunnel(ctx.namespace, ctx.object, "spdy")

        async def pump(session: spdy.Session) -> None:
            while (data := await upgraded.read()) is not None:
                await session.feed(data)

        await self._run(ctx, tunnel, upgraded.send, pump, upgraded.close)
        return upgraded.response

    async def _run(
        self,
        ctx: SubresourceContext,
        tunnel: Tunnel,
        send: spdy.Send,
        pump: Callable[[spdy.Session], Awaitable[None]],
        close_transport: Callable[[], Awaitable[None]],
    ) -> None:
        """Run one tunnel until the client goes, the double stops, or a protocol error; always clean up."""
        name = f"port-forward {tunnel.namespace}/{tunnel.pod_name} ({tunnel.transport})"
        session = spdy.Session(send, lambda stream: self._on_stream(tunnel, stream), name=name)
        tunnel.session = session
        self._ensure_subscribed()
        self._add(tunnel)

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(session.goaway(), STOP_TIMEOUT)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(close_transport(), STOP_TIMEOUT)

        untrack = ctx.track(stop)
        pumping = asyncio.ensure_future(pump(session))
        stopping = asyncio.ensure_future(ctx.stopping.wait())
        closed = asyncio.ensure_future(session.wait_closed(float("inf")))
        try:
            await asyncio.wait({pumping, stopping, closed}, return_when=asyncio.FIRST_COMPLETED)
            if stopping.done() or closed.done():
                await stop()
        except (ConnectionError, RuntimeError) as exc:
            log.debug("%s: transport ended: %s", name, exc)
        finally:
            for task in (pumping, stopping, closed):
                task.cancel()
            await asyncio.wait({pumping, stopping, closed}, timeout=STOP_TIMEOUT)
            session.connection_lost()
            await session.aclose(STOP_TIMEOUT)
            untrack()
            self._remove(tunnel)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(close_transport(), STOP_TIMEOUT)

    # --- streams and connections ----------------------------------------------------------------------------

    async def _on_stream(self, tunnel: Tunnel, stream: spdy.Stream) -> None:
        await stream.reply()
        kind = stream.headers.get("streamtype", "")
        request_id = stream.headers.get("requestid", "")
        port_text = stream.headers.get("port", "")
        if kind not in ("error", "data"):
            await stream.reset(spdy.RstStatus.PROTOCOL_ERROR)
            return
        pair = tunnel.pairs.get(request_id)
        if pair is None:
            pair = tunnel.pairs[request_id] = Pair(request_id, int(port_text) if port_text.isdigit() else 0)
        if getattr(pair, kind) is not None:
            await stream.reset(spdy.RstStatus.STREAM_IN_USE)
            return
        setattr(pair, kind, stream)
        try:
            if pair.complete:
                await self._forward(tunnel, pair)
            else:
                await self._await_partner(tunnel, pair, stream)
        finally:
            pair.done.set()
            if tunnel.pairs.get(request_id) is pair:
                del tunnel.pairs[request_id]

    async def _await_partner(self, tunnel: Tunnel, pair: Pair, stream: spdy.Stream) -> None:
        try:
            await asyncio.wait_for(pair.done.wait(), PAIR_TIMEOUT)
        except TimeoutError:
            if pair.error is stream:
                await stream.write(tunnel.error_text(pair.port, "timed out waiting for streams").encode())
            await stream.close()

    async def _forward(self, tunnel: Tunnel, pair: Pair) -> None:
        assert pair.error is not None
        assert pair.data is not None
        error, data = pair.error, pair.data
        conn = Connection(tunnel, pair)
        tunnel.total += 1
        self._connection_added(tunnel, conn)
        try:
            await self._relay(tunnel, conn, error, data)
        finally:
            if conn.target is not None:
                conn.target.close()
            self._connection_removed(tunnel, conn)

    async def _relay(self, tunnel: Tunnel, conn: Connection, error: spdy.Stream, data: spdy.Stream) -> None:
        port = conn.pair.port
        if not 0 < port < 65536:
            return await _fail(
                error, data, tunnel.error_text(port, f'strconv.ParseUint: parsing "{port}": invalid port number')
            )
        if tunnel.pod_gone:
            return await _fail(
                error, data, tunnel.error_text(port, f'failed to find sandbox "{tunnel.sandbox}" in store: not found')
            )
        armed = self._take_failure(tunnel)
        if armed is not None:
            # The request's first bytes arrive, then the stream fails under them.
            first = asyncio.ensure_future(data.read())
            ended = asyncio.ensure_future(conn.ended.wait())
            await asyncio.wait({first, ended}, return_when=asyncio.FIRST_COMPLETED)
            first.cancel()
            ended.cancel()
            if conn.failure is not None:
                return await _fail(error, data, conn.failure)
            if first.done() and not first.cancelled() and first.result():
                return await _fail(error, data, tunnel.error_text(port, armed or _reset_cause(port)))
            return await _finish(error, data)
        target = self._target(tunnel, port)
        reader: asyncio.StreamReader | None = None
        if target is not None:
            with contextlib.suppress(OSError, TimeoutError):
                reader, conn.target = await asyncio.wait_for(asyncio.open_connection(*target), CONNECT_TIMEOUT)
        if target is None or reader is None or conn.target is None:
            return await _fail(error, data, tunnel.error_text(port, _refused_cause(tunnel, port)))
        upstream = asyncio.ensure_future(_client_to_target(data, conn))
        downstream = asyncio.ensure_future(_target_to_client(reader, data, target))
        ended = asyncio.ensure_future(conn.ended.wait())
        try:
            await asyncio.wait({downstream, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (upstream, downstream, ended):
                task.cancel()
            await asyncio.wait({upstream, downstream, ended}, timeout=STOP_TIMEOUT)
        if conn.failure is not None:
            if conn.target is not None:
                _abort(conn.target)
            return await _fail(error, data, conn.failure)
        if not conn.pod_died and downstream.done() and not downstream.cancelled() and downstream.result():
            return await _fail(error, data, tunnel.error_text(port, downstream.result() or ""))
        await _finish(error, data)
        return None

    # --- bookkeeping -----------------------------------------------------------------------------------------

    def _target(self, tunnel: Tunnel, port: int) -> tuple[str, int] | None:
        mapped = self.double.ports.target(tunnel.namespace, tunnel.pod_name, port)
        if mapped is not None:
            return mapped
        current = self.double.store.get("pods", tunnel.namespace, tunnel.pod_name) or tunnel.pod
        return annotated_ports(current).get(port)

    def _pod_faults(self, namespace: str, pod: str) -> _PodFaults:
        return self._faults.get((namespace, pod)) or _PodFaults()

    def _take_failure(self, tunnel: Tunnel) -> str | None:
        """The message of an armed failure for this connection ("" for the default), consuming one, else None."""
        with self._lock:
            faults = self._faults.get((tunnel.namespace, tunnel.pod_name))
            if faults is None or faults.fail_next == 0:
                return None
            if faults.fail_next > 0:
                faults.fail_next -= 1
            return faults.fail_message or ""

    def _tunnels_of(self, namespace: str, pod: str) -> list[Tunnel]:
        with self._lock:
            return [t for t in self._tunnels if t.namespace == namespace and t.pod_name == pod]

    def _apply_wedges(self) -> None:
        """Set each open session's ``wedged`` from the fault table (a plain flag its reader checks per stream);
        call under the lock."""
        for tunnel in self._tunnels:
            if tunnel.session is not None:
                tunnel.session.wedged = self._pod_faults(tunnel.namespace, tunnel.pod_name).wedged

    def _add(self, tunnel: Tunnel) -> None:
        with self._changed:
            self._tunnels.add(tunnel)
            self._apply_wedges()
            self._changed.notify_all()

    def _remove(self, tunnel: Tunnel) -> None:
        with self._changed:
            self._tunnels.discard(tunnel)
            self._changed.notify_all()

    def _connection_added(self, tunnel: Tunnel, conn: Connection) -> None:
        with self._changed:
            tunnel.connections.add(conn)
            self._changed.notify_all()

    def _connection_removed(self, tunnel: Tunnel, conn: Connection) -> None:
        with self._changed:
            tunnel.connections.discard(conn)
            self._changed.notify_all()

    def _ensure_subscribed(self) -> None:
        if not self._subscribed:
            self.double.store.subscribe(self._pod_changed, ["pods"])
            self._subscribed = True

    def _pod_changed(self, event: StoreEvent) -> None:
        """A pod was deleted, or its phase ended: its containers (and their sockets) are gone."""
        obj = event.object
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        phase = (obj.get("status") or {}).get("phase")
        if event.type != "DELETED" and phase not in ("Succeeded", "Failed"):
            return
        for tunnel in self._tunnels_of(event.namespace, event.name):
            if tunnel.pod_uid == uid and not tunnel.pod_gone:
                tunnel.pod_gone = True
                for conn in list(tunnel.connections):
                    conn.die_with_pod()

    def _on_loop(self, fn: Callable[[], T], timeout: float) -> T:
        """Run ``fn`` on the double's loop (at once when already there), waiting at most ``timeout`` seconds."""
        loop = self.double.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop:
            return fn()

        async def call() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), loop).result(timeout)


# --- the relay ------------------------------------------------------------------------------------------------


async def _client_to_target(data: spdy.Stream, conn: Connection) -> None:
    """kubectl's bytes to the target; kubectl's FIN half-closes the target socket."""
    writer = conn.target
    assert writer is not None
    try:
        while chunk := await data.read():
            conn.first_bytes.set()
            writer.write(chunk)
            await writer.drain()
        if data.reset_by_peer:
            _abort(writer)
            conn.ended.set()
        elif writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass  # the target went away: the other direction notices and ends the connection


async def _target_to_client(reader: asyncio.StreamReader, data: spdy.Stream, target: tuple[str, int]) -> str | None:
    """The target's bytes to kubectl until its EOF; returns a cause when the target reset the connection."""
    try:
        while chunk := await reader.read(spdy.DATA_CHUNK):
            await data.write(chunk)
    except ConnectionResetError:
        return f"read tcp4 127.0.0.1->{target[0]}:{target[1]}: read: connection reset by peer"
    except OSError as exc:
        return f"read tcp4 127.0.0.1->{target[0]}:{target[1]}: {exc.strerror or exc}"
    return None


async def _fail(error: spdy.Stream, data: spdy.Stream, message: str) -> None:
    """The kubelet's order: the message on the error stream, FIN error, FIN data."""
    await error.write(message.encode())
    await _finish(error, data)


async def _finish(error: spdy.Stream, data: spdy.Stream) -> None:
    await error.close()
    await data.close()


def _abort(writer: asyncio.StreamWriter) -> None:
    transport = writer.transport
    if hasattr(transport, "abort"):
        transport.abort()
    else:
        writer.close()


def _reset_cause(port: int) -> str:
    return f"read tcp4 127.0.0.1:{40000 + port % 20000}->127.0.0.1:{port}: read: connection reset by peer"


def _refused_cause(tunnel: Tunnel, port: int) -> str:
    return (
        f'failed to execute portforward in network namespace "{netns_path(tunnel.pod_uid)}": failed to connect to '
        f'localhost:{port} inside namespace "{tunnel.sandbox}", IPv4: dial tcp4 127.0.0.1:{port}: connect: '
        f"connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused "
    )


def _tokens(values: list[str]) -> set[str]:
    return {token.strip() for value in values for token in value.split(",") if token.strip()}
