"""Why a rollout did not finish, in one message, from the objects themselves.

A failed ``kubectl rollout status`` says only "timed out waiting for the condition". This module reads the
workload, its ReplicaSets (deployments) or revisions (statefulsets), their pods, the namespace's events and the
previous log of a crash-looping container, and says what blocks the rollout, cause first::

    deployment/web did not roll out: 2 of 2 new pods crash-loop (app: CrashLoopBackOff, last terminated Error exit 1)
      status: Waiting for deployment "web" rollout to finish: 0 of 2 updated replicas are available...
      new ReplicaSet web-6d9f (revision 2, 2 desired, 0 ready)
        web-6d9f-x2x7q: Running, not ready; app: CrashLoopBackOff (back-off 40s ...), last terminated Error exit 1
          14:00:05 Warning BackOff (x4): Back-off restarting failed container app in pod web-6d9f-x2x7q_ns(...)
          previous log of app (last 2 lines):
            | panic: cannot reach redis:6379
      timeline:
        14:00:01.000 ReplicaSet web-6d9f SuccessfulCreate: Created pod: web-6d9f-x2x7q
        ...

Parts:

- :func:`workload_status`: kubectl's own verdict on a deployment or statefulset (done, message, fatal), ported from
  kubectl ``pkg/polymorphichelpers/rollout_status.go`` (``DeploymentStatusViewer``, ``StatefulSetStatusViewer``);
  ``fatal`` is ``ProgressDeadlineExceeded``, after which kubectl gives up at once.
- :class:`Snapshot` (what was read) and :func:`explain` (pure: a snapshot to an :class:`Explanation`), specced on
  recorded objects (some written by the real controllers of ``python -m harness.controlplane``: a quota's
  ``ReplicaFailure``, a ``minReadySeconds`` hold); :func:`gather` reads a snapshot with bounded kubectl calls
  inside one budget.
- :func:`rollout_failure` builds the :class:`~harness.errors.RolloutFailed` that ``Kube.rollout_status`` and a
  ``wait_for`` on :func:`rollout_complete` raise; ``python -m harness diagnose`` prints :func:`explain_workload`.
- :class:`RolloutWatch` re-reads a rollout while something waits on it: a completed rollout is success whatever
  kubectl's watch said, and a cause waiting cannot fix (:mod:`harness.terminal`; ``Explanation.terminal``) ends the
  wait at once with :class:`~harness.errors.RolloutTerminal`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harness import timeline as spec_timeline
from harness.attempts import note
from harness.errors import (
    KubectlError,
    RolloutDone,
    RolloutFailed,
    RolloutStatusFailed,
    RolloutTerminal,
    TerminalStop,
)
from harness.podfacts import (
    Obj,
    PodFacts,
    event_line,
    event_message,
    event_time,
    events_for,
    involves,
    meta,
    name_of,
    pod_facts,
    sort_events,
    uid_of,
)
from harness.terminal import (
    DEFAULT_RESTART_LIMIT,
    AdmissionRefusal,
    admission_refusal,
    container_terminal,
    refusal_terminal,
    unschedulable_terminal,
)

if TYPE_CHECKING:
    from harness.kubectl_runner import KubectlRunner as Kube  # harness.kube imports this module: no import back
    from harness.waiting import WaitSummary

KINDS = {
    "deployment": "deployment",
    "deployments": "deployment",
    "deploy": "deployment",
    "deployments.apps": "deployment",
    "deployment.apps": "deployment",
    "statefulset": "statefulset",
    "statefulsets": "statefulset",
    "sts": "statefulset",
    "statefulsets.apps": "statefulset",
    "statefulset.apps": "statefulset",
    "pod": "pod",
    "pods": "pod",
    "po": "pod",
}
REVISION = "deployment.kubernetes.io/revision"
DEFAULT_BUDGET = 15.0
LOG_LINES = 8
MAX_PREVIOUS_LOGS = 3
EVENTS_PER_POD = 3
TIMELINE_ENTRIES = 40


def parse_ref(ref: str) -> tuple[str, str]:
    """``"deployment/web"`` (also ``deploy/``, ``statefulset/``, ``sts/``, ``pod/``) to ``("deployment", "web")``;
    a bare name is a deployment (``"web"`` is ``deployment/web``), as ``Kube.rollout_status`` reads it.

    Raises ``ValueError`` naming the accepted forms for anything else.
    """
    if "/" not in ref and ref.strip():
        return "deployment", ref.strip()
    kind, _, name = ref.partition("/")
    canonical = KINDS.get(kind.strip().lower())
    if canonical is None or not name.strip() or "/" in name:
        raise ValueError(
            f"not a workload reference: {ref!r} (expected NAME or deployment/NAME, statefulset/NAME or pod/NAME)"
        )
    return canonical, name.strip()


# --- kubectl's verdict -------------------------------------------------------------------------------------


def workload_status(kind: str, obj: Obj) -> tuple[bool, str, bool]:
    """``(done, message, fatal)`` for a deployment or statefulset object, as ``kubectl rollout status`` decides.

    ``fatal`` is True only for a deployment whose ``Progressing`` condition has reason ``ProgressDeadlineExceeded``
    (kubectl then exits with "exceeded its progress deadline"). Pods: done when Running and Ready (or Succeeded).
    """
    if kind == "deployment":
        return _deployment_status(obj)
    if kind == "statefulset":
        done, message = _statefulset_status(obj)
        return done, message, False
    facts = pod_facts(obj)
    done = facts.phase == "Succeeded" or (facts.phase == "Running" and facts.ready)
    return done, f"pod {facts.name!r}: {facts.summary()}", facts.phase == "Failed"


def _deployment_status(dep: Obj) -> tuple[bool, str, bool]:
    name, spec, status = name_of(dep), dep.get("spec") or {}, dep.get("status") or {}
    if int(meta(dep).get("generation") or 0) > int(status.get("observedGeneration") or 0):
        return False, "Waiting for deployment spec update to be observed...", False
    progressing = _condition(status, "Progressing")
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        return False, f'deployment "{name}" exceeded its progress deadline', True
    desired = spec.get("replicas", 1)
    updated, total = int(status.get("updatedReplicas") or 0), int(status.get("replicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    if updated < desired:
        return (
            False,
            f'Waiting for deployment "{name}" rollout to finish: {updated} out of {desired} new replicas '
            "have been updated...",
            False,
        )
    if total > updated:
        return (
            False,
            f'Waiting for deployment "{name}" rollout to finish: {total - updated} old replicas are '
            "pending termination...",
            False,
        )
    if available < updated:
        return (
            False,
            f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} updated '
            "replicas are available...",
            False,
        )
    return True, f'deployment "{name}" successfully rolled out', False


def _statefulset_status(sts: Obj) -> tuple[bool, str]:
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    observed = int(status.get("observedGeneration") or 0)
    if observed == 0 or int(meta(sts).get("generation") or 0) > observed:
        return False, "Waiting for statefulset spec update to be observed..."
    desired = spec.get("replicas", 1)
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return _on_delete_status(status, desired)
    if int(status.get("readyReplicas") or 0) < desired:
        return False, f"Waiting for {desired - int(status.get('readyReplicas') or 0)} pods to be ready..."
    partition = (strategy.get("rollingUpdate") or {}).get("partition")
    if partition is not None:
        updated = int(status.get("updatedReplicas") or 0)
        if updated < desired - partition:
            return (
                False,
                f"Waiting for partitioned roll out to finish: {updated} out of {desired - partition} "
                "new pods have been updated...",
            )
        return True, f"partitioned roll out complete: {updated} new pods have been updated..."
    if status.get("updateRevision") != status.get("currentRevision"):
        return (
            False,
            f"waiting for statefulset rolling update to complete {status.get('updatedReplicas') or 0} "
            f"pods at revision {status.get('updateRevision')}...",
        )
    return (
        True,
        f"statefulset rolling update complete {status.get('currentReplicas') or 0} pods at revision "
        f"{status.get('currentRevision')}...",
    )


def _on_delete_status(status: Obj, desired: int) -> tuple[bool, str]:
    """kubectl refuses ``OnDelete`` ("rollout status is only available for RollingUpdate strategy type"); here it is
    done when every pod runs the update revision and is ready (``currentRevision`` is not read: the StatefulSet
    controller advances it only for ``RollingUpdate``, ``pkg/controller/statefulset/stateful_set_utils.go``)."""
    updated, ready = int(status.get("updatedReplicas") or 0), int(status.get("readyReplicas") or 0)
    if updated >= desired and ready >= desired:
        return True, f"OnDelete update complete: {updated} pods at revision {status.get('updateRevision')} are ready"
    return (
        False,
        f"Waiting for {desired - min(updated, desired)} pods to be deleted and replaced at revision "
        f"{status.get('updateRevision')} (updateStrategy OnDelete), {ready} of {desired} ready...",
    )


def _condition(status: Obj, kind: str) -> Obj:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


# --- what was read -------------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """The objects one explanation is made from. ``workload`` is ``None`` when it was not found (``missing``) or
    could not be read (``problems`` says why); ``previous_logs`` maps (pod, container) to its last lines.

    For a wait: ``restarts_before`` maps (pod, container) to its restart count when the wait first saw it (a pod
    first seen later counts from 0; ``None`` outside a wait: restarts are then not judged), ``restart_limit`` the
    restarts of one container during the wait that make a crash loop terminal, ``budget`` the wait's seconds and
    ``now`` the API server's time of the reading (``None``: unknown), for "slow" against "never"; ``budget_left``
    the seconds the wait still had at the reading (``None``: not in a wait, or none left), ``quotas`` the
    ResourceQuotas a refusal names, by name, as read then, and ``namespace_pods`` every pod of the namespace read
    with them (``None``: not read), to recount a quota its controller has not yet."""

    kind: str
    name: str
    namespace: str
    workload: Obj | None = None
    missing: bool = False
    replicasets: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    previous_logs: dict[tuple[str, str], str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    restarts_before: dict[tuple[str, str], int] | None = None
    restart_limit: int = DEFAULT_RESTART_LIMIT
    budget: float | None = None
    now: datetime | None = None
    budget_left: float | None = None
    quotas: dict[str, Obj] = field(default_factory=dict)
    namespace_pods: list[Obj] | None = None

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass
class Explanation:
    """``headline`` (one line, cause first), ``details`` (indented lines), ``timeline`` (when, what), ``healthy``;
    ``terminal`` names a cause waiting cannot fix (``"image not found"``, ``"paused"``...; ``None`` otherwise), or,
    with ``out_of_budget``, one the wait's remaining budget cannot outlast (``minReadySeconds``); ``refusal`` is the
    controllers' report of pods refused at admission, in its own words (``None``: none)."""

    ref: str
    healthy: bool
    headline: str
    details: list[str] = field(default_factory=list)
    timeline: list[tuple[datetime, str]] = field(default_factory=list)
    pods: list[PodFacts] = field(default_factory=list)
    new_revision: str | None = None
    terminal: str | None = None
    refusal: str | None = None
    out_of_budget: bool = False

    def text(self) -> str:
        """The whole explanation: headline, details, then the timeline (clock times in UTC)."""
        lines = [self.headline, *(f"  {line}" for line in self.details)]
        if self.timeline:
            lines.append("  timeline (UTC):")
            lines += [f"    {at.strftime('%H:%M:%S.%f')[:-3]} {what}" for at, what in self.timeline[-TIMELINE_ENTRIES:]]
        return "\n".join(lines)


# --- the explanation (pure) ------------------------------------------------------------------------------------


def explain(snap: Snapshot) -> Explanation:
    """What blocks (or blocked) the rollout of ``snap``'s workload; see the module docstring for the shape."""
    if snap.workload is None:
        why = "not found" if snap.missing else "could not be read"
        problems = f": {'; '.join(snap.problems)}" if snap.problems and not snap.missing else ""
        return Explanation(snap.ref, False, f"{snap.ref} {why} in namespace {snap.namespace}{problems}")
    if snap.kind == "pod":
        return _explain_pod(snap)
    facts = {name_of(p): pod_facts(p, snap.events) for p in snap.pods}
    new, old = _split_revisions(snap, facts)
    done, status, _ = workload_status(snap.kind, snap.workload)
    refused = None if done else _refused(snap)
    causes = _causes(snap, [facts[n] for n in new], [facts[n] for n in old], done, refused)
    terminal = None if done else _terminal(snap, [facts[n] for n in new], [facts[n] for n in old], refused)
    shortfall = None if done or terminal else _min_ready_shortfall(snap, [facts[n] for n in new])
    if shortfall is not None:
        terminal = (
            f"minReadySeconds outlasts the wait (a new pod needs {shortfall[0]:.1f} s more Ready, "
            f"the wait has {shortfall[1]:.1f} s left)"
        )
    verb = "rolled out," if done else "did not roll out:"
    headline = f"{snap.ref} {verb} {'; '.join(causes)}" if causes else f"{snap.ref} {verb.rstrip(',:')}"
    details = [f"status: {status}", *_condition_lines(snap.workload)]
    details += _group_lines(snap, facts, new, old)
    details += [f"could not read: {p}" for p in snap.problems]
    healthy = done and not any(facts[n].phase in ("Running", "Pending") for n in old)
    return Explanation(
        snap.ref,
        healthy,
        headline,
        details,
        _timeline(snap, facts),
        list(facts.values()),
        _new_revision(snap),
        terminal,
        refused.said if refused else None,
        shortfall is not None,
    )


def _explain_pod(snap: Snapshot) -> Explanation:
    assert snap.workload is not None
    facts = pod_facts(snap.workload, snap.events)
    done, _, _ = workload_status("pod", snap.workload)
    causes = _pod_causes([facts], "", done, snap)
    headline = f"{snap.ref} is {'ready' if done else 'not ready'}" + (f": {'; '.join(causes)}" if causes else "")
    details = _pod_lines(facts, snap) + [f"could not read: {p}" for p in snap.problems]
    terminal = None if done else _terminal(snap, [facts], [], None)
    timeline = _timeline(snap, {facts.name: facts})
    return Explanation(snap.ref, done, headline, details, timeline, [facts], terminal=terminal)


def _new_revision(snap: Snapshot) -> str | None:
    if snap.kind == "statefulset":
        return ((snap.workload or {}).get("status") or {}).get("updateRevision")
    new_rs = _new_replicaset(snap)
    return name_of(new_rs) if new_rs else None


def _owned(snap: Snapshot, objs: list[Obj]) -> list[Obj]:
    uid = meta(snap.workload or {}).get("uid")
    return [
        o
        for o in objs
        if any(
            ref.get("uid") == uid or (ref.get("name") == snap.name and ref.get("controller"))
            for ref in meta(o).get("ownerReferences") or []
        )
    ]


def _new_replicaset(snap: Snapshot) -> Obj | None:
    """The deployment's current ReplicaSet: the one at the deployment's revision, else the highest revision."""
    owned = _owned(snap, snap.replicasets)
    wanted = (meta(snap.workload or {}).get("annotations") or {}).get(REVISION)
    for rs in owned:
        if wanted is not None and (meta(rs).get("annotations") or {}).get(REVISION) == wanted:
            return rs
    return max(owned, key=lambda rs: int((meta(rs).get("annotations") or {}).get(REVISION) or 0), default=None)


def _split_revisions(snap: Snapshot, facts: dict[str, PodFacts]) -> tuple[list[str], list[str]]:
    """Pod names of the new revision and of older ones (pods of other owners are left out)."""
    if snap.kind == "statefulset":
        update = ((snap.workload or {}).get("status") or {}).get("updateRevision")
        mine = [name_of(p) for p in _owned(snap, snap.pods)]
        return [n for n in mine if facts[n].revision == update], [n for n in mine if facts[n].revision != update]
    new_rs = _new_replicaset(snap)
    owned = {name_of(rs) for rs in _owned(snap, snap.replicasets)}
    new = [n for n, f in facts.items() if new_rs is not None and f.owner == name_of(new_rs)]
    old = [n for n, f in facts.items() if f.owner in owned and n not in new]
    return new, old


def _causes(
    snap: Snapshot, new: list[PodFacts], old: list[PodFacts], done: bool, refused: _Refused | None = None
) -> list[str]:
    status = (snap.workload or {}).get("status") or {}
    causes: list[str] = []
    progressing = _condition(status, "Progressing")
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        causes.append(f"ProgressDeadlineExceeded ({progressing.get('message') or 'no message'})")
    spec = (snap.workload or {}).get("spec") or {}
    if snap.kind == "deployment" and spec.get("paused") and not done:
        causes.insert(
            0,
            f"the deployment is paused (spec.paused is true): it does not roll out until resumed "
            f"(kubectl rollout resume {snap.ref})",
        )
    stale = _on_delete_stale(snap, new, old)
    if stale and not done:
        causes.insert(
            0,
            f"updateStrategy OnDelete: {_names(stale)} still run{'s' if len(stale) == 1 else ''} revision "
            f"{status.get('currentRevision') or '?'} and {'is' if len(stale) == 1 else 'are'} replaced only when "
            f"deleted by hand (kubectl delete pod {' '.join(p.name for p in stale)})",
        )
    if refused is not None:
        fix = f" (fix: {refused.verdict.fix})" if refused.verdict else ""
        causes.insert(0, f"{refused.said}{fix}{_quota_now(snap, refused.verdict)}")
    causes += _pod_causes(new, "new ", done, snap)
    held = _held_by_min_ready(snap, new, done)
    if held:
        causes.append(held)
    serving = [p for p in old if not p.terminating and p.phase in ("Running", "Pending")]
    leaving = [p for p in old if p.terminating]
    if done and (serving or leaving):
        ready = sum(1 for p in serving + leaving if p.ready)
        causes.append(
            f"but {len(serving) + len(leaving)} old pod(s) still exist ({ready} ready, "
            f"{len(leaving)} terminating): requests may still reach the old revision"
        )
    if not done and not new and not causes:
        causes.append("no pod of the new revision exists yet")
    return causes


def _held_by_min_ready(snap: Snapshot, new: list[PodFacts], done: bool) -> str | None:
    """``the new pod is Ready but not yet available: minReadySeconds is 300 s, Ready for 8.0 s``: a Ready pod counts
    as available only once it has stayed Ready ``spec.minReadySeconds`` (Kubernetes docs, "Deployments": Min Ready
    Seconds; the same field for StatefulSets and DaemonSets)."""
    spec = (snap.workload or {}).get("spec") or {}
    min_ready = spec.get("minReadySeconds") or 0
    if done or not isinstance(min_ready, int) or min_ready <= 0:
        return None
    now = snap.now
    held = [
        p
        for p in new
        if p.ready
        and not p.terminating
        and (now is None or p.ready_at is None or (now - p.ready_at).total_seconds() < min_ready)
    ]
    if not held:
        return None
    total, verb = len(new), "is" if len(held) == 1 else "are"
    stayed = [p.ready_at for p in held if p.ready_at is not None]
    since = f", Ready for {max(0.0, (now - max(stayed)).total_seconds()):.1f} s" if now and stayed else ""
    shortfall = _min_ready_shortfall(snap, new)
    beyond = f"; needs {shortfall[0]:.1f} s more, the wait has {shortfall[1]:.1f} s left" if shortfall else ""
    return (
        f"{_count(len(held), total, 'new ')} {verb} Ready but not yet available: minReadySeconds is {min_ready} s"
        f"{since}{beyond}"
    )


def _min_ready_shortfall(snap: Snapshot, new: list[PodFacts]) -> tuple[float, float] | None:
    """``(needed, left)`` seconds when the last new pod to turn Ready needs longer to stay Ready for
    ``spec.minReadySeconds`` than the wait has left (``Snapshot.budget_left``); ``None`` otherwise, or when the
    server's time or a Ready time is unknown. The controllers count a pod available only then
    (``pkg/controller/replicaset/replica_set_utils.go`` ``calculateStatus``, ``podutil.IsPodAvailable``)."""
    min_ready = ((snap.workload or {}).get("spec") or {}).get("minReadySeconds") or 0
    if not isinstance(min_ready, int) or min_ready <= 0 or snap.now is None or snap.budget_left is None:
        return None
    stayed = [p.ready_at for p in new if p.ready and not p.terminating and p.ready_at is not None]
    if not stayed:
        return None
    needed = min_ready - max(0.0, (snap.now - max(stayed)).total_seconds())
    return (needed, snap.budget_left) if needed > snap.budget_left else None


@dataclass
class _Refused:
    """A controller's report of pods refused at admission: ``said`` as shown (source, reason, its words),
    ``message`` the API server's own words inside it, ``verdict`` what :func:`admission_refusal` reads in them."""

    said: str
    message: str
    verdict: AdmissionRefusal | None


_STS_FAILED = re.compile(r"^create (?:Pod|Claim) (?P<pod>\S+) .*?in StatefulSet \S+ failed error: (?P<said>.*)$")


def _refused(snap: Snapshot) -> _Refused | None:
    """The refusal the controllers report now, or ``None``: a Deployment's ``ReplicaFailure`` condition (the new
    ReplicaSet's, moved up by ``pkg/controller/deployment/progress.go`` ``getReplicaFailures``; the ReplicaSet sets
    it from its create error and clears it once a create succeeds, ``pkg/controller/replicaset/replica_set_utils.go``
    ``calculateStatus``), else the ReplicaSet's own condition, else its latest Warning ``FailedCreate`` event
    (``Error creating: ...``, ``pkg/controller/controller_utils.go`` ``CreatePods``); a StatefulSet's latest Warning
    ``FailedCreate`` (``create Pod web-0 in StatefulSet web failed error: ...``,
    ``pkg/controller/statefulset/stateful_pod_control.go`` ``recordPodEvent``) while that pod does not exist. An
    event is current only when no ``SuccessfulCreate`` of the same object came after it; none is once the new
    ReplicaSet has as many live pods as it wants (the Deployment's status can lag its ReplicaSet's)."""
    workload = snap.workload or {}
    if snap.kind == "deployment":
        new_rs = _new_replicaset(snap)
        if new_rs is not None and _has_its_pods(snap, new_rs):
            return None  # the conditions lag: a ReplicaSet with all its pods has nothing left refused
        failure = _condition(workload.get("status") or {}, "ReplicaFailure")
        if failure.get("status") == "True":
            message = " ".join(str(failure.get("message") or "").split())
            return _Refused(f"ReplicaFailure {failure.get('reason')}: {message}", message, admission_refusal(message))
        if new_rs is None:
            return None
        failure = _condition(new_rs.get("status") or {}, "ReplicaFailure")
        if failure.get("status") == "True":
            message = " ".join(str(failure.get("message") or "").split())
            said = f"ReplicaSet {name_of(new_rs)} ReplicaFailure {failure.get('reason')}: {message}"
            return _Refused(said, message, admission_refusal(message))
        event = _current_failed_create(snap, "ReplicaSet", new_rs)
        if event is None:
            return None
        said = event_message(event)
        message = said.removeprefix("Error creating: ")
        return _Refused(f"ReplicaSet {name_of(new_rs)} FailedCreate: {said}", message, admission_refusal(message))
    if snap.kind != "statefulset":
        return None
    event = _current_failed_create(snap, "StatefulSet", workload)
    if event is None:
        return None
    said = event_message(event)
    parsed = _STS_FAILED.match(said)
    if parsed and any(name_of(p) == parsed["pod"] for p in snap.pods):
        return None  # that pod exists now: the refusal is past
    message = parsed["said"] if parsed else said
    return _Refused(f"StatefulSet {snap.name} FailedCreate: {said}", message, admission_refusal(message))


def _has_its_pods(snap: Snapshot, rs: Obj) -> bool:
    wanted = int((rs.get("spec") or {}).get("replicas") or 0)
    mine = [p for p in snap.pods if not meta(p).get("deletionTimestamp") and pod_facts(p).owner == name_of(rs)]
    return wanted > 0 and len(mine) >= wanted


def _current_failed_create(snap: Snapshot, kind: str, obj: Obj) -> Obj | None:
    mine = events_for(snap.events, kind, name_of(obj), uid_of(obj))
    failed = [e for e in mine if e.get("reason") == "FailedCreate" and e.get("type") == "Warning"]
    if not failed:
        return None
    last, at = failed[-1], event_time(failed[-1])
    created = [event_time(e) for e in mine if e.get("reason") == "SuccessfulCreate"]
    if at is not None and any(c is not None and c > at for c in created):
        return None
    return last


def _quota_now(snap: Snapshot, refusal: AdmissionRefusal | None) -> str:
    """``; ResourceQuota q now: pods 3/4``: what the quota a refusal names holds as read now (its controller retries
    a refused create with back-off, so room made since is used only at its next try)."""
    quota = snap.quotas.get(refusal.quota or "") if refusal else None
    if quota is None or refusal is None:
        return ""
    status = quota.get("status") or {}
    used, hard = status.get("used") or {}, status.get("hard") or {}
    shown = [f"{r} {used.get(r, '?')}/{hard.get(r, '?')}" for r in refusal.requested]
    return f"; ResourceQuota {refusal.quota} now: {', '.join(shown)}" if shown else ""


def _leaving(snap: Snapshot, new: list[PodFacts], old: list[PodFacts]) -> list[Obj]:
    """The rollout's own pods that will go without anyone's help, freeing what they use of a quota: every
    terminating one, and the old revision's when its controller may still remove them. A StatefulSet's rolling
    update deletes its old-revision pods itself (``pkg/controller/statefulset/stateful_set_control.go``); a
    ``Recreate`` Deployment scales its old ReplicaSets to 0; a ``RollingUpdate`` one scales them down only while
    ``maxScaledDown = allPods - (replicas - maxUnavailable) - newUnavailable`` is above 0
    (``pkg/controller/deployment/rolling.go`` ``reconcileOldReplicaSets``), counting each new pod that exists as
    one that may yet become available. A ReplicaSet already scaled below the pods it has deletes the surplus
    (``pkg/controller/replicaset/replica_set.go`` ``manageReplicas``, not-ready pods first), whoever scaled it."""
    by_name = {name_of(p): p for p in snap.pods}
    going = [by_name[p.name] for p in new + old if p.terminating and p.name in by_name]
    staying_old = [by_name[p.name] for p in old if not p.terminating and p.name in by_name]
    if staying_old and _old_may_go(snap, new):
        going += staying_old
    chosen = {id(p) for p in going}
    going += [by_name[p.name] for p in _surplus(snap, new + old) if id(by_name[p.name]) not in chosen]
    return going


def _admitted_since(snap: Snapshot) -> bool:
    """A pod of the rollout's own ReplicaSets is in the namespace's pods (read after the quota) but was not in the
    rollout's (read first): the controller's retry was admitted meanwhile, so the refusal is already past."""
    seen = {name_of(p) for p in snap.pods}
    owners = {uid_of(rs) for rs in _owned(snap, snap.replicasets)}
    return any(
        name_of(p) not in seen and any(ref.get("uid") in owners for ref in meta(p).get("ownerReferences") or [])
        for p in snap.namespace_pods or []
    )


def _surplus(snap: Snapshot, pods: list[PodFacts]) -> list[PodFacts]:
    """The pods each ReplicaSet of the rollout has beyond its ``spec.replicas``, not-ready ones first."""
    going: list[PodFacts] = []
    for rs in _owned(snap, snap.replicasets):
        mine = sorted((p for p in pods if p.owner == name_of(rs) and not p.terminating), key=lambda p: p.ready)
        wanted = int((rs.get("spec") or {}).get("replicas") or 0)
        going += mine[: max(0, len(mine) - wanted)]
    return going


def _old_may_go(snap: Snapshot, new: list[PodFacts]) -> bool:
    if snap.kind != "deployment":
        return True
    spec = (snap.workload or {}).get("spec") or {}
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return True
    replicas = int(spec.get("replicas", 1))
    rolling = strategy.get("rollingUpdate") or {}
    surge = _resolve(rolling.get("maxSurge", "25%"), replicas, up=True)
    unavailable = _resolve(rolling.get("maxUnavailable", "25%"), replicas, up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    unavailable = min(unavailable, replicas)
    new_rs = _new_replicaset(snap)
    all_pods = sum(int((rs.get("spec") or {}).get("replicas") or 0) for rs in _owned(snap, snap.replicasets))
    new_wanted = int(((new_rs or {}).get("spec") or {}).get("replicas") or 0)
    new_unavailable = max(0, new_wanted - sum(1 for p in new if not p.terminating))
    return all_pods - (replicas - unavailable) - new_unavailable > 0


def _resolve(value: Any, replicas: int, *, up: bool) -> int:
    """An ``IntOrString`` of a rolling update (``1``, ``"25%"``) against ``replicas``: a percentage rounds up for
    ``maxSurge`` and down for ``maxUnavailable`` (``pkg/controller/deployment/util/deployment_util.go``)."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%") and text[:-1].isdigit():
        share = int(text[:-1]) * replicas
        return -(-share // 100) if up else share // 100
    return int(text) if text.isdigit() else 0


def _names(pods: list[PodFacts]) -> str:
    names = [p.name for p in pods]
    return f"pod {names[0]}" if len(names) == 1 else f"pods {', '.join(names)}"


def _on_delete_stale(snap: Snapshot, new: list[PodFacts], old: list[PodFacts]) -> list[PodFacts]:
    """The pods an ``OnDelete`` StatefulSet waits for someone to delete: those not at the update revision."""
    strategy = ((snap.workload or {}).get("spec") or {}).get("updateStrategy") or {}
    if snap.kind != "statefulset" or strategy.get("type") != "OnDelete":
        return []
    return [p for p in old if not p.terminating]


def _restarts_during(snap: Snapshot, pod: PodFacts, container: Any) -> int | None:
    if snap.restarts_before is None:
        return None
    return int(container.restarts) - snap.restarts_before.get((pod.name, container.name), 0)


def _terminal(snap: Snapshot, new: list[PodFacts], old: list[PodFacts], refused: _Refused | None) -> str | None:
    """The first cause waiting cannot fix (see :mod:`harness.terminal`), as a short phrase, or ``None``."""
    workload = snap.workload or {}
    if snap.kind == "deployment":
        if _condition(workload.get("status") or {}, "Progressing").get("reason") == "ProgressDeadlineExceeded":
            return "ProgressDeadlineExceeded"
        if (workload.get("spec") or {}).get("paused"):
            return "the deployment is paused"
    refusal = refused.verdict if refused else None
    if (
        refusal is not None
        and not _admitted_since(snap)
        and refusal_terminal(
            refusal, _leaving(snap, new, old), snap.quotas.get(refusal.quota or ""), snap.namespace_pods
        )
    ):
        if refusal.quota:
            return f"pods refused at admission: ResourceQuota {refusal.quota}, which the rollout's own pods cannot free"
        return f"pods refused at admission: {refusal.kind}"
    stale = _on_delete_stale(snap, new, old)
    if stale:
        return f"updateStrategy OnDelete: {_names(stale)} must be deleted by hand"
    for pod in new:
        for container in pod.containers:
            verdict = container_terminal(pod, container)
            if verdict is not None:
                return f"{verdict} (pod {pod.name}, container {container.name}: {container.reason})"
            during = _restarts_during(snap, pod, container)
            if during is not None and during >= snap.restart_limit and container.crash_looping:
                return (
                    f"crash loop (pod {pod.name}, container {container.name}: {during} restarts during the wait, "
                    f"limit {snap.restart_limit})"
                )
        if pod.unschedulable and unschedulable_terminal(pod.unschedulable, pod.events):
            return f"unschedulable (pod {pod.name}: no node can ever match it)"
    return None


def _pod_causes(pods: list[PodFacts], label: str, done: bool, snap: Snapshot | None = None) -> list[str]:
    """One cause per kind of trouble among ``pods``: stuck containers by reason, unschedulable, never ready."""
    total = len(pods)
    out: list[str] = []
    by_reason: dict[str, list[tuple[PodFacts, Any]]] = {}
    for pod in pods:
        for container in pod.stuck():
            by_reason.setdefault(container.stuck_reason, []).append((pod, container))
    for reason, hits in by_reason.items():
        pods_hit = {p.name for p, _ in hits}
        sample = hits[-1][1]
        verb = "crash-loop" if reason == "CrashLoopBackOff" else f"are stuck in {reason}"
        if len(pods_hit) == 1 and total == 1:
            verb = "crash-loops" if reason == "CrashLoopBackOff" else f"is stuck in {reason}"
        extra = sample.message if reason != "CrashLoopBackOff" else None
        verdict = container_terminal(hits[-1][0], sample)
        if verdict and verdict != "configuration error":
            extra = f"{verdict}: {extra}" if extra else verdict
        last = f"last terminated {sample.last_reason} exit {sample.last_exit_code}" if sample.last_reason else None
        during = _restarts_during(snap, hits[-1][0], sample) if snap is not None else None
        counted = f"{during} restart{'s' if during != 1 else ''} during the wait" if during else None
        detail = ", ".join(x for x in (f"container {sample.name}", last, counted, _clip(extra)) if x)
        out.append(f"{_count(len(pods_hit), total, label)} {verb} ({detail})")
    unschedulable = [p for p in pods if p.unschedulable]
    if unschedulable:
        out.append(
            f"{_count(len(unschedulable), total, label)} cannot be scheduled ({_clip(unschedulable[-1].unschedulable)})"
        )
    quiet = [
        p
        for p in pods
        if not p.stuck() and not p.unschedulable and p.phase == "Running" and not p.ready and not p.terminating
    ]
    if quiet and not done:
        probe = _last_message(quiet, "Unhealthy")
        if probe:
            out.append(
                f"{_count(len(quiet), total, label)} {'runs' if total == 1 else 'run'} but never became ready "
                f"({_clip(probe)})"
            )
        else:
            out.append(f"{_count(len(quiet), total, label)} {'is' if total == 1 else 'are'} {_slow(quiet, snap)}")
    oom = [p for p in pods if any(c.last_reason == "OOMKilled" for c in p.containers)]
    if oom and "OOMKilled" not in " ".join(out):
        out.append(f"{_count(len(oom), total, label)} {'was' if total == 1 else 'were'} OOMKilled")
    failed = [p for p in pods if p.phase == "Failed"]
    if failed:
        out.append(f"{_count(len(failed), total, label)} failed")
    return out


def _slow(pods: list[PodFacts], snap: Snapshot | None) -> str:
    """``slow: not ready 6.0 s after it started; no readiness failures recorded; budget 6.0 s`` (slow, not never:
    nothing says the pod will not become ready)."""
    now = snap.now if snap is not None else None
    starts = [p.started for p in pods if p.started is not None]
    if now is not None and starts:
        age = f"not ready {max(0.0, (now - max(starts)).total_seconds()):.1f} s after it started"
    else:
        age = "not ready yet"
    budget = f"; budget {snap.budget:.1f} s" if snap is not None and snap.budget is not None else ""
    return f"slow: {age}; no readiness failures recorded{budget}"


def _count(hit: int, total: int, label: str) -> str:
    noun = "pod" if total == 1 else "pods"
    return f"{hit} of {total} {label}{noun}" if total > 1 else f"the {label}{noun}"


def _last_message(pods: list[PodFacts], reason: str) -> str | None:
    hits = sort_events([e for p in pods for e in p.events if e.get("reason") == reason])
    return event_message(hits[-1]) if hits else None


_IMAGE_REF = re.compile(r'image \\?"[^"\\]+\\?"')
"""``image "registry/name:tag"`` in a kubelet message (quotes escaped or not): the one fact a clip must not cut."""


def _clip(text: str | None, limit: int = 200) -> str | None:
    """``text`` on one line, at most about ``limit`` characters; never cut inside an image reference."""
    if not text:
        return None
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = limit - 3
    for found in _IMAGE_REF.finditer(flat):
        if found.start() < cut < found.end():
            cut = found.end()
    return flat if cut >= len(flat) else flat[:cut] + "..."


def _condition_lines(obj: Obj) -> list[str]:
    lines = []
    for cond in (obj.get("status") or {}).get("conditions") or []:
        text = f"condition {cond.get('type')}={cond.get('status')}"
        if cond.get("reason"):
            text += f" {cond.get('reason')}"
        if cond.get("message"):
            text += f": {_clip(cond.get('message'), 300)}"
        lines.append(text)
    return lines


def _group_lines(snap: Snapshot, facts: dict[str, PodFacts], new: list[str], old: list[str]) -> list[str]:
    lines: list[str] = []
    if snap.kind == "deployment":
        new_rs = _new_replicaset(snap)
        groups = [(new_rs, new, "new")] + [
            (rs, [n for n in old if facts[n].owner == name_of(rs)], "old")
            for rs in _owned(snap, snap.replicasets)
            if rs is not new_rs
        ]
        for rs, names, label in groups:
            if rs is None or (label == "old" and not names and not (rs.get("spec") or {}).get("replicas")):
                continue
            spec, status = rs.get("spec") or {}, rs.get("status") or {}
            revision = (meta(rs).get("annotations") or {}).get(REVISION, "?")
            lines.append(
                f"{label} ReplicaSet {name_of(rs)} (revision {revision}, {spec.get('replicas', 0)} desired, "
                f"{status.get('readyReplicas') or 0} ready)"
            )
            lines += [f"  {line}" for name in names for line in _pod_lines(facts[name], snap)]
            rs_events = [
                e for e in events_for(snap.events, "ReplicaSet", name_of(rs), uid_of(rs)) if e.get("type") == "Warning"
            ]
            lines += [f"  {event_line(e)}" for e in rs_events[-EVENTS_PER_POD:]]
    else:
        status = (snap.workload or {}).get("status") or {}
        for label, names, revision in (
            ("new", new, status.get("updateRevision")),
            ("old", old, status.get("currentRevision")),
        ):
            if names:
                lines.append(f"{label} revision {revision}: {len(names)} pod(s)")
                lines += [f"  {line}" for name in names for line in _pod_lines(facts[name], snap)]
        sts_events = [
            e
            for e in events_for(snap.events, "StatefulSet", snap.name, uid_of(snap.workload or {}))
            if e.get("type") == "Warning"
        ]
        lines += [f"statefulset {event_line(e)}" for e in sts_events[-EVENTS_PER_POD:]]
    if not new and not old:
        lines.append("no pods match the selector")
    return lines


def _pod_lines(pod: PodFacts, snap: Snapshot) -> list[str]:
    lines = [f"{pod.name}: {pod.summary()}"]
    if not pod.healthy:
        lines += [f"  {event_line(e)}" for e in _notable(pod.events)]
    for container in pod.containers:
        log = snap.previous_logs.get((pod.name, container.name))
        if log is None:
            continue
        kept = [line for line in log.splitlines() if line.strip()][-LOG_LINES:]
        lines.append(f"  previous log of {container.name} (last {len(kept)} lines):")
        lines += [f"    | {line[:300]}" for line in kept] or ["    | (empty)"]
    return lines


def _notable(events: list[Obj]) -> list[Obj]:
    """A pod's last :data:`EVENTS_PER_POD` events, Warnings first in choosing (``BackOff`` over yet another
    ``Pulled``), shown oldest first."""
    warnings = [e for e in events if e.get("type") == "Warning"][-EVENTS_PER_POD:]
    others = (
        [e for e in events if e.get("type") != "Warning"][-(EVENTS_PER_POD - len(warnings)) :]
        if len(warnings) < EVENTS_PER_POD
        else []
    )
    chosen = {id(e) for e in warnings + others}
    return [e for e in events if id(e) in chosen]


def _timeline(snap: Snapshot, facts: dict[str, PodFacts]) -> list[tuple[datetime, str]]:
    """Each pod's lifecycle steps and the workload's and ReplicaSets' events, oldest first."""
    entries = [
        (at, f"pod {pod.name} {'image pull failing' if what == 'pull-failed' else what}")
        for pod in facts.values()
        for at, what in pod.lifecycle()
        if what != "started"  # each container start is its own step below
    ]
    entries += [(at, f"pod {pod.name} {what}") for pod in facts.values() for at, what in pod.container_steps()]
    workload_uid = uid_of(snap.workload or {})
    owners = [("Deployment", snap.name, workload_uid), ("StatefulSet", snap.name, workload_uid)]
    owners += [("ReplicaSet", name_of(rs), uid_of(rs)) for rs in _owned(snap, snap.replicasets)]
    for event in snap.events:
        target = event.get("involvedObject") or event.get("regarding") or {}
        stamp = event_time(event)
        # by uid too: a namespace reused by several specs keeps the events of an earlier object of the same name
        if stamp is not None and any(involves(event, kind, name, uid) for kind, name, uid in owners):
            entries.append(
                (
                    stamp,
                    f"{target.get('kind')} {target.get('name')} {event.get('reason')}: "
                    f"{_clip(event_message(event), 160)}",
                )
            )
    return sorted(entries, key=lambda entry: entry[0])


# --- reading a snapshot (bounded) -------------------------------------------------------------------------------


def gather(
    kube: Kube,
    ref: str,
    *,
    budget: float = DEFAULT_BUDGET,
    events: bool = True,
    logs: bool = True,
    workload: Obj | None = None,
) -> Snapshot:
    """Read ``ref``'s workload, ReplicaSets, pods, the namespace's events and previous logs of crash-looping
    containers with bounded kubectl calls, all within ``budget`` seconds. Never raises for a cluster-side
    failure: what could not be read is listed in ``Snapshot.problems``. Raises ``ValueError`` for a bad ``ref``.
    ``workload``: the object as the caller has just read it (``kubectl get -o json``), not read again."""
    kind, name = parse_ref(ref)
    snap = Snapshot(kind, name, kube.namespace)
    reader = _Reader(kube, snap, time.monotonic() + budget)
    obj = workload if workload is not None else reader.json(f"{kind} {name}", "get", kind, name)
    if obj is None:
        return snap
    snap.workload = obj
    selector = selector_string((obj.get("spec") or {}).get("selector") or {}) if kind != "pod" else ""
    if kind == "deployment":
        listing = reader.json("replicasets and pods", "get", "replicasets,pods", "-l", selector) or {}
        items = listing.get("items") or []
        snap.replicasets = [i for i in items if i.get("kind") == "ReplicaSet"]
        snap.pods = [i for i in items if i.get("kind") == "Pod"]
    elif kind == "statefulset":
        snap.pods = ((reader.json("pods", "get", "pods", "-l", selector) or {}).get("items")) or []
    else:
        snap.pods = [obj]
    if events:
        snap.events = sort_events(((reader.json("events", "get", "events") or {}).get("items")) or [])
        refused = _refused(snap) if kind != "pod" else None
        if refused is not None and refused.verdict is not None and refused.verdict.quota:
            quota = reader.json(f"resourcequota {refused.verdict.quota}", "get", "resourcequota", refused.verdict.quota)
            if quota is not None:
                snap.quotas[refused.verdict.quota] = quota
                listing = reader.json("the namespace's pods", "get", "pods")
                snap.namespace_pods = None if listing is None else listing.get("items") or []
    if logs:
        _read_previous_logs(reader, snap)
    return snap


def _read_previous_logs(reader: _Reader, snap: Snapshot) -> None:
    wanted = [(name_of(p), c.name) for p in snap.pods for c in pod_facts(p).containers if c.crash_looping]
    for pod, container in wanted[:MAX_PREVIOUS_LOGS]:
        text = reader.text(
            f"previous log of {pod}/{container}",
            "logs",
            pod,
            "-c",
            container,
            "--previous",
            f"--tail={LOG_LINES}",
            "--limit-bytes=16384",
        )
        if text is not None:
            snap.previous_logs[(pod, container)] = text
    if len(wanted) > MAX_PREVIOUS_LOGS:
        snap.problems.append(
            f"previous logs of {len(wanted) - MAX_PREVIOUS_LOGS} more container(s) not read "
            f"(at most {MAX_PREVIOUS_LOGS} per explanation)"
        )


class _Reader:
    """Bounded kubectl reads that record, instead of raising, what failed."""

    def __init__(self, kube: Kube, snap: Snapshot, deadline: float) -> None:
        self.kube, self.snap, self.deadline = kube, snap, deadline

    def text(self, what: str, *args: str) -> str | None:
        left = self.deadline - time.monotonic()
        if left < 0.2:
            self.snap.problems.append(f"{what}: not read, the explanation's budget was spent")
            return None
        try:
            done = self.kube.kubectl(*args, timeout=left, check=False)
        except KubectlError as exc:  # KubectlTimeout included
            self.snap.problems.append(f"{what}: {_first_line(str(exc))}")
            return None
        if done.returncode != 0:
            said = (done.stderr.strip() or f"kubectl exited {done.returncode}").splitlines()[-1]
            if "NotFound" in said and args[:1] == ("get",) and self.snap.workload is None:
                self.snap.missing = True
            self.snap.problems.append(f"{what}: {said}")
            return None
        return done.stdout

    def json(self, what: str, *args: str) -> Any:
        import json

        text = self.text(what, *args, "-o", "json")
        if text is None:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            self.snap.problems.append(f"{what}: kubectl printed something that is not JSON ({exc})")
            return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def selector_string(selector: Obj) -> str:
    """A ``LabelSelector`` (``matchLabels``, ``matchExpressions``) as kubectl's ``-l`` syntax.

    ``In``/``NotIn`` become ``key in (a,b)``/``key notin (a,b)``, ``Exists`` ``key``, ``DoesNotExist`` ``!key``.
    """
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), ",".join(expr.get("values") or [])
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": f"{key}",
                "DoesNotExist": f"!{key}",
            }.get(str(op), f"{key}")
        )
    return ",".join(parts)


# --- for callers --------------------------------------------------------------------------------------------------


def explain_workload(kube: Kube, ref: str, *, budget: float = DEFAULT_BUDGET) -> Explanation:
    """:func:`gather` then :func:`explain` (what ``python -m harness diagnose`` prints)."""
    return explain(gather(kube, ref, budget=budget))


def rollout_failure(
    kube: Kube,
    ref: str,
    *,
    cause: str,
    summary: WaitSummary | None = None,
    started: float | None = None,
    budget: float | None = None,
    kubectl_error: KubectlError | None = None,
    watch: RolloutWatch | None = None,
    terminal: TerminalStop | None = None,
    gave_up: BaseException | None = None,
) -> RolloutFailed:
    """The :class:`RolloutFailed` for ``ref``: the explanation's headline first, then ``cause`` (what gave up:
    kubectl's exit, or the wait's timeout message, in its own words), then the details and timeline. ``budget``
    (seconds, default 15, shortened to what is left of the running test) bounds the reads; never raises for a cluster
    failure. With ``kubectl_error`` (``rollout_status``'s) it is a :class:`RolloutStatusFailed`, a ``KubectlError``
    too; with ``terminal`` (a :class:`TerminalStop` from ``watch``) a :class:`RolloutTerminal`, whose second line
    says the cause is terminal, not a timeout. ``watch`` (the wait's :class:`RolloutWatch`) gives the restart counts
    the wait started from and its budget."""
    budget = _budget(budget)
    spec_timeline.note_touched(kube, ref)
    if budget < 0.5:
        explanation = Explanation(
            ref, False, f"{ref} did not roll out (not explained: no time left before the test's pytest-timeout)"
        )
    else:
        snap = gather(kube, ref, budget=budget)
        if watch is not None:
            watch.annotate(snap)
        snap.now = _server_now(kube)
        explanation = explain(snap)
    if terminal is not None and not explanation.terminal:  # it cleared while explaining: keep what stopped the wait
        explanation = terminal.explanation
    lines = explanation.text().splitlines()
    said = "\n".join(["    " + line for line in cause.strip().splitlines()[1:]])
    gave_up_line = f"  gave up: {_first_line(cause)}" + (f"\n{said}" if said else "")
    if terminal is not None:
        spent = f" after {time.time() - started:.1f} s" if started is not None else ""
        head = f"  terminal, not a timeout: {explanation.terminal}; waiting longer cannot help (stopped{spent})"
        if explanation.out_of_budget:
            head = f"  stopped early, not a timeout: {explanation.terminal}; this wait cannot cover it (stopped{spent})"
        message = "\n".join([lines[0], head, f"  {_first_line(cause)}" + (f"\n{said}" if said else ""), *lines[1:]])
    elif explanation.pods or explanation.refusal or "not found" in lines[0] or "not explained" in lines[0]:
        message = "\n".join([lines[0], gave_up_line, *lines[1:]])
    else:  # nothing read that could explain it: the giving-up is the news
        message = "\n".join(
            [f"{ref} did not roll out: {_clip(cause, 600)}", f"  not explained: {lines[0]}", *lines[1:]]
        )
    spec_timeline.note_rollout(ref, kube.namespace, started, "failed", explanation)
    if terminal is not None:
        return RolloutTerminal(
            message,
            explanation=explanation,
            cause=str(explanation.terminal),
            summary=summary,
            gave_up=gave_up or kubectl_error,
        )
    if kubectl_error is not None:
        return RolloutStatusFailed(message, explanation=explanation, kubectl_error=kubectl_error)
    return RolloutFailed(message, explanation=explanation, summary=summary, gave_up=gave_up)


def _budget(budget: float | None) -> float:
    from harness.waiting import test_time_left

    wanted = DEFAULT_BUDGET if budget is None else budget
    left = test_time_left()
    return wanted if left is None else max(0.0, min(wanted, left - 0.5))


class RolloutWatch:
    """Re-reads a rollout while something waits on it: :meth:`verdict` is kubectl's "done" message, ``None`` for not
    yet, or raises :class:`TerminalStop` when the objects show a terminal cause (:mod:`harness.terminal`).

    It keeps each container's restart count from when it first saw it (a pod created after the wait began, on the API
    server's clock, or first seen later, counts from 0), so a crash loop is terminal after ``restart_limit`` restarts
    of one container of the new revision during the wait. ``budget`` (seconds) is the wait's, for the "slow"
    wording. Reads are bounded by ``read_budget`` seconds."""

    def __init__(
        self,
        kube: Kube,
        ref: str,
        *,
        restart_limit: int = DEFAULT_RESTART_LIMIT,
        budget: float | None = None,
        read_budget: float = 10.0,
    ) -> None:
        if restart_limit < 1:
            raise ValueError(f"restart_limit must be at least 1 restart, got {restart_limit!r}")
        self.kube, self.restart_limit, self.budget, self.read_budget = kube, restart_limit, budget, read_budget
        self.kind, self.name = parse_ref(ref)
        self.ref = f"{self.kind}/{self.name}"
        self.restarts_before: dict[tuple[str, str], int] | None = None
        self.last_status = ""
        self.created = time.monotonic()

    def verdict(self) -> str | None:
        """kubectl's message when the rollout is complete; ``None`` while it is not; raises :class:`TerminalStop`."""
        obj = self.kube.kubectl_json("get", self.kind, self.name)
        done, message, _ = workload_status(self.kind, obj)
        self.last_status = message
        note(f"{self.ref}: {message}")
        if done:
            return message
        snap = gather(self.kube, self.ref, budget=self.read_budget, logs=False, workload=obj)
        if snap.workload is None:
            return None
        self.annotate(snap)
        if snap.budget_left is not None and ((obj.get("spec") or {}).get("minReadySeconds") or 0):
            snap.now = _server_now(self.kube)  # how long the pods have been Ready, for the budget's verdict
        explanation = explain(snap)
        if explanation.terminal:
            raise TerminalStop(explanation)
        return None

    def annotate(self, snap: Snapshot) -> None:
        """Give ``snap`` the wait's restart baseline (taken now if this is the first reading), limit and budget."""
        if self.restarts_before is None:
            began = self._began_on_server()
            self.restarts_before = {
                (facts.name, c.name): c.restarts
                for facts in (pod_facts(p) for p in snap.pods)
                if began is None or facts.created is None or facts.created < began  # created during the wait: from 0
                for c in facts.containers
            }
        snap.restarts_before, snap.restart_limit, snap.budget = self.restarts_before, self.restart_limit, self.budget
        left = None if self.budget is None else self.budget - (time.monotonic() - self.created)
        snap.budget_left = left if left is not None and left > 0 else None

    def _began_on_server(self) -> datetime | None:
        """When the wait began, on the API server's clock (whole seconds, so a second earlier), or ``None``."""
        now = _server_now(self.kube)
        if now is None:
            return None
        return now - timedelta(seconds=time.monotonic() - self.created + 1.0)

    def check(self) -> None:
        """For ``Kube.kubectl(while_running=...)``: raises :class:`RolloutDone` or :class:`TerminalStop`. A read that
        fails (an API blip) is noted and the wait goes on: kubectl's own watch still decides."""
        try:
            message = self.verdict()
        except KubectlError as exc:
            note(f"{self.ref}: re-reading the rollout failed: {_first_line(str(exc))}")
            return
        if message is not None:
            raise RolloutDone(message)


def _server_now(kube: Kube) -> datetime | None:
    """The API server's clock (its ``Date``), so pod ages are right under clock skew; ``None`` if unreadable."""
    try:
        return kube.server_time(timeout=3.0)
    except Exception:  # only used for the wording of "slow"
        return None


class RolloutProbe:
    """A ``wait_for`` probe: ``None`` until ``ref``'s rollout is complete (kubectl's verdict), then its message.

    A terminal cause (:mod:`harness.terminal`: ``ProgressDeadlineExceeded``, a paused deployment, an image that does
    not exist...) ends the wait at once (:class:`TerminalStop`). When the wait fails, ``wait_for`` calls
    :meth:`explain`, so it raises :class:`RolloutTerminal` for a terminal cause and :class:`RolloutFailed` otherwise.
    """

    def __init__(
        self,
        kube: Kube,
        ref: str,
        *,
        explain_budget: float | None = None,
        restart_limit: int = DEFAULT_RESTART_LIMIT,
    ) -> None:
        self.kube, self.explain_budget = kube, explain_budget
        self.watch = RolloutWatch(kube, ref, restart_limit=restart_limit)
        self.kind, self.name, self.ref = self.watch.kind, self.watch.name, self.watch.ref
        self.started = time.time()

    def __call__(self) -> str | None:
        message = self.watch.verdict()
        if message is not None:
            spec_timeline.note_rollout(self.ref, self.kube.namespace, self.started, "ok")
        return message

    def explain(self, summary: WaitSummary, error: BaseException) -> BaseException:
        self.watch.budget = summary.budget
        return rollout_failure(
            self.kube,
            self.ref,
            cause=str(error) if not isinstance(error, TerminalStop) else f"kubectl: {self.watch.last_status}",
            summary=summary,
            started=self.started,
            budget=self.explain_budget,
            watch=self.watch,
            terminal=error if isinstance(error, TerminalStop) else None,
            gave_up=error,
        )


def rollout_complete(
    kube: Kube, ref: str, *, explain_budget: float | None = None, restart_limit: int = DEFAULT_RESTART_LIMIT
) -> RolloutProbe:
    """A probe for ``wait_for``: ``wait_for_sync("web to roll out", rollout_complete(kube, "deployment/web"))``
    returns kubectl's "successfully rolled out" message, raises :class:`RolloutTerminal` at once for a cause waiting
    cannot fix (a crash loop after ``restart_limit`` restarts of one container during the wait), or
    :class:`RolloutFailed` explaining why not when the budget runs out."""
    spec_timeline.note_touched(kube, ref)
    return RolloutProbe(kube, ref, explain_budget=explain_budget, restart_limit=restart_limit)


def rollout_started(kube: Kube, ref: str) -> float:
    """Note that the spec waits on ``ref``'s rollout (its evidence will describe it); returns the epoch time."""
    spec_timeline.note_touched(kube, ref)
    return time.time()


def rollout_succeeded(kube: Kube, ref: str, started: float | None) -> None:
    """Note a completed rollout on the spec's timeline (no cluster call)."""
    spec_timeline.note_rollout(ref, kube.namespace, started, "ok")
