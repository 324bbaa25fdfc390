"""The Job controller: Job -> pods -> ``Complete`` or ``Failed`` (``pkg/controller/job/job_controller.go``).

Per sync: pods are those the Job controls (owner reference). Finished pods are counted once each by uid (so a
pod deleted after it finished still counts, as the real controller's tracking finalizers guarantee);
``status.succeeded`` / ``failed`` / ``active`` / ``ready`` / ``terminating`` / ``startTime`` /
``uncountedTerminatedPods`` follow. While not finished, ``min(parallelism, completions - succeeded)`` pods run
(``generateName: <job>-``, event ``SuccessfulCreate`` ``Created pod: <name>``); after a failure the next pod waits
the pod-failure back-off (10 s doubling, at most 6 minutes, on the double's clock).

Endings:

- ``succeeded >= completions``: conditions ``SuccessCriteriaMet`` (1.31+) and ``Complete`` (reason
  ``CompletionsReached``, message ``Reached expected number of succeeded pods`` on 1.31+; no reason before),
  ``completionTime``, event ``Completed`` ``Job completed``;
- ``failed > backoffLimit`` (with ``restartPolicy: OnFailure``, the pods' container restarts count too):
  ``FailureTarget`` (1.31+) and ``Failed`` with reason ``BackoffLimitExceeded``,
  message ``Job has reached the specified backoff limit``, active pods deleted, Warning event
  ``BackoffLimitExceeded``;
- ``activeDeadlineSeconds`` past ``startTime``: the same with ``DeadlineExceeded`` / ``Job was active longer than
  specified deadline`` (a timer on the double's clock fires it).

``kubectl wait --for=condition=complete job/x`` reads these. Pods of a restartPolicy ``Never``/``OnFailure``
template run briefly and exit 0 unless their template's fault annotations say otherwise
(:mod:`fakes.kube.lifecycle`). Not modelled: ``Indexed`` completion mode, pod failure policies, success policies,
``suspend``, ``ttlSecondsAfterFinished``, the job-tracking finalizer.
"""

from __future__ import annotations

from collections.abc import Iterable

from fakes.kube.clock import rfc3339
from fakes.kube.controllers.base import (
    ControllerContext,
    Key,
    Obj,
    Reconciler,
    condition,
    deleting,
    meta,
    owned_by,
    owner_keys,
    owner_reference,
    spec,
    status,
    timestamp,
)
from fakes.kube.controllers.events import NORMAL, WARNING
from fakes.kube.controllers.podutil import is_active, is_ready, phase, pod_from_template
from fakes.kube.store import StoreEvent, clone

JOBS, JOBS_KEY = "jobs.batch", "batch/jobs"
PODS, PODS_KEY = "pods", "/pods"
BACKOFF_BASE = 10.0
BACKOFF_MAX = 360.0


class JobController(Reconciler):
    name = "job-controller"
    watches = (JOBS_KEY, PODS_KEY)

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        #: job uid -> {"Succeeded": {pod uids}, "Failed": {pod uids}}; last failure instant per job uid.
        self._counted: dict[str, dict[str, set[str]]] = {}
        self._last_failure: dict[str, float] = {}

    def reset(self) -> None:
        super().reset()
        self._counted.clear()
        self._last_failure.clear()

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.resource.key == JOBS_KEY:
            if event.type == "DELETED":
                uid = str(meta(event.object).get("uid", ""))
                self._counted.pop(uid, None)
                self._last_failure.pop(uid, None)
                return []
            return [(event.namespace, event.name)]
        return owner_keys(event, "Job")

    def sync(self, namespace: str, name: str) -> None:
        job = self.store.get(JOBS, namespace, name)
        if job is None or deleting(job):
            return
        pods = [p for p in self.store.list(PODS, namespace)[0] if owned_by(p, job)]
        counted = self._count(job, pods)
        new_status = clone(status(job))
        now = self.ctx.now()
        if not new_status.get("startTime"):
            new_status["startTime"] = rfc3339(now)
        active = [p for p in pods if is_active(p)]
        if not self._finished(new_status):
            ending = self._ending(job, new_status, counted, pods, now)
            if ending is not None:
                self._finish(job, new_status, active, ending, now)
                active = []
            else:
                active = self._manage(job, active, counted, now)
        new_status.update(
            {
                "active": len(active),
                "ready": sum(1 for p in active if is_ready(p)),
                "succeeded": len(counted["Succeeded"]),
                "failed": len(counted["Failed"]),
                "uncountedTerminatedPods": {},
            }
        )
        if self.ctx.minor >= 29:
            new_status["terminating"] = sum(1 for p in pods if deleting(p) and phase(p) not in ("Succeeded", "Failed"))
        for key in ("active", "succeeded", "failed"):  # omitempty on the real type; ready/terminating are pointers
            if not new_status[key]:
                del new_status[key]
        if new_status != status(job):
            self.store.update(JOBS, dict(job, status=new_status), subresource="status")

    def _count(self, job: Obj, pods: list[Obj]) -> dict[str, set[str]]:
        uid = str(meta(job).get("uid", ""))
        counted = self._counted.setdefault(uid, {"Succeeded": set(), "Failed": set()})
        for pod in pods:
            result = phase(pod)
            if result in counted and meta(pod).get("uid") not in counted[result]:
                counted[result].add(str(meta(pod).get("uid")))
                if result == "Failed":
                    self._last_failure[uid] = self.ctx.now()
        return counted

    @staticmethod
    def _finished(st: Obj) -> bool:
        return any((condition(st, kind) or {}).get("status") == "True" for kind in ("Complete", "Failed"))

    def _ending(
        self, job: Obj, st: Obj, counted: dict[str, set[str]], pods: list[Obj], now: float
    ) -> tuple[str, str, str] | None:
        """``(condition, reason, message)`` when the Job is done now, else ``None`` (and a deadline timer)."""
        completions = spec(job).get("completions")
        wanted = int(completions) if completions is not None else 1
        if len(counted["Succeeded"]) >= wanted:
            return "Complete", "CompletionsReached", "Reached expected number of succeeded pods"
        limit = int(spec(job).get("backoffLimit", 6))
        if len(counted["Failed"]) > limit or self._restarts_past_limit(job, pods, limit):
            return "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = spec(job).get("activeDeadlineSeconds")
        started = timestamp(st.get("startTime"))
        if isinstance(deadline, int) and started is not None:
            if started + deadline <= now:
                return "Failed", "DeadlineExceeded", "Job was active longer than specified deadline"
            self.requeue_after(meta(job)["namespace"], meta(job)["name"], started + deadline - now + 0.01)
        return None

    @staticmethod
    def _restarts_past_limit(job: Obj, pods: list[Obj], limit: int) -> bool:
        """``pastBackoffLimitOnFailure``: with ``restartPolicy: OnFailure`` the container restarts of running and
        pending pods count against ``backoffLimit``."""
        template_spec = (spec(job).get("template") or {}).get("spec") or {}
        if template_spec.get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for pod in pods:
            if phase(pod) in ("Running", "Pending"):
                for key in ("initContainerStatuses", "containerStatuses"):
                    restarts += sum(int(cs.get("restartCount") or 0) for cs in status(pod).get(key) or [])
        return restarts > 0 if limit == 0 else restarts >= limit

    def _finish(self, job: Obj, st: Obj, active: list[Obj], ending: tuple[str, str, str], now: float) -> None:
        kind, reason, message = ending
        stamp = rfc3339(now)
        interim = "SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"
        conditions = [c for c in st.get("conditions") or [] if c.get("type") not in (kind, interim)]
        if self.ctx.minor >= 31:
            conditions.append(
                {
                    "type": interim,
                    "status": "True",
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                    "reason": reason,
                    "message": message,
                }
            )
        final = {"type": kind, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp}
        if kind == "Failed" or self.ctx.minor >= 31:
            final.update(reason=reason, message=message)
        st["conditions"] = conditions + [final]
        for pod in active:
            self.delete_pod(job, pod)
        if kind == "Complete":
            st["completionTime"] = stamp
            self.ctx.recorder.record(job, NORMAL, "Completed", "Job completed", component=self.name)
        else:
            self.ctx.recorder.record(job, WARNING, reason, message, component=self.name)

    def _manage(self, job: Obj, active: list[Obj], counted: dict[str, set[str]], now: float) -> list[Obj]:
        completions = spec(job).get("completions")
        parallelism = int(spec(job).get("parallelism", 1) or 0)
        remaining = (int(completions) if completions is not None else 1) - len(counted["Succeeded"])
        wanted = max(0, min(parallelism, remaining))
        if len(active) > wanted:
            for pod in active[wanted:]:
                self.delete_pod(job, pod)
            return active[:wanted]
        if len(active) < wanted:
            delay = self._backoff_left(job, len(counted["Failed"]), now)
            if delay > 0:
                self.requeue_after(meta(job)["namespace"], meta(job)["name"], delay)
                return active
            for _ in range(wanted - len(active)):
                active.append(self._create(job))
        return active

    def _backoff_left(self, job: Obj, failures: int, now: float) -> float:
        last = self._last_failure.get(str(meta(job).get("uid", "")))
        if not failures or last is None:
            return 0.0
        backoff = min(BACKOFF_BASE * 2.0 ** (failures - 1), BACKOFF_MAX)
        return max(0.0, last + backoff - now)

    def _create(self, job: Obj) -> Obj:
        pod = pod_from_template(
            spec(job).get("template") or {},
            owner_reference(job, "batch/v1", "Job"),
            meta(job)["namespace"],
            generate_name=f"{meta(job)['name']}-",
        )
        created = self.store.create(PODS, pod)
        self.ctx.recorder.record(
            job, NORMAL, "SuccessfulCreate", f"Created pod: {meta(created)['name']}", component=self.name
        )
        return created
