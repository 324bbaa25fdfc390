"""A Redis stand-in for the orchestrator's session state (``sess:*`` keys), and ``kubectl exec ... redis-cli``.

The stack runs Redis with ``--save "" --appendonly no`` on an emptyDir: it is session state only, and a restart
forgets every key. So here: deleting the pod loses everything; credentials live in Kubernetes Secrets and survive.
The pod answers ``kubectl exec`` with the ``redis-cli`` subset specs use (``--scan --pattern P``, ``GET``, ``SET``,
``DEL``, ``KEYS``, ``DBSIZE``, ``PING``), and runs ``sh ...`` for real: under the host's POSIX ``sh`` with the
same ``redis-cli`` (:mod:`fakes.stack.redis_cli`) first on ``PATH``, the pod's keys written to its state file before
and read back after (so a sweep script such as ``specs.agent_controller.redis_sessions`` runs as it would in the pod).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import sys
import tempfile
import threading
from typing import TYPE_CHECKING

from fakes.kube.exec import ExecRequest, ExecResult
from fakes.stack import config
from fakes.stack.network import Unreachable
from harness import process

if TYPE_CHECKING:
    from fakes.stack.node import Node, PodContext

REDIS_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redis_cli.py")
SHELL_TIMEOUT = 30.0
"""Seconds one ``sh`` command in the pod may run (then its process group is killed: exit 137)."""


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
        self.ctx.serve_exec(self.exec)

    async def stop(self, grace: float) -> None:
        self.ctx.serve_exec(None)
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
        if argv[:1] in (["sh"], ["/bin/sh"]):
            return self._shell(argv)
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

    def _shell(self, argv: list[str]) -> ExecResult:
        """``argv`` under the host's ``sh`` with this pod's ``redis-cli`` first on ``PATH``, on this pod's keys."""
        with tempfile.TemporaryDirectory(prefix="twin-redis-") as work, self.lock:
            state = os.path.join(work, "state.json")
            with open(state, "w") as f:
                json.dump({"keys": self.data}, f)
            bin_dir = os.path.join(work, "bin")
            os.mkdir(bin_dir)
            wrapper = os.path.join(bin_dir, "redis-cli")
            with open(wrapper, "w") as f:
                f.write(f'#!/bin/sh\nexec "{sys.executable}" "{REDIS_CLI}" "$@"\n')
            os.chmod(wrapper, 0o755)
            env = {
                "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                "LC_ALL": "C",
                "TWIN_REDIS_STATE": state,
            }
            try:
                done = process.run_bounded(["sh", *argv[1:]], timeout=SHELL_TIMEOUT, env=env)
            except process.Timeout as exc:
                return ExecResult(137, exc.stdout, exc.stderr + f"\n(killed after {SHELL_TIMEOUT:.0f} s)\n")
            with open(state) as f:
                self.data = {str(k): str(v) for k, v in (json.load(f).get("keys") or {}).items()}
            return ExecResult(done.returncode, done.stdout, done.stderr)


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
