"""Evidence of a failed spec: what the cluster and the harness looked like, written to a folder as it is read.

:func:`collect` fills one folder (``artifacts/<run id>/<spec>/``) with, in this order:

1. what the harness holds in memory (instant): ``failure.txt`` (phase and message), ``waits.txt``/``waits.json``
   (every wait's per-attempt timeline), ``rollouts.txt`` (explanations of rollouts that failed during the spec),
   ``port-forwards.txt`` (each forward's life and kubectl's stderr tail), ``journal-<fake>.jsonl`` (requests each
   fake the spec used received since the spec started);
2. from the cluster, in parallel, each call bounded: ``events.txt``/``events.json`` (the namespace's events sorted
   by time, ``lastTimestamp`` or else ``eventTime``), per object of interest ``kubectl describe`` and YAML (a
   deployment's or statefulset's YAML file lists its ReplicaSets and pods too), pods by selector, and what a stack
   layer added (an :class:`ExtraEvidence` each: its own file);
3. per pod: ``kubectl describe``, and each container's log, current and ``--previous`` (last ``log_lines`` lines,
   at most ``log_bytes`` bytes each; a container that never started is recorded as such, without a call);
4. per deployment or statefulset: ``<kind>-<name>.explanation.txt``, the one-message explanation of its rollout
   (:mod:`harness.rollout`), made from what was read.

Every step has its own timeout (``step_timeout``) and all of them share one ``budget``: a step that would start
with less than half a second left is recorded as ``cut``. Each file is written as soon as its step ends, and
``index.json`` / ``INDEX.txt`` (step, status, seconds, file, command, error) are rewritten after every step, so a
collection cut short (a budget spent, a killed process) still leaves everything it got and says what is missing.
:func:`collect` never raises for a cluster or file-system failure: it records it in the index.

Statuses: ``ok``, ``not-found`` (the object or kind does not exist: the answer, not an error), ``not-started`` (a
container that never ran has no log), ``none`` (nothing to collect, e.g. no previous container), ``failed`` (the
error is in the index), ``cut`` (the budget was spent before the step).
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness import artifacts
from harness.errors import KubectlError, KubectlTimeout
from harness.podfacts import Obj, event_line, name_of, pod_facts, sort_events
from harness.rollout import Explanation, Snapshot, explain, gather, parse_ref
from harness.timeline import SpecRecord

if TYPE_CHECKING:
    from harness.kube import Kube

DEFAULT_BUDGET = artifacts.DEFAULT_EVIDENCE_BUDGET
DEFAULT_STEP_TIMEOUT = 20.0
DEFAULT_LOG_LINES = 200
DEFAULT_LOG_BYTES = 256 * 1024
WORKERS = 4
MIN_STEP = 0.5
MAX_TEXT = 1 << 20
MAX_JOURNAL = 1000
MAX_JOURNAL_BODY = 4096
MAX_EVENTS = 1000


@dataclass(frozen=True)
class ExtraEvidence:
    """Evidence a stack layer adds to a spec's folder: ``step`` (its line in the index), ``file`` (the name it is
    written to), ``read(kube, timeout)`` (the text to write, or ``None`` when there is nothing: the step is then
    ``none`` with ``empty`` as its note). ``read`` gets the spec's :class:`~harness.kube.Kube` and its share of the
    evidence budget in seconds; a :class:`~harness.errors.KubectlError` it raises is classified like the harness's
    own reads (timeout, forbidden, not found ...)."""

    step: str
    file: str
    read: Callable[[Kube, float], str | None]
    empty: str = "nothing to keep"


@dataclass
class Interest:
    """What a spec asked to be kept: ``refs`` (``kind/name``: deployments, statefulsets, pods, any other kind),
    ``pod_selectors`` (label selectors, ``app=web``), ``extras`` (:class:`ExtraEvidence`, each once by file)."""

    refs: list[str] = field(default_factory=list)
    pod_selectors: list[str] = field(default_factory=list)
    extras: list[ExtraEvidence] = field(default_factory=list)

    def add(self, *refs: str) -> None:
        for ref in refs:
            if ref not in self.refs:
                self.refs.append(ref)

    def add_selector(self, selector: str) -> None:
        if selector not in self.pod_selectors:
            self.pod_selectors.append(selector)

    def add_extra(self, extra: ExtraEvidence) -> None:
        if all(known.file != extra.file for known in self.extras):
            self.extras.append(extra)


@dataclass
class Sources:
    """What :func:`collect` reads: the spec's node id, the failed ``phase`` and its ``failure`` text, the ``kube``
    to read the cluster through (``None``: only local evidence), the ``interest``, the spec's ``record`` (waits,
    rollouts, touched objects), its ``fakes`` (name to a handle with ``requests(since=...)``), its ``forwards``
    (:class:`harness.PortForward`) and ``started`` (epoch seconds: journals are read from there). ``lead`` (a rollout
    failure's message, its explanation's headline first) opens ``failure.txt``, before pytest's report."""

    spec: str
    phase: str
    failure: str
    kube: Kube | None
    interest: Interest
    record: SpecRecord = field(default_factory=SpecRecord)
    fakes: dict[str, Any] = field(default_factory=dict)
    forwards: list[Any] = field(default_factory=list)
    started: float = 0.0
    lead: str | None = None


@dataclass
class Step:
    """One line of the index. ``seconds`` is ``None`` for a step that never ran."""

    step: str
    status: str
    file: str | None = None
    seconds: float | None = None
    command: str | None = None
    error: str | None = None
    bytes: int = 0


@dataclass
class Outcome:
    """What a step function returns: ``status``, ``content`` to write (or ``None``), an ``error`` note, a ``value``
    for later steps."""

    status: str = "ok"
    content: str | None = None
    error: str | None = None
    value: Any = None


class Index:
    """The folder's ``index.json`` and ``INDEX.txt``, rewritten (atomically) after every step."""

    def __init__(self, folder: Path, spec: str, phase: str, budget: float) -> None:
        self.folder, self.spec, self.phase, self.budget = folder, spec, phase, budget
        self.started = time.monotonic()
        self.steps: list[Step] = []
        self.notes: list[str] = []
        self.finished = False
        self._lock = threading.Lock()

    def add(self, step: Step) -> None:
        with self._lock:
            self.steps.append(step)
            self._write()

    def note(self, text: str) -> None:
        with self._lock:
            self.notes.append(text)
            self._write()

    def finish(self) -> None:
        with self._lock:
            self.finished = True
            self._write()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def count(self, status: str) -> int:
        return sum(1 for s in self.steps if s.status == status)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "phase": self.phase,
            "budget": self.budget,
            "elapsed": round(self.elapsed(), 3),
            "finished": self.finished,
            "notes": self.notes,
            "steps": [asdict(s) for s in self.steps],
        }

    def _write(self) -> None:
        try:
            artifacts.write_text(self.folder / "index.json", json.dumps(self.to_dict(), indent=1))
            artifacts.write_text(self.folder / "INDEX.txt", self.text())
        except OSError:
            pass  # the folder vanished or filled up: the steps' own files are all that is left

    def text(self) -> str:
        state = "complete" if self.finished else "IN PROGRESS (or cut short)"
        lines = [
            f"evidence of {self.spec} (failed in {self.phase}): {state}, {self.elapsed():.1f}s of a "
            f"{self.budget:.0f}s budget",
            *(f"note: {n}" for n in self.notes),
            f"{'status':<12}{'seconds':>8}  {'file':<44} step",
        ]
        for s in self.steps:
            secs = f"{s.seconds:.2f}" if s.seconds is not None else "-"
            line = f"{s.status:<12}{secs:>8}  {s.file or '-':<44} {s.step}"
            if s.error:
                line += f"  [{s.error}]"
            lines.append(line)
        return "\n".join(lines) + "\n"


def collect(
    folder: Path,
    sources: Sources,
    *,
    budget: float = DEFAULT_BUDGET,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    log_lines: int = DEFAULT_LOG_LINES,
    log_bytes: int = DEFAULT_LOG_BYTES,
) -> tuple[Index, list[Explanation]]:
    """Fill ``folder`` (created if missing) with the evidence of ``sources``; see the module docstring.

    Returns the index and the explanations made (one per deployment or statefulset of interest). Never raises but
    ``KeyboardInterrupt``/``SystemExit``; an ``OSError`` creating the folder is returned as a one-note index.
    """
    index = Index(folder, sources.spec, sources.phase, budget)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        index.notes.append(f"could not create {folder}: {exc}")
        return index, []
    collector = _Collector(
        folder, sources, index, budget=budget, step_timeout=step_timeout, log_lines=log_lines, log_bytes=log_bytes
    )
    try:
        collector.run()
    except Exception as exc:  # a bug here must not turn a spec's failure into a collection error
        index.note(f"collection stopped by {type(exc).__name__}: {exc}")
    finally:
        index.finish()
    return index, collector.explanations


class _Collector:
    def __init__(
        self,
        folder: Path,
        sources: Sources,
        index: Index,
        *,
        budget: float,
        step_timeout: float,
        log_lines: int,
        log_bytes: int,
    ) -> None:
        self.folder, self.src, self.index = folder, sources, index
        self.deadline = time.monotonic() + budget
        self.step_timeout, self.log_lines, self.log_bytes = step_timeout, log_lines, log_bytes
        self.snapshots: dict[str, Snapshot] = {}
        self.pods: dict[str, Obj] = {}
        self.events: list[Obj] = []
        self.previous: dict[tuple[str, str], str] = {}
        self.explanations: list[Explanation] = []
        self._lock = threading.Lock()

    # --- the plan ---------------------------------------------------------------------------------------------

    def run(self) -> None:
        self._local()
        kube = self.src.kube
        if kube is None:
            self.index.note("no kube context in this spec: cluster evidence was not collected")
            return
        workloads, others = self._split_refs()
        first: list[tuple[str, str | None, Callable[[float], Outcome]]] = [
            ("events of the namespace, by time", "events.txt", self._events)
        ]
        for ref in workloads:
            first.append((f"read {ref} with its ReplicaSets and pods", f"{_file(ref)}.yaml", self._reader(ref)))
        for selector in self.src.interest.pod_selectors:
            first.append(
                (f"pods -l {selector}", f"pods-{artifacts.safe_name(selector)}.yaml", self._selector(selector))
            )
        for ref in workloads + others:
            first.append((f"kubectl describe {ref}", f"{_file(ref)}.describe.txt", self._describe(ref)))
        for ref in others:
            first.append((f"kubectl get {ref} -o yaml", f"{_file(ref)}.yaml", self._yaml(ref)))
        for extra in self.src.interest.extras:
            first.append((extra.step, extra.file, self._extra(extra)))
        self._wave(first)
        second: list[tuple[str, str | None, Callable[[float], Outcome]]] = []
        for name, pod in self.pods.items():
            if f"pod/{name}" not in others:
                second.append(
                    (
                        f"kubectl describe pod/{name}",
                        f"pod-{artifacts.safe_name(name)}.describe.txt",
                        self._describe(f"pod/{name}"),
                    )
                )
            second += self._log_steps(pod)
        self._wave(second)
        for ref in workloads:
            self._explain(ref)

    def _split_refs(self) -> tuple[list[str], list[str]]:
        """Workloads (deployments, statefulsets) and other objects, each once (``deployment.apps/web`` as kubectl
        prints it and ``deployment/web`` are one)."""
        workloads: list[str] = []
        others: list[str] = []
        for ref in self.src.interest.refs:
            try:
                kind, name = parse_ref(ref)
            except ValueError:
                kind, name = "", ref
            canonical = f"{kind}/{name}" if kind else ref
            target = workloads if kind in ("deployment", "statefulset") else others
            if canonical not in target:
                target.append(canonical)
        return workloads, others

    def _wave(self, steps: list[tuple[str, str | None, Callable[[float], Outcome]]]) -> None:
        if not steps:
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="evidence") as pool:
            for future in [pool.submit(self._step, *step) for step in steps]:
                future.result()  # _step never raises

    # --- one step ---------------------------------------------------------------------------------------------

    def _step(
        self,
        name: str,
        file: str | None,
        fn: Callable[[float], Outcome],
        command: str | None = None,
        *,
        local: bool = False,
    ) -> Any:
        """Run one step within the budget (``local`` steps read only memory and always run)."""
        left = self.deadline - time.monotonic()
        if left < MIN_STEP and not local:
            self.index.add(Step(name, "cut", file, None, command, f"the {self.index.budget:.0f}s budget was spent"))
            return None
        began = time.monotonic()
        try:
            outcome = fn(max(MIN_STEP, min(self.step_timeout, left)))
        except Exception as exc:
            outcome = Outcome("failed", error=f"{type(exc).__name__}: {_flat(str(exc), 400)}")
        if outcome.status == "timeout":  # killed at its bound: the budget's end, or the step's own timeout
            by_budget = left < self.step_timeout
            outcome.status = "cut" if by_budget else "failed"
            if by_budget:
                outcome.error = f"stopped at the end of the {self.index.budget:.0f}s budget: {outcome.error}"
        size = 0
        if outcome.content is not None and file is not None:
            try:
                size = artifacts.write_text(self.folder / file, outcome.content[:MAX_TEXT])
            except OSError as exc:
                outcome.status, outcome.error = "failed", f"could not write {file}: {exc}"
        written = file if outcome.content is not None else None
        self.index.add(
            Step(
                name,
                outcome.status,
                written,
                round(time.monotonic() - began, 3),
                command or getattr(fn, "command", None),
                outcome.error,
                size,
            )
        )
        return outcome.value

    def _kubectl(self, timeout: float, *args: str) -> Outcome:
        assert self.src.kube is not None
        try:
            done = self.src.kube.kubectl(*args, timeout=timeout, check=False)
        except KubectlTimeout as exc:
            return Outcome("timeout", error=_flat(str(exc), 400))
        except KubectlError as exc:
            return Outcome("failed", error=_flat(str(exc), 400))
        if done.returncode == 0:
            return Outcome("ok", content=done.stdout)
        said = _flat(done.stderr or f"kubectl exited {done.returncode}", 400)
        return Outcome(_classify(said), content=None, error=said)

    # --- local evidence ---------------------------------------------------------------------------------------

    def _local(self) -> None:
        src = self.src
        failure = f"{src.spec}\nfailed in {src.phase}\n\n{src.failure}\n"
        if src.lead:  # cause first: the explanation's headline is the file's first line
            failure = f"{src.lead}\n\n{failure}"
        self._local_step("the failure", "failure.txt", failure)
        if src.record.waits:
            self._local_step("waits, per attempt", "waits.txt", _waits_text(src.record))
            self._local_step(
                "waits, as data", "waits.json", json.dumps([w.to_dict() for w in src.record.waits], indent=1)
            )
        failed = [r.explanation for r in src.record.rollouts if r.explanation is not None]
        if failed:
            self._local_step(
                "rollouts that failed during the spec", "rollouts.txt", "\n\n".join(e.text() for e in failed) + "\n"
            )
        if src.forwards:
            self._local_step("port-forwards and kubectl's stderr", "port-forwards.txt", _forwards_text(src.forwards))
        for name, handle in src.fakes.items():
            self._step(
                f"request journal of {name}",
                f"journal-{artifacts.safe_name(name)}.jsonl",
                functools.partial(_journal_outcome, handle, src.started),
                local=True,
            )

    def _local_step(self, name: str, file: str, content: str) -> None:
        """A step that writes what memory holds: it runs whatever is left of the budget."""
        self._step(name, file, lambda _: Outcome(content=content), local=True)

    # --- cluster evidence -------------------------------------------------------------------------------------

    def _events(self, timeout: float) -> Outcome:
        got = self._kubectl(timeout, "get", "events", "-o", "json")
        if got.status != "ok" or got.content is None:
            return got
        items = sort_events(json.loads(got.content).get("items") or [])
        with self._lock:
            self.events = items
        kept = items[-MAX_EVENTS:]
        artifacts.write_text(self.folder / "events.json", json.dumps(kept, indent=1))
        cut = f"(the last {MAX_EVENTS} of {len(items)})\n" if len(items) > MAX_EVENTS else ""
        lines = [f"{event_line(e)}  [{_involved(e)}]" for e in kept]
        return Outcome(content=cut + ("\n".join(lines) if lines else "(no events)") + "\n")

    def _reader(self, ref: str) -> Callable[[float], Outcome]:
        def read(timeout: float) -> Outcome:
            assert self.src.kube is not None
            snap = gather(self.src.kube, ref, budget=timeout, events=False, logs=False)
            with self._lock:
                self.snapshots[ref] = snap
                for pod in snap.pods:
                    self.pods.setdefault(name_of(pod), pod)
            if snap.workload is None:
                return Outcome("not-found" if snap.missing else "failed", error="; ".join(snap.problems) or None)
            objects = [snap.workload, *snap.replicasets, *snap.pods]
            error = "; ".join(snap.problems) or None
            return Outcome("ok", content=yaml.safe_dump_all(objects, sort_keys=False), error=error)

        read.command = (  # type: ignore[attr-defined]
            f"kubectl get {ref} -o json; kubectl get replicasets,pods -l <its selector> -o json"
        )
        return read

    def _selector(self, selector: str) -> Callable[[float], Outcome]:
        def read(timeout: float) -> Outcome:
            got = self._kubectl(timeout, "get", "pods", "-l", selector, "-o", "json")
            if got.status != "ok" or got.content is None:
                return got
            items = json.loads(got.content).get("items") or []
            with self._lock:
                for pod in items:
                    self.pods.setdefault(name_of(pod), pod)
            if not items:
                return Outcome("none", error=f"no pod matches {selector}")
            return Outcome(content=yaml.safe_dump_all(items, sort_keys=False))

        read.command = f"kubectl get pods -l {selector} -o json"  # type: ignore[attr-defined]
        return read

    def _describe(self, ref: str) -> Callable[[float], Outcome]:
        kind, _, name = ref.partition("/")

        def describe(timeout: float) -> Outcome:
            return self._kubectl(timeout, "describe", kind, name)

        describe.command = f"kubectl describe {kind} {name}"  # type: ignore[attr-defined]
        return describe

    def _yaml(self, ref: str) -> Callable[[float], Outcome]:
        kind, _, name = ref.partition("/")

        def read(timeout: float) -> Outcome:
            got = self._kubectl(timeout, "get", kind, name, "-o", "json")
            if got.status == "ok" and got.content is not None:
                obj = json.loads(got.content)
                if kind.lower().startswith("pod"):
                    with self._lock:
                        self.pods.setdefault(name_of(obj), obj)
                got.content = yaml.safe_dump(obj, sort_keys=False)
            return got

        read.command = f"kubectl get {kind} {name} -o yaml"  # type: ignore[attr-defined]
        return read

    def _extra(self, extra: ExtraEvidence) -> Callable[[float], Outcome]:
        def read(timeout: float) -> Outcome:
            assert self.src.kube is not None
            try:
                content = extra.read(self.src.kube, timeout)
            except KubectlError as exc:
                said = _flat(exc.stderr_tail or str(exc), 400)
                return Outcome(_classify(said), error=said)
            if content is None:
                return Outcome("none", error=extra.empty)
            return Outcome(content=content)

        return read

    def _log_steps(self, pod: Obj) -> list[tuple[str, str | None, Callable[[float], Outcome]]]:
        facts = pod_facts(pod)
        name = facts.name
        steps: list[tuple[str, str | None, Callable[[float], Outcome]]] = []
        for container in facts.containers:
            base = f"pod-{artifacts.safe_name(name)}.{artifacts.safe_name(container.name)}"
            never_ran = (
                container.state in ("waiting", "unknown") and not container.restarts and container.last_reason is None
            )
            if never_ran:
                why = container.reason or facts.phase
                detail = f": {container.message}" if container.message else ""
                steps.append(
                    (
                        f"log of {name}/{container.name}",
                        None,
                        functools.partial(_never_started, f"{why}{detail}"),
                    )
                )
            else:
                steps.append(
                    (f"log of {name}/{container.name}", f"{base}.log", self._logs(name, container.name, False))
                )
            if container.restarts:
                steps.append(
                    (
                        f"previous log of {name}/{container.name}",
                        f"{base}.previous.log",
                        self._logs(name, container.name, True),
                    )
                )
        return steps

    def _logs(self, pod: str, container: str, previous: bool) -> Callable[[float], Outcome]:
        args = ["logs", pod, "-c", container, f"--tail={self.log_lines}", f"--limit-bytes={self.log_bytes}"]
        if previous:
            args.append("--previous")

        def read(timeout: float) -> Outcome:
            got = self._kubectl(timeout, *args)
            if got.status == "ok" and previous and got.content is not None:
                with self._lock:
                    self.previous[(pod, container)] = got.content
            return got

        read.command = "kubectl " + " ".join(args)  # type: ignore[attr-defined]
        return read

    def _explain(self, ref: str) -> None:
        snap = self.snapshots.get(ref)
        if snap is None:
            self.index.add(Step(f"explain {ref}", "cut", None, None, None, "its objects were never read"))
            return
        snap.events = self.events
        snap.previous_logs = {k: v for k, v in self.previous.items() if k[0] in {name_of(p) for p in snap.pods}}
        explanation = explain(snap)
        self.explanations.append(explanation)
        self._local_step(f"explain {ref}", f"{_file(ref)}.explanation.txt", explanation.text() + "\n")


# --- formatting -----------------------------------------------------------------------------------------------


def _file(ref: str) -> str:
    return artifacts.safe_name(ref.replace("/", "-"))


def _flat(text: str, limit: int) -> str:
    flat = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _classify(said: str) -> str:
    lowered = said.lower()
    if "waiting to start" in lowered or "podinitializing" in lowered or "containercreating" in lowered:
        return "not-started"
    if "previous terminated container" in lowered:
        return "none"
    if "notfound" in lowered or "not found" in lowered or "doesn't have a resource type" in lowered:
        return "not-found"
    return "failed"


def _involved(event: Obj) -> str:
    target = event.get("involvedObject") or event.get("regarding") or {}
    return f"{target.get('kind', '?')}/{target.get('name', '?')}"


def _waits_text(record: SpecRecord) -> str:
    out = []
    for w in record.waits:
        out.append(
            f"{w.describe}: {w.outcome} after {w.elapsed:.2f}s of {w.budget:.1f}s "
            f"(interval {w.interval}s, probe bound {w.probe_timeout}s)"
        )
        for a in w.attempts:
            error = f"  {a.error}" if a.error else ""
            out.append(f"  #{a.number:<4} t+{a.start:8.3f}s  {a.duration:7.3f}s of {a.bound:.3g}s  {a.outcome}{error}")
        out += [f"  note: {n}" for n in w.notes[-5:]]
    return "\n".join(out) + "\n"


def _forwards_text(forwards: list[Any]) -> str:
    out = []
    for fwd in forwards:
        exit_ = getattr(fwd, "exit", None)
        out.append(
            f"{getattr(fwd, 'target', '?')} :{getattr(fwd, 'remote_port', '?')} -> local "
            f"{getattr(fwd, 'local_port', None)}: {exit_.how() if exit_ else 'still running'}"
        )
        tail = fwd.stderr_tail(50) if hasattr(fwd, "stderr_tail") else ""
        out += [f"  stderr | {line}" for line in tail.split(" | ") if line] or ["  stderr: (empty)"]
    return "\n".join(out) + "\n"


def _journal_outcome(handle: Any, since: float, _timeout: float) -> Outcome:
    return Outcome(content=_journal_text(handle, since))


def _never_started(why: str, _timeout: float) -> Outcome:
    return Outcome("not-started", error=f"the container never started ({why}); it has no log")


def _journal_text(handle: Any, since: float) -> str:
    entries = handle.requests(since=since) if since else handle.requests()
    lines = []
    for entry in entries[-MAX_JOURNAL:]:
        data = entry.to_dict() if hasattr(entry, "to_dict") else dict(vars(entry))
        body = data.get("body")
        if isinstance(body, str) and len(body) > MAX_JOURNAL_BODY:
            data["body"] = body[:MAX_JOURNAL_BODY] + f"... ({len(body)} characters)"
        data.pop("body_base64", None)
        lines.append(json.dumps(data, default=str))
    return "\n".join(lines) + ("\n" if lines else "")
