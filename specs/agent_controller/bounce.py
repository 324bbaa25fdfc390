"""Bouncing one pod: delete exactly the pod a selector names, then wait for its replacement to be Ready.

Selector traps (specs/cluster/README.md §2, failure mode 20): ``app=`` on a chart that labels
``app.kubernetes.io/name`` matches nothing and kubectl still exits 0; ``app.kubernetes.io/name=nats`` matches the
server *and* nats-box, so deleting "the" match may test nothing. So a bounce first requires **exactly one** matching
pod (else :class:`BounceRefused` naming what matched), deletes it by name, and waits until a *different* pod (a new
uid; with ``new_name=True`` also a new name, as a Deployment's replacement has) matches the selector, is ``Ready`` and
has no ``deletionTimestamp`` (a terminating pod can still read Ready).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from harness.kube import Kube
from harness.waiting import wait_for_sync
from specs.agent_controller.errors import BounceRefused as BounceRefused

BOUNCE_TIMEOUT = 180.0
"""Seconds a bounce may take to give a Ready replacement (upstream's NATS/Redis bounce wait)."""


@dataclass(frozen=True)
class Bounce:
    """``old`` and ``new`` pod names, ``seconds`` from the delete to the replacement being Ready."""

    selector: str
    old: str
    new: str
    seconds: float


def is_ready(pod: dict[str, Any]) -> bool:
    """Condition ``Ready=True`` and no ``deletionTimestamp``."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def matching_pods(kube: Kube, selector: str) -> list[dict[str, Any]]:
    return list(kube.kubectl_json("get", "pods", "-l", selector).get("items") or [])


def bounce_pod(
    kube: Kube, selector: str, *, timeout: float = BOUNCE_TIMEOUT, new_name: bool = False, interval: float = 2.0
) -> Bounce:
    """Delete the one pod ``selector`` matches and wait (``timeout`` seconds) for a Ready replacement.

    Raises ``ValueError`` for an empty selector, :class:`BounceRefused` when it matches zero or several pods,
    ``KubectlError`` / ``KubectlTimeout`` from kubectl, ``WaitTimeout`` when no replacement gets Ready in time.
    """
    if not selector.strip():
        raise ValueError("bounce_pod needs a label selector; an empty one would match every pod")
    pods = matching_pods(kube, selector)
    names = [p["metadata"]["name"] for p in pods]
    if len(pods) != 1:
        hint = (
            "a selector that matches nothing tests nothing (kubectl exits 0 all the same); check the chart's "
            "labels, e.g. app.kubernetes.io/name rather than app"
            if not pods
            else "deleting one of several tests nothing reliably; narrow it, e.g. app.kubernetes.io/component=nats "
            "rather than name=nats, which also matches nats-box"
        )
        raise BounceRefused(
            f"selector {selector!r} matches {len(pods)} pod(s) in {kube.namespace}"
            f"{' (' + ', '.join(names) + ')' if names else ''}; a bounce needs exactly one: {hint}"
        )
    old = pods[0]["metadata"]
    kube.kubectl("delete", "pod", old["name"], "--wait=false")
    began = time.monotonic()

    def replacement() -> str | None:
        for pod in matching_pods(kube, selector):
            meta = pod["metadata"]
            if meta.get("uid") == old.get("uid") or (new_name and meta["name"] == old["name"]):
                continue
            if is_ready(pod):
                return str(meta["name"])
        return None

    new = wait_for_sync(
        f"a Ready replacement for pod {old['name']} ({selector}) without deletionTimestamp",
        replacement,
        timeout=timeout,
        interval=interval,
        probe_timeout=30.0,
    )
    return Bounce(selector, str(old["name"]), new, time.monotonic() - began)
