"""The core-controller's twin: an AgentRun becomes a ``<run>-identity`` Secret and a Job of the same name; the
Job's outcome becomes the run's ``status.phase``.

It acts only while its own pod runs (a stopped controller leaves new runs phaseless, as RBAC drift or a crash loop
does: failure mode 36 in specs/cluster/README.md) and resynchronises every run when it starts. As a
controller-runtime manager does, it watches AgentRuns and Jobs through the API with its ServiceAccount's token (the
ClusterRole ``core-controller`` must grant it: without list and watch it never starts), queues the name of every run
an event concerns and reconciles one name at a time from its caches; writes go to the API, a status write again on
``409 Conflict``.

For each run without a Job: the Agent named by ``spec.agentRef`` is read (``spec.env`` at every launch, so pacing
patched onto the Agent applies to the next run), the requested ``spec.secretEnv`` values are resolved for the run's
subject (Claude credentials from their Secrets, ``AGENT_ACTOR_LOGIN`` from a ``github:<login>`` subject,
``AGENT_TARGET_REPOSITORY`` and a linked user's ``GITHUB_TOKEN``: :func:`fakes.stack.identity.run_secret_values`)
into the ``<run>-identity`` Secret, and the Job's single container gets the Agent's env, the run's coordinates and one
``secretKeyRef`` per requested name. ``status.phase`` is ``Running`` once the Job exists, then ``Succeeded`` or
``Failed`` from the Job's conditions. A terminal phase is final whoever wrote it (the controller itself, or anyone
else with access to the status subresource): the run is then left alone until the retention sweep deletes it an hour
later (``DefaultAgentRunRetention``), even while its Job still runs; a non-terminal phase is re-derived from the Job on
every event. This is what the product's AgentRun reconciler does (it returns early for ``Succeeded``/``Failed``
before looking at the Job; specs/cluster/README.md, "Promises the suite guards").
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from datetime import datetime
from typing import Any

import httpx

from fakes.kube.informer import Informer
from fakes.stack import config, identity
from fakes.stack.cluster_api import ApiError
from fakes.stack.node import PodContext

TERMINAL = ("Succeeded", "Failed")
RUN_LABEL = "core.controller-agent.dev/agentrun"
SYNC_TIMEOUT = 30.0
"""Seconds the first lists of AgentRuns and Jobs may take before the controller gives up starting (and its pod
restarts, as a manager whose caches never sync exits)."""


class CoreController:
    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.api = ctx.api
        self.ns = ctx.namespace
        self.key = ctx.env.get("IDENTITY_LINK_ENCRYPTION_KEY", "")
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.queued: set[str] = set()
        self.runs: Informer = self.api.informer(config.AGENTRUNS, self._on_run)
        self.jobs: Informer = self.api.informer("jobs.batch", self._on_job)
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        try:
            await asyncio.gather(self.runs.start(SYNC_TIMEOUT), self.jobs.start(SYNC_TIMEOUT))
        except Exception:
            await self.stop(0.0)
            raise
        self.tasks = [asyncio.ensure_future(self._work()), asyncio.ensure_future(self._retention())]
        self.ctx.log(f"core-controller: started, {len(self.runs.items())} AgentRun(s) resynchronised")

    async def stop(self, grace: float) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(self.runs.stop(), self.jobs.stop())

    def _on_run(self, kind: str, run: dict[str, Any]) -> None:
        if kind != "DELETED":
            self._enqueue(run["metadata"]["name"])

    def _on_job(self, kind: str, job: dict[str, Any]) -> None:
        owner = (job["metadata"].get("labels") or {}).get(RUN_LABEL)
        if owner and kind != "DELETED":
            self._enqueue(owner)

    def _enqueue(self, name: str) -> None:
        if name not in self.queued:  # a work queue holds a name once, however many events name it
            self.queued.add(name)
            self.queue.put_nowait(name)

    async def _work(self) -> None:
        while True:
            name = await self.queue.get()
            self.queued.discard(name)
            await self.reconcile(name)

    # --- reconcile --------------------------------------------------------------------------------------------

    async def reconcile(self, name: str) -> None:
        try:
            run = self.runs.get(name, self.ns)
            if run is None or run["metadata"].get("deletionTimestamp"):
                return
            terminal = (run.get("status") or {}).get("phase") in TERMINAL
            if terminal and "rollout-fails-run-transiently" not in self.ctx.bugs:
                return  # final, whoever wrote it: only the retention sweep touches the run again
            job = self.jobs.get(name, self.ns)
            if job is None:
                if terminal:
                    return
                await self._launch(run)
                await self._phase(name, "Running")
                return
            await self._phase(name, job_phase(job))
        except (ApiError, httpx.HTTPError) as exc:
            self.ctx.log(f"core-controller: reconcile {name}: {exc}")

    async def _phase(self, name: str, phase: str, message: str | None = None) -> None:
        def change(obj: dict[str, Any]) -> bool:
            status = obj.setdefault("status", {})
            if status.get("phase") == phase:
                return False
            status["phase"] = phase
            if message:
                status["message"] = message
            return True

        current = self.runs.get(name, self.ns)
        if current is not None and (current.get("status") or {}).get("phase") != phase:
            await self.api.mutate(config.AGENTRUNS, name, change, sub="status")

    async def _launch(self, run: dict[str, Any]) -> None:
        spec = run.get("spec") or {}
        name = run["metadata"]["name"]
        agent = await self.api.get(config.AGENTS, str(spec.get("agentRef", "")))
        if agent is None:
            await self._phase(name, "Failed", f"agent {spec.get('agentRef')!r} not found")
            return
        owner = {
            "apiVersion": f"{config.GROUP}/{config.VERSION}",
            "kind": "AgentRun",
            "name": name,
            "uid": run["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        wanted = [str(n) for n in spec.get("secretEnv") or []]
        values = await identity.run_secret_values(self.api, self.key, spec)
        await self._create(
            "secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {
                    "name": f"{name}-identity",
                    "namespace": self.ns,
                    "ownerReferences": [owner],
                    "labels": {RUN_LABEL: name},
                },
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items() if k in wanted},
            },
        )
        refs = [n for n in wanted if not ("job-env-missing" in self.ctx.bugs and n == "AGENT_ACTOR_LOGIN")]
        env = [dict(e) for e in ((agent.get("spec") or {}).get("env") or []) if isinstance(e, dict)]
        env += [
            {"name": "AGENT_RUN_NAME", "value": name},
            {"name": "AGENT_GOAL", "value": str(spec.get("goal", ""))},
            {"name": "NATS_URL", "value": f"nats://{config.NATS}.{self.ns}.svc.cluster.local:{config.NATS_PORT}"},
        ]
        env += [
            {"name": n, "valueFrom": {"secretKeyRef": {"name": f"{name}-identity", "key": n, "optional": True}}}
            for n in refs
        ]
        await self._create(
            "jobs.batch",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": self.ns,
                    "ownerReferences": [owner],
                    "labels": {RUN_LABEL: name},
                },
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "metadata": {"labels": {RUN_LABEL: name}},
                        "spec": {
                            "restartPolicy": "Never",
                            "terminationGracePeriodSeconds": int(self.ctx.timing.stored("pod_grace")),
                            "containers": [
                                {"name": "agent", "image": str((agent.get("spec") or {}).get("image", "")), "env": env}
                            ],
                        },
                    },
                },
            },
        )
        self.ctx.log(f"core-controller: Job {name} created with env {[e['name'] for e in env]}")

    async def _create(self, resource: str, obj: dict[str, Any]) -> None:
        try:
            await self.api.create(resource, obj)
        except ApiError as exc:
            if exc.code != 409:  # created already (a resync after a restart, or a cache behind our write): fine
                raise

    async def _retention(self) -> None:
        while True:
            await asyncio.sleep(self.ctx.timing.seconds("retention_sweep"))
            now = self.ctx.clock()
            for run in self.runs.items():
                done = (run.get("status") or {}).get("phase") in TERMINAL
                created = datetime.fromisoformat(run["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
                if done and now - created.timestamp() > self.ctx.timing.seconds("run_retention"):
                    with contextlib.suppress(ApiError, httpx.HTTPError):
                        await self.api.delete(config.AGENTRUNS, run["metadata"]["name"])


def job_phase(job: dict[str, Any]) -> str:
    """``Succeeded`` / ``Failed`` from the Job's conditions (or counts), else ``Running``."""
    status = job.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "Succeeded"
        if condition.get("status") == "True" and condition.get("type") in ("Failed", "FailureTarget"):
            return "Failed"
    if status.get("succeeded"):
        return "Succeeded"
    if status.get("failed"):
        return "Failed"
    return "Running"
