"""The twin's smaller containers: the fakes that play GitHub and Qdrant, the Temporal dev server, nats-box.

The fakes run exactly what their manifests' ``command`` runs (``python -m fakes.github`` / ``fakes.qdrant``), here
as :func:`fakes.github.serve` / :func:`fakes.qdrant.serve` in-process: state lives in the pod, so deleting the pod
starts an empty fake (the specs seed what they need, on minikube as on the twin).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fakes.stack import config
from fakes.stack.node import PodContext


class FakeServicePod:
    """A fake from ``fakes/`` served on 127.0.0.1 and mapped to its container port."""

    def __init__(self, ctx: PodContext, serve: Any, container_port: int, **options: Any) -> None:
        self.ctx = ctx
        self.serve = serve
        self.container_port = container_port
        self.options = options
        self.stack = contextlib.ExitStack()

    async def start(self) -> None:
        handle = await asyncio.to_thread(self.stack.enter_context, self.serve(**self.options))
        self.ctx.map_port(self.container_port, int(handle.url.rsplit(":", 1)[1]))
        self.ctx.log(f"{self.ctx.container.get('name')}: serving on {self.container_port}")

    async def stop(self, grace: float) -> None:
        await asyncio.to_thread(self.stack.close)


def fake_github(ctx: PodContext) -> FakeServicePod:
    import fakes.github

    return FakeServicePod(
        ctx, fakes.github.serve, config.FAKE_GITHUB_PORT, public_base_url=ctx.env.get("PUBLIC_BASE_URL")
    )


def fake_qdrant(ctx: PodContext) -> FakeServicePod:
    import fakes.qdrant

    return FakeServicePod(ctx, fakes.qdrant.serve, config.QDRANT_PORT)


class TcpPod:
    """Accepts TCP connections on its container ports and holds them, silent, until the client closes (as a gRPC
    server waiting for its client does: enough for a TCP readiness probe)."""

    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.servers: list[asyncio.base_events.Server] = []
        self.open: set[asyncio.StreamWriter] = set()

    async def _close(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open.add(writer)
        try:
            while await reader.read(65536):
                pass
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.open.discard(writer)
            writer.close()

    async def start(self) -> None:
        for port in self.ctx.container.get("ports") or []:
            server = await asyncio.start_server(self._close, "127.0.0.1", 0)
            self.servers.append(server)
            self.ctx.map_port(int(port["containerPort"]), server.sockets[0].getsockname()[1])

    async def stop(self, grace: float) -> None:
        for server in self.servers:
            server.close()
        for writer in list(self.open):
            writer.close()  # the process is gone: so are its connections


class IdlePod:
    """A container that only sleeps (nats-box)."""

    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx

    async def start(self) -> None:
        return None

    async def stop(self, grace: float) -> None:
        return None
