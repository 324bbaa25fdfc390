"""The ``python -m fakes.<name> --host H --port P`` entry point, shared by every fake.

Runs uvicorn in the foreground (SIGINT/SIGTERM stop it gracefully: hangs and drips end, connections close), prints
one line ``fake <name> listening on http://H:P`` to stdout once serving (useful with ``--port 0``), and exits 0.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable, Sequence

from fakes.core import FakeApp
from fakes.runtime import FakeRuntime
from fakes.server import bind, build_server, url_for


def run_main(
    make_app: Callable[[argparse.Namespace], FakeApp],
    *,
    prog: str,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``--host`` (default 127.0.0.1), ``--port`` (default 0 = OS-chosen), ``--log-level`` and the fake's own
    options (``add_arguments``), build the fake with ``make_app(args)`` and serve it until signalled."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (0.0.0.0 in a container)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 lets the OS choose")
    parser.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    app = make_app(args)
    sock = bind(args.host, args.port)
    server = build_server(FakeRuntime(app), log_level=args.log_level)
    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        print(f"fake {app.name} listening on {url_for(sock)}", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0 if server.started else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run a fake's own module, e.g. python -m fakes.qdrant")
