"""The pieces both port-forward servers share: a tunnel pinned to one pod, the stream pairs it carries, the
connections relaying, and the sandbox names the kubelet's messages use.

:mod:`fakes.kube.portforward` (SPDY, both transports) and :mod:`fakes.kube.portforward_channels` (the WebSocket channel
protocols) both build these; this module imports neither, so neither imports the other back.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fakes.kube import spdy


def sandbox_id(pod_uid: str) -> str:
    """The 64-hex-digit sandbox id this double shows for a pod (stable per uid)."""
    return hashlib.sha256(f"sandbox:{pod_uid}".encode()).hexdigest()


def netns_path(pod_uid: str) -> str:
    return f"/var/run/netns/cni-{uuid.uuid5(uuid.NAMESPACE_URL, pod_uid)}"


@dataclass(frozen=True)
class TunnelInfo:
    """A snapshot of one kubectl tunnel: ``transport`` (``websocket`` or ``spdy``), the pod it is pinned to (name
    and uid), ``connections`` open now, ``total`` connections it carried, ``streams_ignored`` while wedged."""

    namespace: str
    pod: str
    pod_uid: str
    transport: str
    connections: int
    total: int
    streams_ignored: int
    opened_at: float


@dataclass
class Pair:
    """The error and data streams of one forwarded connection, as they arrive (kubectl opens them in turn under
    one ``requestid``; the channel protocol has both from the start)."""

    request_id: str
    port: int
    error: spdy.Stream | None = None
    data: spdy.Stream | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def complete(self) -> bool:
        return self.error is not None and self.data is not None


class Connection:
    """One forwarded connection (a stream pair) while it relays: what a fault or a pod's death acts on."""

    def __init__(self, tunnel: Tunnel, pair: Pair) -> None:
        self.tunnel = tunnel
        self.pair = pair
        self.ended = asyncio.Event()
        self.failure: str | None = None
        self.pod_died = False
        self.first_bytes = asyncio.Event()
        self.target: asyncio.StreamWriter | None = None

    def fail(self, message: str) -> None:
        """End with ``message`` on the error stream (the relay task sends it)."""
        if not self.ended.is_set():
            self.failure = message
            self.ended.set()

    def die_with_pod(self) -> None:
        """The pod's process died: its side of the connection closes (no error text)."""
        if not self.ended.is_set():
            self.pod_died = True
            self.ended.set()


class Tunnel:
    """One client connection pinned to one pod: a kubectl SPDY session, or one channel-protocol WebSocket."""

    def __init__(self, namespace: str, pod: dict[str, Any], transport: str) -> None:
        meta = pod.get("metadata") or {}
        self.namespace = namespace
        self.pod_name = str(meta.get("name", ""))
        self.pod_uid = str(meta.get("uid", ""))
        self.pod = pod
        self.transport = transport
        self.sandbox = sandbox_id(self.pod_uid)
        self.pod_gone = False
        self.pairs: dict[str, Pair] = {}
        self.connections: set[Connection] = set()
        self.total = 0
        self.opened_at = time.time()
        self.session: spdy.Session | None = None

    def info(self) -> TunnelInfo:
        ignored = len(self.session.ignored_streams) if self.session is not None else 0
        return TunnelInfo(
            self.namespace,
            self.pod_name,
            self.pod_uid,
            self.transport,
            len(self.connections),
            self.total,
            ignored,
            self.opened_at,
        )

    def error_text(self, port: int, cause: str) -> str:
        return f"error forwarding port {port} to pod {self.sandbox}, uid : {cause}"
