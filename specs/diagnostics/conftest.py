"""Shared helpers for the diagnostics specs: recorded objects of failing rollouts, loaded as snapshots or into the
Kubernetes API double (so the real kubectl reads them back)."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from fakes.kube.objects import load_objects
from harness.rollout import Snapshot

RECORDED = os.path.join(os.path.dirname(__file__), "recorded")
SCENARIOS = sorted(name[:-5] for name in os.listdir(RECORDED) if name.endswith(".json"))


def recorded(name: str) -> dict[str, Any]:
    """One recorded scenario: ``workload``, ``replicasets``, ``pods``, ``events`` (as ``kubectl get -o json`` prints
    them) and ``previous_logs`` (``"pod/container"`` to text)."""
    with open(os.path.join(RECORDED, f"{name}.json")) as handle:
        return json.load(handle)


def snapshot(name: str, **changes: Any) -> Snapshot:
    """The scenario as a :class:`harness.rollout.Snapshot` (what ``gather`` would have read)."""
    data = copy.deepcopy(recorded(name))
    workload = data["workload"]
    snap = Snapshot(
        kind=workload["kind"].lower(),
        name=workload["metadata"]["name"],
        namespace=workload["metadata"]["namespace"],
        workload=workload,
        replicasets=data["replicasets"],
        pods=data["pods"],
        events=data["events"],
        previous_logs={_pod_container(key): text for key, text in data["previous_logs"].items()},
    )
    for key, value in changes.items():
        setattr(snap, key, value)
    return snap


def _pod_container(key: str) -> tuple[str, str]:
    pod, _, container = key.partition("/")
    return pod, container


def load_into(kd: Any, name: str) -> dict[str, Any]:
    """Create a scenario's objects, statuses included, in a Kubernetes API double, so the real kubectl reads them
    back; returns the scenario."""
    data = recorded(name)
    load_objects(kd, [data["workload"], *data["replicasets"], *data["pods"], *data["events"]])
    return data
