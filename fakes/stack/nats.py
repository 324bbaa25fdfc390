"""A NATS stand-in: the agent protocol's transport, and what a NATS bounce does to its clients.

The server (:class:`NatsServer`, the ``nats-0`` pod's container) keeps connections and subscriptions in memory;
deleting its pod drops every connection at once, the old process lingers ``nats_lame_duck`` (10 s) and its
replacement takes ``nats_restart`` (12 s) to serve, so a bounce lasts about 22 s as on minikube (20-40 s). Clients
(:class:`NatsClient`) behave as the NATS client defaults the stack runs with: on a lost connection they try to
reconnect every ``nats_reconnect_wait`` (2 s), ``nats_reconnects`` (10) times (about 20 s), re-subscribe and flush
what was published meanwhile; after the last attempt the connection is closed for good (failure mode 31 in
specs/cluster/README.md: an agent pod's client gives up before the bounce is over). ``forever=True`` retries forever
(the orchestrator here, which a closed connection would otherwise crash-loop). The values are the twin's timing
profile (:mod:`fakes.stack.profile`, at its time scale).

Subjects are exact strings (no wildcards). Messages are JSON-shaped dicts, delivered on the node's loop.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fakes.stack import config
from fakes.stack.http import Listener, healthy
from fakes.stack.network import Unreachable

if TYPE_CHECKING:
    from fakes.stack.node import Node, PodContext

Message = dict[str, Any]
Handler = Callable[[str, Message], None]
FIRST_CONNECT_POLL = 0.1
"""Seconds between attempts of a first connection (a lost one follows the reconnect policy instead)."""
PENDING_LIMIT = 1000
"""Messages a disconnected client keeps to flush after reconnecting (the client's reconnect buffer)."""


class NatsClosed(ConnectionError):
    """The client gave up reconnecting (or was closed): nothing more can be published."""


class Broker:
    """One server instance's connections; :meth:`shutdown` drops them all."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.clients: set[NatsClient] = set()
        self.down = False

    def publish(self, subject: str, message: Message) -> None:
        for client in list(self.clients):
            client._deliver(subject, message)

    def shutdown(self) -> None:
        self.down = True
        for client in list(self.clients):
            client._lost(self)
        self.clients.clear()


class NatsServer:
    """The ``nats`` StatefulSet's container: client port 4222 (greets like NATS), monitor 8222 (``/healthz``)."""

    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.broker = Broker(asyncio.get_running_loop())
        app = web.Application()
        app.router.add_get("/healthz", healthy)
        app.router.add_get("/varz", self._varz)
        self.monitor = Listener(app)
        self.server: asyncio.base_events.Server | None = None

    async def _varz(self, _: web.Request) -> web.Response:
        return web.json_response({"connections": len(self.broker.clients), "server_name": self.ctx.name})

    async def _greet(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'INFO {"server_id":"twin","version":"2.10.0","proto":1,"max_payload":1048576}\r\n')
        await writer.drain()
        writer.close()

    async def start(self) -> None:
        if self.ctx.node.seen("nats-server"):
            # a replacement pod: start-up and readiness take their time
            await asyncio.sleep(self.ctx.timing.seconds("nats_restart"))
        self.ctx.map_port(8222, await self.monitor.start())
        self.server = await asyncio.start_server(self._greet, "127.0.0.1", 0)
        self.ctx.map_port(config.NATS_PORT, self.server.sockets[0].getsockname()[1])
        self.ctx.log("nats: listening for client connections on 4222")

    async def stop(self, grace: float) -> None:
        self.broker.shutdown()  # lame duck: every client loses its connection at once...
        # ...and the process exits later
        await asyncio.sleep(min(self.ctx.timing.seconds("nats_lame_duck"), max(0.0, grace - 1.0)))
        if self.server is not None:
            self.server.close()
        await self.monitor.stop()


class NatsClient:
    """A NATS connection with the client library's reconnect policy (see the module docstring)."""

    def __init__(
        self,
        node: Node,
        url: str,
        *,
        name: str,
        forever: bool = False,
        on_closed: Callable[[str], None] | None = None,
    ) -> None:
        self.node = node
        self.url = url
        self.name = name
        self.max_reconnects: int | None = None if forever else node.timing.count("nats_reconnects")
        self.reconnect_wait = node.timing.seconds("nats_reconnect_wait")
        self.on_closed = on_closed
        self.subs: dict[str, list[Handler]] = collections.defaultdict(list)
        self.pending: collections.deque[tuple[str, Message]] = collections.deque(maxlen=PENDING_LIMIT)
        self.broker: Broker | None = None
        self.closed = False
        self.reason = ""
        self._reconnecting: asyncio.Task[None] | None = None

    # --- connection -------------------------------------------------------------------------------------------

    def _find_broker(self) -> Broker:
        host = self.url.split("://", 1)[-1].rsplit(":", 1)[0]
        endpoint = self.node.network.resolve(host, config.NATS_PORT)
        server = self.node.instance(self.node.namespace, endpoint.pod)
        if not isinstance(server, NatsServer) or server.broker.down:
            raise Unreachable(f"connection refused: no NATS server behind {self.url}")
        return server.broker

    async def connect(self) -> None:
        """Connect, waiting for the server as long as the reconnect policy allows (``max_reconnects`` x
        ``reconnect_wait``, or forever), but trying every 0.1 s: pods that start together wait for each other without
        losing a whole reconnect interval. Raises :class:`NatsClosed` when the server never came."""
        budget = None if self.max_reconnects is None else self.max_reconnects * self.reconnect_wait
        loop = asyncio.get_running_loop()
        began = loop.time()
        while True:
            try:
                self._attach(self._find_broker())
                return
            except Unreachable as exc:
                if budget is not None and loop.time() - began >= budget:
                    self._close(f"no NATS server answered within {budget:.0f}s: {exc}")
                    raise NatsClosed(self.reason) from None
            await asyncio.sleep(FIRST_CONNECT_POLL)

    def _attach(self, broker: Broker) -> None:
        self.broker = broker
        broker.clients.add(self)
        while self.pending:
            subject, message = self.pending.popleft()
            broker.publish(subject, message)

    def _lost(self, broker: Broker) -> None:
        if self.broker is broker:
            self.broker = None
            self._schedule_reconnect("the NATS server closed the connection")

    def _schedule_reconnect(self, why: str) -> None:
        if self.closed or (self._reconnecting is not None and not self._reconnecting.done()):
            return
        self._reconnecting = asyncio.ensure_future(self._reconnect(why))

    async def _reconnect(self, why: str) -> None:
        attempt = 0
        while self.max_reconnects is None or attempt < self.max_reconnects:
            attempt += 1
            await asyncio.sleep(self.reconnect_wait)
            if self.closed:
                return
            try:
                self._attach(self._find_broker())
                return
            except Unreachable as exc:
                why = str(exc)
        self._close(
            f"NATS connection closed after {attempt} reconnect attempts {self.reconnect_wait:.0f}s apart: {why}"
        )

    def _close(self, reason: str) -> None:
        self.closed = True
        self.reason = reason
        if self.on_closed is not None:
            self.on_closed(reason)

    async def close(self) -> None:
        self.closed = True
        self.reason = self.reason or "closed by the client"
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        if self.broker is not None:
            self.broker.clients.discard(self)
            self.broker = None

    # --- messaging --------------------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self.broker is not None and not self.closed

    def subscribe(self, subject: str, handler: Handler) -> Callable[[], None]:
        self.subs[subject].append(handler)

        def unsubscribe() -> None:
            if handler in self.subs.get(subject, []):
                self.subs[subject].remove(handler)

        return unsubscribe

    def unsubscribe_all(self) -> None:
        self.subs.clear()

    def publish(self, subject: str, message: Message) -> None:
        """Publish now, or keep it for the reconnect; raises :class:`NatsClosed` once closed."""
        if self.closed:
            raise NatsClosed(self.reason)
        if self.broker is None:
            self.pending.append((subject, message))
            return
        self.broker.publish(subject, message)

    def _deliver(self, subject: str, message: Message) -> None:
        for handler in list(self.subs.get(subject, [])):
            self.node.loop.call_soon(handler, subject, message)
