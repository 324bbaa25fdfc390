"""Specs of specs.agent_controller.bounce: exactly one matching pod or nothing is deleted; then a different, Ready,
non-terminating
pod must match (the selector traps: a selector matching nothing, or the server and nats-box both)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harness import WaitTimeout
from specs.agent_controller.bounce import BounceRefused, bounce_pod, is_ready

NS = "default"


def _pod(kd: Any, name: str, labels: dict[str, str], *, ready: bool = True) -> None:
    kd.store.create(
        "pods",
        {
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )

    def status(obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}

    kd.store.mutate("pods", NS, name, status, subresource="status")


def _exists(kd: Any, name: str) -> bool:
    return kd.store.get("pods", NS, name) is not None


def test_a_selector_matching_nothing_deletes_nothing(fake_kube) -> None:
    _pod(fake_kube, "redis-1", {"app.kubernetes.io/name": "agent-orchestrator-redis"})
    with pytest.raises(BounceRefused, match="matches 0 pod.*rather than app"):
        bounce_pod(fake_kube.kube(namespace=NS), "app=agent-orchestrator-redis")
    assert _exists(fake_kube, "redis-1")


def test_a_selector_matching_the_server_and_nats_box_deletes_nothing(fake_kube) -> None:
    _pod(fake_kube, "nats-0", {"app.kubernetes.io/name": "nats", "app.kubernetes.io/component": "nats"})
    _pod(fake_kube, "nats-box-1", {"app.kubernetes.io/name": "nats", "app.kubernetes.io/component": "nats-box"})
    with pytest.raises(BounceRefused, match=r"matches 2 pod\(s\).*nats-0, nats-box-1.*component=nats"):
        bounce_pod(fake_kube.kube(namespace=NS), "app.kubernetes.io/name=nats")
    assert _exists(fake_kube, "nats-0")
    assert _exists(fake_kube, "nats-box-1")


def test_bounce_waits_for_a_ready_replacement(fake_kube) -> None:
    labels = {"app.kubernetes.io/component": "nats"}
    _pod(fake_kube, "nats-0", labels)

    def controller() -> None:  # a StatefulSet's part: the same name again, later, first not Ready
        deadline = time.monotonic() + 10
        while (
            _exists(fake_kube, "nats-0")
            and not fake_kube.store.get("pods", NS, "nats-0")["metadata"].get("deletionTimestamp")
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        fake_kube.store.remove("pods", NS, "nats-0")
        _pod(fake_kube, "nats-0", labels, ready=False)
        time.sleep(1.0)
        fake_kube.store.mutate(
            "pods", NS, "nats-0", lambda o: o["status"]["conditions"][0].update(status="True"), subresource="status"
        )

    helper = threading.Thread(target=controller)
    helper.start()
    try:
        bounce = bounce_pod(
            fake_kube.kube(namespace=NS), "app.kubernetes.io/component=nats", timeout=30.0, interval=0.2
        )
    finally:
        helper.join(15.0)
    assert bounce.old == bounce.new == "nats-0"
    assert bounce.seconds >= 1.0, "a replacement that was not Ready yet was taken"


def test_no_replacement_times_out_naming_the_pod(fake_kube) -> None:
    labels = {"app.kubernetes.io/name": "agent-orchestrator-redis"}
    _pod(fake_kube, "redis-1", labels)
    with pytest.raises(WaitTimeout, match="Ready replacement for pod redis-1"):
        # No controller owns the pod, so no replacement comes: the bounce times out, naming what it waited for.
        bounce_pod(
            fake_kube.kube(namespace=NS),
            "app.kubernetes.io/name=agent-orchestrator-redis",
            timeout=2.0,
            new_name=True,
            interval=0.2,
        )


def test_a_terminating_pod_is_not_ready() -> None:
    pod = {
        "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert not is_ready(pod)
