"""A simulated scheduler and kubelet: pods go Pending -> scheduled -> containers Waiting/Running -> Ready, crash,
restart, and end, writing ``status`` and events as a real node does, on the double's clock.

**The default life of a pod** (fast, so specs take seconds): the scheduler binds it at once to node ``fake-node``
(``spec.nodeName``, condition ``PodScheduled``, event ``Scheduled`` ``Successfully assigned ns/pod to fake-node``);
the kubelet reports ``Pending`` with containers ``waiting: ContainerCreating``, then after ``start_seconds``
(0.05 s) pulls (``Pulling``/``Pulled``, or ``already present on machine``), creates and starts every container
(``Created``, ``Started``), sets ``podIP``, phase ``Running`` and, with no readiness fault, ``Ready``. Init
containers run first, one at a time, each exiting 0 after :data:`INIT_SECONDS`. Readiness and liveness probes are
not run: a container is ready when it starts unless a fault says otherwise.

**Pods that run to completion** (``restartPolicy: Never`` or ``OnFailure``: Job pods, ``kubectl run
--restart=Never``) stay ``Running`` like any other, since the double cannot know when their command would end. One
of these ends them (then the pod is ``Succeeded``, or ``Failed``/restarted per the policy on a non-zero exit):

- the ``run-seconds`` annotation on the pod (template), with ``exit-code`` (default 0): each run exits after that
  many seconds on the double's clock, e.g. a Job template annotated ``double.stack-harness.dev/run-seconds: "1"``;
- :meth:`Kubelet.kill` from Python: ``kd.controllers.kubelet.kill("default", "migrate-x7k2q", exit_code=0)`` (the
  container terminates ``Completed``; a non-zero code terminates ``Error``);
- a registered runner (:attr:`Kubelet.containers`) whose process exits: its ``exit_code`` is the container's.

**Deleting a pod**: a scheduled pod deleted with a grace period stays ``Terminating`` (``deletionTimestamp``); the
kubelet sends ``Killing`` (``Stopping container app``), the app stops after ``stop_seconds`` (or the
``terminate-delay`` fault, at most the grace period: then it is killed) and the pod is removed. ``--grace-period=0
--force`` and unscheduled pods go at once (the store does that).

**Faults declared on the pod (template) annotations**, prefix ``double.stack-harness.dev/``, so a scenario is
visible in its manifest (numbers are seconds on the double's clock):

==========================  ================================================================================
``start-delay: "2"``        containers stay ``ContainerCreating`` this long before they start
``ready-delay: "5"``        started but not Ready this long
``never-ready: "true"``     never Ready; ``Unhealthy`` events (``Readiness probe failed: HTTP probe failed with
                            statuscode: 503``, or the annotation's text) every readiness ``periodSeconds`` (10)
``crash-loop: "true"``      every run exits 1 (or the given exit code) after 0.2 s and never gets Ready;
                            ``restartCount`` grows, ``CrashLoopBackOff`` with ``BackOff`` events, back-off 10 s
                            doubling to 300 s (the kubelet's), ``lastState.terminated`` and ``--previous`` logs
``run-seconds: "3"``        each run exits after this long (``exit-code``, default 0; with ``restartPolicy:
``exit-code: "2"``          Always`` the container is restarted with back-off, else the pod ends)
``backoff: "0.5"``          the first crash / image-pull back-off instead of 10 s (doubling to 300 s)
``image-pull-error: "true"``  pulls fail: ``ErrImagePull`` then ``ImagePullBackOff`` (or the given error text)
``terminate-delay: "20"``   the app takes this long to stop after ``Killing`` (``"grace"``: until the grace period)
``unschedulable: "true"``   never scheduled: ``PodScheduled=False/Unschedulable``, ``FailedScheduling`` (or text)
``logs: "a\\nb"``           lines each container writes when it starts (``logs.<container>``: that container)
==========================  ================================================================================

A container whose ``env`` or ``envFrom`` names a Secret or ConfigMap (or a key of one) that does not exist, and is
not ``optional``, waits in ``CreateContainerConfigError`` (``secret "db" not found``, ``couldn't find key password
in Secret ns/db``) with a ``Failed`` event, and is tried again every back-off period, as the kubelet does.

A fault annotation that cannot be parsed is ignored and reported as a Warning event ``InvalidFault`` on the pod.
The same faults can be set from Python for pods matching a namespace, a name glob and/or a label selector:
``kubelet.set_faults(namespace="default", selector={"app": "api"}, crash_loop=True)`` (they win over annotations;
:meth:`Kubelet.clear_faults` removes them). Also from Python: :meth:`Kubelet.kill` (a container exits now),
:meth:`Kubelet.set_ready`, and :attr:`Kubelet.containers` to run real processes as a pod's containers
(:class:`ContainerRuntimes`).

**Pods whose containers are local processes** (annotation ``stack-harness.dev/local-process``; the contract, shared
with the real control plane's local node, is :mod:`fakes.kube.local_process`): each run of each listed container,
init containers too (one at a time, their exit code deciding), is a :class:`~fakes.kube.local_process.LocalProcess`
kept by the container (the runner mechanism below, per container). Its lines are that run's log, ``ready()`` is
polled every :data:`POLL_SECONDS`, its exit is the container's (``Completed``/``Error``, restarted by
``restartPolicy`` with the back-off above, which ``backoff`` shortens); a missing Secret, ConfigMap or key is
``CreateContainerConfigError``, no ``command`` a ``StartError`` (exit 128, a ``Failed`` event). Each run's ports go
into ``double.ports`` and its launch into ``double.local_runs`` (exec reads it); deleting the pod terminates the
processes with its grace period (SIGKILL after it) and removes it once they exited, with its mappings and working
directories; the double's stop kills what still runs. Containers of the pod not listed keep the simulation.

**Who owns a pod's status**: the kubelet only writes the status of pods whose status it wrote last. A pod whose
status someone else writes (a spec marking it Running through ``/status`` or ``store.update``) is left to them from
then on, except that its deletion still completes (after ``stop_seconds``).

Defaults, per double: ``kubelet.start_seconds`` (:data:`START_SECONDS`, 0.05) and ``kubelet.stop_seconds``
(:data:`STOP_SECONDS`, 0.05: apps exit promptly on SIGTERM; set it to e.g. 30 to keep every deleted pod Terminating
for its whole default grace period).

Messages and fields follow the kubelet (``pkg/kubelet/kuberuntime/kuberuntime_container.go``,
``images/image_manager.go``, ``kubelet_pods.go``, ``status/generate.go``) and the scheduler
(``pkg/scheduler/schedule_one.go``). Version details:
``Created container: app`` from 1.32 (``Created container app`` before), ``PodReadyToStartContainers`` from 1.29,
``Image size`` in ``Pulled`` from 1.30, the ImagePullBackOff message carrying the pull error from 1.31.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import itertools
import logging
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Protocol

from fakes.kube import local_process
from fakes.kube.clock import TimerHandle, rfc3339
from fakes.kube.controllers.base import (
    ControllerContext,
    Obj,
    deleting,
    meta,
    spec,
    status,
)
from fakes.kube.controllers.events import NORMAL, WARNING
from fakes.kube.controllers.node import NODE_IP
from fakes.kube.errors import ApiError
from fakes.kube.local_process import Launch, LocalProcess
from fakes.kube.selectors import (
    LabelSelector,
    from_label_selector,
    parse_label_selector,
)
from fakes.kube.store import StoreEvent

if TYPE_CHECKING:
    from fakes.kube.logs import LogBook

log = logging.getLogger("fakes.kube.lifecycle")

PREFIX = "double.stack-harness.dev/"
NODE = "fake-node"
HOST_IP = NODE_IP
"""Every pod's ``hostIP``: its node's InternalIP (:data:`fakes.kube.controllers.node.NODE_IP`)."""
PODS, PODS_KEY = "pods", "/pods"

START_SECONDS = 0.05
"""Seconds from the kubelet accepting a pod to its containers running (pull, create, start)."""
INIT_SECONDS = 0.05
"""Seconds an init container runs before it exits 0."""
CRASH_RUN_SECONDS = 0.2
"""Seconds a crash-looping container runs before it exits."""
STOP_SECONDS = 0.05
"""Seconds an app takes to stop after ``Killing`` (``terminate-delay`` changes it)."""
BACKOFF_SECONDS = 10.0
BACKOFF_MAX = 300.0
UNSCHEDULABLE_RETRY = 30.0
POLL_SECONDS = 0.05
"""How often a container runtime's process is asked whether it is ready or has exited."""
DEFAULT_UNSCHEDULABLE = (
    "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: "
    "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)
DEFAULT_UNHEALTHY = "HTTP probe failed with statuscode: 503"
TRUE = frozenset({"true", "yes", "1", "on"})
FALSE = frozenset({"false", "no", "0", "off", ""})


# --- faults ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodFaults:
    """What goes wrong (or slowly) for a pod. Seconds are floats on the double's clock; ``None`` means "as by
    default". See the module docstring for each field's annotation."""

    start_delay: float | None = None
    ready_delay: float = 0.0
    never_ready: str | None = None
    crash_loop: bool = False
    run_seconds: float | None = None
    exit_code: int | None = None
    backoff: float = BACKOFF_SECONDS
    image_pull_error: str | None = None
    terminate_delay: float | None = None
    unschedulable: str | None = None
    logs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def lines_for(self, container: str) -> tuple[str, ...]:
        return self.logs.get(container, self.logs.get("*", ()))

    def with_overrides(self, values: Mapping[str, Any]) -> PodFaults:
        return replace(self, **dict(values))


FAULT_FIELDS = frozenset(f.name for f in fields(PodFaults))


def parse_annotations(annotations: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Fault fields from ``double.stack-harness.dev/*`` annotations, and one complaint per value that could not be
    parsed (those are ignored)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    logs: dict[str, tuple[str, ...]] = {}
    for key, raw in annotations.items():
        if not key.startswith(PREFIX):
            continue
        name, text = key[len(PREFIX) :], str(raw)
        if name == "logs" or name.startswith("logs."):
            logs[name[5:] or "*"] = tuple(text.splitlines())
            continue
        try:
            parsed = _parse_one(name, text)
        except ValueError as exc:
            problems.append(f'{key}: "{text}" {exc}; ignored')
            continue
        if parsed is not None:
            values.update(parsed)
    if logs:
        values["logs"] = logs
    return values, problems


def _parse_one(name: str, text: str) -> dict[str, Any] | None:
    lowered = text.strip().lower()
    if name in ("start-delay", "ready-delay", "run-seconds", "backoff"):
        return {name.replace("-", "_"): _seconds(text)}
    if name == "terminate-delay":
        return {"terminate_delay": float("inf") if lowered == "grace" else _seconds(text)}
    if name == "exit-code":
        return {"exit_code": _exit_code(text)}
    if name == "crash-loop":
        if lowered in FALSE:
            return {"crash_loop": False}
        return {"crash_loop": True} if lowered in TRUE else {"crash_loop": True, "exit_code": _exit_code(text)}
    if name in ("never-ready", "image-pull-error", "unschedulable"):
        if lowered in FALSE:
            return None
        key = name.replace("-", "_")
        return {key: "" if lowered in TRUE else text.strip()}
    if name.startswith("port-") or name in ("exec", "exec-on-host"):
        return None  # the port-forward and exec modules' annotations
    raise ValueError(
        "is not a fault this double knows (start-delay, ready-delay, never-ready, crash-loop, "
        "run-seconds, exit-code, backoff, image-pull-error, terminate-delay, unschedulable, logs)"
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise ValueError("is not a finite, non-negative number of seconds")
    return value


def _exit_code(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("is not an exit code (an integer 0-255)") from None
    if not 0 <= value <= 255:
        raise ValueError("is not an exit code (an integer 0-255)")
    return value


@dataclass
class FaultRule:
    """Faults set from Python for pods matching ``namespace`` (None: any), ``name`` (a glob, None: any) and
    ``selector`` (labels, None: any)."""

    values: dict[str, Any]
    namespace: str | None = None
    name: str | None = None
    selector: LabelSelector | None = None

    def matches(self, pod: Obj) -> bool:
        m = meta(pod)
        if self.namespace is not None and m.get("namespace") != self.namespace:
            return False
        if self.name is not None and not fnmatch.fnmatchcase(str(m.get("name", "")), self.name):
            return False
        return self.selector is None or self.selector.matches(m.get("labels") or {})


# --- container runtimes (real processes as a pod's containers) -------------------------------------------------


class PodProcess(Protocol):
    """What a runner's ``start`` returns: the pod's process(es). Every method is called on the double's loop and
    must return at once."""

    def ready(self) -> bool: ...

    @property
    def exit_code(self) -> int | None: ...

    def terminate(self, grace: float) -> None: ...


class PodRunner(Protocol):
    def start(self, pod: Obj) -> PodProcess: ...


class ContainerRuntimes:
    """Runners that stand in for a pod's containers. ``register(match, runner)``: ``match`` is ``match(pod) ->
    bool`` or a glob on container images (any container matching). For a matched pod, once its containers would
    start, ``runner.start(pod)`` is called (on the loop; it must not block) and the kubelet then asks the returned
    :class:`PodProcess` every :data:`POLL_SECONDS`: the containers are Ready once ``ready()`` is true, and exit with
    ``exit_code`` once it is not ``None`` (restarted per ``restartPolicy``, with back-off, through a new ``start``;
    a Job pod then ends Succeeded or Failed). When the pod is deleted, ``terminate(grace)`` is called and the pod is
    removed once ``exit_code`` is set, at the latest after the grace period. A ``start`` that raises is a container
    that failed to start (exit 128, ``StartError``). Registrations survive ``kd.reset()`` (they are code)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[tuple[Callable[[Obj], bool], PodRunner]] = []

    def register(self, match: Callable[[Obj], bool] | str, runner: PodRunner) -> None:
        predicate = match if callable(match) else _image_glob(match)
        with self._lock:
            self._entries.append((predicate, runner))

    def unregister(self, runner: PodRunner) -> None:
        with self._lock:
            self._entries = [(m, r) for m, r in self._entries if r is not runner]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def find(self, pod: Obj) -> PodRunner | None:
        with self._lock:
            entries = list(self._entries)
        for predicate, runner in entries:
            try:
                if predicate(pod):
                    return runner
            except Exception:
                log.exception("container runtime match failed for pod %s", meta(pod).get("name"))
        return None


def _image_glob(pattern: str) -> Callable[[Obj], bool]:
    def match(pod: Obj) -> bool:
        return any(fnmatch.fnmatchcase(str(c.get("image", "")), pattern) for c in spec(pod).get("containers") or [])

    return match


# --- per-pod state --------------------------------------------------------------------------------------------


@dataclass
class _Container:
    name: str
    image: str
    init: bool
    pull_policy: str
    restart_count: int = 0
    state: Obj = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: Obj = field(default_factory=dict)
    ready: bool = False
    ready_override: bool | None = None
    started: bool = False
    container_id: str = ""
    image_ref: str = ""
    image_id: str = ""
    backoff: float = 0.0
    backoff_until: float = 0.0
    pull_backoff: float = 0.0
    timers: list[TimerHandle] = field(default_factory=list)
    process: PodProcess | None = None
    """This container's own process (a local process of the contract), when it has one."""
    workdir: str | None = None
    """The working directory the contract made for this container: kept across its runs, removed with the pod."""

    @property
    def running(self) -> bool:
        return "running" in self.state

    @property
    def field_path(self) -> str:
        return f"spec.{'initContainers' if self.init else 'containers'}{{{self.name}}}"

    def cancel(self) -> None:
        for handle in self.timers:
            handle.cancel()
        self.timers.clear()


@dataclass
class _Pod:
    uid: str
    namespace: str
    name: str
    managed: bool
    last_status: Obj | None
    containers: list[_Container] = field(default_factory=list)
    accepted: bool = False
    terminating: bool = False
    terminal: bool = False
    pod_ip: str = ""
    start_time: str = ""
    unschedulable: bool = False
    process: PodProcess | None = None
    runner: PodRunner | None = None
    timers: list[TimerHandle] = field(default_factory=list)
    warned: bool = False
    local: bool = False
    """A container of this pod ran as a local process: its port mappings and runs are the kubelet's to clear."""

    def cancel(self) -> None:
        for handle in self.timers:
            handle.cancel()
        self.timers.clear()
        for c in self.containers:
            c.cancel()

    def main(self) -> list[_Container]:
        return [c for c in self.containers if not c.init]

    def inits(self) -> list[_Container]:
        return [c for c in self.containers if c.init]


class _HandedOff(Exception):
    """Someone else wrote the pod's status since the kubelet did."""


class _Replaced(Exception):
    """The pod of that name is another one now."""


# --- the kubelet --------------------------------------------------------------------------------------------------


class Kubelet:
    """The simulated scheduler and kubelet of one double (see the module docstring). Installed by
    :func:`fakes.kube.components.install`; reach it as ``kd.controllers.kubelet``."""

    def __init__(self, ctx: ControllerContext, logs: LogBook) -> None:
        self.ctx = ctx
        self.logs = logs
        self.containers = ContainerRuntimes()
        #: Seconds from a pod's acceptance to its containers running, unless ``start-delay`` says otherwise.
        self.start_seconds = START_SECONDS
        #: Seconds an app takes to stop after ``Killing``, unless ``terminate-delay`` says otherwise (at most the
        #: grace period).
        self.stop_seconds = STOP_SECONDS
        self._pods: dict[str, _Pod] = {}
        self._rules: list[FaultRule] = []
        self._rules_lock = threading.Lock()
        self._images: set[str] = set()
        self._ips = itertools.cycle(range(10, 250))

    def start(self) -> None:
        self.ctx.store.subscribe(self._on_event, [PODS_KEY])
        self.ctx.double.track_stream(self._stop_local)  # no local process outlives the double

    def reset(self) -> None:
        """Forget every pod (the store was emptied), the Python faults and the pulled images."""
        for pod in self._pods.values():
            pod.cancel()
            self._stop_process(pod, 0.0)
            self._release_local(pod)
        self._pods.clear()
        self._images.clear()
        with self._rules_lock:
            self._rules.clear()

    # --- the Python API (any thread) ---------------------------------------------------------------------------

    def set_faults(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        selector: Mapping[str, str] | str | None = None,
        **values: Any,
    ) -> FaultRule:
        """Faults for pods matching ``namespace``, ``name`` (glob) and ``selector`` (``{"app": "api"}`` or
        ``"app=api,tier!=db"``), e.g. ``set_faults(selector={"app": "api"}, crash_loop=True, backoff=0.5)``.
        Fields are :class:`PodFaults`'s. They apply from the next step of each matching pod (a running container
        is not stopped; a new run or pod uses them). Raises ``TypeError`` for an unknown field."""
        unknown = set(values) - FAULT_FIELDS
        if unknown:
            raise TypeError(f"unknown pod fault(s) {sorted(unknown)}; known: {sorted(FAULT_FIELDS)}")
        parsed = (
            parse_label_selector(selector)
            if isinstance(selector, str)
            else from_label_selector({"matchLabels": dict(selector)})
            if selector is not None
            else None
        )
        rule = FaultRule(dict(values), namespace, name, parsed)
        with self._rules_lock:
            self._rules.append(rule)
        return rule

    def clear_faults(self, rule: FaultRule | None = None) -> None:
        """Remove one rule (or all); unschedulable pods are tried again at once."""
        with self._rules_lock:
            self._rules = [r for r in self._rules if rule is not None and r is not rule]
        self.ctx.soon(self._retry_unschedulable)

    def faults_for(self, pod: Obj) -> PodFaults:
        """The faults in force for ``pod``: its annotations, then matching Python rules (later rules win)."""
        values, _ = parse_annotations(meta(pod).get("annotations") or {})
        faults = PodFaults().with_overrides(values)
        with self._rules_lock:
            rules = [r for r in self._rules if r.matches(pod)]
        for rule in rules:
            faults = faults.with_overrides(rule.values)
        return faults

    def kill(
        self,
        namespace: str,
        name: str,
        container: str | None = None,
        exit_code: int = 137,
        reason: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        """Make the pod's running containers (or one) exit now with ``exit_code`` (restarted per
        ``restartPolicy``); ``reason`` is the terminated state's (default: ``Completed`` for 0, ``Error`` else;
        e.g. ``OOMKilled``). ``kill(ns, name, exit_code=0)`` is how a Job's pod finishes from Python. Raises
        ``KeyError`` when the kubelet does not run that pod."""

        def act() -> None:
            pod = self._find(namespace, name)
            for c in pod.main():
                if c.running and container in (None, c.name):
                    self._exit(pod, c, exit_code, reason)

        self.ctx.on_loop(act, timeout)

    def set_ready(
        self, namespace: str, name: str, ready: bool | None, container: str | None = None, timeout: float = 10.0
    ) -> None:
        """Force a running container's readiness (``None``: back to the simulation's). Raises ``KeyError`` when
        the kubelet does not run that pod."""

        def act() -> None:
            pod = self._find(namespace, name)
            for c in pod.main():
                if container in (None, c.name):
                    c.ready_override = ready
            self._write(pod)

        self.ctx.on_loop(act, timeout)

    def _find(self, namespace: str, name: str) -> _Pod:
        for pod in self._pods.values():
            if pod.namespace == namespace and pod.name == name and pod.managed:
                return pod
        raise KeyError(f"the double's kubelet does not run pod {namespace}/{name}")

    # --- store events --------------------------------------------------------------------------------------

    def _on_event(self, event: StoreEvent) -> None:
        try:
            self._handle(event)
        except Exception:
            log.exception("kubelet: handling %s of pod %s/%s failed", event.type, event.namespace, event.name)

    def _handle(self, event: StoreEvent) -> None:
        uid = str(meta(event.object).get("uid", ""))
        if event.type == "DELETED":
            pod = self._pods.pop(uid, None)
            if pod is not None:
                pod.cancel()
                self._stop_process(pod, 0.0)
                self._release_local(pod)
            self.logs.forget(uid)
            return
        pod = self._pods.get(uid)
        if pod is None:
            pod = self._adopt(event)
            if pod is None:
                return
        if deleting(event.object) and not pod.terminating:
            self._terminate(pod)

    def _adopt(self, event: StoreEvent) -> _Pod | None:
        current = self.ctx.store.get(PODS, event.namespace, event.name)
        if current is None or meta(current).get("uid") != meta(event.object).get("uid"):
            return None
        pod = _Pod(str(meta(current)["uid"]), event.namespace, event.name, _pristine(status(current)), status(current))
        self._pods[pod.uid] = pod
        if pod.managed and not deleting(current):
            if spec(current).get("nodeName"):
                self._later(pod, 0.0, lambda: self._accept(pod))
            else:
                self._later(pod, 0.0, lambda: self._schedule(pod))
        return pod

    # --- scheduling ----------------------------------------------------------------------------------------

    def _schedule(self, pod: _Pod) -> None:
        current = self._current(pod)
        if current is None or deleting(current) or not pod.managed:
            return
        faults = self.faults_for(current)
        if faults.unschedulable is not None:
            pod.unschedulable = True
            message = faults.unschedulable or DEFAULT_UNSCHEDULABLE
            self._write(pod, unschedulable=message)
            self.ctx.recorder.record_new_api(current, WARNING, "FailedScheduling", message, action="Scheduling")
            self._later(pod, UNSCHEDULABLE_RETRY, lambda: self._schedule(pod))
            return
        pod.unschedulable = False

        def bind(obj: Obj) -> None:
            if meta(obj).get("uid") != pod.uid:
                raise _Replaced
            obj["spec"]["nodeName"] = NODE

        try:
            # the binding subresource writes through storage, past the pod strategy's generation rule
            bound = self.ctx.store.mutate(PODS, pod.namespace, pod.name, bind, bump_generation=False)
        except (ApiError, _Replaced):
            return
        self.ctx.recorder.record_new_api(
            bound,
            NORMAL,
            "Scheduled",
            f"Successfully assigned {pod.namespace}/{pod.name} to {NODE}",
            action="Binding",
            instance=f"default-scheduler-{NODE}",
        )
        self._accept(pod)

    def _retry_unschedulable(self) -> None:
        for pod in list(self._pods.values()):
            if pod.unschedulable and not pod.terminating:
                self._schedule(pod)

    # --- starting containers ---------------------------------------------------------------------------------

    def _accept(self, pod: _Pod) -> None:
        current = self._current(pod)
        if current is None or deleting(current) or pod.accepted:
            return
        pod.accepted = True
        pod.start_time = rfc3339(self.ctx.now())
        pod_spec = spec(current)
        has_init = bool(pod_spec.get("initContainers"))
        for init, key in ((True, "initContainers"), (False, "containers")):
            for c in pod_spec.get(key) or []:
                waiting = "PodInitializing" if (has_init and not init) else "ContainerCreating"
                pod.containers.append(
                    _Container(
                        str(c.get("name", "")),
                        str(c.get("image", "")),
                        init,
                        str(c.get("imagePullPolicy", "IfNotPresent")),
                        state={"waiting": {"reason": waiting}},
                    )
                )
        self._warn_invalid(pod, current)
        self._write(pod)
        first = pod.inits()[:1] or pod.main()
        for c in first:
            self._start(pod, c)

    def _warn_invalid(self, pod: _Pod, current: Obj) -> None:
        if pod.warned:
            return
        pod.warned = True
        for problem in parse_annotations(meta(current).get("annotations") or {})[1]:
            self.ctx.recorder.record(current, WARNING, "InvalidFault", problem, component="kube-double")

    def _start(self, pod: _Pod, c: _Container) -> None:
        """Pull (events), then after the start delay create and start ``c``."""
        current = self._current(pod)
        if current is None or pod.terminating:
            return
        faults = self.faults_for(current)
        record = self._recorder(current, c)
        if not pod.pod_ip:  # the sandbox exists before any image is pulled
            # From the node's podCIDR, kubeadm's default that kind and minikube share: pods look as on those.
            pod.pod_ip = f"10.244.0.{next(self._ips)}"
        pull = c.pull_policy == "Always" or c.image not in self._images
        if faults.image_pull_error is not None:
            record(NORMAL, "Pulling", f'Pulling image "{c.image}"')
            delay = faults.start_delay if faults.start_delay is not None else self.start_seconds
            self._later_c(c, delay, lambda: self._pull_failed(pod, c, faults))
            return
        if pull:
            record(NORMAL, "Pulling", f'Pulling image "{c.image}"')
        delay = faults.start_delay if faults.start_delay is not None else self.start_seconds
        if c.init:
            delay = min(delay, INIT_SECONDS) if faults.start_delay is None else delay
        self._later_c(c, delay, lambda: self._run(pod, c, pull, delay))

    def _pull_failed(self, pod: _Pod, c: _Container, faults: PodFaults) -> None:
        current = self._current(pod)
        if current is None or pod.terminating:
            return
        record = self._recorder(current, c)
        ref = normalize_image(c.image)
        error = faults.image_pull_error or (
            f"rpc error: code = NotFound desc = failed to pull and unpack image "
            f'"{ref}": failed to resolve reference "{ref}": {ref}: not found'
        )
        record(WARNING, "Failed", f'Failed to pull image "{c.image}": {error}')
        record(WARNING, "Failed", "Error: ErrImagePull")
        c.state = {"waiting": {"reason": "ErrImagePull", "message": error}}
        self._write(pod)
        backoff = c.pull_backoff or faults.backoff
        c.pull_backoff = min(backoff * 2, BACKOFF_MAX)

        def back_off() -> None:
            now_pod = self._current(pod)
            if now_pod is None or pod.terminating:
                return
            self._later_c(c, backoff, lambda: self._start(pod, c))  # on the clock before the events are visible
            self._recorder(now_pod, c)(NORMAL, "BackOff", f'Back-off pulling image "{c.image}"')
            self._recorder(now_pod, c)(WARNING, "Failed", "Error: ImagePullBackOff")
            message = f'Back-off pulling image "{c.image}"'
            if self.ctx.minor >= 31:
                message += f": ErrImagePull: {error}"
            c.state = {"waiting": {"reason": "ImagePullBackOff", "message": message}}
            self._write(pod)

        self._later_c(c, min(self.start_seconds, backoff), back_off)

    def _run(self, pod: _Pod, c: _Container, pulled: bool, took: float) -> None:
        current = self._current(pod)
        if current is None or pod.terminating:
            return
        record = self._recorder(current, c)
        self._record_pulled(record, c, pulled, took)
        self._images.add(c.image)
        local = local_process.is_local(current, c.name)
        prepared, problem = self._prepare(c, current) if local else (None, self._config_error(current, c))
        if problem is not None:  # kuberuntime_container.go startContainer: generateContainerConfig failed
            self._later_c(c, self.faults_for(current).backoff, lambda: self._start(pod, c))  # before the event
            record(WARNING, "Failed", f"Error: {problem}")
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": problem}}
            self._write(pod)
            return
        record(
            NORMAL, "Created", f"Created container: {c.name}" if self.ctx.minor >= 32 else f"Created container {c.name}"
        )
        record(NORMAL, "Started", f"Started container {c.name}")
        self._mark_running(pod, c, current)
        faults = self.faults_for(current)
        runner = None if local or c.init else self.containers.find(current)
        if local:
            self._run_process(pod, c, current, c, lambda: self._start_local(pod, c, prepared), faults)
        elif c.init:
            self._later_c(c, INIT_SECONDS, lambda: self._exit(pod, c, 0, "Completed"))
        elif runner is not None:
            self._run_process(pod, c, current, pod, lambda: self._start_runner(pod, runner, current), faults)
        else:
            self._plan_run(pod, c, current, faults)
        self._write(pod)

    def _record_pulled(self, record: Callable[[str, str, str], None], c: _Container, pulled: bool, took: float) -> None:
        if pulled:
            size = int(hashlib.sha256(c.image.encode()).hexdigest()[:6], 16) + 5_000_000
            spent = f"{int(took * 1000)}ms"
            message = f'Successfully pulled image "{c.image}" in {spent} ({spent} including waiting)'
            record(NORMAL, "Pulled", message + (f". Image size: {size} bytes." if self.ctx.minor >= 30 else ""))
        else:
            record(NORMAL, "Pulled", f'Container image "{c.image}" already present on machine')

    def _config_error(self, current: Obj, c: _Container) -> str | None:
        """Why ``c``'s environment cannot be built, as the kubelet says it (``kubelet_pods.go``
        ``makeEnvironmentVariables``; the secret and configmap managers' NotFound), or ``None``."""
        key = "initContainers" if c.init else "containers"
        container: Obj = next((x for x in spec(current).get(key) or [] if x.get("name") == c.name), {})
        namespace = str(meta(current).get("namespace") or "")
        refs = [
            (kind, ref)
            for source in container.get("envFrom") or []
            for kind, ref in (("secret", source.get("secretRef")), ("configmap", source.get("configMapRef")))
            if ref
        ]
        refs += [
            (kind, ref)
            for env in container.get("env") or []
            for kind, ref in (
                ("secret", (env.get("valueFrom") or {}).get("secretKeyRef")),
                ("configmap", (env.get("valueFrom") or {}).get("configMapKeyRef")),
            )
            if ref
        ]
        for kind, ref in refs:
            if ref.get("optional"):
                continue
            found = self.ctx.store.get(kind + "s", namespace, str(ref.get("name") or ""))
            if found is None:
                return f'{kind} "{ref.get("name")}" not found'
            data = {**(found.get("data") or {}), **(found.get("binaryData") or {})}
            if "key" in ref and ref["key"] not in data:
                title = "Secret" if kind == "secret" else "ConfigMap"
                return f"couldn't find key {ref['key']} in {title} {namespace}/{ref.get('name')}"
        return None

    def _mark_running(self, pod: _Pod, c: _Container, current: Obj) -> None:
        now = self.ctx.now()
        c.container_id = (
            "containerd://" + hashlib.sha256(f"{pod.uid}/{c.name}/{c.restart_count}/{now}".encode()).hexdigest()
        )
        c.image_ref = normalize_image(c.image)
        c.image_id = f"{image_repository(c.image_ref)}@sha256:{hashlib.sha256(c.image_ref.encode()).hexdigest()}"
        c.state = {"running": {"startedAt": rfc3339(now)}}
        c.started = True
        c.ready = False
        faults = self.faults_for(current)
        self.logs.start_run(pod.uid, c.name, c.container_id, faults.lines_for(c.name))

    def _plan_run(self, pod: _Pod, c: _Container, current: Obj, faults: PodFaults) -> None:
        """Readiness and the end of this run, from the faults (a run without ``run-seconds`` or a crash loop goes
        on until killed, whatever the restart policy)."""
        exit_code = faults.exit_code if faults.exit_code is not None else (1 if faults.crash_loop else 0)
        run_for = faults.run_seconds
        if run_for is None and faults.crash_loop:
            run_for = CRASH_RUN_SECONDS
        if run_for is not None:
            self._later_c(c, run_for, lambda: self._exit(pod, c, exit_code))
        crashes_before_ready = run_for is not None and exit_code != 0 and (faults.crash_loop or run_for <= 1.0)
        if faults.never_ready is not None:
            self._probe_failing(pod, c, faults.never_ready or DEFAULT_UNHEALTHY, current)
        elif crashes_before_ready:
            return  # it exits before the kubelet would report it ready
        elif faults.ready_delay > 0:
            self._later_c(c, faults.ready_delay, lambda: self._set_ready(pod, c))
        else:
            c.ready = True

    def _set_ready(self, pod: _Pod, c: _Container) -> None:
        if c.running and not pod.terminating:
            c.ready = True
            self._write(pod)

    def _probe_failing(self, pod: _Pod, c: _Container, message: str, current: Obj) -> None:
        container_spec: Obj = next((x for x in spec(current).get("containers") or [] if x.get("name") == c.name), {})
        probe = container_spec.get("readinessProbe") or {}
        period = float(probe.get("periodSeconds") or 10)

        def fail() -> None:
            now_pod = self._current(pod)
            if now_pod is None or pod.terminating or not c.running:
                return
            self._recorder(now_pod, c)(WARNING, "Unhealthy", f"Readiness probe failed: {message}")
            self._later_c(c, period, fail)

        self._later_c(c, min(POLL_SECONDS, period), fail)

    # --- processes from a container runtime ---------------------------------------------------------------------

    def _run_process(
        self,
        pod: _Pod,
        c: _Container,
        current: Obj,
        holder: _Pod | _Container,
        start: Callable[[], PodProcess],
        faults: PodFaults,
    ) -> None:
        """Run ``c`` as the process ``holder`` keeps: the pod's (a runner's, shared by its containers, started by the
        first of them) or the container's own (a new one each run); readiness and exit polled every
        :data:`POLL_SECONDS`."""
        if holder is c or holder.process is None or holder.process.exit_code is not None:
            try:
                holder.process = start()
            except Exception as exc:
                log.warning("container runtime failed to start pod %s/%s: %r", pod.namespace, pod.name, exc)
                self._recorder(current, c)(WARNING, "Failed", f"Error: {_start_failure(exc)}")
                holder.process = None
                self._later_c(c, 0.0, lambda: self._exit(pod, c, 128, "StartError"))
                return
        never = faults.never_ready if not c.init else None

        def poll() -> None:
            process = holder.process
            if process is None or pod.terminating or not c.running:
                return
            try:
                code = process.exit_code
                # asked until it first is: the kubelet has no probe here to take readiness back
                ready = process.ready() if code is None and not c.ready else False
            except Exception:
                log.exception("container runtime of pod %s/%s failed", pod.namespace, pod.name)
                code, ready = 128, False
            if code is not None:
                self._exit(pod, c, int(code))
                return
            if ready and never is None and not c.init:
                c.ready = True
                self._write(pod)
            self._later_c(c, POLL_SECONDS, poll)

        if never is not None:
            self._probe_failing(pod, c, never or DEFAULT_UNHEALTHY, current)
        poll()

    def _start_runner(self, pod: _Pod, runner: PodRunner, current: Obj) -> PodProcess:
        process = runner.start(current)
        pod.runner = runner
        return process

    def _processes(self, pod: _Pod) -> list[PodProcess]:
        found = [pod.process, *(c.process for c in pod.containers)]
        return [p for p in found if p is not None]

    def _stop_process(self, pod: _Pod, grace: float) -> None:
        processes = self._processes(pod)
        pod.process = None
        for c in pod.containers:
            c.process = None
        for process in processes:
            try:
                if process.exit_code is None:
                    process.terminate(grace)
            except Exception:
                log.exception("container runtime of pod %s/%s failed to terminate", pod.namespace, pod.name)

    # --- local processes (fakes/kube/local_process.py) ------------------------------------------------------

    def _prepare(self, c: _Container, current: Obj) -> tuple[Launch | Exception | None, str | None]:
        """This run's launch (or the start error it is), or the kubelet's config error (the container waits in
        ``CreateContainerConfigError``)."""
        try:
            launch = local_process.prepare(current, c.name, local_process.StoreSources(self.ctx.store), c.workdir)
        except local_process.StartError as exc:
            return exc, None
        except local_process.ConfigError as exc:
            return None, str(exc)
        if launch.owned:
            c.workdir = launch.cwd
        return launch, None

    def _start_local(self, pod: _Pod, c: _Container, prepared: Launch | Exception | None) -> PodProcess:
        if not isinstance(prepared, Launch):
            raise prepared or RuntimeError("no launch prepared")
        uid, run = pod.uid, c.container_id  # the run's own log, whatever runs after it

        def output(stream: str, line: bytes) -> None:
            self.logs.write(uid, c.name, run, line.decode("utf-8", "replace"))

        process = LocalProcess(prepared, output)
        pod.local = True
        for port, local in prepared.ports.items():  # this run's ports replace the last run's
            self.ctx.double.ports.map(pod.namespace, pod.name, port, "127.0.0.1", local)
        self.ctx.double.local_runs.set(pod.namespace, pod.name, c.name, prepared)
        return process

    def _release_local(self, pod: _Pod) -> None:
        """The pod is gone: its port mappings, exec launches and working directories with it."""
        if not pod.local:
            return
        self.ctx.double.local_runs.drop(pod.namespace, pod.name)
        self.ctx.double.ports.clear(pod.namespace, pod.name)
        for c in pod.containers:
            if c.workdir is not None:
                shutil.rmtree(c.workdir, ignore_errors=True)
                c.workdir = None

    async def _stop_local(self) -> None:
        """The double stops: every local process is killed and reaped (bounded), every pod's leftovers released."""
        processes: list[LocalProcess] = []
        for pod in list(self._pods.values()):
            processes += [c.process for c in pod.containers if isinstance(c.process, LocalProcess)]
            for c in pod.containers:
                c.cancel()
            self._stop_process(pod, 0.0)
            self._release_local(pod)

        def reap() -> None:
            for process in processes:
                process.wait(local_process.REAP_SECONDS)

        await asyncio.to_thread(reap)

    # --- exits and restarts ------------------------------------------------------------------------------------

    def _exit(self, pod: _Pod, c: _Container, code: int, reason: str | None = None) -> None:
        if not c.running:
            return
        c.cancel()
        started = c.state["running"].get("startedAt")
        c.state = {
            "terminated": {
                "exitCode": code,
                "reason": reason or ("Completed" if code == 0 else "Error"),
                "startedAt": started,
                "finishedAt": rfc3339(self.ctx.now()),
                "containerID": c.container_id,
            }
        }
        c.ready = False
        c.started = False
        if isinstance(c.process, LocalProcess):  # ended from Python (kill): the process goes with the run
            c.process.kill()
        self.ctx.double.local_runs.drop(pod.namespace, pod.name, c.name)
        self.logs.end_run(pod.uid, c.name, c.container_id)
        current = self._current(pod)
        if current is None or pod.terminating:
            return
        policy = str(spec(current).get("restartPolicy", "Always"))
        if c.init and code == 0:
            self._write(pod)
            self._next_after_init(pod, c)
            return
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            self._back_off(pod, c, current)
        else:
            self._write(pod)

    def _next_after_init(self, pod: _Pod, done: _Container) -> None:
        inits = pod.inits()
        following = inits[inits.index(done) + 1 :]
        for c in following[:1] or pod.main():
            if c.init or "waiting" in c.state:
                c.state = {"waiting": {"reason": "ContainerCreating" if not following else "PodInitializing"}}
            self._start(pod, c)

    def _back_off(self, pod: _Pod, c: _Container, current: Obj) -> None:
        """The kubelet's crash back-off: the first restart at once, then 10 s (or ``backoff``) doubling to 300 s;
        a container that stayed up 10 minutes starts over."""
        now = self.ctx.now()
        faults = self.faults_for(current)
        if c.backoff == 0 or now - c.backoff_until > 2 * BACKOFF_MAX:
            c.backoff = faults.backoff
            c.backoff_until = now
            self._write(pod)
            self._later_c(c, 0.0, lambda: self._restart(pod, c))
            return
        wait = c.backoff
        c.backoff = min(c.backoff * 2, BACKOFF_MAX)
        c.backoff_until = now + wait
        # The restart is on the clock before the BackOff event is visible: a spec that sees the event and advances the
        # clock must find it there (scheduled after, it was due 'wait' after the advance and never came).
        self._later_c(c, wait, lambda: self._restart(pod, c))
        c.last_state = {"terminated": c.state["terminated"]}
        c.state = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {go_duration(wait)} restarting failed container={c.name} "
                f"pod={pod.name}_{pod.namespace}({pod.uid})",
            }
        }
        self._recorder(current, c)(
            WARNING,
            "BackOff",
            f"Back-off restarting failed container {c.name} in pod {pod.name}_{pod.namespace}({pod.uid})",
        )
        self._write(pod)

    def _restart(self, pod: _Pod, c: _Container) -> None:
        if pod.terminating:
            return
        if "terminated" in c.state:
            c.last_state = {"terminated": c.state["terminated"]}
        c.restart_count += 1
        self._start(pod, c)

    # --- termination -------------------------------------------------------------------------------------------

    def _terminate(self, pod: _Pod) -> None:
        pod.terminating = True
        pod.cancel()
        current = self._current(pod)
        if current is None:
            return
        grace = float(meta(current).get("deletionGracePeriodSeconds") or 0)
        faults = self.faults_for(current)
        delay = faults.terminate_delay if faults.terminate_delay is not None else self.stop_seconds
        if pod.managed:
            for c in pod.containers:
                if c.running:
                    self._recorder(current, c)(NORMAL, "Killing", f"Stopping container {c.name}")
        if self._processes(pod):
            self._await_process(pod, grace)
            return
        self._later(pod, min(delay, grace), lambda: self._remove(pod))

    def _await_process(self, pod: _Pod, grace: float) -> None:
        """Removed once every process exited; at the grace period's end local processes are killed and awaited
        (bounded), a runner's are given up on."""
        processes = self._processes(pod)
        self._stop_process(pod, grace)
        deadline = self.ctx.now() + grace

        def poll() -> None:
            running = [p for p in processes if not _exited(p)]
            late = self.ctx.now() >= deadline
            local = [p for p in running if isinstance(p, LocalProcess)]
            for process in local if late else ():
                process.kill()
            if not running or (late and not local) or self.ctx.now() >= deadline + local_process.REAP_SECONDS:
                self._remove(pod)
            else:
                self._later(pod, POLL_SECONDS, poll)

        poll()

    def _remove(self, pod: _Pod) -> None:
        """The kubelet's final delete (grace 0) once the containers stopped."""
        current = self.ctx.store.get(PODS, pod.namespace, pod.name)
        if current is None or meta(current).get("uid") != pod.uid:
            return
        for c in pod.containers:
            self.logs.end_run(pod.uid, c.name, c.container_id)
        self.ctx.store.remove(PODS, pod.namespace, pod.name)

    # --- status --------------------------------------------------------------------------------------------

    def _write(self, pod: _Pod, unschedulable: str | None = None) -> None:
        """Write the pod's status from the simulation, unless someone else wrote it since (then hand it over)."""
        if not pod.managed:
            return

        def change(obj: Obj) -> None:
            if meta(obj).get("uid") != pod.uid:
                raise _Replaced
            if pod.last_status is not None and status(obj) != pod.last_status:
                raise _HandedOff
            obj["status"] = self._status(pod, obj, unschedulable)

        try:
            written = self.ctx.store.mutate(PODS, pod.namespace, pod.name, change, subresource="status")
        except _HandedOff:
            log.debug("kubelet: pod %s/%s status is written by someone else now", pod.namespace, pod.name)
            pod.managed = False
            for c in pod.containers:
                c.cancel()
            return
        except (ApiError, _Replaced):
            return
        pod.last_status = status(written)

    def _status(self, pod: _Pod, obj: Obj, unschedulable: str | None) -> Obj:
        old = status(obj)
        out: Obj = {"phase": "Pending"}
        if unschedulable is not None:
            out["conditions"] = [self._cond(old, "PodScheduled", "False", "Unschedulable", unschedulable)]
            out["qosClass"] = old.get("qosClass", "BestEffort")
            return out
        phase = self._phase(pod, obj)
        out["phase"] = phase
        out["conditions"] = self._conditions(pod, old, phase)
        out["hostIP"] = HOST_IP
        if self.ctx.minor >= 28:
            out["hostIPs"] = [{"ip": HOST_IP}]
        if pod.pod_ip:
            out["podIP"] = pod.pod_ip
            out["podIPs"] = [{"ip": pod.pod_ip}]
        out["startTime"] = pod.start_time
        if pod.inits():
            out["initContainerStatuses"] = [self._container_status(c) for c in pod.inits()]
        out["containerStatuses"] = [self._container_status(c) for c in pod.main()]
        out["qosClass"] = old.get("qosClass", "BestEffort")
        return out

    def _phase(self, pod: _Pod, obj: Obj) -> str:
        """``getPhase`` of ``kubelet_pods.go``; a terminal phase never changes again."""
        if pod.terminal:
            return str(status(obj).get("phase"))
        policy = str(spec(obj).get("restartPolicy", "Always"))
        for c in pod.inits():
            term = c.state.get("terminated")
            if term is not None and term.get("exitCode") != 0 and policy == "Never":
                pod.terminal = True
                return "Failed"
            if term is None or term.get("exitCode") != 0:
                return "Pending"
        running = waiting = stopped = succeeded = 0
        for c in pod.main():
            if c.running:
                running += 1
            elif "terminated" in c.state:
                stopped += 1
                succeeded += c.state["terminated"].get("exitCode") == 0
            elif c.last_state.get("terminated"):
                stopped += 1
            else:
                waiting += 1
        if waiting:
            return "Pending"
        if running:
            return "Running"
        if not stopped or policy == "Always":
            return "Running" if stopped else "Pending"
        if stopped == succeeded:
            pod.terminal = True
            return "Succeeded"
        if policy == "Never":
            pod.terminal = True
            return "Failed"
        return "Running"

    def _conditions(self, pod: _Pod, old: Obj, phase: str) -> list[Obj]:
        main = pod.main()
        conds: list[Obj] = []
        if self.ctx.minor >= 29:
            sandbox = bool(pod.pod_ip) and phase not in ("Succeeded", "Failed")
            conds.append(self._cond(old, "PodReadyToStartContainers", "True" if sandbox else "False"))
        pending_init = [c.name for c in pod.inits() if (c.state.get("terminated") or {}).get("exitCode") != 0]
        if pending_init and phase != "Succeeded":
            conds.append(
                self._cond(
                    old,
                    "Initialized",
                    "False",
                    "ContainersNotInitialized",
                    f"containers with incomplete status: [{' '.join(pending_init)}]",
                )
            )
        else:
            conds.append(self._cond(old, "Initialized", "True"))
        unready = [c.name for c in main if not self._ready(c)]
        if phase == "Succeeded":
            ready = self._cond(old, "Ready", "False", "PodCompleted", "")
            containers = self._cond(old, "ContainersReady", "False", "PodCompleted", "")
        elif unready:
            message = f"containers with unready status: [{' '.join(unready)}]"
            ready = self._cond(old, "Ready", "False", "ContainersNotReady", message)
            containers = self._cond(old, "ContainersReady", "False", "ContainersNotReady", message)
        else:
            ready = self._cond(old, "Ready", "True")
            containers = self._cond(old, "ContainersReady", "True")
        conds += [ready, containers, self._cond(old, "PodScheduled", "True")]
        return conds

    @staticmethod
    def _ready(c: _Container) -> bool:
        if not c.running:
            return False
        return c.ready_override if c.ready_override is not None else c.ready

    def _cond(self, old: Obj, kind: str, state: str, reason: str | None = None, message: str | None = None) -> Obj:
        previous = next((c for c in old.get("conditions") or [] if c.get("type") == kind), None)
        since = previous.get("lastTransitionTime") if previous and previous.get("status") == state else None
        cond: Obj = {
            "type": kind,
            "status": state,
            "lastProbeTime": None,
            "lastTransitionTime": since or rfc3339(self.ctx.now()),
        }
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        return cond

    def _container_status(self, c: _Container) -> Obj:
        out: Obj = {
            "name": c.name,
            "state": c.state,
            "lastState": c.last_state,
            "ready": self._ready(c),
            "restartCount": c.restart_count,
            "image": c.image_ref or c.image,
            "imageID": c.image_id,
        }
        if c.container_id and "waiting" not in c.state or c.container_id and c.last_state:
            out["containerID"] = c.container_id
        out["started"] = c.started
        return out

    # --- helpers ----------------------------------------------------------------------------------------------

    def _current(self, pod: _Pod) -> Obj | None:
        current = self.ctx.store.get(PODS, pod.namespace, pod.name)
        if current is None or meta(current).get("uid") != pod.uid:
            return None
        return current

    def _recorder(self, current: Obj, c: _Container) -> Callable[[str, str, str], None]:
        def record(type_: str, reason: str, message: str) -> None:
            self.ctx.recorder.record(
                current, type_, reason, message, component="kubelet", host=NODE, field_path=c.field_path
            )

        return record

    def _later(self, pod: _Pod, seconds: float, fn: Callable[[], None]) -> None:
        pod.timers.append(self.ctx.later(seconds, self._guard(pod, fn)))
        pod.timers[:] = [t for t in pod.timers if not t.cancelled]

    def _later_c(self, c: _Container, seconds: float, fn: Callable[[], None]) -> None:
        """A container's own step (cancelled when it exits or its pod goes)."""

        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("kubelet: step for container %s failed", c.name)

        c.timers.append(self.ctx.later(seconds, run))
        c.timers[:] = [t for t in c.timers if not t.cancelled]

    def _guard(self, pod: _Pod, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            if self._pods.get(pod.uid) is not pod:
                return
            try:
                fn()
            except Exception:
                log.exception("kubelet: step for pod %s/%s failed", pod.namespace, pod.name)

        return run


def _exited(process: PodProcess) -> bool:
    try:
        return process.exit_code is not None
    except Exception:
        return True


def _start_failure(exc: Exception) -> str:
    """The Failed event's words for a process that could not start (containerd's, for a missing program)."""
    if isinstance(exc, FileNotFoundError):
        return (
            f"failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
            f'failed: unable to start container process: exec: "{exc.filename}": executable file not found in '
            f"$PATH: unknown"
        )
    return f"failed to start containerd task: {exc}"


def _pristine(pod_status: Obj) -> bool:
    """A status nobody has written yet: what the API server sets on create."""
    return (
        not ({k for k, v in pod_status.items() if v} - {"phase", "qosClass"})
        and pod_status.get("phase", "Pending") == "Pending"
    )


def normalize_image(image: str) -> str:
    """``nginx:1.25`` -> ``docker.io/library/nginx:1.25`` (what containerd reports as the image)."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and not digest:
        name += ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + name
    return name + (f"@{digest}" if digest else "")


def image_repository(ref: str) -> str:
    """``docker.io/library/nginx:1.25`` -> ``docker.io/library/nginx`` (no tag, no digest)."""
    name = ref.partition("@")[0]
    head, _, last = name.rpartition("/")
    return f"{head}/{last.partition(':')[0]}" if head else last.partition(":")[0]


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` for whole-ish seconds: ``10s``, ``1m20s``, ``5m0s``, ``0.5s`` -> ``500ms``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, secs = divmod(seconds, 60)
    text = f"{secs:g}s"
    if minutes >= 60:
        hours, minutes = divmod(int(minutes), 60)
        return f"{hours}h{minutes}m{text}"
    return f"{int(minutes)}m{text}" if minutes else text
