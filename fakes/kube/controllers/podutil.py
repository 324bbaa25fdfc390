"""Pod predicates and pod-template helpers the controllers share (``pkg/controller/controller_utils.go`` and
``pkg/api/v1/pod/util.go`` in kubernetes/kubernetes, reduced to what the double needs)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from fakes.kube.controllers.base import (
    Obj,
    condition,
    deleting,
    meta,
    spec,
    status,
    timestamp,
)
from fakes.kube.store import clone

HASH_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery rand.SafeEncodeString: no vowels, no 0/1/3
TERMINAL = ("Succeeded", "Failed")


def phase(pod: Obj) -> str:
    return str(status(pod).get("phase") or "Pending")


def is_terminal(pod: Obj) -> bool:
    return phase(pod) in TERMINAL


def is_active(pod: Obj) -> bool:
    """Counted by a ReplicaSet or Job: not finished and not being deleted (``controller.IsPodActive``)."""
    return not is_terminal(pod) and not deleting(pod)


def is_ready(pod: Obj) -> bool:
    cond = condition(status(pod), "Ready")
    return cond is not None and cond.get("status") == "True"


def ready_since(pod: Obj) -> float | None:
    """When the pod's Ready condition last turned True (whole seconds, as stored), or ``None``."""
    cond = condition(status(pod), "Ready")
    if cond is None or cond.get("status") != "True":
        return None
    return timestamp(cond.get("lastTransitionTime"))


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``min_ready_seconds`` (``podutil.IsPodAvailable``)."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= now


def restarts(pod: Obj) -> int:
    return sum(int(cs.get("restartCount") or 0) for cs in status(pod).get("containerStatuses") or [])


def safe_encode(text: str) -> str:
    return "".join(HASH_ALPHABET[ord(ch) % len(HASH_ALPHABET)] for ch in text)


def fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def template_hash(template: Obj, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a pod template: FNV-32a of the template (here its canonical JSON, not Go's
    spew dump, so values differ from a real cluster's) plus the collision count, safe-encoded as upstream's
    ``controller.ComputeHash`` does: 8-10 characters from ``bcdfghjklmnpqrstvwxz2456789``."""
    text = json.dumps(without_hash(template), sort_keys=True, separators=(",", ":"))
    if collision_count:
        text += str(collision_count)
    return safe_encode(str(fnv32a(text.encode())))


def without_hash(template: Obj) -> Obj:
    """A copy of ``template`` without the ``pod-template-hash`` label (what ``EqualIgnoreHash`` compares)."""
    copy = clone(template) if isinstance(template, dict) else {}
    labels = (copy.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop("pod-template-hash", None)
        if not labels:
            copy["metadata"].pop("labels")
    return copy


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    return _normal(without_hash(a)) == _normal(without_hash(b))


def _normal(template: Obj) -> Obj:
    metadata = template.get("metadata")
    if isinstance(metadata, dict):
        template["metadata"] = {k: v for k, v in metadata.items() if v not in ({}, None)}
        if not template["metadata"]:
            template.pop("metadata")
    return template


def pod_from_template(
    template: Obj,
    owner_ref: Obj,
    namespace: str,
    *,
    name: str | None = None,
    generate_name: str | None = None,
    extra_labels: dict[str, str] | None = None,
) -> Obj:
    """A new pod from a pod template (``controller.GetPodFromTemplate``): the template's labels, annotations and
    spec, the owner's controller reference, a fixed ``name`` or a ``generateName``."""
    template_meta = meta(template)
    labels = dict(template_meta.get("labels") or {})
    labels.update(extra_labels or {})
    metadata: Obj = {"namespace": namespace, "labels": labels, "ownerReferences": [owner_ref]}
    if template_meta.get("annotations"):
        metadata["annotations"] = dict(template_meta["annotations"])
    if template_meta.get("finalizers"):
        metadata["finalizers"] = list(template_meta["finalizers"])
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = generate_name or ""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": clone(spec(template))}


def deletion_order(pods: Iterable[Obj], now: float) -> list[Obj]:
    """Pods in the order a ReplicaSet deletes them (``controller.ActivePods`` ranking): unscheduled before
    scheduled, Pending before Running, not ready before ready, ready for less time first, more restarts first,
    newer first."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}

    def rank(pod: Obj) -> tuple[Any, ...]:
        since = ready_since(pod)
        created = timestamp(meta(pod).get("creationTimestamp")) or 0.0
        return (
            bool(spec(pod).get("nodeName")),
            phase_rank.get(phase(pod), 3),
            is_ready(pod),
            -(since if since is not None else now),
            -restarts(pod),
            -created,
        )

    return sorted(pods, key=rank)
