"""The core-controller's twin: an AgentRun becomes a ``<run>-identity`` Secret and a Job of the same name; the
Job's outcome becomes the run's ``status.phase``.

It acts only while its own pod runs (a stopped controller leaves new runs phaseless, as RBAC drift or a crash loop
does: failure mode 36 in specs/cluster/README.md) and resynchronises every run when it starts. Writes go through
the API double's store, so ``creationTimestamp`` is whole-second and on the double's clock.

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
from typing import Any

from fakes.kube.clock import parse_rfc3339
from fakes.kube.errors import ApiError
from fakes.kube.store import StoreEvent
from fakes.stack import config, identity
from fakes.stack.node import PodContext

TERMINAL = ("Succeeded", "Failed")
RUN_LABEL = "core.controller-agent.dev/agentrun"


class CoreController:
    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.store = ctx.double.store
        self.ns = ctx.namespace
        self.key = ctx.env.get("IDENTITY_LINK_ENCRYPTION_KEY", "")
        self.subscription: Any = None
        self.sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def feed(event: StoreEvent) -> None:  # on the double's loop: hand over to the node's
            loop.call_soon_threadsafe(self._on_event, event)

        self.subscription = self.store.subscribe(feed, [config.AGENTRUNS_KEY, "batch/jobs"])
        items, _ = self.store.list(config.AGENTRUNS, self.ns)
        for run in items:
            self.reconcile(run["metadata"]["name"])
        self.sweeper = asyncio.ensure_future(self._retention())
        self.ctx.log(f"core-controller: started, {len(items)} AgentRun(s) resynchronised")

    async def stop(self, grace: float) -> None:
        if self.subscription is not None:
            self.subscription.cancel()
            self.subscription = None
        if self.sweeper is not None:
            self.sweeper.cancel()

    def _on_event(self, event: StoreEvent) -> None:
        if self.subscription is None or event.namespace != self.ns or event.type == "DELETED":
            return
        if event.resource.key == "batch/jobs":
            owner = (event.object["metadata"].get("labels") or {}).get(RUN_LABEL)
            if owner:
                self.reconcile(owner)
        else:
            self.reconcile(event.name)

    # --- reconcile --------------------------------------------------------------------------------------------

    def reconcile(self, name: str) -> None:
        try:
            run = self.store.get(config.AGENTRUNS, self.ns, name)
            if run is None or run["metadata"].get("deletionTimestamp"):
                return
            terminal = (run.get("status") or {}).get("phase") in TERMINAL
            if terminal and "rollout-fails-run-transiently" not in self.ctx.bugs:
                return  # final, whoever wrote it: only the retention sweep touches the run again
            job = self.store.get("jobs.batch", self.ns, name)
            if job is None:
                if terminal:
                    return
                self._launch(run)
                self._phase(name, "Running")
                return
            self._phase(name, job_phase(job))
        except ApiError as exc:
            self.ctx.log(f"core-controller: reconcile {name}: {exc}")

    def _phase(self, name: str, phase: str, message: str | None = None) -> None:
        def change(obj: dict[str, Any]) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = phase
            if message:
                status["message"] = message

        current = self.store.get(config.AGENTRUNS, self.ns, name)
        if current is not None and (current.get("status") or {}).get("phase") != phase:
            self.store.mutate(config.AGENTRUNS, self.ns, name, change, subresource="status")

    def _launch(self, run: dict[str, Any]) -> None:
        spec = run.get("spec") or {}
        name = run["metadata"]["name"]
        agent = self.store.get(config.AGENTS, self.ns, str(spec.get("agentRef", "")))
        if agent is None:
            self._phase(name, "Failed", f"agent {spec.get('agentRef')!r} not found")
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
        values = identity.run_secret_values(self.store, self.ns, self.key, spec)
        self._create(
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
        self._create(
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

    def _create(self, resource: str, obj: dict[str, Any]) -> None:
        try:
            self.store.create(resource, obj)
        except ApiError as exc:
            if exc.code != 409:  # created already (a resync after a restart): fine
                raise

    async def _retention(self) -> None:
        while True:
            await asyncio.sleep(self.ctx.timing.seconds("retention_sweep"))
            items, _ = self.store.list(config.AGENTRUNS, self.ns)
            now = self.ctx.double.clock.time()
            for run in items:
                done = (run.get("status") or {}).get("phase") in TERMINAL
                created = parse_rfc3339(run["metadata"]["creationTimestamp"])
                if done and now - created > self.ctx.timing.seconds("run_retention"):
                    with contextlib.suppress(ApiError):
                        self.store.delete(config.AGENTRUNS, self.ns, run["metadata"]["name"])


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
