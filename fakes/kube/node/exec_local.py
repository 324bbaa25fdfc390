"""``kubectl exec`` into a local-process container: the command run with the container's environment and working
directory, its output streamed, its exit code returned (an exec handler, :mod:`fakes.kube.exec`'s convention)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable

from fakes.kube.exec import READ_CHUNK, ExecRequest
from fakes.kube.local_process import Launch

EXEC_TIMEOUT = 300.0
"""Seconds one exec'd command may run before its process group is killed."""


async def run_in(launch: Launch, request: ExecRequest, timeout: float = EXEC_TIMEOUT) -> int:
    """Run ``request.command`` (no shell) in ``launch``'s environment and directory, in a process group of its own;
    its exit code (``128 + N`` for signal N). Raises ``OSError`` when the program cannot be started (the caller
    answers it), ``TimeoutError`` after ``timeout`` seconds (the group killed)."""
    proc = await asyncio.create_subprocess_exec(
        *request.command,
        stdin=subprocess.PIPE if request.stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=launch.env,
        cwd=launch.cwd,
        start_new_session=True,
    )

    async def copy(stream: asyncio.StreamReader | None, write: Callable[[bytes], Awaitable[None]]) -> None:
        while stream is not None and (chunk := await stream.read(READ_CHUNK)):
            await write(chunk)

    async def feed() -> None:
        if proc.stdin is None:
            return
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await request.read_stdin():
                proc.stdin.write(chunk)
                await proc.stdin.drain()
        proc.stdin.close()

    pumps = [
        asyncio.ensure_future(copy(proc.stdout, request.write_stdout)),
        asyncio.ensure_future(copy(proc.stderr, request.write_stderr)),
        asyncio.ensure_future(feed()),
    ]
    try:
        await asyncio.wait_for(asyncio.gather(proc.wait(), *pumps[:2]), timeout)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5.0)
        for pump in pumps:
            pump.cancel()
        await asyncio.wait(pumps, timeout=2.0)
    code = proc.returncode or 0
    return code if code >= 0 else 128 - code
