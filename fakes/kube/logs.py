"""``pods/<name>/log``: container logs kept per container *run*, served with the API server's and kubelet's rules.

Where lines come from:

- the pod's annotations ``double.stack-harness.dev/logs`` (every container) or ``double.stack-harness.dev/logs.<c>``
  (one container): lines each run of the container writes when it starts (:mod:`fakes.kube.lifecycle`), so a
  crash-looping container has ``--previous`` logs;
- Python: ``LogBook.append("default", "api-7d9f-x2x", "line 1", "line 2", container="app")`` writes to the
  container's current run (to its next run if it is not running yet); every line is stamped with the double's clock.

Each run is identified by the container's ``containerID``, so which run a request reads follows the pod's status
exactly as the kubelet decides (``validateContainerLogStatus`` in ``pkg/kubelet/kubelet_pods.go``): ``previous``
reads ``lastState.terminated``; otherwise a running container, else a terminated one, else the last terminated one.

Query parameters (``PodLogOptions``): ``container``, ``follow``, ``previous``, ``sinceSeconds``, ``sinceTime``,
``tailLines``, ``limitBytes``, ``timestamps`` (each line prefixed with its RFC 3339 time with nanoseconds, as the
container runtime writes it). ``follow`` streams (chunked) and ends when the run ends (the container stops), the pod is
removed, the client goes away or the double stops.

Errors, worded as on a real cluster: no ``container`` on a multi-container pod is a 400 ``a container name must be
specified for pod P, choose one of: [a b]``; an unknown one a 400 ``container x is not valid for pod P``; a pod not yet
scheduled answers 200 with an empty body (the API server has no node to ask); from the kubelet, 400s such as
``container "app" in pod "P" is waiting to start: ContainerCreating``, ``... is waiting to start: trying and failing to
pull image`` and ``previous terminated container "app" in pod "P" not found``; invalid options a 422 ``PodLogOptions
"P" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0``. kubectl's ``Defaulted container
"a" out of: a, b`` is kubectl's own doing: it picks the ``kubectl.kubernetes.io/default-container`` annotation or the
first container and sends ``container=``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from fakes.kube.clock import Clock, parse_rfc3339
from fakes.kube.controllers.base import meta, spec, status
from fakes.kube.errors import (
    ApiError,
    Cause,
    bad_request,
    field_invalid,
    invalid,
    method_not_allowed,
)
from fakes.kube.extensions import SubresourceContext
from fakes.kube.store import Store

Obj = dict[str, Any]
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"
FOLLOW_POLL = 0.5  # seconds between checks that a follower's client and pod are still there
TRUE_WORDS = ("1", "t", "T", "TRUE", "true", "True")
FALSE_WORDS = ("0", "f", "F", "FALSE", "false", "False")


@dataclass
class _Run:
    container_id: str
    lines: list[tuple[float, str]] = field(default_factory=list)
    ended: bool = False


@dataclass
class LogOptions:
    """Parsed ``PodLogOptions`` query parameters."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    since_seconds: int | None = None
    since_time: float | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None
    timestamps: bool = False

    @classmethod
    def parse(cls, query: Any, pod_name: str) -> LogOptions:
        """From the request query; 400 for unparsable values, 422 for values the API rejects."""
        opts = cls(
            container=str(query.get("container", "")),
            follow=_bool(query, "follow"),
            previous=_bool(query, "previous"),
            timestamps=_bool(query, "timestamps"),
            since_seconds=_int(query, "sinceSeconds"),
            tail_lines=_int(query, "tailLines"),
            limit_bytes=_int(query, "limitBytes"),
        )
        if query.get("sinceTime"):
            try:
                opts.since_time = parse_rfc3339(str(query["sinceTime"]))
            except ValueError:
                raise bad_request(
                    f'parsing time "{query["sinceTime"]}" as "2006-01-02T15:04:05Z07:00": cannot parse as RFC 3339'
                ) from None
        causes = []
        if opts.tail_lines is not None and opts.tail_lines < 0:
            causes.append(field_invalid("tailLines", opts.tail_lines, "must be greater than or equal to 0"))
        if opts.limit_bytes is not None and opts.limit_bytes < 1:
            causes.append(field_invalid("limitBytes", opts.limit_bytes, "must be greater than 0"))
        if opts.since_seconds is not None and opts.since_time is not None:
            causes.append(
                Cause("FieldValueForbidden", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
            )
        elif opts.since_seconds is not None and opts.since_seconds < 1:
            causes.append(field_invalid("sinceSeconds", opts.since_seconds, "must be greater than 0"))
        if causes:
            raise invalid("PodLogOptions", "", pod_name, causes)
        return opts


def _bool(query: Any, name: str) -> bool:
    value = query.get(name)
    if value is None:
        return False
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _int(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


class LogBook:
    """Log lines of every container run of one double. Thread-safe; followers are woken on the double's loop."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], dict[str, _Run]] = {}
        self._pending: dict[tuple[str, str], list[tuple[float, str]]] = {}
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    # --- the kubelet's side ------------------------------------------------------------------------------------

    def start_run(self, uid: str, container: str, container_id: str, lines: Iterable[str] = ()) -> None:
        """A new run of ``container`` started: it writes ``lines``, then what was appended while it was not
        running."""
        now = self.clock.time()
        with self._lock:
            run = self._runs.setdefault((uid, container), {}).setdefault(container_id, _Run(container_id))
            run.lines.extend((now, line) for line in lines)
            run.lines.extend(self._pending.pop((uid, container), []))
        self._wake()

    def write(self, uid: str, container: str, container_id: str, line: str) -> None:
        """A line the run ``container_id`` (begun with :meth:`start_run`) printed: a local process's output, from its
        reading thread. Dropped once the pod's logs are forgotten (its last lines may come after its removal)."""
        now = self.clock.time()
        with self._lock:
            run = self._runs.get((uid, container), {}).get(container_id)
            if run is None:
                return
            run.lines.append((now, line))
        self._wake()

    def end_run(self, uid: str, container: str, container_id: str) -> None:
        with self._lock:
            run = self._runs.get((uid, container), {}).get(container_id)
            if run is not None:
                run.ended = True
        self._wake()

    def forget(self, uid: str) -> None:
        """The pod is gone: drop its logs (followers end)."""
        with self._lock:
            for key in [k for k in self._runs if k[0] == uid]:
                for run in self._runs.pop(key).values():
                    run.ended = True
            for key in [k for k in self._pending if k[0] == uid]:
                del self._pending[key]
        self._wake()

    def reset(self) -> None:
        with self._lock:
            for runs in self._runs.values():
                for run in runs.values():
                    run.ended = True
            self._runs.clear()
            self._pending.clear()
        self._wake()

    # --- Python -------------------------------------------------------------------------------------------------

    def append(self, namespace: str, pod: str, *lines: str, container: str | None = None) -> None:
        """Append ``lines`` to the current run of ``container`` (default: the pod's default container) of pod
        ``namespace/pod``, or to its next run when it is not running. Raises ``KeyError`` for a missing pod or
        container."""
        obj = self.store.get("pods", namespace, pod)
        if obj is None:
            raise KeyError(f"pod {namespace}/{pod} does not exist")
        name = container or default_container(obj)
        if name not in container_names(obj):
            raise KeyError(f"pod {namespace}/{pod} has no container {name!r} (it has {container_names(obj)})")
        uid = str(meta(obj).get("uid", ""))
        state = _container_status(obj, name) or {}
        now = self.clock.time()
        stamped = [(now, line) for text in lines for line in str(text).splitlines() or [""]]
        with self._lock:
            if "running" in (state.get("state") or {}):
                run = self._runs.setdefault((uid, name), {}).setdefault(
                    str(state.get("containerID", "")), _Run(str(state.get("containerID", "")))
                )
                run.lines.extend(stamped)
            elif live := [run for run in self._runs.get((uid, name), {}).values() if not run.ended]:
                # The kubelet started this run (start_run) but has not written the status yet: the line is the
                # run's, not the next one's (start_run already took what was pending).
                live[-1].lines.extend(stamped)
            else:
                self._pending.setdefault((uid, name), []).extend(stamped)
        self._wake()

    @property
    def followers(self) -> int:
        """How many ``follow`` streams are open now."""
        with self._lock:
            return len(self._waiters)

    def lines(self, uid: str, container: str, container_id: str) -> list[tuple[float, str]]:
        """``(epoch, text)`` of one run (a copy)."""
        with self._lock:
            run = self._runs.get((uid, container), {}).get(container_id)
            return list(run.lines) if run is not None else []

    # --- the HTTP handler ---------------------------------------------------------------------------------------

    async def serve(self, ctx: SubresourceContext) -> web.StreamResponse:
        """``GET pods/<name>/log`` (register with ``double.subresources.register("pods", "log", book.serve)``)."""
        if ctx.request.method.upper() != "GET":
            raise method_not_allowed(ctx.request.method.upper(), "pods/log", "")
        pod = ctx.object
        opts = LogOptions.parse(ctx.request.query, ctx.name)
        container = pick_container(pod, opts.container)
        if not spec(pod).get("nodeName"):
            return web.Response(body=b"", content_type="text/plain")
        container_id = kubelet_container_id(pod, container, opts.previous)
        uid = str(meta(pod).get("uid", ""))
        lines = self.lines(uid, container, container_id)
        shown = self._select(lines, opts)
        if not opts.follow or self._ended(uid, container, container_id):
            return web.Response(body=_limit(shown, opts.limit_bytes), content_type="text/plain")
        return await self._follow(ctx, (uid, container, container_id), shown, len(lines), opts)

    def _select(self, lines: list[tuple[float, str]], opts: LogOptions) -> list[bytes]:
        since = opts.since_time
        if opts.since_seconds is not None:
            since = self.clock.time() - opts.since_seconds
        if since is not None:
            lines = [entry for entry in lines if entry[0] >= since]
        if opts.tail_lines is not None:
            lines = lines[len(lines) - opts.tail_lines :] if opts.tail_lines else []
        return [_format(entry, opts.timestamps) for entry in lines]

    def _ended(self, uid: str, container: str, container_id: str) -> bool:
        with self._lock:
            run = self._runs.get((uid, container), {}).get(container_id)
            return run is None or run.ended

    async def _follow(
        self, ctx: SubresourceContext, run_key: tuple[str, str, str], first: list[bytes], sent: int, opts: LogOptions
    ) -> web.StreamResponse:
        """Stream ``first``, then each new line of the run, until it ends (or the client or the double goes)."""
        uid, container, container_id = run_key
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(ctx.request)
        budget = opts.limit_bytes if opts.limit_bytes is not None else math.inf
        wake = asyncio.Event()
        waiter = (asyncio.get_running_loop(), wake)
        stopped = asyncio.Event()

        async def closer() -> None:
            stopped.set()
            wake.set()

        untrack = ctx.track(closer)
        with self._lock:
            self._waiters.add(waiter)
            # Held, not looked up again: the pod's removal forgets its runs (marking them ended) right after the
            # run's last lines, which the stream still sends.
            run = self._runs.get((uid, container), {}).get(container_id)
        try:
            budget = await _write(response, first, budget)
            while budget > 0 and not ctx.client_gone() and not ctx.stopping.is_set() and not stopped.is_set():
                with self._lock:
                    fresh = list(run.lines[sent:]) if run is not None else []
                    ended = run is None or run.ended
                sent += len(fresh)
                budget = await _write(response, [_format(e, opts.timestamps) for e in fresh], budget)
                if ended:
                    break
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), FOLLOW_POLL)
            if not ctx.client_gone():
                await response.write_eof()
        finally:
            with self._lock:
                self._waiters.discard(waiter)
            untrack()
        return response

    def _wake(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: the double stopped
                loop.call_soon_threadsafe(event.set)


async def _write(response: web.StreamResponse, chunks: list[bytes], budget: float) -> float:
    for chunk in chunks:
        if budget <= 0:
            break
        piece = chunk if len(chunk) <= budget else chunk[: int(budget)]
        await response.write(piece)
        budget -= len(piece)
    return budget


def _limit(chunks: list[bytes], limit: int | None) -> bytes:
    body = b"".join(chunks)
    return body if limit is None else body[:limit]


def _format(entry: tuple[float, str], timestamps: bool) -> bytes:
    epoch, text = entry
    line = f"{rfc3339_nano(epoch)} {text}\n" if timestamps else f"{text}\n"
    return line.encode()


def rfc3339_nano(epoch: float) -> str:
    """Go's ``time.RFC3339Nano`` (trailing zeros of the fraction dropped): ``2025-01-31T12:00:00.1234567Z``."""
    whole = math.floor(epoch)
    nanos = round((epoch - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, 0
    base = datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f".{nanos:09d}".rstrip("0").rstrip(".")
    return f"{base}{fraction}Z"


# --- the API server's and kubelet's choices ----------------------------------------------------------------------


def container_names(pod: Obj, *, init: bool = True) -> list[str]:
    keys = ("containers", "initContainers", "ephemeralContainers") if init else ("containers",)
    return [str(c.get("name", "")) for key in keys for c in spec(pod).get(key) or [] if isinstance(c, dict)]


def default_container(pod: Obj) -> str:
    """kubectl's choice: the ``kubectl.kubernetes.io/default-container`` annotation, else the first container."""
    wanted = (meta(pod).get("annotations") or {}).get(DEFAULT_CONTAINER)
    names = container_names(pod, init=False)
    if wanted and wanted in container_names(pod):
        return str(wanted)
    return names[0] if names else ""


def pick_container(pod: Obj, requested: str) -> str:
    """The API server's ``validateContainer`` (``pkg/registry/core/pod/strategy.go``)."""
    name = str(meta(pod).get("name", ""))
    if requested:
        if requested not in container_names(pod):
            raise bad_request(f"container {requested} is not valid for pod {name}")
        return requested
    main = container_names(pod, init=False)
    if len(main) == 1:
        return main[0]
    if not main:
        raise bad_request(f"a container name must be specified for pod {name}")
    message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(main)}]"
    inits = [str(c.get("name", "")) for c in spec(pod).get("initContainers") or []]
    if inits:
        message += f" or one of the init containers: [{' '.join(inits)}]"
    raise bad_request(message)


def _container_status(pod: Obj, container: str) -> Obj | None:
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status(pod).get(key) or []:
            if isinstance(cs, dict) and cs.get("name") == container:
                return cs
    return None


def kubelet_container_id(pod: Obj, container: str, previous: bool) -> str:
    """Which run the kubelet serves, or its 400 (``validateContainerLogStatus``)."""
    name = str(meta(pod).get("name", ""))
    cs = _container_status(pod, container)
    if cs is None:
        raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is not available')
    last = (cs.get("lastState") or {}).get("terminated")
    state = cs.get("state") or {}
    if previous:
        if not last or not last.get("containerID"):
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return str(last["containerID"])
    if "running" in state:
        return str(cs.get("containerID", ""))
    if "terminated" in state:
        cid = state["terminated"].get("containerID") or (last or {}).get("containerID")
        if not cid:
            raise bad_request(f'container "{container}" in pod "{name}" is terminated')
        return str(cid)
    if last:
        if not last.get("containerID"):
            raise bad_request(f'container "{container}" in pod "{name}" is terminated')
        return str(last["containerID"])
    reason = (state.get("waiting") or {}).get("reason")
    if reason == "ErrImagePull":
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: image can\'t be pulled')
    if reason == "ImagePullBackOff":
        raise bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: trying and failing to pull image'
        )
    if reason:
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    raise bad_request(f'container "{container}" in pod "{name}" is waiting to start - no logs yet')
