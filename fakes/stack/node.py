"""The twin's node: runs the stack's services as the containers of their pods, one fresh instance per pod.

A pod whose container image is one the twin knows (``twin.stack-harness.dev/<service>``, and the fakes' own
``fake-github:dev`` / ``fake-qdrant:dev``) gets an instance of that service on the node's event loop: its servers
listen on 127.0.0.1 (OS-chosen ports) and its container ports are mapped in ``double.ports``, so ``kubectl
port-forward`` and the in-cluster :mod:`~fakes.stack.network` reach it. Deleting the pod stops the instance: what
the real service keeps in memory is gone (a new pod starts from nothing), what it keeps on a volume claim survives
(``PodContext.volume``). Job containers run to completion and report an exit code.

The pod lifecycle around it (Pending -> Running -> Ready, Terminating, Succeeded/Failed) is the kubelet's part:
:mod:`fakes.stack.kubelet` drives it through :meth:`Node.start` / :meth:`Node.stop`.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fakes.kube.local_process import StoreSources, environment
from fakes.stack.bugs import Switches
from fakes.stack.network import ClusterClient, Network
from fakes.stack.profile import Effective

if TYPE_CHECKING:
    from fakes.kube.double import KubeDouble

log = logging.getLogger("fakes.stack")
LOG_LINES = 2000
"""Lines of output kept per container (the node's `kubectl logs`)."""


class Container(Protocol):
    """One running service instance. ``start`` returns once it serves (the pod may turn Ready)."""

    async def start(self) -> None: ...

    async def stop(self, grace: float) -> None: ...


class RunToCompletion(Protocol):
    """A Job container: ``exit_code`` resolves when its process ends."""

    exit_code: asyncio.Future[int]


ContainerFactory = Callable[["PodContext"], Container]


@dataclass
class PodContext:
    """What a service instance gets: its pod, resolved env and args, the cluster, the node's durable volumes."""

    node: Node
    pod: dict[str, Any]
    container: dict[str, Any]
    env: dict[str, str]
    lines: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=LOG_LINES))

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def network(self) -> Network:
        return self.node.network

    @property
    def double(self) -> KubeDouble:
        return self.node.double

    @property
    def bugs(self) -> Switches:
        return self.node.bugs

    @property
    def timing(self) -> Effective:
        """The twin's timings (its time scale and overrides): the defaults of every service's cadence."""
        return self.node.timing

    def client(self, timeout: float = 10.0) -> ClusterClient:
        return ClusterClient(self.node.network, timeout=timeout)

    def map_port(self, container_port: int, port: int, host: str = "127.0.0.1") -> None:
        self.node.double.ports.map(self.namespace, self.name, container_port, host, port)

    def volume(self, claim: str) -> dict[str, Any]:
        """The durable state behind the persistentVolumeClaim ``claim`` (survives pod restarts)."""
        return self.node.volume(self.namespace, claim)

    def log(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.lines.append(f"{stamp} {message}")
        book = self.node.logbook
        if book is not None:
            with contextlib.suppress(KeyError):  # the pod is already gone
                book.append(self.namespace, self.name, message)
        log.info("%s/%s: %s", self.namespace, self.name, message)

    def env_ms(self, name: str, default: float) -> float:
        """``env[name]`` milliseconds as seconds; missing or junk gives ``default`` seconds."""
        try:
            return float(self.env[name]) / 1000.0
        except (KeyError, ValueError):
            return default


@dataclass
class Running:
    context: PodContext
    container: Container
    task_started: float


class Node:
    """Service instances by pod, on one event loop in its own thread (``start_loop`` / ``close``)."""

    def __init__(
        self,
        double: KubeDouble,
        namespace: str,
        bugs: Switches | None = None,
        timing: Effective | None = None,
    ) -> None:
        self.double = double
        self.namespace = namespace
        self.bugs = bugs if bugs is not None else Switches()
        self.timing = timing if timing is not None else Effective()
        self.network = Network(double, namespace)
        self.images: list[tuple[str, ContainerFactory]] = []
        #: The double's log book (``kubectl logs``), when its controllers run.
        self.logbook: Any = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="twin-node", daemon=True)
        self._running: dict[tuple[str, str], Running] = {}
        self._volumes: dict[tuple[str, str], dict[str, Any]] = {}
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    # --- registry of images -----------------------------------------------------------------------------------

    def register(self, image_prefix: str, factory: ContainerFactory) -> None:
        self.images.append((image_prefix, factory))

    def factory_for(self, pod: dict[str, Any]) -> ContainerFactory | None:
        containers = (pod.get("spec") or {}).get("containers") or []
        image = str(containers[0].get("image", "")) if containers else ""
        return next((f for prefix, f in self.images if image.startswith(prefix)), None)

    def runs(self, pod: dict[str, Any]) -> bool:
        return self.factory_for(pod) is not None

    # --- the loop ---------------------------------------------------------------------------------------------

    def start_loop(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        """Run ``coro`` on the node loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self, timeout: float = 20.0) -> None:
        """Stop every instance (a short grace each), then the loop; bounded by ``timeout`` seconds."""
        if not self._thread.is_alive():
            return
        try:
            self.submit(self._stop_all()).result(timeout)
        except Exception as exc:  # stopping is best effort, but say so
            log.warning("twin node: stopping the instances failed: %s", exc)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()

    async def _stop_all(self) -> None:
        with self._lock:
            keys = list(self._running)
        await asyncio.gather(*(self.stop(ns, name, grace=1.0) for ns, name in keys), return_exceptions=True)

    # --- instances --------------------------------------------------------------------------------------------

    def seen(self, kind: str) -> bool:
        """Whether an instance of ``kind`` ran on this node before (then note that one does now)."""
        with self._lock:
            before = kind in self._seen
            self._seen.add(kind)
            return before

    def volume(self, namespace: str, claim: str) -> dict[str, Any]:
        with self._lock:
            return self._volumes.setdefault((namespace, claim), {})

    def context_for(self, pod: dict[str, Any]) -> PodContext:
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        return PodContext(
            self, pod, container, environment(pod, container, StoreSources(self.double.store), strict=False)
        )

    async def start(self, pod: dict[str, Any]) -> Running:
        """Start the pod's service and return once it serves. Raises what the service's start raises."""
        factory = self.factory_for(pod)
        if factory is None:
            raise KeyError(f"the twin's node runs no image {pod['spec']['containers'][0].get('image')!r}")
        context = self.context_for(pod)
        instance = factory(context)
        running = Running(context, instance, time.monotonic())
        with self._lock:
            self._running[(context.namespace, context.name)] = running
        context.log(f"starting {context.container.get('image')}")
        await instance.start()
        return running

    def instance(self, namespace: str, name: str) -> Any | None:
        with self._lock:
            running = self._running.get((namespace, name))
        return running.container if running else None

    def logs(self, namespace: str, name: str) -> list[str]:
        with self._lock:
            running = self._running.get((namespace, name))
        return list(running.context.lines) if running else []

    async def stop(self, namespace: str, name: str, *, grace: float) -> None:
        """SIGTERM semantics: the instance gets ``grace`` seconds to finish, then it is gone (ports unmapped)."""
        with self._lock:
            running = self._running.pop((namespace, name), None)
        if running is None:
            return
        running.context.log(f"stopping (grace {grace:.0f}s)")
        try:
            await asyncio.wait_for(running.container.stop(grace), timeout=grace + 1.0)
        except (TimeoutError, Exception) as exc:  # the kubelet's SIGKILL after the grace period
            log.warning("%s/%s did not stop cleanly within %.0fs: %r", namespace, name, grace, exc)
        self.double.ports.clear(namespace, name)


class PodProcessHandle:
    """The kubelet's view of one pod's service instance (the double's ``PodProcess``): polled on the double's loop,
    updated from the node's loop. ``ready()`` once the service serves; ``exit_code`` once it has stopped or, for a
    Job container, once its process ended."""

    def __init__(self, node: Node, pod: dict[str, Any]) -> None:
        self.node = node
        self.namespace = str(pod["metadata"]["namespace"])
        self.name = str(pod["metadata"]["name"])
        self._ready = False
        self._exit: int | None = None
        self._terminating = False
        node.submit(self._run(pod))

    def ready(self) -> bool:
        return self._ready and self._exit is None

    @property
    def exit_code(self) -> int | None:
        return self._exit

    def terminate(self, grace: float) -> None:
        if not self._terminating:
            self._terminating = True
            self.node.submit(self._stop(grace))

    async def _run(self, pod: dict[str, Any]) -> None:
        try:
            running = await self.node.start(pod)
        except Exception as exc:  # a container that fails to start exits 1, as a process would
            log.warning("%s/%s failed to start: %s: %s", self.namespace, self.name, type(exc).__name__, exc)
            await self.node.stop(self.namespace, self.name, grace=0.0)
            self._exit = 1
            return
        if self._terminating:
            return
        self._ready = True
        finished = getattr(running.container, "exit_code", None)
        if isinstance(finished, asyncio.Future):
            code = await finished
            await self.node.stop(self.namespace, self.name, grace=1.0)
            self._ready = False
            self._exit = code

    async def _stop(self, grace: float) -> None:
        self._ready = False
        await self.node.stop(self.namespace, self.name, grace=grace)
        if self._exit is None:
            self._exit = 143  # SIGTERM


class NodeRunner:
    """The double's ``PodRunner`` for the images the node knows: each start is a fresh service instance."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def matches(self, pod: dict[str, Any]) -> bool:
        return self.node.runs(pod)

    def start(self, pod: dict[str, Any]) -> PodProcessHandle:
        return PodProcessHandle(self.node, pod)
