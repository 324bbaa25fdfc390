"""``--target control-plane``: the cluster specs run against a real control plane this pytest run starts.

One control plane per run, shared by every xdist worker. The process that owns it is the main process (the xdist
controller, or the only process without xdist): it starts the plane in the background as soon as the session is
configured (so the start overlaps the workers' start and collection), writes ``ready.json`` in the run's folder, and
stops it when pytest unconfigures. A worker's first cluster spec waits for that file (bounded by the start's own
bound) and uses the plane's context; it never starts or stops one. The run's folder goes to the worker in its
``workerinput``, never through the environment, so an inner pytest run a spec starts does not attach to it.

The plane has one context, so the cluster specs are one shard and run one at a time under the harness's
per-context cluster lock, as against one ``--kube-context``; :func:`harness.controlplane.fixtures` gives each spec a
namespace of its own. The context is allowed for this run alone, by construction: the :class:`~harness.kube.Kube`
it hands out allows exactly it, and it is in no kubeconfig but the run's own.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import process
from harness.controlplane.assets import find
from harness.controlplane.plane import CONTEXT_PREFIX, ControlPlane, Settings
from harness.errors import ControlPlaneStartFailed

if TYPE_CHECKING:
    import pytest

    from harness.kube import Kube

WORKER_KEY = "harness_control_plane"
READY = "ready.json"
ATTACH_GRACE = 30.0
"""Seconds a worker waits for the owner's ready file beyond the start's own bound (the owner writes it right after)."""


class ControlPlaneTarget:
    """The control plane as a target (:class:`harness.targets.StandIn`): ``kube``, ``start``, ``stop``,
    ``report``, ``header``, ``describe``. ``run_dir`` holds the kubeconfig, ``ready.json`` and kubectl's cache."""

    def __init__(self, run_dir: Path, context: str, namespace: str, *, owner: bool) -> None:
        self.run_dir, self.context, self.namespace, self.owner = run_dir, context, namespace, owner
        self.settings = Settings()
        self.plane: ControlPlane | None = None
        self._lock = threading.Lock()
        self._failure: str | None = None
        self._ready: dict[str, Any] | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "admin.kubeconfig"

    @property
    def kube(self) -> Kube:
        from harness.kube import Kube, resolve_kubectl

        return Kube(
            self.context,
            self.namespace,
            allowed=(self.context,),
            kubectl_path=resolve_kubectl(),
            kubeconfig=str(self.kubeconfig),
            cache_dir=str(self.run_dir / "kubectl-cache"),
        )

    def begin(self) -> None:
        """Owner: start in the background now (a failure is kept and raised by :meth:`start`)."""
        threading.Thread(target=self._start_quietly, name="harness-control-plane-start", daemon=True).start()

    def _start_quietly(self) -> None:
        with contextlib.suppress(Exception):  # recorded in self._failure and ready.json; raised again by start()
            self.start()

    def start(self) -> None:
        """Owner: start once (later calls wait for that one, then return or raise its failure). Worker: wait for
        the owner's ready file. Raises :class:`ControlPlaneStartFailed`."""
        if not self.owner:
            self._attach()
            return
        with self._lock:
            if self._failure is not None:
                raise ControlPlaneStartFailed(self._failure, component="control plane")
            if self.plane is not None:
                return
            plane = ControlPlane(self.settings, kubeconfig=self.kubeconfig, context=self.context)
            try:
                plane.start_kept()
                self._create_namespace(plane)
            except Exception as exc:
                self._failure = f"the control plane did not start: {exc}"
                self._write({"error": self._failure})
                raise ControlPlaneStartFailed(self._failure, component="control plane") from exc
            self.plane = plane
            self._ready = plane.ready_line()
            self._write({"ready": self._ready})

    def _create_namespace(self, plane: ControlPlane) -> None:
        if self.namespace == "default":
            return
        manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        assert plane.admin is not None  # started
        plane.admin.request("POST", "/api/v1/namespaces", manifest)

    def _write(self, doc: dict[str, Any]) -> None:
        partial = self.run_dir / (READY + ".partial")
        partial.write_text(json.dumps(doc))
        partial.replace(self.run_dir / READY)

    def _attach(self) -> None:
        if self._ready is not None:
            return
        bound = self.settings.start_timeout + ATTACH_GRACE
        deadline = time.monotonic() + bound
        while True:
            try:
                doc = json.loads((self.run_dir / READY).read_text())
            except (OSError, ValueError):
                doc = None
            if doc is not None and "error" in doc:
                raise ControlPlaneStartFailed(str(doc["error"]), component="control plane")
            if doc is not None:
                self._ready = doc["ready"]
                return
            if time.monotonic() >= deadline:
                raise ControlPlaneStartFailed(
                    f"the run's control plane was not ready within {bound:.0f}s (no {self.run_dir / READY}): the "
                    "main pytest process starts it; its log is in that process's output",
                    component="control plane",
                )
            time.sleep(0.2)  # another process's start: nothing to wait on but its file

    def stop(self) -> None:
        if not self.owner:
            return
        with self._lock:
            if self.plane is not None:
                self.plane.release()
                self.plane = None
        shutil.rmtree(self.run_dir, ignore_errors=True)
        process.forget_folder(str(self.run_dir))

    @property
    def ready(self) -> dict[str, Any]:
        """The plane's ready line (:meth:`ControlPlane.ready_line`: kubeconfig, context, server, version, each
        component's pid, log and ``ready_after``); ``{}`` before :meth:`start`."""
        return dict(self._ready or {})

    def report(self) -> dict[str, Any] | None:
        return self._ready if self.owner else None

    def header(self) -> list[str]:
        return [
            f"control plane: a real one, started by this run (its context {self.context} is allowed for this run "
            f"only; KUBEBUILDER_CONTROLPLANE_START_TIMEOUT bounds its start: {self.settings.start_timeout:.0f}s)"
        ]

    def describe(self, reports: list[dict[str, Any]]) -> str:
        if not reports:
            return ""
        ready = reports[0]
        took = ready.get("timings", {}).get("ready", 0.0)
        return f"Kubernetes {ready.get('version')}, ready {took:.1f}s after its first spawn"

    def logs(self) -> dict[str, Path]:
        """Each component's log (the owner's plane; ``{}`` elsewhere or before the start)."""
        if self.plane is not None:
            return self.plane.logs()
        ready = self._ready or {}
        return {name: Path(c["log"]) for name, c in ready.get("components", {}).items()}


def make_target(config: pytest.Config, namespace: str, *, background: bool = True) -> ControlPlaneTarget:
    """The target for this process: the owner in the main process (binaries checked now: a
    :class:`~harness.errors.BinariesMissing` skips the cluster specs with its fix), an attached one in a worker.
    ``background``: an owner under xdist starts at once, in the background."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and WORKER_KEY in workerinput:
        shipped = workerinput[WORKER_KEY]
        return ControlPlaneTarget(Path(shipped["run_dir"]), shipped["context"], namespace, owner=False)
    find().require()
    from harness.config import load_config

    kwok_configs = tuple(Path(p) for p in load_config(config.rootpath).kwok_configs)
    run_dir = Path(tempfile.mkdtemp(prefix="harness-control-plane-run-"))
    process.remove_when_gone(str(run_dir))
    target = ControlPlaneTarget(run_dir, f"{CONTEXT_PREFIX}-{uuid.uuid4().hex[:8]}", namespace, owner=True)
    target.settings = Settings(kwok_configs=kwok_configs)  # [tool.harness] kwok_configs: the project's own Stages
    if background and getattr(config.option, "numprocesses", None):
        target.begin()  # under xdist: start while the workers start and collect
    return target


def ship(target: ControlPlaneTarget, workerinput: dict[str, Any]) -> None:
    """The xdist controller hands a worker what it needs to attach."""
    workerinput[WORKER_KEY] = {"run_dir": str(target.run_dir), "context": target.context}
