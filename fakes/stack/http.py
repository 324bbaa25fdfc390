"""aiohttp servers for the twin's services: listen on 127.0.0.1 with an OS-chosen port, stop within a bound."""

from __future__ import annotations

from aiohttp import web


class Listener:
    """One service's HTTP server. ``port`` is known after :meth:`start`."""

    def __init__(self, app: web.Application) -> None:
        self.runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        self.port = 0

    async def start(self) -> int:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])
        return self.port

    async def stop(self) -> None:
        """Close the socket and finish open requests (aiohttp bounds it by the site's shutdown timeout)."""
        await self.runner.cleanup()


async def healthy(_: web.Request) -> web.Response:
    """A readiness route: 200 ``{"ok": true}``."""
    return web.json_response({"ok": True})


def json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
