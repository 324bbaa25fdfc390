"""Manifests and bounded waits for the controller, rollout, logs and events specs (not a test module).

Manifests are YAML text for ``kubectl apply -f -`` (so the real kubectl sends them) or dicts for ``kd.store``.
Fault annotations use the double's prefix (:mod:`fakes.kube.lifecycle`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from fakes.kube import KubeHandle

PREFIX = "double.stack-harness.dev/"
T = TypeVar("T")


def deployment(
    name: str,
    *,
    replicas: int = 2,
    image: str = "registry.local/app:1.0",
    faults: dict[str, str] | None = None,
    strategy: dict[str, Any] | None = None,
    deadline: int | None = None,
    containers: list[dict[str, Any]] | None = None,
    history: int | None = None,
) -> str:
    """A Deployment manifest (JSON is YAML) whose pods carry ``faults`` as ``double.stack-harness.dev/*``
    annotations."""
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": _template(name, image, faults, containers),
    }
    if strategy is not None:
        spec["strategy"] = strategy
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if history is not None:
        spec["revisionHistoryLimit"] = history
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec})


def statefulset(name: str, *, replicas: int = 3, faults: dict[str, str] | None = None) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "serviceName": name,
                "selector": {"matchLabels": {"app": name}},
                "template": _template(name, "registry.local/db:7", faults, None),
            },
        }
    )


def job(
    name: str,
    *,
    faults: dict[str, str] | None = None,
    completions: int = 1,
    backoff_limit: int = 6,
    restart_policy: str = "Never",
) -> str:
    template = _template(name, "registry.local/task:1", faults, None)
    template["metadata"]["labels"] = {}
    template["spec"]["restartPolicy"] = restart_policy
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {"completions": completions, "backoffLimit": backoff_limit, "template": template},
        }
    )


def pod(
    name: str,
    *,
    faults: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    restart_policy: str = "Always",
    annotations: dict[str, str] | None = None,
) -> str:
    template = _template(name, "registry.local/app:1.0", faults, containers)
    template["metadata"]["annotations"] = dict(template["metadata"].get("annotations") or {}, **(annotations or {}))
    template["spec"]["restartPolicy"] = restart_policy
    return json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": dict(template["metadata"], name=name), "spec": template["spec"]}
    )


def _template(
    app: str, image: str, faults: dict[str, str] | None, containers: list[dict[str, Any]] | None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": {"app": app}}
    if faults:
        metadata["annotations"] = {PREFIX + k: v for k, v in faults.items()}
    return {"metadata": metadata, "spec": {"containers": containers or [{"name": "app", "image": image}]}}


def apply(kd: KubeHandle, manifest: str, *, kubectl: str = "kubectl", namespace: str | None = None) -> str:
    done = kd.kubectl("apply", "-f", "-", input=manifest, kubectl=kubectl, namespace=namespace)
    assert done.returncode == 0, f"kubectl apply exited {done.returncode}: {done.stderr.strip()}"
    return str(done.stdout)


def eventually(
    probe: Callable[[], T | None], *, timeout: float = 20.0, interval: float = 0.02, what: str = "the condition"
) -> T:
    """Poll ``probe()`` until it returns something truthy (returned), at most ``timeout`` seconds; fails the test
    naming ``what`` and the last value otherwise."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s (last: {last!r})")


def pods(kd: KubeHandle, app: str | None = None, namespace: str = "default") -> list[dict[str, Any]]:
    """Pods in ``namespace`` (with label ``app``), sorted by name."""
    items, _ = kd.store.list("pods", namespace)
    return [p for p in items if app is None or (p["metadata"].get("labels") or {}).get("app") == app]


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def available(kd: KubeHandle, name: str, namespace: str = "default") -> bool:
    cond = condition(kd.store.get("deployments", namespace, name), "Available")
    return cond is not None and cond["status"] == "True"


def events(
    kd: KubeHandle, *, reason: str | None = None, name: str | None = None, namespace: str = "default"
) -> list[dict[str, Any]]:
    """Events in ``namespace`` (by reason and involved object name), in creation order."""
    items, _ = kd.store.list("events", namespace)
    found = [
        e
        for e in items
        if (reason is None or e.get("reason") == reason) and (name is None or e["involvedObject"].get("name") == name)
    ]
    return sorted(found, key=lambda e: int(e["metadata"]["name"].rpartition(".")[2], 16))


def container_status(kd: KubeHandle, name: str, namespace: str = "default") -> dict[str, Any]:
    """The first container's status of pod ``name`` (``{}`` until the kubelet reports one)."""
    obj = kd.store.get("pods", namespace, name) or {}
    statuses = (obj.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def waiting_reason(kd: KubeHandle, name: str, namespace: str = "default") -> str | None:
    return ((container_status(kd, name, namespace).get("state") or {}).get("waiting") or {}).get("reason")
