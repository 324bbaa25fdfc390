"""A Redis stand-in for the orchestrator's session state (``sess:*`` keys), and ``kubectl exec ... redis-cli``.

The stack runs Redis with ``--save "" --appendonly no`` on an emptyDir: it is session state only, and a restart
forgets every key. So here: deleting the pod loses everything; credentials live in Kubernetes Secrets and survive.
The pod answers ``kubectl exec`` with the ``redis-cli`` subset specs use (``--scan --pattern P``, ``GET``, ``SET``,
``DEL``, ``KEYS``, ``DBSIZE``, ``PING``) and ``sh -c 'redis-cli --scan --pattern P | xargs [-r] redis-cli del'``,
the one-exec sweep.
"""

from __future__ import annotations

import asyncio
import fnmatch
import shlex
import threading
from typing import TYPE_CHECKING

from fakes.kube.exec import ExecRequest, ExecResult
from fakes.stack import config
from fakes.stack.network import Unreachable

if TYPE_CHECKING:
    from fakes.stack.node import Node, PodContext


class RedisUnavailable(ConnectionError):
    """No ready Redis behind the Service (a caller sees a refused connection)."""


class RedisServer:
    """The ``agent-orchestrator-redis`` pod's container: keys in memory, gone with the pod."""

    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.data: dict[str, str] = {}
        self.lock = threading.Lock()
        self.server: asyncio.base_events.Server | None = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"-ERR the twin's Redis speaks only to in-cluster clients and kubectl exec redis-cli\r\n")
        await writer.drain()
        writer.close()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.ctx.map_port(config.REDIS_PORT, self.server.sockets[0].getsockname()[1])
        self.ctx.double.exec_handlers.set(self.ctx.namespace, self.ctx.name, self.exec)

    async def stop(self, grace: float) -> None:
        self.ctx.double.exec_handlers.clear(self.ctx.namespace, self.ctx.name)
        with self.lock:
            self.data.clear()
        if self.server is not None:
            self.server.close()

    # --- commands ---------------------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        with self.lock:
            return self.data.get(key)

    def set(self, key: str, value: str) -> None:
        with self.lock:
            self.data[key] = value

    def delete(self, *keys: str) -> int:
        with self.lock:
            return sum(1 for key in keys if self.data.pop(key, None) is not None)

    def scan(self, pattern: str = "*") -> list[str]:
        with self.lock:
            return sorted(k for k in self.data if fnmatch.fnmatchcase(k, pattern))

    # --- kubectl exec -----------------------------------------------------------------------------------------

    def exec(self, request: ExecRequest) -> ExecResult:
        argv = list(request.command)
        if argv[:2] == ["sh", "-c"] and len(argv) == 3:
            return self._sweep(argv[2])
        if not argv or argv[0] != "redis-cli":
            return ExecResult(127, stderr=f"sh: {argv[0] if argv else ''}: not found\n")
        return self._cli(argv[1:])

    def _cli(self, args: list[str]) -> ExecResult:
        if args[:1] == ["--scan"]:
            pattern = args[args.index("--pattern") + 1] if "--pattern" in args[:-1] else "*"
            return ExecResult(0, stdout="".join(f"{k}\n" for k in self.scan(pattern)))
        if not args:
            return ExecResult(1, stderr="redis-cli: interactive mode is not available here\n")
        verb, rest = args[0].upper(), args[1:]
        if verb == "PING":
            return ExecResult(0, stdout="PONG\n")
        if verb == "DBSIZE":
            return ExecResult(0, stdout=f"{len(self.scan())}\n")
        if verb == "KEYS" and len(rest) == 1:
            return ExecResult(0, stdout="".join(f"{k}\n" for k in self.scan(rest[0])))
        if verb == "GET" and len(rest) == 1:
            value = self.get(rest[0])
            return ExecResult(0, stdout="\n" if value is None else f"{value}\n")
        if verb == "SET" and len(rest) == 2:
            self.set(rest[0], rest[1])
            return ExecResult(0, stdout="OK\n")
        if verb == "DEL" and rest:
            return ExecResult(0, stdout=f"{self.delete(*rest)}\n")
        return ExecResult(0, stdout=f"(error) ERR unknown command '{args[0]}' or wrong arguments\n")

    def _sweep(self, script: str) -> ExecResult:
        left, bar, right = script.partition("|")
        scan = shlex.split(left)
        xargs = shlex.split(right) if bar else []
        xargs = [a for a in xargs if a != "-r"]
        if scan[:2] != ["redis-cli", "--scan"] or (bar and xargs[:2] != ["xargs", "redis-cli"]):
            return ExecResult(127, stderr="sh: only 'redis-cli --scan --pattern P [| xargs [-r] redis-cli del]' "
                                          "is available in the twin's Redis pod\n")
        keys = self.scan(scan[scan.index("--pattern") + 1] if "--pattern" in scan[:-1] else "*")
        if not bar:
            return ExecResult(0, stdout="".join(f"{k}\n" for k in keys))
        if xargs[2:3] and xargs[2].lower() == "del":
            return ExecResult(0, stdout=f"{self.delete(*keys)}\n" if keys else "")
        return ExecResult(127, stderr="sh: only 'xargs redis-cli del' is available here\n")


class RedisClient:
    """The orchestrator's Redis connection: every call goes to the ready Redis pod behind the Service."""

    def __init__(self, node: Node, url: str) -> None:
        self.node = node
        self.host = url.split("://", 1)[-1].rsplit(":", 1)[0]

    def _server(self) -> RedisServer:
        try:
            endpoint = self.node.network.resolve(self.host, config.REDIS_PORT)
        except Unreachable as exc:
            raise RedisUnavailable(str(exc)) from None
        server = self.node.instance(self.node.namespace, endpoint.pod)
        if not isinstance(server, RedisServer):
            raise RedisUnavailable(f"connection refused: no Redis behind {self.host}")
        return server

    def get(self, key: str) -> str | None:
        return self._server().get(key)

    def set(self, key: str, value: str) -> None:
        self._server().set(key, value)

    def delete(self, key: str) -> None:
        self._server().delete(key)
