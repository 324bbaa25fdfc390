"""A write-ahead record of what each cleanup ledger created, so a process that dies mid-scope leaves a trail.

A :class:`~harness.cleanup.Ledger` deletes or keeps its objects when its scope ends; a process that never gets there
(SIGKILL, ``os._exit`` from pytest-timeout's ``thread`` method, a crashed pytest-xdist worker, the machine's OOM
killer) used to leave them in the cluster with no word. Each process that opens a ledger writes one journal,
``<run folder>/.ledgers/<worker>-<pid>.jsonl``, one JSON line per event, appended before the cluster is touched:

- ``open``: the ledger's scope, run id and the kubectl pinning (kubeconfig, context, namespace);
- ``intent``: the refs a manifest names (``deployment.apps/web``), written before ``kubectl apply`` runs, so an
  apply cut short is still accounted for (``--ignore-not-found`` makes a ref never created harmless to delete);
- ``refs``: what kubectl printed, or what ``track`` recorded; ``sweep``: a sweep's description;
- ``closed``: the ledger was deleted or kept by its own process.

:func:`claim_orphans` finds the journals of processes that are gone (their pid no longer runs the process that
wrote the journal: Linux ``/proc/<pid>/stat`` start time and boot id) and claims each by renaming it (atomic: of two
runs looking at once, one gets it), so a later run does not report it again. Its open ledgers come back as
:class:`Orphan`\\ s for the caller to list as kept.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import artifacts
from harness.cleanup import inspect_and_delete, pinned_kubectl
from harness.errors import HarnessError

FOLDER = ".ledgers"
CLAIMED = ".claimed"
CHECK_TIMEOUT = 15.0
"""Seconds the check of a dead process's objects against the cluster may take."""


@dataclass
class Orphan:
    """An open ledger of a process that died: ``refs`` are its intents and recorded objects, newest last."""

    scope: str
    run_id: str
    pid: int
    worker: str
    kubeconfig: str | None
    context: str
    namespace: str
    refs: list[str] = field(default_factory=list)
    sweeps: list[str] = field(default_factory=list)
    kubectl: str = "kubectl"
    unchecked: str = ""  # why the refs were not checked against the cluster, when they were not

    def check(self, *, timeout: float = CHECK_TIMEOUT) -> None:
        """Keep of ``refs`` those the cluster still has: one bounded ``kubectl get REFS --ignore-not-found -o name``
        (another worker's ledger may have deleted what this one also made; an intent may never have been
        created). When that read fails, ``refs`` stay as they are and ``unchecked`` says why."""
        from harness import process
        from harness.kube import kubectl_environment

        if not self.refs:
            return
        argv = [self.kubectl, "--context", self.context, "-n", self.namespace, "get", *self.refs]
        try:
            done = process.run_bounded(
                [*argv, "--ignore-not-found", "-o", "name"], timeout=timeout, env=kubectl_environment(self.kubeconfig)
            )
        except (HarnessError, OSError) as exc:  # a timeout, kubectl gone: list what the journal holds, unchecked
            self.unchecked = f"not checked against the cluster: {exc}"
            return
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"kubectl exited {done.returncode}"])[-1]
            self.unchecked = f"not checked against the cluster: {last}"
            return
        there = set(done.stdout.split())
        self.refs = [ref for ref in self.refs if ref in there]

    def commands(self) -> list[str]:
        """The pinned commands to inspect (by the run label) and to delete what the ledger may have left."""
        base = pinned_kubectl(self.kubeconfig, self.context, self.namespace)
        return inspect_and_delete(base, self.run_id, self.refs)


class Journal:
    """One process's journal under ``run_folder`` (created on first write). Writes never raise: a journal that
    cannot be written costs the trail, not the spec."""

    def __init__(self, run_folder: Path, worker: str | None) -> None:
        self.path = run_folder / FOLDER / f"{worker or 'main'}-{os.getpid()}.jsonl"
        self._started = False
        self._next = 0

    def new_ledger(self) -> int:
        """A number for the next ledger of this process."""
        self._next += 1
        return self._next

    def write(self, ledger: int, event: str, **data: Any) -> None:
        with contextlib.suppress(OSError):
            if not self._started:
                self._started = True
                artifacts.append_line(self.path, json.dumps({"event": "process", **_identity(os.getpid())}))
            artifacts.append_line(self.path, json.dumps({"ledger": ledger, "event": event, **data}, default=str))


def claim_orphans(run_folders: list[Path]) -> list[Orphan]:
    """Claim the journals under ``run_folders`` whose process is gone; their open ledgers, oldest first. A journal
    that cannot be read or renamed is left for a later run."""
    orphans: list[Orphan] = []
    for folder in run_folders:
        with contextlib.suppress(OSError):
            for path in sorted((folder / FOLDER).glob("*.jsonl")):
                orphans += _claim(path, folder.name)
    return orphans


def _claim(path: Path, run_id: str) -> list[Orphan]:
    try:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    if not lines or lines[0].get("event") != "process" or _alive(lines[0]):
        return []
    try:
        path.rename(path.with_name(path.name + f"{CLAIMED}-{os.getpid()}"))
    except OSError:  # another run claimed it first
        return []
    return _open_ledgers(lines, run_id, path.stem.rsplit("-", 1)[0])


def _open_ledgers(lines: list[dict[str, Any]], run_id: str, worker: str) -> list[Orphan]:
    pid = int(lines[0].get("pid") or 0)
    ledgers: dict[int, Orphan] = {}
    for line in lines[1:]:
        number, event = int(line.get("ledger") or 0), line.get("event")
        if event == "open":
            ledgers[number] = Orphan(
                line["scope"], run_id, pid, worker, line.get("kubeconfig"), line["context"], line["namespace"]
            )
            ledgers[number].kubectl = str(line.get("kubectl") or "kubectl")
        elif number in ledgers and event in ("intent", "refs"):
            orphan = ledgers[number]
            orphan.refs += [ref for ref in line.get("refs", []) if ref not in orphan.refs]
        elif number in ledgers and event == "sweep":
            ledgers[number].sweeps.append(str(line.get("what")))
        elif event == "closed":
            ledgers.pop(number, None)
    return list(ledgers.values())


def _identity(pid: int) -> dict[str, Any]:
    return {"pid": pid, "start": _start_time(pid), "boot": _boot_id()}


def _alive(process: dict[str, Any]) -> bool:
    """Whether the process that wrote the journal still runs: same boot, same pid, same start time (a reused pid
    has another). Where ``/proc`` is not there, a pid that exists counts as alive."""
    pid = int(process.get("pid") or 0)
    if pid <= 0:
        return False
    if process.get("boot") and process.get("boot") != _boot_id():
        return False
    start = _start_time(pid)
    if start is not None or process.get("start") is not None:
        return start is not None and start == process.get("start")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks since boot; proc(5)), after the parenthesised command name."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[19])


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
