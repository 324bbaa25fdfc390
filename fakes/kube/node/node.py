"""A node of this machine for a real API server: registers its Node, renews its Lease, runs the pods bound to it.

What a kubelet does, for the local-process contract (:mod:`fakes.kube.local_process`): the Node (labels a kubelet
sets, ``stack-harness.dev/local-node: "true"``, Ready, address 127.0.0.1, its kubelet port in
``status.daemonEndpoints``), its Lease in ``kube-node-lease`` renewed every :data:`LEASE_RENEW_SECONDS`, a watch of
the pods whose ``spec.nodeName`` is this node (re-listed on ``410 Gone``), one :class:`~fakes.kube.node.pods.PodWorker`
per pod, and the kubelet port (:mod:`fakes.kube.node.kubelet`). It talks to the API server only through its API, with
the kubeconfig it is given.

It runs on a thread of its own with its own event loop: :meth:`LocalNode.start` returns once the Node is Ready and
schedulable; :meth:`LocalNode.stop` kills every process of its pods, deletes its Node and Lease and joins the thread,
all bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from fakes.kube.client import Api, ApiError
from fakes.kube.controllers.node import healthy_conditions
from fakes.kube.node.kubelet import KubeletServer, Surface
from fakes.kube.node.pods import Container, Hooks, PodWorker, rfc3339
from fakes.kube.node.sources import Fetched, fetch_sources

log = logging.getLogger("fakes.kube.node")
Obj = dict[str, Any]
LEASE_SECONDS = 40
"""The Lease's ``leaseDurationSeconds``: the kubelet's default (``nodeLeaseDurationSeconds``)."""
LEASE_RENEW_SECONDS = 10.0
"""How often the Lease is renewed: a quarter of its duration, as the kubelet does."""
START_TIMEOUT = 60.0
WATCH_RETRY_SECONDS = 1.0
"""Seconds between a failed pod watch and the next list."""
STOP_TIMEOUT = 30.0
LABEL = "stack-harness.dev/local-node"
POD_CIDR = "10.244.0.0/24"
"""The Node's ``spec.podCIDR``; each pod's IP comes from it. Never dialled: the API server refuses loopback pod
addresses in Endpoints and EndpointSlices, so pods need addresses of their own, and everything that reaches a pod's
port goes through this node's port table on 127.0.0.1 (port-forward, and the stack twin's network)."""


class NodeError(Exception):
    """The node could not start (``start`` names the step and the API server's answer)."""


class LocalNode:
    """``LocalNode(kubeconfig, name)``: a node named ``name`` registered with the API server of ``kubeconfig``'s
    current context. A context manager (``start`` / ``stop``)."""

    def __init__(self, kubeconfig: Path, name: str = "local-node", *, start_timeout: float = START_TIMEOUT) -> None:
        self.kubeconfig, self.name, self.start_timeout = Path(kubeconfig), name, start_timeout
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._workers: dict[str, PodWorker] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._pending: set[asyncio.Future[None]] = set()
        #: ``runtime(pod, container name)``: a process-like run for a container that is not of the local-process
        #: contract (see :class:`~fakes.kube.node.pods.Hooks`), or ``None`` to simulate it; set before pods arrive.
        self.runtime: Callable[[Obj, str], Any] | None = None
        self._addresses: dict[str, str] = {}

    def __enter__(self) -> LocalNode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalNode:
        """Register the node and serve; returns once the Node is Ready without the not-ready taint. Raises
        :class:`NodeError` naming what failed, or after ``start_timeout`` seconds."""
        self._thread = threading.Thread(target=self._serve, name=f"local node {self.name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(self.start_timeout) or self._failure is not None:
            why = self._failure or f"not Ready and schedulable within {self.start_timeout:.0f} s"
            self.stop()
            raise NodeError(f"node {self.name}: {why}")
        return self

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Kill its pods' processes, delete its Node and Lease, stop serving. Idempotent, bounded by ``timeout``."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def pods(self) -> list[str]:
        """``namespace/name`` of the pods it runs now."""
        return sorted(f"{w.namespace}/{w.name}" for w in self._workers.values())

    # --- the node's loop ---------------------------------------------------------------------------------------

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # reported by start(); the thread ends
            self._failure = exc
            self._ready.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self.surface = Surface(asyncio.get_running_loop())
        self.kubelet = KubeletServer(self.surface)
        self.api = Api.from_kubeconfig(self.kubeconfig)
        try:
            await self.kubelet.start()
            await self._register()
            background = [
                asyncio.ensure_future(self._renew_lease()),
                asyncio.ensure_future(self._watch_pods()),
            ]
            await self._until_schedulable()
            self._ready.set()
            await self._stop.wait()
            for task in background:
                task.cancel()
            await asyncio.wait(background, timeout=5.0)
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        for worker in self._workers.values():
            worker.gone.set()
        if self._tasks:
            await asyncio.wait(list(self._tasks.values()), timeout=STOP_TIMEOUT / 2)
        if self._pending:
            _, late = await asyncio.wait(self._pending, timeout=2.0)
            for task in late:
                task.cancel()
        for path in (
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.name}",
            f"/api/v1/nodes/{self.name}",
        ):
            with contextlib.suppress(Exception):
                await self.api.call("DELETE", path)
        await self.kubelet.stop()
        await self.api.aclose()

    # --- the Node and its Lease --------------------------------------------------------------------------------

    async def _register(self) -> None:
        version = (await self.api.call("GET", "/version")).get("gitVersion", "v0.0.0")
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            LABEL: "true",
        }
        spec = {"podCIDR": POD_CIDR, "podCIDRs": [POD_CIDR]}
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": labels}, "spec": spec}
        try:
            await self.api.call("POST", "/api/v1/nodes", node)
        except ApiError as exc:
            if exc.status != 409:
                raise NodeError(f"creating Node {self.name}: {exc}") from None
        await self.api.call("PATCH", f"/api/v1/nodes/{self.name}/status", {"status": self._node_status(version)})

    def _node_status(self, version: str) -> Obj:
        now = rfc3339(time.time())
        capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{_memory_kib()}Ki", "pods": "110"}
        return {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": healthy_conditions(now),
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": self.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet.port}},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": version,
                "kubeProxyVersion": "",
                "containerRuntimeVersion": "local-process://1",
                "kernelVersion": os.uname().release,
                "osImage": "this machine",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }

    async def _renew_lease(self) -> None:
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        while True:
            now = _micro(time.time())
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name},
                "spec": {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now},
            }
            try:
                try:
                    await self.api.call("PATCH", f"{path}/{self.name}", {"spec": lease["spec"]})
                except ApiError as exc:
                    if exc.status != 404:
                        raise
                    await self.api.call("POST", path, lease)
            except Exception as exc:  # the next renewal tries again, well inside the lease's duration
                log.warning("lease of node %s not renewed: %s", self.name, exc)
            await asyncio.sleep(LEASE_RENEW_SECONDS)  # a period, not a readiness wait

    async def _until_schedulable(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            node = await self.api.call("GET", f"/api/v1/nodes/{self.name}")
            taints = [t.get("key") for t in (node.get("spec") or {}).get("taints") or []]
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (node.get("status") or {}).get("conditions") or []
            )
            if ready and "node.kubernetes.io/not-ready" not in taints:
                return
            await asyncio.sleep(0.1)  # polling the API server for the node lifecycle controller's change
        raise NodeError(f"not Ready without the not-ready taint after {self.start_timeout:.0f} s")

    # --- pods ----------------------------------------------------------------------------------------------------

    async def _watch_pods(self) -> None:
        """The pod watch, started again after any failure (an API server restart, an answer it could not read)."""
        while True:
            try:
                await self._watch_pods_once()
            except (ApiError, httpx.HTTPError, ValueError, KeyError) as exc:
                log.warning("pod watch of node %s failed, watching again: %s", self.name, exc)
                await asyncio.sleep(WATCH_RETRY_SECONDS)  # a pause before the next list, not a readiness wait

    async def _watch_pods_once(self) -> None:
        async for event in self.api.watch("/api/v1/pods", fieldSelector=f"spec.nodeName={self.name}"):
            if event["type"] == "SYNCED":
                present = {f"{ns}/{name}" for ns, name in event["keys"]}
                for key, worker in list(self._workers.items()):
                    if f"{worker.namespace}/{worker.name}" not in present:
                        self._gone(key)
                continue
            pod = event["object"]
            uid = str(pod["metadata"]["uid"])
            if event["type"] == "DELETED":
                self._gone(uid)
                continue
            self.surface.store.put(pod)
            if uid in self._workers:
                self._workers[uid].update(pod)
            else:
                self._begin(pod)

    def _begin(self, pod: Obj) -> None:
        uid = str(pod["metadata"]["uid"])
        worker = PodWorker(pod, self._hooks())
        self._workers[uid] = worker
        task = asyncio.ensure_future(worker.run())
        self._tasks[uid] = task
        task.add_done_callback(lambda _t: self._forget(uid))

    def _gone(self, uid: str) -> None:
        worker = self._workers.get(uid)
        if worker is not None:
            worker.gone.set()

    def _forget(self, uid: str) -> None:
        worker = self._workers.pop(uid, None)
        self._tasks.pop(uid, None)
        if worker is None:
            return
        self.surface.local_runs.drop(worker.namespace, worker.name)
        self.surface.ports.clear(worker.namespace, worker.name)
        self.surface.store.drop(worker.namespace, worker.name)
        self._addresses.pop(uid, None)
        self.kubelet.logs.forget(uid)

    def _hooks(self) -> Hooks:
        return Hooks(
            self._patch_status,
            self._delete,
            self._sources,
            self._on_run,
            self._on_output,
            self._on_end,
            self._event,
            runtime=lambda pod, name: self.runtime(pod, name) if self.runtime is not None else None,
            pod_ip=self._pod_ip,
        )

    def _pod_ip(self, pod: Obj) -> str:
        """The pod's address from :data:`POD_CIDR`, one per pod uid until the pod is gone."""
        uid = str(pod["metadata"]["uid"])
        if uid not in self._addresses:
            taken = set(self._addresses.values())
            free = (str(a) for a in ipaddress.ip_network(POD_CIDR).hosts() if str(a) not in taken)
            self._addresses[uid] = next(free, "")  # a full range writes no address, as a kubelet without IPs
        return self._addresses[uid]

    async def _patch_status(self, pod: Obj, status: Obj) -> Obj:
        meta = pod["metadata"]
        written = await self.api.call(
            "PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status", {"status": status}
        )
        if written.get("metadata", {}).get("uid") == meta["uid"]:
            self.surface.store.put(written)
        return written

    async def _delete(self, pod: Obj) -> None:
        meta = pod["metadata"]
        options = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]},
        }
        try:
            await self.api.call("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", options)
        except ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("pod %s/%s not deleted: %s", meta["namespace"], meta["name"], exc)

    async def _sources(self, pod: Obj) -> Fetched:
        return await fetch_sources(self.api, pod)

    def _on_run(self, pod: Obj, c: Container) -> None:
        meta = pod["metadata"]
        self.kubelet.logs.start_run(str(meta["uid"]), c.name, c.container_id)
        if c.launch is None:
            return
        self.surface.local_runs.set(str(meta["namespace"]), str(meta["name"]), c.name, c.launch)
        for port, local in c.launch.ports.items():
            self.surface.ports.map(str(meta["namespace"]), str(meta["name"]), port, "127.0.0.1", local)

    def _on_output(self, pod: Obj, container: str, run: str, _stream: str, line: bytes) -> None:
        self.kubelet.logs.write(str(pod["metadata"]["uid"]), container, run, line.decode("utf-8", "replace"))

    def _event(self, pod: Obj, kind: str, reason: str, message: str) -> None:
        """A core/v1 Event from the kubelet of this node, sent without waiting (a lost event loses nothing else)."""
        meta, now = pod["metadata"], rfc3339(time.time())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "type": kind,
            "reason": reason,
            "message": message,
            "source": {"component": "kubelet", "host": self.name},
            "reportingComponent": "kubelet",
            "reportingInstance": self.name,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

        async def send() -> None:
            with contextlib.suppress(Exception):
                await self.api.call("POST", f"/api/v1/namespaces/{meta['namespace']}/events", event)

        self._pending.add(asyncio.ensure_future(send()))
        self._pending = {t for t in self._pending if not t.done()}

    def _on_end(self, pod: Obj, c: Container) -> None:
        meta = pod["metadata"]
        self.kubelet.logs.end_run(str(meta["uid"]), c.name, c.container_id)
        self.surface.local_runs.drop(str(meta["namespace"]), str(meta["name"]), c.name)


def _micro(when: float) -> str:
    """A ``MicroTime`` (RFC 3339 with microseconds), as a Lease's ``renewTime`` needs."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _memory_kib() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024)
    except (ValueError, OSError):
        return 8 * 1024 * 1024
