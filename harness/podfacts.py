"""What a pod's own object says about it, read without a cluster: phase, readiness, why each container waits or
died, and when each step of its life happened.

Pure functions on Kubernetes objects as ``kubectl get -o json`` prints them (plain dicts). The fields and their
meaning come from the core v1 API (``PodStatus``, ``ContainerStatus``, ``PodCondition``, ``Event``):

- a container that is not running says why in ``state.waiting.reason`` (``CrashLoopBackOff``, ``ImagePullBackOff``,
  ``ErrImagePull``, ``CreateContainerConfigError``, ``ContainerCreating``) and how its previous instance ended in
  ``lastState.terminated`` (``reason`` ``Error``/``OOMKilled``/``Completed``, ``exitCode``);
- a pod the scheduler cannot place has ``PodScheduled=False`` with reason ``Unschedulable`` and the scheduler's
  message (the same text as its ``FailedScheduling`` event);
- ``Ready`` and ``PodScheduled`` conditions carry ``lastTransitionTime``; ``deletionTimestamp`` is when a
  Terminating pod's grace period ends, so deletion was requested ``deletionGracePeriodSeconds`` before it.

Events: core v1 events set ``lastTimestamp``; events written through ``events.k8s.io/v1`` leave it null and carry
``eventTime`` (and ``series.lastObservedTime`` when repeated). :func:`event_time` takes whichever is set, as
``kubectl describe`` does (kubectl ``pkg/describe/describe.go``, ``DescribeEvents``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from harness.errors import TimestampError
from harness.timestamps import parse_k8s_time

Obj = dict[str, Any]

#: Waiting reasons that mean the container will not start without a change (ranked first in explanations).
STUCK_REASONS = (
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
)


def when(value: Any) -> datetime | None:
    """A Kubernetes timestamp as an aware UTC datetime, or ``None`` when absent or unreadable."""
    if not value:
        return None
    try:
        return parse_k8s_time(value)
    except TimestampError:
        return None


def meta(obj: Obj) -> Obj:
    """``obj["metadata"]`` (an empty dict when absent)."""
    return obj.get("metadata") or {}


def uid_of(obj: Obj) -> str | None:
    uid = meta(obj).get("uid")
    return str(uid) if uid else None


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def event_time(event: Obj) -> datetime | None:
    """When ``event`` last happened: ``lastTimestamp``, else ``series.lastObservedTime``, else ``eventTime``, else
    ``firstTimestamp``, else ``metadata.creationTimestamp`` (the first one set)."""
    series = event.get("series") or {}
    for value in (
        event.get("lastTimestamp"),
        series.get("lastObservedTime"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        meta(event).get("creationTimestamp"),
    ):
        parsed = when(value)
        if parsed is not None:
            return parsed
    return None


def event_first_time(event: Obj) -> datetime | None:
    """When ``event`` first happened: ``firstTimestamp``, else ``eventTime``, else :func:`event_time`."""
    for value in (event.get("firstTimestamp"), event.get("eventTime")):
        parsed = when(value)
        if parsed is not None:
            return parsed
    return event_time(event)


def sort_events(events: list[Obj]) -> list[Obj]:
    """``events`` oldest first by :func:`event_time` (events without any time first), stable."""

    def key(event: Obj) -> tuple[bool, float]:
        stamp = event_time(event)
        return (stamp is not None, stamp.timestamp() if stamp else 0.0)

    return sorted(events, key=key)


def events_for(events: list[Obj], kind: str, name: str, uid: str | None = None) -> list[Obj]:
    """The events whose ``involvedObject`` (or ``regarding``) is ``kind``/``name``, oldest first; with ``uid``, not
    those of an earlier object of that name (an event that names another uid: a spec before this one)."""
    mine = [e for e in events if involves(e, kind, name, uid)]
    return sort_events(mine)


def involves(event: Obj, kind: str, name: str, uid: str | None = None) -> bool:
    """Whether ``event`` is about ``kind``/``name`` (and, when both name one, the object of that ``uid``)."""
    target = event.get("involvedObject") or event.get("regarding") or {}
    same_uid = not uid or not target.get("uid") or target.get("uid") == uid
    return target.get("kind") == kind and target.get("name") == name and same_uid


COMBINED = "(combined from similar events): "
"""What client-go's event aggregator puts before a message it stands for several similar events
(``k8s.io/client-go/tools/record/events_cache.go``): the count says as much, so an event line drops it."""


def event_message(event: Obj) -> str:
    """The event's message (``note`` in ``events.k8s.io/v1``) on one line, without the aggregator's prefix."""
    return " ".join(str(event.get("message") or event.get("note") or "").split()).removeprefix(COMBINED)


def event_line(event: Obj) -> str:
    """``HH:MM:SS Warning BackOff (x4): message``, one line."""
    stamp = event_time(event)
    count = event.get("count") or (event.get("series") or {}).get("count")
    repeat = f" (x{count})" if isinstance(count, int) and count > 1 else ""
    message = event_message(event)
    clock = stamp.strftime("%H:%M:%S") if stamp else "--:--:--"
    return f"{clock} {event.get('type') or 'Normal'} {event.get('reason') or '?'}{repeat}: {message}"


@dataclass
class ContainerFacts:
    """One container of a pod: ``state`` is ``waiting``, ``running``, ``terminated`` or ``unknown``."""

    name: str
    init: bool
    ready: bool
    restarts: int
    state: str
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    started_at: datetime | None = None
    last_reason: str | None = None
    last_exit_code: int | None = None
    last_started: datetime | None = None
    last_finished: datetime | None = None

    @property
    def crash_looping(self) -> bool:
        """In ``CrashLoopBackOff``, or caught running between two crashes: restarted after a failed exit and not
        ready (a crash-looping container spends part of each cycle running)."""
        if self.reason == "CrashLoopBackOff":
            return True
        return self.restarts > 0 and self.last_exit_code not in (None, 0) and not self.ready

    @property
    def stuck(self) -> bool:
        """Crash-looping, or waiting for a reason that will not clear by itself (see :data:`STUCK_REASONS`)."""
        return self.crash_looping or (self.state == "waiting" and self.reason in STUCK_REASONS)

    @property
    def stuck_reason(self) -> str:
        """``CrashLoopBackOff`` for a crash-looping container, else its waiting reason."""
        return "CrashLoopBackOff" if self.crash_looping else str(self.reason)

    def describe(self) -> str:
        """``app: CrashLoopBackOff (back-off 40s ...), last terminated Error exit 1, 4 restarts``."""
        parts = [f"{self.name}{' (init)' if self.init else ''}: {self._now()}"]
        if self.last_reason or self.last_exit_code is not None:
            parts.append(f"last terminated {self.last_reason or '?'} exit {self.last_exit_code}")
        if self.restarts:
            parts.append(f"{self.restarts} restart{'s' if self.restarts != 1 else ''}")
        return ", ".join(parts)

    def _now(self) -> str:
        if self.state == "running":
            return "running, ready" if self.ready else "running, not ready"
        if self.state == "terminated":
            return f"terminated {self.reason or '?'} exit {self.exit_code}"
        detail = f" ({_short(self.message)})" if self.message else ""
        return f"{self.reason or self.state}{detail}"


@dataclass
class PodFacts:
    """What one pod's object says, plus its events (oldest first)."""

    name: str
    owner: str | None
    revision: str | None
    phase: str
    ready: bool
    node: str | None
    containers: list[ContainerFacts]
    unschedulable: str | None
    events: list[Obj] = field(default_factory=list)
    created: datetime | None = None
    scheduled: datetime | None = None
    started: datetime | None = None
    ready_at: datetime | None = None
    deleted: datetime | None = None
    pull_failed: datetime | None = None

    @property
    def terminating(self) -> bool:
        return self.deleted is not None

    @property
    def healthy(self) -> bool:
        """Running and ready, never restarted, not terminating: nothing to say about it."""
        return self.phase == "Running" and self.ready and not self.restarts and not self.terminating

    @property
    def restarts(self) -> int:
        return sum(c.restarts for c in self.containers)

    def stuck(self) -> list[ContainerFacts]:
        return [c for c in self.containers if c.stuck]

    def crash_looping(self) -> list[ContainerFacts]:
        return [c for c in self.containers if c.crash_looping]

    def summary(self) -> str:
        """``Running, not ready; app: CrashLoopBackOff (...), last terminated Error exit 1, 4 restarts``."""
        state = self.phase + (", terminating" if self.terminating else "")
        state += ", ready" if self.ready else ", not ready"
        if self.unschedulable:
            return f"{state}; unschedulable: {_short(self.unschedulable, 240)}"
        details = [c.describe() for c in self.containers if not (c.ready and c.state == "running" and not c.restarts)]
        return "; ".join([state, *details])

    def lifecycle(self) -> list[tuple[datetime, str]]:
        """The pod's steps that happened, in order: created, scheduled, image pull failing (``pull-failed``, while a
        container still waits for its image), started, ready, deleted."""
        steps = [
            (self.created, "created"),
            (self.scheduled, "scheduled"),
            (self.pull_failed, "pull-failed"),
            (self.started, "started"),
            (self.ready_at, "ready"),
            (self.deleted, "deleted"),
        ]
        happened = [(at, what) for at, what in steps if at is not None]
        return sorted(happened, key=lambda step: step[0])  # stable: steps within one second keep their order

    def container_starts(self, container: ContainerFacts) -> list[datetime]:
        """Every start of ``container`` whose time the API still holds, oldest first: the first and the latest
        ``Started`` event (events are aggregated: one object with a count), the last instance's and the current
        instance's ``startedAt``. ``container.restarts + 1`` starts happened in all; the times between are gone."""
        seen = [container.last_started, container.started_at]
        for event in self.events:
            if event.get("reason") == "Started" and _names_container(event, container.name):
                seen += [event_first_time(event), event_time(event)]
        return _distinct(t for t in seen if t is not None)

    def container_steps(self) -> list[tuple[datetime, str]]:
        """Each container's known starts and its last exit, as timeline steps (``container app started (3 of 4)``)."""
        steps: list[tuple[datetime, str]] = []
        for c in self.containers:
            starts = self.container_starts(c)
            total = c.restarts + 1
            firsts = [
                event_first_time(e)
                for e in self.events
                if e.get("reason") == "Started" and _names_container(e, c.name) and event_first_time(e) is not None
            ]
            first = min((t for t in firsts if t is not None), default=None)
            for i, at in enumerate(starts):
                is_first = first is not None and abs((at - first).total_seconds()) < 1.0
                ordinal = 1 if is_first else max(1, total - (len(starts) - 1 - i))  # counted back from the latest
                of = f" ({ordinal} of {total})" if total > 1 else ""
                steps.append((at, f"container {c.name} started{of}"))
            if c.last_finished is not None:
                steps.append(
                    (c.last_finished, f"container {c.name} exited ({c.last_reason or '?'} exit {c.last_exit_code})")
                )
        return sorted(steps, key=lambda step: step[0])


def pod_facts(pod: Obj, events: list[Obj] | None = None) -> PodFacts:
    """Read ``pod`` (and the namespace's ``events``, filtered here to this pod's) into :class:`PodFacts`."""
    status = pod.get("status") or {}
    metadata = meta(pod)
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    containers = [container_facts(s, init=True) for s in status.get("initContainerStatuses") or []]
    containers += [container_facts(s, init=False) for s in status.get("containerStatuses") or []]
    if not containers:  # never scheduled or never started: the spec's containers, all waiting
        containers = [
            ContainerFacts(str(c.get("name") or "?"), False, False, 0, "waiting", reason=None)
            for c in (pod.get("spec") or {}).get("containers") or []
        ]
    ready = (conditions.get("Ready") or {}).get("status") == "True"
    scheduled = conditions.get("PodScheduled") or {}
    owner = next((ref.get("name") for ref in metadata.get("ownerReferences") or [] if ref.get("controller")), None)
    labels = metadata.get("labels") or {}
    mine = events_for(events or [], "Pod", name_of(pod), uid_of(pod))  # not those of an earlier pod so named
    return PodFacts(
        name=name_of(pod),
        owner=owner,
        revision=labels.get("pod-template-hash") or labels.get("controller-revision-hash"),
        phase=str(status.get("phase") or "Pending"),
        ready=ready,
        node=(pod.get("spec") or {}).get("nodeName"),
        containers=containers,
        unschedulable=_unschedulable(scheduled, mine),
        events=mine,
        created=when(metadata.get("creationTimestamp")),
        scheduled=when(scheduled.get("lastTransitionTime")) if scheduled.get("status") == "True" else None,
        started=_started(containers, mine),
        ready_at=when((conditions.get("Ready") or {}).get("lastTransitionTime")) if ready else None,
        deleted=_deletion_requested(metadata),
        pull_failed=_pull_failing_since(containers, mine),
    )


def container_facts(status: Obj, *, init: bool) -> ContainerFacts:
    """One ``containerStatuses[]`` entry read into :class:`ContainerFacts`."""
    state = status.get("state") or {}
    last = (status.get("lastState") or {}).get("terminated") or {}
    kind = next((k for k in ("waiting", "running", "terminated") if k in state), "unknown")
    now = state.get(kind) or {}
    return ContainerFacts(
        name=str(status.get("name") or "?"),
        init=init,
        ready=bool(status.get("ready")),
        restarts=int(status.get("restartCount") or 0),
        state=kind,
        reason=now.get("reason"),
        message=now.get("message"),
        exit_code=now.get("exitCode"),
        started_at=when(now.get("startedAt")),
        last_reason=last.get("reason"),
        last_exit_code=last.get("exitCode"),
        last_started=when(last.get("startedAt")),
        last_finished=when(last.get("finishedAt")),
    )


def _unschedulable(scheduled: Obj, events: list[Obj]) -> str | None:
    if scheduled.get("status") != "False":
        return None
    failed = [e for e in events if e.get("reason") == "FailedScheduling"]
    if failed:
        return str(failed[-1].get("message") or scheduled.get("message") or "FailedScheduling")
    return str(scheduled.get("message") or scheduled.get("reason") or "not scheduled")


def _started(containers: list[ContainerFacts], events: list[Obj]) -> datetime | None:
    """When an app container first ran: its first ``Started`` event, else as far as the object remembers (its
    current or last instance); ``None`` for a pod whose containers never ran (the kubelet's ``startTime`` is only
    when it took the pod on)."""
    seen = [t for c in containers if not c.init for t in (c.started_at, c.last_started) if t is not None]
    apps = [c.name for c in containers if not c.init]
    for event in events:
        stamp = event_first_time(event)
        if event.get("reason") == "Started" and stamp is not None and any(_names_container(event, n) for n in apps):
            seen.append(stamp)
    return min(seen) if seen else None


def _names_container(event: Obj, name: str) -> bool:
    target = event.get("involvedObject") or event.get("regarding") or {}
    path = str(target.get("fieldPath") or "")
    return path.endswith(f"{{{name}}}") if path else name in str(event.get("message") or "").split()


def _distinct(stamps: Iterable[datetime]) -> list[datetime]:
    """``stamps`` sorted, one per second (events have whole seconds; statuses may not)."""
    out: list[datetime] = []
    for at in sorted(stamps):
        if not out or (at - out[-1]).total_seconds() >= 1.0:
            out.append(at)
    return out


def _pull_failing_since(containers: list[ContainerFacts], events: list[Obj]) -> datetime | None:
    """When the kubelet first failed to pull an image a container still waits for (``ErrImagePull`` or
    ``ImagePullBackOff`` now), from its ``Failed`` events; ``None`` when no container waits for its image."""
    if not any(c.state == "waiting" and c.reason in ("ErrImagePull", "ImagePullBackOff") for c in containers):
        return None
    stamps = [event_first_time(e) for e in events if e.get("reason") in ("Failed", "BackOff")]
    failed = [t for t in stamps if t is not None]
    return min(failed) if failed else None


def _deletion_requested(metadata: Obj) -> datetime | None:
    deadline = when(metadata.get("deletionTimestamp"))
    if deadline is None:
        return None
    grace = metadata.get("deletionGracePeriodSeconds")
    return deadline - timedelta(seconds=grace) if isinstance(grace, int) and grace > 0 else deadline


def _short(text: str | None, limit: int = 160) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
