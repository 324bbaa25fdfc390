r"""Cleanup that keeps the evidence: label what the harness creates, delete it newest first, keep it after a failure.

Suites that clean up nothing pile up objects across runs; suites that clean up everything delete the evidence of the
failure they followed. Here:

- everything created through a :class:`Ledger` carries the label ``stack-harness.dev/run=<run id>`` (and
  ``stack-harness.dev/issue=<n>`` when the spec has an issue number), on the object and on its pod template, so
  ``kubectl get <kinds> -l stack-harness.dev/run=<run id>`` finds it later (the items of a ``List`` are labelled
  one by one, as ``kubectl apply`` creates them one by one);
- at the end of its scope the ledger deletes what it recorded, newest first, in one bounded ``kubectl delete
  --wait=false --ignore-not-found``, then runs its :class:`Sweep`\ s: deletions by query that a stack layer adds
  for objects its system creates on its own (a spec's window of custom resources, say);
- the pytest plugin decides when: after a failure anywhere in the module (set-up and teardown included), or with
  ``--keep-resources``, nothing is deleted and the terminal summary prints what was kept, with the commands to
  inspect and to delete it (:meth:`Ledger.keep_commands`);
- a ledger writes ahead what it is about to do (``record``: :mod:`harness.cleanup_journal`), so what a process
  that died inside the scope created can still be listed.

Deletion never sweeps by name prefix: only objects recorded by this run, or what a sweep's own query selects.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from harness.artifacts import ISSUE_LABEL, RUN_LABEL
from harness.errors import HarnessError, KubectlError

if TYPE_CHECKING:
    from harness.kube import Kube

Record = Callable[[str, dict[str, Any]], None]
"""Where a ledger writes ahead what it is about to do (``event``, data): :mod:`harness.cleanup_journal`."""

DEFAULT_DELETE_TIMEOUT = 30.0
DISCOVERY_TIMEOUT = 10.0
"""Seconds the "kept" commands may spend asking the API server which resource types it serves."""


@dataclass
class CleanupResult:
    """``deleted`` refs (``kind/name`` as kubectl printed them), ``failed`` (ref or command, error)."""

    deleted: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def extend(self, other: CleanupResult) -> None:
        self.deleted += other.deleted
        self.failed += other.failed


def run_labels(run_id: str, issue: int | None = None) -> dict[str, str]:
    """The labels every created object carries."""
    labels = {RUN_LABEL: run_id}
    if issue is not None:
        labels[ISSUE_LABEL] = str(issue)
    return labels


def label_manifest(obj: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """``obj`` with ``labels`` added to ``metadata.labels`` and, for workloads, ``spec.template.metadata.labels``
    (so their pods carry them too; selectors are untouched). Changes and returns ``obj``."""
    obj.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    job_template = (obj.get("spec") or {}).get("jobTemplate")
    if isinstance(job_template, dict):
        label_manifest(job_template, labels)
    return obj


def delete_refs(kube: Kube, refs: list[str], *, timeout: float = DEFAULT_DELETE_TIMEOUT) -> CleanupResult:
    """``kubectl delete REFS... --wait=false --ignore-not-found`` in the order given, within ``timeout`` seconds.

    Never raises for a cluster failure: what kubectl could not delete (or the timeout) is in ``failed``."""
    result = CleanupResult()
    if not refs:
        return result
    try:
        done = kube.kubectl("delete", *refs, "--wait=false", "--ignore-not-found", timeout=timeout, check=False)
    except KubectlError as exc:
        result.failed.append((" ".join(refs), str(exc).splitlines()[0]))
        return result
    for line in done.stdout.splitlines():  # `deployment.apps "web" deleted`
        parts = line.split('"')
        if len(parts) >= 3 and parts[2].strip().startswith("deleted"):
            result.deleted.append(f"{parts[0].strip()}/{parts[1]}")
    if done.returncode != 0:
        result.failed.append((" ".join(refs), done.stderr.strip() or f"kubectl exited {done.returncode}"))
    return result


@dataclass(frozen=True)
class Sweep:
    """A deletion by query instead of by recorded name, run after the recorded objects are deleted.

    ``what`` names it in messages and in the kept entry (``"Jobs created since 12:00:03"``); ``run(kube, timeout)``
    deletes within ``timeout`` seconds and must not raise for a cluster failure (see :class:`CleanupResult`);
    ``inspect`` is the kubectl arguments after the pinned ``kubectl --context C -n NS`` that list what it would
    delete, for the "kept" commands (``"get jobs  # those created since ..."``), or ``""``; ``resource`` (a plural
    such as ``widgets``) is the type ``inspect`` lists when the API server may not serve it (a custom resource): the
    command is printed only where discovery lists that type."""

    what: str
    run: Callable[[Kube, float], CleanupResult]
    inspect: str = ""
    resource: str = ""


class Ledger:
    """What one scope (a spec or a module) created in the cluster, to delete at its end unless kept.

    ``apply`` labels and applies manifests and records the objects; ``track`` records objects created some other
    way; :meth:`sweep` adds a deletion by query (a :class:`Sweep`) to run at the end. The pytest plugin calls
    :meth:`delete` or :meth:`keep` once the scope is over (see the module docstring).
    """

    def __init__(
        self, kube: Kube, run_id: str, *, scope: str, issue: int | None = None, record: Record | None = None
    ) -> None:
        self.kube, self.run_id, self.scope, self.issue = kube, run_id, scope, issue
        self.labels = run_labels(run_id, issue)
        self.refs: list[str] = []
        self.sweeps: list[Sweep] = []
        self.closed = False
        self._record = record or (lambda event, data: None)
        pin = {"kubeconfig": shown_kubeconfig(kube), "context": kube.context, "namespace": kube.namespace}
        pin["kubectl"] = kube.kubectl_path
        self._record("open", {"scope": scope, **pin})

    def apply(self, manifest: str | dict[str, Any] | list[dict[str, Any]], *, timeout: float = 30.0) -> list[str]:
        """Label and ``kubectl apply`` ``manifest`` (YAML text, one object or a list); returns and records the
        refs kubectl printed (``deployment.apps/web``). Raises :class:`harness.KubectlError` when apply fails
        (what it did create is recorded all the same)."""
        docs = _documents(manifest)
        for doc in docs:
            label_manifest(doc, self.labels)
        self._record("intent", {"refs": [ref for ref in map(manifest_ref, docs) if ref]})  # before the cluster sees it
        body = "\n---\n".join(yaml.safe_dump(doc, sort_keys=False) for doc in docs)
        done = self.kube.kubectl("apply", "-f", "-", "-o", "name", input=body, timeout=timeout, check=False)
        refs = [line.strip() for line in done.stdout.splitlines() if "/" in line]
        for ref in refs:
            self.track(ref)
        if done.returncode != 0:
            raise KubectlError(done.argv, done.returncode, done.stderr.strip())
        return refs

    def track(self, *refs: str) -> None:
        """Record objects (``kind/name``) created outside :meth:`apply`, to delete them at the end of the scope."""
        for ref in refs:
            if ref in self.refs:
                self.refs.remove(ref)
            self.refs.append(ref)
        self._record("refs", {"refs": list(refs)})

    def sweep(self, sweep: Sweep) -> None:
        """At the end of the scope, after the recorded objects, run ``sweep`` (unless the ledger is kept)."""
        self.sweeps.append(sweep)
        self._record("sweep", {"what": sweep.what})

    def delete(self, *, timeout: float = DEFAULT_DELETE_TIMEOUT) -> CleanupResult:
        """Delete the recorded objects, newest first, then run the sweeps; bounded by ``timeout`` seconds
        in all. Never raises for a cluster failure. Idempotent."""
        result = CleanupResult()
        if self.closed:
            return result
        self.closed = True
        deadline = time.monotonic() + timeout
        result.extend(delete_refs(self.kube, list(reversed(self.refs)), timeout=timeout))
        for sweep in self.sweeps:
            left = deadline - time.monotonic()
            if left < 1.0:
                result.failed.append((sweep.what, "not swept: the cleanup budget was spent"))
                continue
            result.extend(sweep.run(self.kube, left))
        self._record("closed", {"how": "deleted"})
        return result

    def keep(self) -> dict[str, Any]:
        """Mark the ledger kept (nothing will be deleted) and return what was kept, as a JSON-ready dict."""
        self.closed = True
        self._record("closed", {"how": "kept"})
        return {
            "scope": self.scope,
            "run": self.run_id,
            "refs": list(self.refs),
            "sweeps": [s.what for s in self.sweeps],
            "commands": self.keep_commands(),
        }

    def keep_commands(self) -> list[str]:
        """Commands to inspect and to delete what this ledger kept (pinned to its context and namespace).

        They name only resource types the API server serves: a sweep's custom resource only where discovery (one
        bounded ``kubectl api-resources``, :data:`DISCOVERY_TIMEOUT` seconds) lists it, so each command works as
        printed on a cluster without that CustomResourceDefinition."""
        base = pinned_kubectl(shown_kubeconfig(self.kube), self.kube.context, self.kube.namespace)
        commands = inspect_and_delete(base, self.run_id, self.refs)
        needed = {sweep.resource for sweep in self.sweeps if sweep.inspect and sweep.resource}
        missing = {resource for resource in needed if not served(self.kube, resource)}
        commands += [
            f"{base} {sweep.inspect}" for sweep in self.sweeps if sweep.inspect and sweep.resource not in missing
        ]
        return commands


def served(kube: Kube, resource: str, *, timeout: float = DISCOVERY_TIMEOUT) -> bool:
    """Whether the API server serves ``resource`` (a plural such as ``widgets``, or ``widgets.v1.example.com`` as
    kubectl spells a resource with its group), by discovery: ``kubectl api-resources -o name`` within ``timeout``
    seconds, compared by plural. False when discovery fails or does not answer in time."""
    try:
        done = kube.kubectl("api-resources", "-o", "name", timeout=timeout, check=False)
    except (HarnessError, OSError):  # a timeout, the guard, kubectl gone: say nothing of types we cannot confirm
        return False
    plural = resource.split(".", 1)[0]
    return any(line.split(".", 1)[0] == plural for line in done.stdout.split())


def shown_kubeconfig(kube: Kube) -> str | None:
    """The kubeconfig a printed command must name to work when pasted: the one given, else the files ``KUBECONFIG``
    named when the run started (a shell without that variable reads ``~/.kube/config``), else None."""
    if kube.kubeconfig:
        return kube.kubeconfig
    return kube.kubeconfig_path if os.environ.get("KUBECONFIG") and kube.kubeconfig_path else None


def pinned_kubectl(kubeconfig: str | None, context: str, namespace: str) -> str:
    """``kubectl [--kubeconfig K] --context C -n NS`` (``KUBECONFIG=A:B kubectl ...`` for a list of files, which
    ``--kubeconfig`` does not take), shell-quoted: the start of every command the harness prints."""
    listed = bool(kubeconfig) and os.pathsep in str(kubeconfig)
    parts = ["kubectl", *(["--kubeconfig", kubeconfig] if kubeconfig and not listed else [])]
    command = " ".join(shlex.quote(p) for p in [*parts, "--context", context, "-n", namespace])
    return f"KUBECONFIG={shlex.quote(str(kubeconfig))} {command}" if listed else command


def inspect_and_delete(base: str, run_id: str, refs: list[str]) -> list[str]:
    """``BASE get KINDS -l <run label>`` (the kinds of ``refs``: ``all`` leaves out ConfigMaps, roles and custom
    resources; ``all,secrets`` when there are none) and ``BASE delete REFS --wait=false --ignore-not-found``,
    newest first."""
    kinds = ",".join(dict.fromkeys(ref.split("/", 1)[0] for ref in refs)) or "all,secrets"
    commands = [f"{base} get {shlex.quote(kinds)} -l {RUN_LABEL}={run_id}"]
    if refs:
        newest_first = " ".join(shlex.quote(r) for r in reversed(refs))
        commands.append(f"{base} delete {newest_first} --wait=false --ignore-not-found")
    return commands


def manifest_ref(doc: dict[str, Any]) -> str | None:
    """``kind.group/name`` as ``kubectl -o name`` prints it (``deployment.apps/web``, ``configmap/x``), from a
    manifest's ``apiVersion``, ``kind`` and ``metadata.name``; None without a kind or a name (``generateName``)."""
    kind, name = doc.get("kind"), (doc.get("metadata") or {}).get("name")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        return None
    version = str(doc.get("apiVersion") or "")
    group = version.split("/", 1)[0] if "/" in version else ""
    return f"{kind.lower()}{'.' + group if group else ''}/{name}"


def _documents(manifest: str | dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects ``kubectl apply`` creates from ``manifest``: YAML documents or a stream of JSON objects, and the
    items of every list object in them (any object whose ``items`` is an array, as apimachinery's
    ``Unstructured.IsList`` reads it). Raises ``ValueError`` for a list inside a list, which kubectl's resource
    builder (one level of flattening) refuses for the whole file."""
    if isinstance(manifest, str):
        docs = _parsed(manifest)
    elif isinstance(manifest, dict):
        docs = [manifest]
    else:
        docs = list(manifest)
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise ValueError("manifest must be YAML text, an object, or a list of objects (Kubernetes manifests)")
    flat = [item for doc in docs for item in (doc["items"] if isinstance(doc.get("items"), list) else [doc])]
    if not all(isinstance(d, dict) for d in flat):
        raise ValueError("a list object's items must be objects (Kubernetes manifests)")
    if any(isinstance(d.get("items"), list) for d in flat):
        raise ValueError("a list inside a list: kubectl apply refuses it (is not a list: no Items field)")
    return [json.loads(json.dumps(d)) for d in flat]  # our own copies: labelling must not change the caller's


def _parsed(text: str) -> list[Any]:
    try:
        return [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as exc:
        stream = _json_stream(text)
        if stream is None:
            raise ValueError(f"manifest is neither YAML nor a stream of JSON objects: {exc}") from None
        return stream


def _json_stream(text: str) -> list[Any] | None:
    """Concatenated JSON objects (``{...}{...}``), which kubectl's YAML-or-JSON decoder reads one after another."""
    decoder, docs, at = json.JSONDecoder(), list[Any](), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return docs
        try:
            doc, at = decoder.raw_decode(text, at)
        except ValueError:
            return None
        docs.append(doc)
