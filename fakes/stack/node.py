"""The twin's node: runs the stack's services as the containers of their pods, one fresh instance per pod.

A pod whose container image is one the twin knows (``twin.stack-harness.dev/<service>``, and the fakes' own
``fake-github:dev`` / ``fake-qdrant:dev``) gets an instance of that service on the node's event loop: its servers
listen on 127.0.0.1 (OS-chosen ports) and its container ports are mapped in the host's port table (:class:`Host`),
so ``kubectl port-forward`` and the in-cluster :mod:`~fakes.stack.network` reach it. Deleting the pod stops the
instance: what the real service keeps in memory is gone (a new pod starts from nothing), what it keeps on a volume
claim survives (``PodContext.volume``). Job containers run to completion and report an exit code.

The pod lifecycle around it (Pending -> Running -> Ready, Terminating, Succeeded/Failed) is the kubelet's part: the
API double's kubelet drives the node through :class:`NodeRunner`.

The node is the one part of the twin that does what a node does: its :class:`Host` serves the pods' ports, exec and
logs, and gives the wall clock (``PodContext.clock``); through its own API client it reads the ConfigMaps and
Secrets a pod's environment and volumes name, as a kubelet does before a start. Everything a service does at the
API goes through ``PodContext.api`` (:mod:`fakes.stack.cluster_api`), with the token of its pod's ServiceAccount:
the node asks for it with a TokenRequest (bound to the pod, :data:`TOKEN_SECONDS`, renewed at 80 % of its life, as
the kubelet's projected token volume is), so RBAC rules what a service may do.
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

from fakes.kube.client import Api
from fakes.kube.extensions import ExecHandlers, PortMap
from fakes.kube.informer import Informer
from fakes.kube.local_process import environment
from fakes.kube.logs import LogBook
from fakes.kube.node.sources import Fetched, fetch_sources
from fakes.stack import bugs as bug_switches
from fakes.stack.bugs import Switches
from fakes.stack.cluster_api import ClusterApi
from fakes.stack.network import ClusterClient, Network
from fakes.stack.profile import Effective

if TYPE_CHECKING:
    from fakes.kube.exec import ExecRequest, ExecResult

log = logging.getLogger("fakes.stack")
LOG_LINES = 2000
"""Lines of output kept per container (the node's `kubectl logs`)."""
TOKEN_SECONDS = 3607
"""The ``expirationSeconds`` the node asks for a pod's ServiceAccount token: the kubelet's projected volume's."""
TOKEN_RENEW = 0.8
"""The share of a token's life after which the node asks for a new one (the kubelet's token manager)."""
WATCH_START_TIMEOUT = 30.0
"""Seconds the node's own lists (Services, pods, the bug switches) may take to come in at start."""
ExecHandler = Callable[["ExecRequest"], "ExecResult"]


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
    api: ClusterApi
    sources: Fetched
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
    def clock(self) -> Callable[[], float]:
        """The cluster's wall clock (seconds since the epoch): what ``creationTimestamp`` is written with."""
        return self.node.clock

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
        self.node.host.ports.map(self.namespace, self.name, container_port, host, port)

    def serve_exec(self, handler: ExecHandler | None) -> None:
        """Answer ``kubectl exec`` into this pod with ``handler`` (``None``: stop answering), as the container's
        own programs would."""
        handlers = self.node.host.exec_handlers
        if handler is None:
            handlers.clear(self.namespace, self.name)
        else:
            handlers.set(self.namespace, self.name, handler)

    def mounted_file(self, path: str) -> str | None:
        """The text of ``path`` as the pod's configMap volumes mount it, or ``None`` when no volume provides it (as
        the ConfigMap was when the pod started)."""
        spec = self.pod.get("spec") or {}
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        for mount in self.container.get("volumeMounts") or []:
            root = str(mount.get("mountPath", "")).rstrip("/") + "/"
            source = (volumes.get(mount.get("name")) or {}).get("configMap") or {}
            if not path.startswith(root) or not source.get("name"):
                continue
            data = self.sources.config_map(self.namespace, str(source["name"])) or {}
            value = data.get(path[len(root) :])
            if value is not None:
                return str(value)
        return None

    def volume(self, claim: str) -> dict[str, Any]:
        """The durable state behind the persistentVolumeClaim ``claim`` (survives pod restarts)."""
        return self.node.volume(self.namespace, claim)

    def log(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.lines.append(f"{stamp} {message}")
        book = self.node.host.logs
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
    renewal: asyncio.Task[None]


@dataclass
class Host:
    """What the node's pods get from the machine that runs them (the API double's kubelet, or a local node of a
    real control plane): the port table ``kubectl port-forward`` reaches containers through, the exec handlers
    ``kubectl exec`` runs, the log book ``kubectl logs`` reads (``None``: lines only in :meth:`Node.logs`), and the
    wall clock (seconds since the epoch)."""

    ports: PortMap
    exec_handlers: ExecHandlers
    logs: LogBook | None
    clock: Callable[[], float] = time.time


class Node:
    """Service instances by pod, on one event loop in its own thread (``start_loop`` / ``close``). ``host`` is where
    their ports, exec and logs are served; ``api`` the node's own client of the API server (its kubelet's and
    kube-proxy's credentials)."""

    def __init__(
        self,
        host: Host,
        api: Api,
        namespace: str,
        bugs: Switches | None = None,
        timing: Effective | None = None,
        *,
        endpoint_slices: bool = False,
    ) -> None:
        self.host = host
        self.api = api
        self.namespace = namespace
        self.bugs = bugs if bugs is not None else Switches()
        self.timing = timing if timing is not None else Effective()
        self.clock: Callable[[], float] = host.clock
        self.network = Network(api, host.ports, namespace, endpoint_slices=endpoint_slices)
        self._bug_switches: Informer | None = None
        self.images: list[tuple[str, ContainerFactory]] = []
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
        """Start the loop and the node's watches; returns once they have listed. Raises ``InformerNotSynced``."""
        self._thread.start()
        self.submit(self.network.start(WATCH_START_TIMEOUT)).result(WATCH_START_TIMEOUT + 1.0)

    def publish_bugs(self) -> None:
        """Write the seed of the bug switches into their ConfigMap through the API and read them from its watch
        from now on (:meth:`fakes.stack.bugs.Switches.follow`)."""
        self.submit(self._publish_bugs()).result(WATCH_START_TIMEOUT + 1.0)

    async def _publish_bugs(self) -> None:
        manifest = bug_switches.configmap(self.bugs.seed, self.namespace)
        api = ClusterApi(self.api, self.namespace)
        await api.create("configmaps", manifest)
        informer = api.informer("configmaps", fieldSelector=f"metadata.name={bug_switches.CONFIGMAP}")
        await informer.start(WATCH_START_TIMEOUT)
        self._bug_switches = informer
        self.bugs.follow(lambda: informer.get(bug_switches.CONFIGMAP, self.namespace))

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
        if self._bug_switches is not None:
            await self._bug_switches.stop()
        await self.network.stop()
        await self.api.aclose()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:  # token renewals and services' own tasks: nothing outlives the loop
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

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

    def context_for(self, pod: dict[str, Any], token: str, sources: Fetched) -> PodContext:
        """The pod's context, its API client authenticated with ``token`` (the pod's ServiceAccount's), its
        environment and volumes from ``sources`` (read through the API as the pod starts)."""
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        env = environment(pod, container, sources, strict=False)
        api = ClusterApi(self.api.with_token(token), str(pod["metadata"]["namespace"]))
        return PodContext(self, pod, container, env, api, sources)

    async def _token(self, pod: dict[str, Any]) -> tuple[str, float]:
        """A TokenRequest for the pod's ServiceAccount, bound to the pod: ``(token, lifetime seconds)``."""
        meta = pod["metadata"]
        account = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": TOKEN_SECONDS,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta.get("uid")},
            },
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token"
        answer = await self.api.call("POST", path, request)
        return str(answer["status"]["token"]), float(answer["spec"].get("expirationSeconds") or TOKEN_SECONDS)

    async def _renew_token(self, pod: dict[str, Any], api: ClusterApi, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds * TOKEN_RENEW)
            try:
                token, seconds = await self._token(pod)
            except Exception as exc:  # the kubelet retries; the old token is still good for a fifth of its life
                log.warning("%s: renewing its token failed: %s", pod["metadata"]["name"], exc)
                seconds = seconds / 4
                continue
            api.api.set_token(token)

    async def start(self, pod: dict[str, Any]) -> Running:
        """Start the pod's service and return once it serves. Raises what the service's start raises."""
        factory = self.factory_for(pod)
        if factory is None:
            raise KeyError(f"the twin's node runs no image {pod['spec']['containers'][0].get('image')!r}")
        token, seconds = await self._token(pod)
        context = self.context_for(pod, token, await fetch_sources(self.api, pod))
        renewal = asyncio.ensure_future(self._renew_token(pod, context.api, seconds))
        instance = factory(context)
        running = Running(context, instance, time.monotonic(), renewal)
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
        self.host.ports.clear(namespace, name)
        running.renewal.cancel()
        await running.context.api.api.aclose()


class PodProcessHandle:
    """The kubelet's view of one pod's service instance (the double's ``PodProcess``): polled on the kubelet's loop,
    updated from the node's loop. ``ready()`` once the service serves; ``exit_code`` once it has stopped or, for a
    Job container, once its process ended."""

    def __init__(self, node: Node, pod: dict[str, Any]) -> None:
        self.node = node
        self.namespace = str(pod["metadata"]["namespace"])
        self.name = str(pod["metadata"]["name"])
        self.started_at = time.time()
        self._ready = False
        self._exit: int | None = None
        self._exited = threading.Event()
        self._terminating = False
        node.submit(self._run(pod))

    def ready(self) -> bool:
        return self._ready and self._exit is None

    @property
    def exit_code(self) -> int | None:
        return self._exit

    def terminate(self, grace: float) -> None:
        if self._terminating:
            return
        self._terminating = True
        if self.node.loop.is_closed():  # the node stopped every instance already
            self._ended(self._exit if self._exit is not None else 143)
            return
        self.node.submit(self._stop(grace))

    def kill(self) -> None:
        self.terminate(0.0)

    def wait(self, timeout: float) -> int | None:
        """The exit code once the instance has stopped, waiting up to ``timeout`` seconds (``None`` if still up)."""
        self._exited.wait(timeout)
        return self._exit

    def _ended(self, code: int) -> None:
        self._exit = code
        self._exited.set()

    async def _run(self, pod: dict[str, Any]) -> None:
        try:
            running = await self.node.start(pod)
        except Exception as exc:  # a container that fails to start exits 1, as a process would
            log.warning("%s/%s failed to start: %s: %s", self.namespace, self.name, type(exc).__name__, exc)
            await self.node.stop(self.namespace, self.name, grace=0.0)
            self._ended(1)
            return
        if self._terminating:
            return
        self._ready = True
        finished = getattr(running.container, "exit_code", None)
        if isinstance(finished, asyncio.Future):
            code = await finished
            await self.node.stop(self.namespace, self.name, grace=1.0)
            self._ready = False
            self._ended(code)

    async def _stop(self, grace: float) -> None:
        self._ready = False
        await self.node.stop(self.namespace, self.name, grace=grace)
        if self._exit is None:
            self._ended(143)  # SIGTERM


class NodeRunner:
    """The double's ``PodRunner`` for the images the node knows: each start is a fresh service instance."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def matches(self, pod: dict[str, Any]) -> bool:
        return self.node.runs(pod)

    def start(self, pod: dict[str, Any]) -> PodProcessHandle:
        return PodProcessHandle(self.node, pod)

    def for_local_node(self, pod: dict[str, Any], _container: str) -> PodProcessHandle | None:
        """A local node's ``runtime`` hook: the pod's instance when the node knows its image, else ``None``."""
        return self.start(pod) if self.matches(pod) else None
