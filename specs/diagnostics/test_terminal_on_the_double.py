"""Rollout waits stop when time cannot help: each terminal cause, produced on both targets (specs/targets.py) by the
controllers and the kubelet (the double's; or kube-controller-manager, kube-scheduler and kwok's Stages in
specs/kwok/faults.yaml) and read through the real kubectl, ends ``Kube.rollout_status`` and a ``wait_for`` on
``rollout_complete`` long before their budget with a ``RolloutTerminal``; a transient cause keeps them waiting; a
rollout that completes is success even when kubectl's watch goes silent; slow is named as slow.

Every budget below is far longer than the spec needs when the change works (the assertions on elapsed time are
generous guards, not timings): without it each spec waits out its budget and fails. A spec whose cause must keep the
wait going re-reads the objects once a second over a 3 s budget: the cause does not change while it waits, so each
re-reading judges the same objects, and more of them would only start more kubectl processes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness import Kube, RolloutFailed, RolloutTerminal, rollout_complete, wait_for_sync
from specs.targets import Target, double_with_kubectl, skip_on_control_plane

from .test_on_the_double import NO_NODE, deployment, roll_out

pytestmark = pytest.mark.timeout(180)
BUDGET = 60.0
MORE_CPU_THAN_ANY_NODE = "2k"
"""kwok's Nodes have 1k cpu allocatable (its node-initialize Stage)."""


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    yield from double_with_kubectl()


@pytest.fixture
def kube(target: Target) -> Kube:
    return target.kube


def _stopped_early(started: float) -> None:
    assert time.monotonic() - started < BUDGET / 2, "the wait ran out its budget instead of stopping"


def _status_fails(kube: Kube, ref: str = "web", **kwargs: Any) -> tuple[RolloutFailed, list[str]]:
    started = time.monotonic()
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status(ref, timeout=BUDGET, check_every=0.5, **kwargs)
    _stopped_early(started)
    return caught.value, str(caught.value).splitlines()


def test_an_image_that_does_not_exist_stops_rollout_status_at_once(kube: Kube) -> None:
    roll_out(kube, deployment("web", "registry.local/web:missing", faults={"image-pull-error": "true"}))
    error, lines = _status_fails(kube)
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith("deployment/web did not roll out: the new pod")
    assert "image not found" in lines[0]
    assert lines[1].startswith("  terminal, not a timeout: image not found (pod web-")
    assert lines[2].startswith("  kubectl: Waiting for deployment")
    assert error.cause.startswith("image not found")
    assert error.__cause__ is None


def test_pull_access_denied_stops_a_wait_on_rollout_complete(kube: Kube) -> None:
    denied = (
        'failed to pull and unpack image "registry.local/private/web:2.0": failed to resolve reference '
        '"registry.local/private/web:2.0": pull access denied, repository does not exist or may require '
        "authorization: server message: insufficient_scope: authorization failed"
    )
    roll_out(kube, deployment("web", "registry.local/private/web:2.0", faults={"image-pull-error": denied}))
    started = time.monotonic()
    with pytest.raises(RolloutTerminal) as caught:
        wait_for_sync("web to roll out", rollout_complete(kube, "deployment/web"), timeout=BUDGET, interval=0.3)
    _stopped_early(started)
    lines = str(caught.value).splitlines()
    assert "pull access denied" in lines[0]
    assert lines[1].startswith("  terminal, not a timeout: pull access denied")
    assert caught.value.summary is not None
    assert caught.value.summary.outcome == "stopped"


def test_a_transient_registry_error_keeps_the_wait_going(kube: Kube) -> None:
    flaky = (
        'failed to pull and unpack image "registry.local/web:2.0": failed to resolve reference '
        '"registry.local/web:2.0": failed to do request: Head "https://registry.local/v2/web/manifests/2.0": '
        "dial tcp: lookup registry.local: i/o timeout"
    )
    roll_out(kube, deployment("web", "registry.local/web:2.0", faults={"image-pull-error": flaky, "backoff": "0.2"}))
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=3, check_every=1.0)
    assert not isinstance(caught.value, RolloutTerminal)
    assert str(caught.value).splitlines()[1] == "  gave up: error: timed out waiting for the condition"


def test_a_missing_secret_key_stops_the_wait(target_name: str, kube: Kube) -> None:
    skip_on_control_plane(
        target_name,
        "kwok reads no Secret a container's env names: no CreateContainerConfigError (the double's kubelet)",
    )
    kube.kubectl("create", "secret", "generic", "db", "--from-literal=user=app")
    manifest = json.loads(deployment("web", "registry.local/web:2.0"))
    manifest["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
    ]
    roll_out(kube, json.dumps(manifest))
    error, lines = _status_fails(kube)
    assert isinstance(error, RolloutTerminal)
    assert lines[0] == (
        "deployment/web did not roll out: the new pod is stuck in CreateContainerConfigError "
        f"(container app, couldn't find key password in Secret {kube.namespace}/db)"
    )
    assert lines[1].startswith("  terminal, not a timeout: configuration error (pod web-")


def test_a_crash_loop_past_the_restart_limit_stops_the_wait(kube: Kube) -> None:
    roll_out(kube, deployment("web", "registry.local/web:2.0", faults={"crash-loop": "true", "backoff": "0.2"}))
    started = time.monotonic()
    with pytest.raises(RolloutTerminal) as caught:
        wait_for_sync(
            "web to roll out",
            rollout_complete(kube, "deployment/web", restart_limit=2),
            timeout=BUDGET,
            interval=0.3,
        )
    _stopped_early(started)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("deployment/web did not roll out: ")
    assert "crash-loop" in lines[0]
    assert "restarts during the wait" in lines[0]
    assert lines[1].startswith("  terminal, not a timeout: crash loop (pod web-")
    assert "limit 2)" in lines[1]


def test_a_paused_deployment_says_paused_first(kube: Kube) -> None:
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:1.0"))
    kube.rollout_status("web", timeout=30)
    kube.kubectl("rollout", "pause", "deployment/web")
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:2.0"))
    error, lines = _status_fails(kube)
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith("deployment/web did not roll out: the deployment is paused (spec.paused is true)")
    assert "kubectl rollout resume deployment/web" in lines[0]
    assert lines[1].startswith("  terminal, not a timeout: the deployment is paused")


def statefulset(name: str, image: str) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name},
            "spec": {
                "replicas": 2,
                "serviceName": name,
                "updateStrategy": {"type": "OnDelete"},
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": image}]},
                },
            },
        }
    )


def test_an_on_delete_statefulset_names_the_pods_to_delete_then_rolls_out_once_they_are(kube: Kube) -> None:
    kube.kubectl("apply", "-f", "-", input=statefulset("db", "registry.local/db:1.0"))
    assert kube.rollout_status("statefulset/db", timeout=30).startswith("OnDelete update complete: 2 pods")
    kube.kubectl("apply", "-f", "-", input=statefulset("db", "registry.local/db:2.0"))
    error, lines = _status_fails(kube, "statefulset/db")
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith("statefulset/db did not roll out: updateStrategy OnDelete: pods db-0, db-1 still run")
    assert "kubectl delete pod db-0 db-1" in lines[0]
    assert lines[1].startswith("  terminal, not a timeout: updateStrategy OnDelete: pods db-0, db-1 must be deleted")
    # kubectl's own words follow: its refusal for OnDelete, or, when the harness saw the cause first and stopped it,
    # what its watch had printed by then (which of the two comes first depends on the machine's load)
    said = "\n".join(lines[2:])
    assert "only available for RollingUpdate strategy type" in said or "Waiting for" in said, lines
    kube.kubectl("delete", "pod", "db-0", "db-1", "--wait=false")  # the rollout wait below does the waiting
    assert kube.rollout_status("statefulset/db", timeout=BUDGET, check_every=0.5).startswith(
        "OnDelete update complete: 2 pods"
    )


def test_an_unschedulable_pod_no_node_can_take_stops_the_wait(kube: Kube) -> None:
    roll_out(kube, deployment("web", "registry.local/web:2.0", faults={"unschedulable": "true"}, node_selector=NO_NODE))
    error, lines = _status_fails(kube)
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith("deployment/web did not roll out: the new pod cannot be scheduled (0/1 nodes")
    assert lines[1].startswith("  terminal, not a timeout: unschedulable (pod web-")


def test_an_unschedulable_pod_waiting_for_resources_keeps_the_wait_going(kube: Kube) -> None:
    busy = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims."
    roll_out(
        kube, deployment("web", "registry.local/web:2.0", faults={"unschedulable": busy}, cpu=MORE_CPU_THAN_ANY_NODE)
    )
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=3, check_every=1.0)
    assert not isinstance(caught.value, RolloutTerminal)
    assert "1 Insufficient cpu" in str(caught.value).splitlines()[0]


def test_a_rollout_that_completes_while_kubectls_watch_is_silent_is_success(target: Target, kube: Kube) -> None:
    skip_on_control_plane(target.name, "no API server fault silences a watch (the double's silence_watches)")
    kd = target.double
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:1.0"))
    kube.rollout_status("web", timeout=30)
    kd.silence_watches()
    try:
        kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:2.0"))
        started = time.monotonic()
        assert kube.rollout_status("web", timeout=BUDGET, check_every=0.5) == (
            'deployment "web" successfully rolled out'
        )
        _stopped_early(started)
    finally:
        kd.silence_watches(False)


def test_a_slow_pod_is_named_slow_not_never_ready(kube: Kube) -> None:
    roll_out(kube, deployment("web", "registry.local/web:2.0", replicas=1, faults={"ready-delay": "600"}))
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=3, check_every=1.0)
    first = str(caught.value).splitlines()[0]
    assert not isinstance(caught.value, RolloutTerminal)
    assert "never" not in first
    assert first.startswith("deployment/web did not roll out: the new pod is slow: not ready ")
    assert first.endswith(" s after it started; no readiness failures recorded; budget 3.0 s")


def test_the_restart_limit_must_be_a_count(kube: Kube) -> None:
    with pytest.raises(ValueError, match="restart_limit must be at least 1 restart, got 0"):
        rollout_complete(kube, "deployment/web", restart_limit=0)


def test_a_min_ready_hold_longer_than_the_budget_stops_the_wait_at_once(kube: Kube) -> None:
    manifest = json.loads(deployment("web", "registry.local/web:1.0", replicas=1))
    # the pod is Ready at once, available only after this (below the default progressDeadlineSeconds, 600, as the
    # API server requires)
    manifest["spec"]["minReadySeconds"] = int(5 * BUDGET)
    kube.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    error, lines = _status_fails(kube)
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith(
        "deployment/web did not roll out: the new pod is Ready but not yet available: minReadySeconds is 300 s, "
        "Ready for "
    ), lines[0]
    assert " s more, the wait has " in lines[0]
    assert lines[1].startswith("  stopped early, not a timeout: minReadySeconds outlasts the wait (a new pod needs ")
    assert error.explanation.out_of_budget


# --- refused at admission: only the real API server admits pods (the double's controllers create them directly) -----

NO_ADMISSION = "the double admits every pod: no ResourceQuota, LimitRange or Pod Security admission"


def _quota(kube: Kube, pods: int) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"pods": str(pods)}},
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(quota))

    def counted() -> bool:  # until the quota controller has counted, admission refuses every pod for another reason
        return bool((kube.kubectl_json("get", "resourcequota", "q").get("status") or {}).get("hard"))

    wait_for_sync("the quota to be counted", counted, timeout=30, interval=0.2)


def test_a_deployment_no_pod_of_which_is_admitted_stops_with_the_refusal_first(target_name: str, kube: Kube) -> None:
    if target_name != "control-plane":
        pytest.skip(f"on the double {NO_ADMISSION}")
    _quota(kube, 0)
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:1.0"))
    error, lines = _status_fails(kube)
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith('deployment/web did not roll out: ReplicaFailure FailedCreate: pods "web-'), lines[0]
    assert "is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0" in lines[0]
    assert lines[1].startswith("  terminal, not a timeout: pods refused at admission: ResourceQuota q")
    assert error.explanation.pods == []


def test_a_statefulset_refused_by_pod_security_stops_with_its_controllers_words(target_name: str, kube: Kube) -> None:
    if target_name != "control-plane":
        pytest.skip(f"on the double {NO_ADMISSION}")
    kube.kubectl("label", "namespace", kube.namespace, "pod-security.kubernetes.io/enforce=restricted")
    template = {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "db:1"}]}}
    spec = {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": spec}
    kube.kubectl("apply", "-f", "-", input=json.dumps(sts))
    error, lines = _status_fails(kube, "statefulset/db")
    assert isinstance(error, RolloutTerminal)
    assert lines[0].startswith(
        "statefulset/db did not roll out: StatefulSet db FailedCreate: create Pod db-0 in StatefulSet db failed "
        'error: pods "db-0" is forbidden: violates PodSecurity "restricted:latest": '
    ), lines[0]
    assert lines[1].startswith("  terminal, not a timeout: pods refused at admission: pod security")


def test_a_quota_the_rollouts_old_pods_free_keeps_the_wait_going(target_name: str, kube: Kube) -> None:
    if target_name != "control-plane":
        pytest.skip(f"on the double {NO_ADMISSION}")
    _quota(kube, 4)  # 4 replicas fill it; maxUnavailable 25% lets the controller scale an old pod down for a new one
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:1.0", replicas=4))
    kube.rollout_status("web", timeout=BUDGET)
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:2.0", replicas=4))
    failed: RolloutFailed | None = None
    try:
        kube.rollout_status("web", timeout=3, check_every=1.0)
    except RolloutFailed as exc:  # or it completes: the ReplicaSet controller retries a refused create with back-off
        failed = exc
    assert not isinstance(failed, RolloutTerminal), str(failed)
    if failed is not None:
        assert str(failed).splitlines()[1] == "  gave up: error: timed out waiting for the condition"
