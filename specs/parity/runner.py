"""Run a corpus case against one side (the real API server or the double) and keep what each step answered.

A step's record is plain JSON: a request's ``status`` and ``body`` (decoded JSON, else text); a kubectl run's
``exit``, ``stdout`` (decoded when the arguments ask for ``-o json`` or ``-o yaml``) and ``stderr``; a watch's
``status``, the states it ``seen`` (each event's type and projected paths, consecutive equal ones kept once), the
``final`` one and whether ``until`` was met: the states on the way depend on when controllers act, the final one
does not. Every call is bounded: a request by :data:`REQUEST_TIMEOUT`, kubectl by :data:`KUBECTL_TIMEOUT`, a watch
by its own ``timeout`` (the server's ``timeoutSeconds``) plus :data:`WATCH_GRACE`.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import quote

import kubernetes
import yaml

from fakes.kube.kubectl_builds import discover
from harness import process
from harness.errors import ProcessTimeout
from specs.parity.corpus import Case, Step

_REF = re.compile(r"\$(rv|continue)\.([a-z0-9-]+)")
REQUEST_TIMEOUT = 30.0
"""Seconds one request may take (connect and read)."""
KUBECTL_TIMEOUT = 60.0
"""Seconds one kubectl run may take (the corpus's waits give kubectl a shorter ``--timeout`` of their own)."""
WATCH_GRACE = 10.0
"""Seconds beyond a watch's ``timeoutSeconds`` before the client gives up reading (the server ends it first)."""
NAMESPACE_GONE = 60.0
"""Seconds for a namespace an interrupted run left to be finalized (its objects deleted by the namespace controller)."""
NAMESPACE_READY = 30.0
"""Seconds for a new namespace's ``default`` ServiceAccount to appear (the serviceaccounts controller makes it)."""


@dataclass
class Side:
    """One API server: ``name`` (``real`` or ``double``), its kubeconfig and context, a kubectl discovery cache of
    its own, and its Node names (a pod's node is the cluster's choice, see :mod:`specs.parity.normalise`)."""

    name: str
    kubeconfig: str
    context: str
    cache_dir: str
    node_names: tuple[str, ...] = ()
    before_step: Callable[[Case, Step], None] | None = field(default=None, repr=False)

    @cached_property
    def api(self) -> kubernetes.client.ApiClient:
        return kubernetes.config.new_client_from_config(config_file=self.kubeconfig, context=self.context)

    def close(self) -> None:
        if "api" in self.__dict__:
            self.api.close()


def node_names(side: Side) -> tuple[str, ...]:
    """The names of the side's Nodes."""
    answer = request(side, "GET", "/api/v1/nodes")
    return tuple(item["metadata"]["name"] for item in answer["body"].get("items", []))


def kubectl_path(minor: int) -> str | None:
    """The real ``kubectl.1.<minor>`` beside the kubectl on PATH, or None."""
    return next((b.path for b in discover() if b.minor == minor), None)


def run_case(side: Side, case: Case) -> dict[str, Any]:
    """Every step's record, by step name; the namespace is made first (its ServiceAccount awaited) and deleted
    after, with the case's cluster-scoped objects."""
    records: dict[str, Any] = {}
    _fresh_namespace(side, case.namespace)
    try:
        _await_service_account(side, case.namespace)
        for step in case.steps:
            if side.before_step is not None:
                side.before_step(case, step)
            records[step.name] = _run_step(side, case, step, records)
    finally:
        for path in case.cluster_scoped:
            request(side, "DELETE", _fill(path, case, records))
        request(side, "DELETE", f"/api/v1/namespaces/{case.namespace}")
    return records


def _fresh_namespace(side: Side, namespace: str) -> None:
    """Create the case's namespace; one left by an interrupted run is awaited gone first (bounded)."""
    deadline = time.monotonic() + NAMESPACE_GONE
    while (made := request(side, "POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}}))[
        "status"
    ] == 409:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{side.name}: namespace {namespace} still exists {NAMESPACE_GONE:.0f} s after a delete")
        request(side, "DELETE", f"/api/v1/namespaces/{namespace}")
        time.sleep(0.2)  # polling the namespace controller's finalization; the deadline above bounds it
    if made["status"] != 201:
        raise RuntimeError(f"{side.name}: creating namespace {namespace} answered {made['status']}: {made['body']}")


def _await_service_account(side: Side, namespace: str) -> None:
    deadline = time.monotonic() + NAMESPACE_READY
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
    while request(side, "GET", path)["status"] != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{side.name}: no ServiceAccount default in {namespace} after {NAMESPACE_READY:.0f} s")
        time.sleep(0.05)  # polling the API for a controller's write; the deadline above bounds it


def _run_step(side: Side, case: Case, step: Step, records: Mapping[str, Any]) -> Any:
    spec = _fill(step.spec, case, records)
    if step.kind == "request":
        body = spec.get("body")
        if "body_from" in spec:
            body = _changed(records[spec["body_from"]].get("body"), spec.get("set") or {})
        return request(
            side,
            spec["method"],
            spec["path"],
            query=spec.get("query"),
            body=body,
            content_type=spec.get("content_type"),
        )
    if step.kind == "kubectl":
        return _kubectl(side, case, spec)
    return _watch(side, spec, records)


def _changed(body: Any, changes: Mapping[str, Any]) -> Any:
    """A copy of ``body`` with each dotted path set (missing mappings made)."""
    body = json.loads(json.dumps(body))
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = body
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return body


def _fill(value: Any, case: Case, records: Mapping[str, Any]) -> Any:
    """``$ns``, ``$rv.<step>`` and ``$continue.<step>`` substituted in every string of ``value``."""
    if isinstance(value, str):
        value = value.replace("$ns", case.namespace)
        return _REF.sub(
            lambda m: _meta(records[m.group(2)], "resourceVersion" if m.group(1) == "rv" else "continue"), value
        )
    if isinstance(value, Mapping):
        return {k: _fill(v, case, records) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, case, records) for v in value]
    return value


def _rv(record: Mapping[str, Any]) -> str:
    return _meta(record, "resourceVersion")


def _meta(record: Mapping[str, Any], key: str) -> str:
    body = record.get("body")
    return str(body.get("metadata", {}).get(key, "")) if isinstance(body, Mapping) else ""


def request(
    side: Side,
    method: str,
    path: str,
    *,
    query: Mapping[str, Any] | None = None,
    body: Any = None,
    content_type: str | None = None,
) -> dict[str, Any]:
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    elif body is not None:
        headers["Content-Type"] = "application/json"
    if isinstance(body, (dict, list)) and content_type == "application/apply-patch+yaml":
        body = json.dumps(body)  # JSON is YAML; the client sends a string body as it is
    params = side.api.param_serialize(
        method,
        path,
        query_params=[(k, v) for k, v in (query or {}).items()],
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    answer = side.api.call_api(*params, _request_timeout=(REQUEST_TIMEOUT, REQUEST_TIMEOUT))
    return {"status": answer.status, "body": _decode(answer.read())}


def _decode(data: bytes) -> Any:
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _kubectl(side: Side, case: Case, spec: Mapping[str, Any]) -> dict[str, Any]:
    assert case.minor is not None
    binary = kubectl_path(case.minor)
    if binary is None:
        return {"skipped": f"no kubectl.1.{case.minor} installed"}
    args = [str(a) for a in spec["args"]]
    argv = [binary, "--kubeconfig", side.kubeconfig, "--context", side.context, "--cache-dir", side.cache_dir]
    argv += ["-n", case.namespace, *args]
    stdin = spec.get("stdin")
    env = {**os.environ, "KUBECONFIG": side.kubeconfig, "KUBECACHEDIR": side.cache_dir, "NO_COLOR": "1"}
    try:
        done = process.run_bounded(
            argv, timeout=KUBECTL_TIMEOUT, input=stdin.encode() if isinstance(stdin, str) else None, env=env
        )
    except ProcessTimeout:
        return {"timeout": f"kubectl did not finish within {KUBECTL_TIMEOUT:.0f} s"}  # a finding like any answer
    return {"exit": done.returncode, "stdout": _kubectl_output(args, done.stdout), "stderr": done.stderr.strip()}


def _kubectl_output(args: list[str], stdout: str) -> Any:
    wanted = "json" if "--raw" in args else _output_format(args)
    try:
        if wanted == "json":
            return _json_stream(stdout)
        if wanted == "yaml":
            docs = [d for d in yaml.safe_load_all(stdout) if d is not None]
            return docs[0] if len(docs) == 1 else docs
    except (ValueError, yaml.YAMLError):
        pass
    return stdout.rstrip("\n").splitlines()


def _json_stream(text: str) -> Any:
    """One JSON document, or the list of several printed one after another (``rollout history -o json``)."""
    decoder, docs, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        doc, at = decoder.raw_decode(text, at)
        docs.append(doc)
        while at < len(text) and text[at].isspace():
            at += 1
    return docs[0] if len(docs) == 1 else docs


def _output_format(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg in ("-o", "--output") and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(("-o", "--output=")) and arg not in ("-o", "--output"):
            return arg.removeprefix("--output=").removeprefix("-o").lstrip("=")
    return None


def _watch(side: Side, spec: Mapping[str, Any], records: Mapping[str, Any]) -> dict[str, Any]:
    timeout = float(spec["timeout"])
    start = str(spec.get("from", "now"))
    query: dict[str, Any] = {"watch": "true", "timeoutSeconds": int(timeout)}
    query.update(spec.get("query") or {})
    if start == "now":
        listed = request(side, "GET", spec["path"], query={k: v for k, v in query.items() if k == "labelSelector"})
        query["resourceVersion"] = _rv(listed)
    elif start in records:
        query["resourceVersion"] = _rv(records[start])
        already = _already(records[start].get("body"), spec)
        if already is not None:
            return already
    else:
        query["resourceVersion"] = start
    url = spec["path"] + "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in query.items())
    params = side.api.param_serialize(
        "GET", url, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
    )
    answer = side.api.call_api(*params, _request_timeout=(REQUEST_TIMEOUT, timeout + WATCH_GRACE))
    if answer.status != 200:
        return {"status": answer.status, "body": _decode(answer.read())}
    return {"status": 200, **_events(answer.response, spec, time.monotonic() + timeout + WATCH_GRACE)}


def _already(obj: Any, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record of a watch whose ``until`` the ``from`` step's own answer meets: nothing is left to wait for."""
    until = dict(spec.get("until") or {})
    if not until or not isinstance(obj, Mapping) or not all(lookup(obj, p) == v for p, v in until.items()):
        return None
    seen = {"type": "(from)", **{p: lookup(obj, p) for p in spec.get("project") or ["metadata.name"]}}
    return {"status": 200, "seen": [seen], "final": seen, "until": True}


def _events(stream: Any, spec: Mapping[str, Any], deadline: float) -> dict[str, Any]:
    project = list(spec.get("project") or ["metadata.name"])
    until = dict(spec.get("until") or {})
    events: list[dict[str, Any]] = []
    met = False
    try:
        for line in _lines(stream):
            event = json.loads(line)
            obj = event.get("object") or {}
            seen = {"type": event.get("type"), **{p: lookup(obj, p) for p in project}}
            if event.get("type") == "ERROR":  # a Status: its code, reason and message are the answer
                seen["object"] = obj
            if not events or events[-1] != seen:
                events.append(seen)
            if until and all(lookup(obj, p) == v for p, v in until.items()):
                met = True
                break
            if time.monotonic() > deadline:
                break
    finally:
        stream.release_conn()
        stream.close()
    return {"seen": events, "final": events[-1] if events else None, "until": met if until else None}


def _lines(stream: Any) -> Any:
    pending = b""
    for chunk in stream.stream(4096, decode_content=True):
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def lookup(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` (``status.conditions[type=Available].reason`` selects a list element by a
    field), or None."""
    for part in path.split("."):
        key, _, selector = part.partition("[")
        obj = obj.get(key) if isinstance(obj, Mapping) else None
        if selector and isinstance(obj, list):
            field_name, _, wanted = selector.rstrip("]").partition("=")
            obj = next((e for e in obj if isinstance(e, Mapping) and str(e.get(field_name)) == wanted), None)
    return obj


__all__ = ["Side", "kubectl_path", "lookup", "node_names", "request", "run_case"]
