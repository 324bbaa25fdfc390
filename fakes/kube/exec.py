"""``pods/<name>/exec``: ``kubectl exec`` served over WebSocket (``v5.channel.k8s.io``) or SPDY/3.1 (``v4``).

What runs: a handler registered for the pod from Python (``double.exec_handlers.set(ns, pod, handler)``, pod
``"*"`` for every pod of a namespace), else, when the pod (or its template) carries the annotation
``double.stack-harness.dev/exec: host``, the command itself on the host (no shell, its own process group, killed
after ``double.stack-harness.dev/exec-timeout`` seconds, default :data:`DEFAULT_TIMEOUT`). With neither, kubectl
gets a Failure naming the missing handler and how to add one.

A container of a local-process pod (:mod:`fakes.kube.local_process`, annotation ``stack-harness.dev/local-process``)
with no handler registered runs the command on the host with that container's current environment and working
directory (its run's :class:`~fakes.kube.local_process.Launch`, from ``double.local_runs``), its exit code on the
status channel. When that container runs no process (waiting to restart, exited), the answer is the kubelet's,
before any upgrade: a plain-text 500 ``container not found ("app")``, which kubectl prints as ``error: unable to
upgrade connection: container not found ("app")``.

A handler is ``handler(request: ExecRequest)`` returning an :class:`ExecResult`, an ``int`` exit code or ``None``
(exit 0), directly or as an awaitable. An ``async def`` handler runs on the double's loop and may stream with
``await request.write_stdout(b)`` / ``write_stderr`` and read ``await request.read_stdin()`` (``b""`` at the
client's end of input); a plain function runs in a worker thread with ``request.stdin_data`` collected first (up
to :data:`STDIN_LIMIT` bytes). Either is bounded by the timeout; running out, or raising, is an ``InternalError``.

Framing, as kubectl reads it:

- WebSocket (kubectl >= 1.30): binary messages whose first byte is the channel: 0 stdin, 1 stdout, 2 stderr,
  3 status, 4 resize; ``v5.channel.k8s.io`` adds ``[255, channel]``, closing a channel (kubectl sends ``[255, 0]``
  at the end of stdin). ``v4.channel.k8s.io`` is served too (no close message: stdin ends with the connection);
- SPDY/3.1 (kubectl < 1.30, or ``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``): one stream per channel, named by the
  ``streamtype`` header (``error``, ``stdin``, ``stdout``, ``stderr``, ``resize``), each answered with a SYN_REPLY;
  the output streams are FINed, the status written on the error stream, then GOAWAY (kubelet
  ``pkg/kubelet/cri/streaming/remotecommand``).

The status (``metav1.Status``, ``apimachinery/pkg/util/remotecommand``) is ``{"status": "Success"}``, or for exit
code N != 0 ``{"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode",
"message": "N"}]}}``, which kubectl turns into ``command terminated with exit code N`` and its own exit code N.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import WSMsgType, web

from fakes.kube import local_process, spdy
from fakes.kube.errors import ApiError, bad_request
from harness.process import unwatch_group, watch_group

if TYPE_CHECKING:
    from fakes.kube.double_api import DoubleApi as KubeDouble  # the double imports this module: no import back
    from fakes.kube.extensions import SubresourceContext

log = logging.getLogger("fakes.kube.exec")

STDIN, STDOUT, STDERR, STATUS, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255
"""v5's channel-close message: ``[255, channel]``."""
WS_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
SPDY_PROTOCOL = "v4.channel.k8s.io"

EXEC_ANNOTATION = "double.stack-harness.dev/exec"
TIMEOUT_ANNOTATION = "double.stack-harness.dev/exec-timeout"
DEFAULT_TIMEOUT = 30.0
"""Seconds a handler or host command may run (``exec-timeout`` annotation overrides; at most :data:`MAX_TIMEOUT`)."""
MAX_TIMEOUT = 600.0
STDIN_LIMIT = 16 * 1024 * 1024
"""Bytes of stdin kept for a plain-function handler (the rest is read and dropped)."""
STREAMS_TIMEOUT = 10.0
"""Seconds a SPDY client has to open the streams its query asked for."""
READ_CHUNK = 64 * 1024


@dataclass
class ExecResult:
    """What a handler returns: ``exit_code`` and output sent after anything it streamed itself."""

    exit_code: int = 0
    stdout: bytes | str = b""
    stderr: bytes | str = b""


class _Channels(Protocol):
    async def write(self, channel: int, data: bytes) -> None: ...
    async def read_stdin(self) -> bytes: ...


@dataclass
class ExecRequest:
    """One ``kubectl exec``: where, what (``command`` argv, no shell added), which channels, and the pod object."""

    namespace: str
    pod: str
    container: str
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    pod_object: dict[str, Any] = field(default_factory=dict)
    stdin_data: bytes = b""
    """For plain-function handlers: stdin up to the client's end of input (empty unless ``stdin``)."""
    _channels: _Channels | None = field(default=None, repr=False)

    async def write_stdout(self, data: bytes | str) -> None:
        """Send ``data`` to kubectl's stdout now (ignored when the client did not ask for stdout)."""
        if self.stdout and self._channels is not None:
            await self._channels.write(STDOUT, _bytes(data))

    async def write_stderr(self, data: bytes | str) -> None:
        """Send ``data`` to kubectl's stderr (to stdout with a TTY: one stream, as in a terminal)."""
        if self._channels is None:
            return
        if self.tty:
            await self.write_stdout(data)
        elif self.stderr:
            await self._channels.write(STDERR, _bytes(data))

    async def read_stdin(self) -> bytes:
        """The next stdin bytes from kubectl, ``b""`` at its end of input (at once when ``stdin`` was not asked)."""
        if not self.stdin or self._channels is None:
            return b""
        return await self._channels.read_stdin()


Handler = Callable[[ExecRequest], "ExecResult | int | Awaitable[ExecResult | int | None] | None"]


# --- statuses --------------------------------------------------------------------------------------------------


def success_status() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}


def exit_status(code: int, command: list[str]) -> dict[str, Any]:
    """The Failure kubectl turns into ``command terminated with exit code N`` (and exits N)."""
    if code == 0:
        return success_status()
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: command '{' '.join(command)}' exited with {code}: ",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_status(cause: str) -> dict[str, Any]:
    """An ``InternalError`` (kubectl prints ``error: Internal error occurred: <cause>`` and exits 1)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {cause}",
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    }


# --- the handler ------------------------------------------------------------------------------------------------


class Exec:
    """``kubectl exec`` for one double. Build with :meth:`install`."""

    def __init__(self, double: KubeDouble) -> None:
        self.double = double

    @classmethod
    def install(cls, double: KubeDouble) -> Exec:
        """Serve ``pods/<name>/exec`` for ``double``."""
        served = cls(double)
        double.subresources.register("pods", "exec", served.handle)
        return served

    async def handle(self, ctx: SubresourceContext) -> web.StreamResponse:
        request = self.parse(ctx)
        if self._not_running(request):
            # The kubelet finds no running container before any upgrade (kubelet_pods.go GetExec, answered by
            # streaming.WriteError as plain text); kubectl prints "unable to upgrade connection: <this>".
            return web.Response(status=500, text=f'container not found ("{request.container}")')
        upgrade = ctx.request.headers.get("Upgrade", "").lower()
        if upgrade == "websocket":
            offered = _tokens(ctx.request.headers.getall("Sec-WebSocket-Protocol", []))
            if not offered & set(WS_PROTOCOLS):
                raise bad_request(
                    f"unable to upgrade connection: none of the WebSocket subprotocols "
                    f"{list(WS_PROTOCOLS)} was offered (got {sorted(offered) or 'none'})"
                )
            return await self._serve_websocket(ctx, request)
        if upgrade.startswith("spdy/3.1"):
            offered = _tokens(ctx.request.headers.getall("X-Stream-Protocol-Version", []))
            if SPDY_PROTOCOL not in offered:
                raise ApiError(
                    403,
                    "Forbidden",
                    f"unable to upgrade: unable to negotiate protocol: client supports "
                    f"{sorted(offered)}, server accepts [{SPDY_PROTOCOL}]",
                )
            return await self._serve_spdy(ctx, request)
        raise bad_request("Upgrade request required")

    def parse(self, ctx: SubresourceContext) -> ExecRequest:
        """The exec request from the query; 400 ``Status`` for what a real API server refuses."""
        query = ctx.request.query
        command = query.getall("command", [])
        if not command:
            raise bad_request("you must specify at least 1 command")
        spec = ctx.object.get("spec") or {}
        names = [str(c.get("name")) for c in spec.get("containers") or []]
        container = query.get("container", "")
        if not container:
            if len(names) != 1:
                raise bad_request(
                    f"a container name must be specified for pod {ctx.name}, choose one of: [{' '.join(names)}]"
                )
            container = names[0]
        if container not in names + [str(c.get("name")) for c in spec.get("ephemeralContainers") or []]:
            raise bad_request(f"container {container} is not valid for pod {ctx.name}")
        flags = {name: query.get(name, "").lower() in ("1", "true") for name in ("stdin", "stdout", "stderr", "tty")}
        tty = flags["tty"]
        request = ExecRequest(
            ctx.namespace,
            ctx.name,
            container,
            list(command),
            flags["stdin"],
            flags["stdout"],
            flags["stderr"] and not tty,
            tty,
            ctx.object,
        )
        if not (request.stdin or request.stdout or request.stderr):
            raise bad_request("you must specify at least 1 of stdin, stdout, stderr")
        return request

    # --- transports ---------------------------------------------------------------------------------------------

    async def _serve_websocket(self, ctx: SubresourceContext, request: ExecRequest) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=WS_PROTOCOLS, autoping=True, max_msg_size=4 * 1024 * 1024)
        await ws.prepare(ctx.request)
        channels = _WebSocketChannels(ws, v5=ws.ws_protocol == WS_PROTOCOLS[0])
        reader = asyncio.ensure_future(channels.read_loop())

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)

        untrack = ctx.track(stop)
        try:
            status = await self._run(request, channels, ctx, gone=reader)
            if not ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_bytes(bytes([STATUS]) + json.dumps(status).encode())
        finally:
            untrack()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)
            reader.cancel()
            await asyncio.wait({reader}, timeout=2.0)
        return ws

    async def _serve_spdy(self, ctx: SubresourceContext, request: ExecRequest) -> web.StreamResponse:
        upgraded = await spdy.accept_upgrade(ctx.request, SPDY_PROTOCOL)
        channels = _SpdyChannels(request)
        session = spdy.Session(upgraded.send, channels.on_stream, name=f"exec {request.namespace}/{request.pod}")

        async def pump() -> None:
            while (data := await upgraded.read()) is not None:
                await session.feed(data)
            session.connection_lost()

        pumping = asyncio.ensure_future(pump())

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(session.goaway(), 2.0)
            await upgraded.close()

        untrack = ctx.track(stop)
        try:
            if await channels.wait_ready(session):
                closed = asyncio.ensure_future(session.wait_closed(float("inf")))
                try:
                    status = await self._run(request, channels, ctx, gone=closed)
                finally:
                    closed.cancel()
                await channels.finish(status)
            await session.goaway()
        finally:
            untrack()
            pumping.cancel()
            await asyncio.wait({pumping}, timeout=2.0)
            session.connection_lost()
            await session.aclose(2.0)
            await upgraded.close()
        return upgraded.response

    # --- running the command ----------------------------------------------------------------------------------

    async def _run(
        self, request: ExecRequest, channels: _Channels, ctx: SubresourceContext, gone: asyncio.Future[Any]
    ) -> dict[str, Any]:
        """Run what is registered for the pod; the status to send. The command is cancelled (a host command's
        process group killed) when the client goes away (``gone`` completes) or the double stops."""
        request._channels = channels
        handler = self._handler(request)
        annotations = (request.pod_object.get("metadata") or {}).get("annotations") or {}
        timeout = _timeout(annotations.get(TIMEOUT_ANNOTATION))
        launch = self.double.local_runs.get(request.namespace, request.pod, request.container)
        if handler is not None:
            work: Awaitable[dict[str, Any]] = _call_handler(handler, request, timeout)
        elif launch is not None and local_process.is_local(request.pod_object, request.container):
            work = _run_on_host(request, timeout, env=launch.env, cwd=launch.cwd)
        elif str(annotations.get(EXEC_ANNOTATION, "")).lower() == "host":
            work = _run_on_host(request, timeout)
        else:
            return internal_status(
                f"error executing command in container: the Kubernetes API double has no exec handler for pod "
                f"{request.namespace}/{request.pod} (container {request.container}, command {request.command}): "
                f"register one from Python (double.exec_handlers.set({request.namespace!r}, {request.pod!r}, handler)) "
                f"or annotate the pod {EXEC_ANNOTATION}: host to run the command on the host"
            )
        running = asyncio.ensure_future(work)
        stopping = asyncio.ensure_future(ctx.stopping.wait())
        try:
            await asyncio.wait({running, stopping, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not running.done():  # also when this handler itself is cancelled (the connection was lost)
                running.cancel()
                await asyncio.wait({running}, timeout=5.0)
        if running.cancelled() or not running.done():
            why = "is stopping" if ctx.stopping.is_set() else "lost the client's connection"
            return internal_status(f"error executing command in container: the Kubernetes API double {why}")
        return running.result()

    def _not_running(self, request: ExecRequest) -> bool:
        """A local process's container (no handler registered) that runs no process now."""
        if self._handler(request) is not None or not local_process.is_local(request.pod_object, request.container):
            return False
        return self.double.local_runs.get(request.namespace, request.pod, request.container) is None

    def _handler(self, request: ExecRequest) -> Handler | None:
        found: Handler | None = self.double.exec_handlers.get(request.namespace, request.pod)
        return found


async def _call_handler(handler: Handler, request: ExecRequest, timeout: float) -> dict[str, Any]:
    where = f"exec handler for pod {request.namespace}/{request.pod}"
    call: Callable[[ExecRequest], Any] = handler
    try:
        if inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(type(call).__call__):
            result = await asyncio.wait_for(call(request), timeout)
        else:
            if request.stdin:
                request.stdin_data = await asyncio.wait_for(_collect_stdin(request), timeout)
            result = await asyncio.wait_for(asyncio.to_thread(call, request), timeout)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, timeout)
    except TimeoutError:
        return internal_status(
            f"error executing command in container: the {where} did not finish within {timeout:.1f}s"
        )
    except Exception as exc:  # the handler's bug is reported to kubectl, not as a traceback
        log.exception("%s failed", where)
        return internal_status(f"error executing command in container: the {where} raised {type(exc).__name__}: {exc}")
    return await _send_result(request, result)


async def _send_result(request: ExecRequest, result: object) -> dict[str, Any]:
    if result is None:
        return success_status()
    if isinstance(result, bool) or not isinstance(result, (int, ExecResult)):
        return internal_status(
            f"error executing command in container: the exec handler for pod {request.namespace}/"
            f"{request.pod} returned {result!r}; return an ExecResult, an int exit code or None"
        )
    if isinstance(result, int):
        return exit_status(result, request.command)
    if result.stdout:
        await request.write_stdout(result.stdout)
    if result.stderr:
        await request.write_stderr(result.stderr)
    return exit_status(int(result.exit_code), request.command)


async def _collect_stdin(request: ExecRequest) -> bytes:
    parts: list[bytes] = []
    size = 0
    while chunk := await request.read_stdin():
        if size < STDIN_LIMIT:
            parts.append(chunk[: STDIN_LIMIT - size])
        size += len(chunk)
    return b"".join(parts)


async def _run_on_host(
    request: ExecRequest, timeout: float, *, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> dict[str, Any]:
    """Run ``request.command`` on the host: own process group, streamed output, killed (group) at ``timeout``.
    ``env`` is its whole environment (a local process's, :mod:`fakes.kube.local_process`), by default the host's
    with the pod's names; ``cwd`` its working directory (default: this process's)."""
    if env is None:
        env = {
            **os.environ,
            "HOSTNAME": request.pod,
            "KUBE_DOUBLE_POD": request.pod,
            "KUBE_DOUBLE_NAMESPACE": request.namespace,
            "KUBE_DOUBLE_CONTAINER": request.container,
        }
    try:
        proc = await asyncio.create_subprocess_exec(
            *request.command,
            stdin=subprocess.PIPE if request.stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        reason = "executable file not found in $PATH" if isinstance(exc, FileNotFoundError) else str(exc)
        return internal_status(
            f"error executing command in container: failed to exec in container: OCI runtime exec failed: exec "
            f'failed: unable to start container process: exec: "{request.command[0]}": {reason}: unknown'
        )
    watch_group(proc.pid)  # a session of its own: without the watchdog it would outlive a killed pytest
    try:
        return await _relay(request, proc, timeout)
    finally:
        if proc.returncode is not None:
            unwatch_group(proc.pid)


async def _relay(request: ExecRequest, proc: asyncio.subprocess.Process, timeout: float) -> dict[str, Any]:
    """Stream ``proc``'s output to the client and the client's stdin to it, until it exits or ``timeout``."""

    async def copy(stream: asyncio.StreamReader | None, write: Callable[[bytes], Awaitable[None]]) -> None:
        while stream is not None and (chunk := await stream.read(READ_CHUNK)):
            await write(chunk)

    async def feed_stdin() -> None:
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
        asyncio.ensure_future(feed_stdin()),
    ]
    try:
        await asyncio.wait_for(asyncio.gather(proc.wait(), *pumps[:2]), timeout)
    except TimeoutError:
        return internal_status(
            f"error executing command in container: the host command {request.command} did not "
            f"finish within {timeout:.1f}s ({TIMEOUT_ANNOTATION}); its process group was killed"
        )
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5.0)
        for pump in pumps:
            pump.cancel()
        await asyncio.wait(pumps, timeout=2.0)
    code = proc.returncode if proc.returncode is not None and proc.returncode >= 0 else 128 - (proc.returncode or 0)
    return exit_status(code, request.command)


def _timeout(value: object) -> float:
    try:
        seconds = float(str(value)) if value is not None else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return min(MAX_TIMEOUT, seconds) if math.isfinite(seconds) and seconds > 0 else DEFAULT_TIMEOUT


# --- channel transports ------------------------------------------------------------------------------------------


class _WebSocketChannels:
    """Channels as WebSocket binary messages; the reader loop answers pings (aiohttp) and collects stdin."""

    def __init__(self, ws: web.WebSocketResponse, *, v5: bool) -> None:
        self.ws = ws
        self.v5 = v5
        self._stdin: asyncio.Queue[bytes] = asyncio.Queue(maxsize=64)
        self._stdin_closed = False

    async def write(self, channel: int, data: bytes) -> None:
        if not self.ws.closed and data:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.ws.send_bytes(bytes([channel]) + data)

    async def read_stdin(self) -> bytes:
        if self._stdin_closed and self._stdin.empty():
            return b""
        chunk = await self._stdin.get()
        if not chunk:
            self._stdin_closed = True
        return chunk

    async def read_loop(self) -> None:
        try:
            async for message in self.ws:
                if message.type != WSMsgType.BINARY or not message.data:
                    continue
                channel, payload = message.data[0], message.data[1:]
                if channel == STDIN and payload:
                    await self._stdin.put(bytes(payload))
                elif self.v5 and channel == CLOSE and payload[:1] == bytes([STDIN]):
                    await self._stdin.put(b"")
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                self._stdin.put_nowait(b"")  # the connection ended: so did stdin


class _SpdyChannels:
    """Channels as SPDY streams named by ``streamtype``."""

    def __init__(self, request: ExecRequest) -> None:
        self.request = request
        self.streams: dict[str, spdy.Stream] = {}
        self._arrived = asyncio.Event()
        self._released = asyncio.Event()
        wanted = {"error"}
        if request.stdin:
            wanted.add("stdin")
        if request.stdout:
            wanted.add("stdout")
        if request.stderr:
            wanted.add("stderr")
        self.wanted = wanted

    async def on_stream(self, stream: spdy.Stream) -> None:
        await stream.reply()
        kind = stream.headers.get("streamtype", "")
        if kind not in ("error", "stdin", "stdout", "stderr", "resize") or kind in self.streams:
            await stream.reset(spdy.RstStatus.PROTOCOL_ERROR)
            return
        self.streams[kind] = stream
        self._arrived.set()
        await self._released.wait()  # keeps the stream's inbox read (stdin) until the command is done

    async def wait_ready(self, session: spdy.Session) -> bool:
        async def all_there() -> None:
            while not self.wanted <= set(self.streams):
                self._arrived.clear()
                await self._arrived.wait()

        try:
            await asyncio.wait_for(all_there(), STREAMS_TIMEOUT)
        except TimeoutError:
            log.warning(
                "exec %s/%s: the client opened %s of the streams %s",
                self.request.namespace,
                self.request.pod,
                sorted(self.streams),
                sorted(self.wanted),
            )
            return False
        return not session.closed

    async def write(self, channel: int, data: bytes) -> None:
        stream = self.streams.get({STDOUT: "stdout", STDERR: "stderr"}.get(channel, ""))
        if stream is not None and data:
            await stream.write(data)

    async def read_stdin(self) -> bytes:
        stream = self.streams.get("stdin")
        return await stream.read() if stream is not None else b""

    async def finish(self, status: dict[str, Any]) -> None:
        for kind in ("stdout", "stderr"):
            if kind in self.streams:
                await self.streams[kind].close()
        error = self.streams["error"]
        await error.write(json.dumps(status).encode())
        await error.close()
        self._released.set()


def _bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def _tokens(values: list[str]) -> set[str]:
    return {token.strip() for value in values for token in value.split(",") if token.strip()}
