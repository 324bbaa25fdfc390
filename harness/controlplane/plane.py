"""The control plane as one object: started in order, ready as a whole, stopped and removed on every path.

Order (each waits for the one before): etcd (``/health``), kube-apiserver (``/readyz``), then together
kube-controller-manager and kube-scheduler (their ``/healthz``) and kwok (its ``/healthz``); then the Nodes the
harness makes for kwok (Ready), and the ``default`` ServiceAccount of namespace ``default`` (the controller
manager's ServiceAccount controller makes it; until it exists every pod create is refused by the ServiceAccount
admission plugin). :meth:`ControlPlane.start` returns when all of that holds, within one bound.

Everything lives in one temporary folder (data, certificates, kubeconfigs, logs) that the harness's watchdog removes
if the process that started it dies; :meth:`ControlPlane.stop` removes it otherwise. The admin kubeconfig names one
context, its own, and is never merged into the user's.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import yaml

from harness import process
from harness.controlplane import components as comp
from harness.controlplane.admin import AdminClient, health_probe
from harness.controlplane.assets import Assets, find
from harness.controlplane.pki import Pair, Pki, make_pki
from harness.controlplane.processes import Plan, Server, free_port, start_together
from harness.controlplane.release import ENVTEST_PAIR, NAMES
from harness.errors import ControlPlaneStartFailed

if TYPE_CHECKING:
    from harness.kube import Kube

START_TIMEOUT = 90.0
"""Seconds a whole start may take unless ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` says otherwise (envtest's
variable; by hand on 2 idle cores a start took 8-10 s, and a loaded CI machine several times that)."""
STOP_TIMEOUT = 20.0
"""Seconds each component has to exit after SIGTERM unless ``KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT`` says otherwise
(envtest's variable and default)."""
CONTEXT_PREFIX = "harness-control-plane"


def go_duration(text: str) -> float:
    """A Go duration (``"90s"``, ``"1m30s"``, ``"500ms"``) or plain seconds, as seconds; ``ValueError`` otherwise."""
    if re.fullmatch(r"\d+(\.\d+)?", text.strip()):
        return float(text)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"not a duration: {text!r} (Go's form, e.g. 90s or 1m30s)")
    return sum(float(n) * units[u] for n, u in parts)


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return go_duration(value)
    except ValueError as exc:
        raise ControlPlaneStartFailed(f"{name}={value!r}: {exc}", component="harness") from None


@dataclass
class Settings:
    """``start_timeout`` and ``stop_timeout`` in seconds (envtest's variables honoured); ``nodes`` how many Nodes
    kwok simulates; ``components``: all five, or :data:`ENVTEST_PAIR` for an API server alone; ``kwok_configs``:
    more of kwok's ``--config`` files (its ClusterPortForward, ClusterExec, ClusterLogs routes)."""

    start_timeout: float = field(
        default_factory=lambda: _env_seconds("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", START_TIMEOUT)
    )
    stop_timeout: float = field(
        default_factory=lambda: _env_seconds("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", STOP_TIMEOUT)
    )
    nodes: int = 1
    components: tuple[str, ...] = NAMES
    kwok_configs: tuple[Path, ...] = ()


class ControlPlane:
    """A real control plane on 127.0.0.1. ``start()`` (bounded by ``settings.start_timeout``; raises
    :class:`~harness.errors.BinariesMissing` or :class:`~harness.errors.ControlPlaneStartFailed` naming the
    component), then ``url``, ``kubeconfig``, ``context``, :meth:`kube`; ``stop()`` (idempotent). A context manager.

    Start and stop it from one thread that lives as long as it runs (children die with the thread that spawned them,
    see :mod:`harness.controlplane.processes`); :meth:`start_kept` does that for you.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        assets: Assets | None = None,
        kubeconfig: Path | None = None,
        context: str | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.assets = assets or find()
        self.context = context or f"{CONTEXT_PREFIX}-{uuid.uuid4().hex[:8]}"
        self._kubeconfig_asked = kubeconfig
        self.root: Path | None = None
        self.servers: dict[str, Server] = {}
        self.url = ""
        self.kubeconfig = Path()
        self.pki: Pki | None = None
        self.timings: dict[str, float] = {}
        """Seconds from the start's first moment (its folder and certificates are made first, a few hundredths of a
        second before etcd's spawn) until each milestone (``readyz``, ``nodes-ready``, ``ready``)."""
        self.version: dict[str, Any] = {}
        self._keeper: threading.Thread | None = None
        self.admin: AdminClient | None = None
        """The API server as the plane's admin (:mod:`harness.controlplane.admin`), once it answers."""
        self._release = threading.Event()

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        self.assets.require(self.settings.components)
        began = time.monotonic()
        deadline = began + self.settings.start_timeout
        self.root = Path(tempfile.mkdtemp(prefix="harness-control-plane-"))
        process.remove_when_gone(str(self.root))
        try:
            self._start(deadline, began)
        except BaseException:
            self.stop()
            raise
        self.timings["ready"] = time.monotonic() - began
        return self

    def _start(self, deadline: float, began: float) -> None:
        assert self.root is not None
        layout = comp.Layout(self.root)
        self.pki = make_pki(layout.folder("pki"), service_ip=comp.first_service_ip())
        etcd_port = self._start_etcd(layout, deadline)
        self._start_apiserver(layout, etcd_port, deadline)
        self.timings["readyz"] = time.monotonic() - began
        self.version = self._admin().request("GET", "/version")
        if self.settings.components == ENVTEST_PAIR:
            return
        self._install_kwok_crds(deadline)
        self._add(start_together(self._component_plans(layout, self.pki), deadline))
        self._make_nodes(deadline)
        self.timings["nodes-ready"] = time.monotonic() - began
        self._await(
            deadline,
            "the default ServiceAccount of namespace default",
            lambda: self._admin().exists("/api/v1/namespaces/default/serviceaccounts/default"),
            "kube-controller-manager",
        )

    def _start_etcd(self, layout: comp.Layout, deadline: float) -> int:
        """etcd on two picked ports (client, peer); returns the client port."""
        ports: list[int] = []

        def make() -> Server:
            ports[:] = [free_port(), free_port()]
            return comp.etcd(self.assets.paths["etcd"], layout, *ports)

        def health(_server: Server) -> Callable[[], bool]:
            return health_probe(f"http://{comp.HOST}:{ports[0]}/health")

        self._add(start_together([Plan(make, health, "/health answers")], deadline))
        return ports[0]

    def _start_apiserver(self, layout: comp.Layout, etcd_port: int, deadline: float) -> None:
        """kube-apiserver on a picked port, then the admin kubeconfig for it."""
        assert self.pki is not None
        pki, port = self.pki, [0]

        def make() -> Server:
            port[0] = free_port()
            return comp.kube_apiserver(
                self.assets.paths["kube-apiserver"], layout, pki, port=port[0], etcd_port=etcd_port
            )

        def readyz(_server: Server) -> Callable[[], bool]:
            if self.admin is not None:
                self.admin.close()  # a server that lost its port race: its client goes with it
            self.admin = AdminClient(f"https://{comp.HOST}:{port[0]}", pki)
            return self.admin.ready

        self._add(start_together([Plan(make, readyz, "/readyz answers ok")], deadline))
        self.url = f"https://{comp.HOST}:{port[0]}"
        self.kubeconfig = comp.write_kubeconfig(
            self._kubeconfig_asked or layout.root / "admin.kubeconfig",
            server=self.url,
            ca=pki.ca.cert,
            client=pki.admin,
            context=self.context,
        )

    def _component_plans(self, layout: comp.Layout, pki: Pki) -> list[Plan]:
        """kube-controller-manager, kube-scheduler and kwok, each with a kubeconfig of its own identity."""
        paths = self.assets.paths

        def kubeconfig(name: str, pair: Pair) -> Path:
            folder = layout.folder(name)
            return comp.write_kubeconfig(
                folder / "kubeconfig", server=self.url, ca=pki.ca.cert, client=pair, context=name
            )

        cm = kubeconfig("kube-controller-manager", pki.controller_manager)
        sched = kubeconfig("kube-scheduler", pki.scheduler)
        kwok = kubeconfig("kwok", pki.kwok)
        assert self.assets.stages is not None  # Assets.require checked it
        configs = [self.assets.stages, *self.settings.kwok_configs]
        return [
            self._healthz_plan(
                lambda p: comp.kube_controller_manager(
                    paths["kube-controller-manager"], layout, pki, kubeconfig=cm, port=p
                )
            ),
            self._healthz_plan(
                lambda p: comp.kube_scheduler(paths["kube-scheduler"], layout, kubeconfig=sched, port=p)
            ),
            self._healthz_plan(
                lambda p: comp.kwok(
                    paths["kwok"], layout, pki, kubeconfig=kwok, port=p, configs=configs, env=dict(os.environ)
                )
            ),
        ]

    def _healthz_plan(self, make: Callable[[int], Server]) -> Plan:
        """A server that takes its serving port as an argument and is ready when its ``/healthz`` says ok."""
        port = [0]

        def fresh() -> Server:
            port[0] = free_port()
            return make(port[0])

        return Plan(fresh, lambda _s: health_probe(f"https://{comp.HOST}:{port[0]}/healthz"), "/healthz answers ok")

    def _admin(self) -> AdminClient:
        assert self.admin is not None  # made by the apiserver's probe
        return self.admin

    def _add(self, servers: list[Server]) -> None:
        for server in servers:
            self.servers[server.name] = server

    def _install_kwok_crds(self, deadline: float) -> None:
        """kwok's PortForward CRD, Established before kwok starts (kwok lists the kinds of ``--enable-crds``)."""
        assert self.assets.crds is not None  # Assets.require checked it
        crd = yaml.safe_load(self.assets.crds.read_text())
        self._admin().request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"

        def established() -> bool:
            conditions = (self._admin().request("GET", path).get("status") or {}).get("conditions") or []
            return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

        self._await(deadline, f"CRD {crd['metadata']['name']} Established", established, "kube-apiserver")

    def _make_nodes(self, deadline: float) -> None:
        names = [f"kwok-node-{i}" for i in range(self.settings.nodes)]
        for name in names:
            self._admin().request("POST", "/api/v1/nodes", comp.node_manifest(name))
        for name in names:
            self._await(deadline, f"Node {name} Ready", functools.partial(self._node_ready, name), "kwok")

    def _node_ready(self, name: str) -> bool:
        node = self._admin().request("GET", f"/api/v1/nodes/{name}")
        return any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in node.get("status", {}).get("conditions", [])
        )

    def _await(self, deadline: float, what: str, probe: Callable[[], bool], blamed: str) -> None:
        server = self.servers[blamed]
        while True:
            for s in self.servers.values():
                if not s.alive():
                    raise s.failure(
                        f"{s.name} exited (code {s.proc.returncode if s.proc else '?'}) while waiting for {what}"
                    )
            try:
                if probe():
                    return
            except (httpx.HTTPError, ValueError):
                pass
            if time.monotonic() >= deadline:
                raise server.failure(
                    f"{what} did not come within the start's {self.settings.start_timeout:.0f}s ({blamed} makes it)"
                )
            time.sleep(0.1)  # polling pace, bounded by the deadline

    def stop(self) -> None:
        """Stop every component (newest first, SIGTERM then SIGKILL after ``stop_timeout``), remove its folder."""
        if self.admin is not None:
            self.admin.close()
        for server in reversed(list(self.servers.values())):
            server.stop(grace=self.settings.stop_timeout)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            process.forget_folder(str(self.root))
        if self._kubeconfig_asked is not None:
            self._kubeconfig_asked.unlink(missing_ok=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start_kept(self) -> ControlPlane:
        """Start it from a thread of its own that lives until :meth:`release` (so its children live that long);
        returns when ready, or raises what the start raised."""
        failure: list[BaseException] = []
        ready = threading.Event()

        def keep() -> None:
            try:
                self.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._release.wait()
            self.stop()

        self._keeper = threading.Thread(target=keep, name="harness-control-plane", daemon=True)
        self._keeper.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def release(self, timeout: float | None = None) -> None:
        """Stop a plane started by :meth:`start_kept`, waiting up to ``timeout`` seconds (default: every component's
        stop bound) for it."""
        if self._keeper is None:
            self.stop()
            return
        self._release.set()
        self._keeper.join(timeout if timeout is not None else self.settings.stop_timeout * (len(self.servers) + 1))

    # --- access ---------------------------------------------------------------------------------------------------

    def kube(self, namespace: str = "default") -> Kube:
        """A :class:`~harness.kube.Kube` for this plane's context alone (the only one it allows)."""
        from harness.kube import Kube, resolve_kubectl

        assert self.root is not None
        cache = self.root / "kubectl-cache"
        return Kube(
            self.context,
            namespace,
            allowed=(self.context,),
            kubectl_path=resolve_kubectl(),
            kubeconfig=str(self.kubeconfig),
            cache_dir=str(cache),
        )

    def logs(self) -> dict[str, Path]:
        """Each component's log file (for evidence)."""
        return {name: server.log for name, server in self.servers.items()}

    def pids(self) -> dict[str, int]:
        return {name: s.pid for name, s in self.servers.items() if s.pid is not None}

    def ready_line(self) -> dict[str, Any]:
        """What the standalone command prints when ready (JSON-ready)."""
        return {
            "kubeconfig": str(self.kubeconfig),
            "context": self.context,
            "server": self.url,
            "version": self.version.get("gitVersion"),
            "components": {
                n: {"pid": s.pid, "ready_after": round(s.ready_after or 0, 2), "log": str(s.log)}
                for n, s in self.servers.items()
            },
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
        }
