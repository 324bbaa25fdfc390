"""The double's controllers (Deployment, ReplicaSet, StatefulSet, Job) and pod deletion, driven by the real kubectl:
the objects, names, counts and conditions a cluster's controllers write."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.store import StoreEvent
from specs.kube.conftest import require_kubectl
from specs.kube.workloads import (
    apply,
    available,
    condition,
    deployment,
    events,
    eventually,
    job,
    pod,
    pods,
    statefulset,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve() as handle:
        yield handle


class Recorder:
    """Store events of some collections, as the double delivered them (in resourceVersion order)."""

    def __init__(self, kd: KubeHandle, keys: list[str]) -> None:
        self.events: list[StoreEvent] = []
        self._lock = threading.Lock()
        self._sub = kd.store.subscribe(self._add, keys)

    def _add(self, event: StoreEvent) -> None:
        with self._lock:
            self.events.append(event)

    def snapshot(self) -> list[StoreEvent]:
        with self._lock:
            return list(self.events)

    def close(self) -> None:
        self._sub.cancel()


# --- Deployments ---------------------------------------------------------------------------------------------


def test_a_deployment_becomes_available_through_a_replicaset_with_the_pod_template_hash(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=3))
    eventually(lambda: available(kd, "api"), what="Available=True")
    d = kd.store.require("deployments", "default", "api")
    replicasets = kd.store.list("replicasets", "default")[0]
    assert len(replicasets) == 1
    rs = replicasets[0]
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{8,10}", pod_hash)
    assert rs["metadata"]["name"] == f"api-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "api", "pod-template-hash": pod_hash}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    names = sorted(p["metadata"]["name"] for p in pods(kd, "api"))
    assert len(names) == 3
    assert all(re.fullmatch(rf"api-{pod_hash}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", n) for n in names), names
    status = d["status"]
    assert status["observedGeneration"] == d["metadata"]["generation"] == 1
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"], status["availableReplicas"]) == (
        3,
        3,
        3,
        3,
    )
    assert "unavailableReplicas" not in status  # omitempty, as the real API
    progressing = condition(d, "Progressing")
    assert progressing is not None
    assert progressing["reason"] == "NewReplicaSetAvailable"
    assert progressing["message"] == f'ReplicaSet "api-{pod_hash}" has successfully progressed.'


def test_a_rolling_update_keeps_within_max_surge_and_max_unavailable(kd: KubeHandle) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    apply(kd, deployment("web", replicas=4, strategy=strategy, faults={"start-delay": "0.1"}))
    eventually(lambda: available(kd, "web") and len(pods(kd, "web")) == 4, what="4 pods Available")
    with kd.store.locked():  # the ReplicaSets as they are, then every change after
        latest = {rs["metadata"]["name"]: rs for rs in kd.store.list("replicasets", "default")[0]}
        recorder = Recorder(kd, ["apps/replicasets"])
    try:
        apply(
            kd,
            deployment(
                "web", replicas=4, strategy=strategy, faults={"start-delay": "0.1"}, image="registry.local/app:2.0"
            ),
        )
        eventually(lambda: _rolled_out(kd, "web", "registry.local/app:2.0"), what="the rollout to finish")
        seen = recorder.snapshot()
    finally:
        recorder.close()
    most_pods = least_available = None
    for event in seen:
        latest[event.name] = event.object
        wanted = sum(rs["spec"]["replicas"] for rs in latest.values())
        available_now = sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in latest.values())
        most_pods = wanted if most_pods is None else max(most_pods, wanted)
        least_available = available_now if least_available is None else min(least_available, available_now)
    assert most_pods == 5  # replicas + maxSurge, never more
    assert least_available == 4  # replicas - maxUnavailable, never less
    scaling = [e["message"] for e in events(kd, reason="ScalingReplicaSet")]
    assert len(scaling) == 9  # up 0->4, then four times: new up by one, old down by one
    assert all(re.fullmatch(r"Scaled (up|down) replica set web-\w+ from \d to \d", m) for m in scaling), scaling


def test_the_default_strategy_is_25_percent_surge_and_unavailable(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=4))
    eventually(lambda: available(kd, "api"), what="Available=True")
    first = kd.store.list("replicasets", "default")[0][0]
    assert first["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "4"
    assert first["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "5"  # 4 + ceil(25% of 4)


def test_recreate_removes_every_old_pod_before_the_new_ones_start(kd: KubeHandle) -> None:
    strategy = {"type": "Recreate"}
    apply(kd, deployment("job-runner", replicas=2, strategy=strategy, faults={"terminate-delay": "0.3"}))
    eventually(lambda: available(kd, "job-runner"), what="Available=True")
    old = {p["metadata"]["uid"] for p in pods(kd, "job-runner")}
    recorder = Recorder(kd, ["/pods"])
    try:
        apply(
            kd,
            deployment(
                "job-runner",
                replicas=2,
                strategy=strategy,
                faults={"terminate-delay": "0.3"},
                image="registry.local/app:2.0",
            ),
        )
        eventually(lambda: _rolled_out(kd, "job-runner", "registry.local/app:2.0"), what="the rollout to finish")
        seen = recorder.snapshot()
    finally:
        recorder.close()
    order = [(e.type, e.object["metadata"]["uid"] in old) for e in seen if e.type in ("ADDED", "DELETED")]
    first_new = order.index(("ADDED", False))
    assert order[:first_new].count(("DELETED", True)) == 2, order


def test_old_replicasets_beyond_the_revision_history_limit_are_deleted(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1, history=1))
    for image in ("registry.local/app:2.0", "registry.local/app:3.0"):
        eventually(lambda: available(kd, "api"), what="Available=True")
        apply(kd, deployment("api", replicas=1, history=1, image=image))
    eventually(lambda: _rolled_out(kd, "api", "registry.local/app:3.0"), what="the last rollout")
    revisions = eventually(
        lambda: _revisions(kd) if len(_revisions(kd)) == 2 else None,
        what="old ReplicaSets pruned to revisionHistoryLimit",
    )
    assert revisions == ["2", "3"]
    history = kd.kubectl("rollout", "history", "deployment/api")
    assert history.returncode == 0, history.stderr
    assert re.findall(r"^(\d+)\s", history.stdout, re.MULTILINE) == ["2", "3"]


def test_scaling_a_deployment_scales_its_replicaset(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=2))
    eventually(lambda: available(kd, "api"), what="Available=True")
    done = kd.kubectl("scale", "deployment/api", "--replicas=5")
    assert done.returncode == 0, done.stderr
    eventually(
        lambda: len([p for p in pods(kd, "api") if not p["metadata"].get("deletionTimestamp")]) == 5, what="5 pods"
    )
    eventually(
        lambda: kd.store.require("deployments", "default", "api")["status"].get("availableReplicas") == 5,
        what="5 available",
    )
    kd.kubectl("scale", "deployment/api", "--replicas=1")
    eventually(lambda: len(pods(kd, "api")) == 1, what="scaled down to 1 pod")


def test_deleting_a_deployment_removes_its_replicasets_and_pods(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=2))
    eventually(lambda: available(kd, "api"), what="Available=True")
    done = kd.kubectl("delete", "deployment", "api", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert kd.store.list("replicasets", "default")[0] == []
    eventually(lambda: pods(kd, "api") == [], what="the pods to go")


# --- ReplicaSets ---------------------------------------------------------------------------------------------


def test_a_replicaset_scales_with_kubectl_scale_and_records_its_pods(kd: KubeHandle) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "solo"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "solo"}},
            "template": {
                "metadata": {"labels": {"app": "solo"}},
                "spec": {"containers": [{"name": "app", "image": "registry.local/app:1"}]},
            },
        },
    }
    apply(kd, json.dumps(manifest))
    eventually(lambda: len(pods(kd, "solo")) == 1, what="1 pod")
    assert kd.kubectl("scale", "rs/solo", "--replicas=3").returncode == 0
    eventually(
        lambda: (kd.store.require("replicasets", "default", "solo").get("status") or {}).get("readyReplicas") == 3,
        what="3 ready replicas",
    )
    assert kd.kubectl("scale", "rs/solo", "--replicas=0").returncode == 0
    eventually(lambda: pods(kd, "solo") == [], what="no pods")
    status = kd.store.require("replicasets", "default", "solo")["status"]
    assert status["replicas"] == 0  # present although zero, unlike the other counts
    assert "readyReplicas" not in status
    created = [e["message"] for e in events(kd, reason="SuccessfulCreate", name="solo")]
    deleted = [e["message"] for e in events(kd, reason="SuccessfulDelete", name="solo")]
    assert len(created) == 3
    assert len(deleted) == 3
    assert all(m.startswith("Created pod: solo-") for m in created)


def test_a_terminating_pod_is_replaced_at_once(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1, faults={"terminate-delay": "30"}))
    eventually(lambda: available(kd, "api"), what="Available=True")
    first = pods(kd, "api")[0]["metadata"]["name"]
    assert kd.kubectl("delete", "pod", first, "--wait=false").returncode == 0
    replacement = eventually(
        lambda: [p for p in pods(kd, "api") if p["metadata"]["name"] != first], what="a replacement pod"
    )
    assert len(replacement) == 1
    assert kd.store.require("pods", "default", first)["metadata"]["deletionTimestamp"]


# --- StatefulSets ---------------------------------------------------------------------------------------------


def test_statefulset_pods_start_in_order_with_ordinal_names(kd: KubeHandle) -> None:
    recorder = Recorder(kd, ["/pods"])
    try:
        apply(kd, statefulset("db", replicas=3, faults={"start-delay": "0.1"}))
        done = kd.kubectl("rollout", "status", "statefulset/db", "--timeout=60s")
        seen = recorder.snapshot()
    finally:
        recorder.close()
    assert done.returncode == 0, done.stderr
    assert "partitioned roll out complete: 3 new pods have been updated..." in done.stdout
    assert sorted(p["metadata"]["name"] for p in pods(kd, "db")) == ["db-0", "db-1", "db-2"]
    steps = [(e.type, e.name, _ready(e.object)) for e in seen]
    for earlier, later in (("db-0", "db-1"), ("db-1", "db-2")):
        created = steps.index(("ADDED", later, False))
        assert any(s[1] == earlier and s[2] for s in steps[:created]), f"{later} created before {earlier} was Ready"
    labels = kd.store.require("pods", "default", "db-1")["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    status = kd.store.require("statefulsets", "default", "db")["status"]
    assert status["currentRevision"] == status["updateRevision"] == labels["controller-revision-hash"]


def test_a_deleted_statefulset_pod_comes_back_under_its_name(kd: KubeHandle) -> None:
    apply(kd, statefulset("db", replicas=2))
    eventually(
        lambda: (kd.store.require("statefulsets", "default", "db").get("status") or {}).get("readyReplicas") == 2,
        what="2 ready",
    )
    before = kd.store.require("pods", "default", "db-1")["metadata"]["uid"]
    # --wait=false: the double's StatefulSet controller recreates db-1 at once, and under load kubectl's wait for the
    # deletion read the old pod (GET), then listed db-1 by name, found the new one, and watched from that list for
    # a DELETED that had come before it, until its 30 s ran out (a failed run's journal: DELETE, GET, LIST, WATCH).
    done = kd.kubectl("delete", "pod", "db-1", "--wait=false")
    assert done.returncode == 0, done.stderr

    def recreated() -> dict[str, Any] | None:
        pod = kd.store.get("pods", "default", "db-1")
        return pod if pod is not None and pod["metadata"]["uid"] != before else None

    again = eventually(recreated, what="db-1 recreated under a new uid")
    assert again["metadata"]["uid"] != before
    created = [e for e in events(kd, name="db") if e["message"] == "create Pod db-1 in StatefulSet db successful"]
    assert [e["count"] for e in created] == [2]  # the same event again: one Event object, count 2


# --- Jobs -----------------------------------------------------------------------------------------------------


def test_a_job_completes(kd: KubeHandle) -> None:
    apply(kd, job("migrate", completions=2, faults={"run-seconds": "0.1"}))  # each pod's command ends after 0.1 s
    done = kd.kubectl("wait", "--for=condition=complete", "job/migrate", "--timeout=60s")
    assert done.returncode == 0, done.stderr
    assert "job.batch/migrate condition met" in done.stdout
    finished = kd.store.require("jobs", "default", "migrate")
    assert finished["status"]["succeeded"] == 2
    assert finished["status"]["completionTime"]
    assert "active" not in finished["status"]
    assert [p["status"]["phase"] for p in pods(kd)] == ["Succeeded", "Succeeded"]
    assert [e["message"] for e in events(kd, reason="Completed", name="migrate")] == ["Job completed"]
    complete = condition(finished, "Complete")
    assert complete is not None
    assert complete["reason"] == "CompletionsReached"  # 1.31+ (the double reports 1.32)


def test_a_failing_job_fails_after_its_backoff_limit(kd: KubeHandle) -> None:
    apply(kd, job("broken", faults={"exit-code": "3", "run-seconds": "0.05"}, backoff_limit=0))
    done = kd.kubectl("wait", "--for=condition=failed", "job/broken", "--timeout=60s")
    assert done.returncode == 0, done.stderr
    failed = condition(kd.store.require("jobs", "default", "broken"), "Failed")
    assert failed is not None
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"] == "Job has reached the specified backoff limit"
    terminated = pods(kd)[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    warning = events(kd, reason="BackoffLimitExceeded", name="broken")
    assert [e["type"] for e in warning] == ["Warning"]


def test_a_job_retries_after_the_pod_failure_backoff_on_the_doubles_clock(kd: KubeHandle) -> None:
    apply(kd, job("flaky", faults={"exit-code": "1", "run-seconds": "0.05"}, backoff_limit=2))
    eventually(
        lambda: (kd.store.require("jobs", "default", "flaky").get("status") or {}).get("failed") == 1,
        what="the first failure",
    )
    time.sleep(0.5)
    assert len(pods(kd)) == 1  # the next pod waits 10 s of back-off
    kd.clock.advance(11)
    eventually(lambda: len(pods(kd)) == 2, what="a second pod after the back-off")


# --- pod deletion ------------------------------------------------------------------------------------------


def test_a_deleted_pod_stays_terminating_until_its_app_stops(kd: KubeHandle) -> None:
    apply(kd, pod("slow", faults={"terminate-delay": "60"}))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/slow", "--timeout=30s").returncode == 0
    assert kd.kubectl("delete", "pod", "slow", "--wait=false").returncode == 0
    row = kd.kubectl("get", "pod", "slow").stdout.splitlines()[1].split()
    assert row[2] == "Terminating"
    stored = kd.store.require("pods", "default", "slow")
    assert stored["metadata"]["deletionTimestamp"]
    assert stored["metadata"]["deletionGracePeriodSeconds"] == 30
    assert [e["message"] for e in events(kd, reason="Killing", name="slow")] == ["Stopping container app"]
    kd.clock.advance(31)  # the app takes 60 s, the grace period is 30 s: it is killed then
    eventually(lambda: kd.store.get("pods", "default", "slow") is None, what="the pod to be removed")


def test_a_pod_that_ignores_sigterm_is_removed_after_its_grace_period(kd: KubeHandle) -> None:
    apply(kd, pod("stubborn", faults={"terminate-delay": "grace"}))
    eventually(
        lambda: (kd.store.require("pods", "default", "stubborn").get("status") or {}).get("phase") == "Running",
        what="Running",
    )
    started = time.monotonic()
    done = kd.kubectl("delete", "pod", "stubborn", "--grace-period=1", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= 0.9  # waited for the grace period, not the 0.05 s default stop
    assert kd.store.get("pods", "default", "stubborn") is None


def test_a_status_written_by_someone_else_is_left_alone(kd: KubeHandle) -> None:
    kd.store.create(
        "pods",
        {
            "metadata": {"name": "manual", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "x"}]},
        },
    )

    def mine(obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": "Running", "podIP": "10.1.2.3", "conditions": [{"type": "Ready", "status": "True"}]}

    kd.store.mutate("pods", "default", "manual", mine, subresource="status")
    time.sleep(0.5)  # the kubelet would have started the containers by now
    assert kd.store.require("pods", "default", "manual")["status"]["podIP"] == "10.1.2.3"


def test_controllers_work_again_after_a_reset(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1))
    eventually(lambda: available(kd, "api"), what="Available=True")
    kd.reset()
    assert kd.store.list("pods", "default")[0] == []
    apply(kd, deployment("api", replicas=2))
    eventually(lambda: available(kd, "api") and len(pods(kd, "api")) == 2, what="Available again after reset")


# --- helpers --------------------------------------------------------------------------------------------------


def _rolled_out(kd: KubeHandle, name: str, image: str) -> bool:
    d = kd.store.get("deployments", "default", name)
    if d is None:
        return False
    status = d.get("status") or {}
    replicas = d["spec"]["replicas"]
    live = [p for p in pods(kd, name) if not p["metadata"].get("deletionTimestamp")]
    return (
        status.get("observedGeneration") == d["metadata"]["generation"]
        and status.get("updatedReplicas") == replicas == status.get("availableReplicas")
        and status.get("replicas") == replicas
        and len(live) == replicas
        and all(p["spec"]["containers"][0]["image"] == image for p in live)
    )


def _revisions(kd: KubeHandle) -> list[str]:
    return sorted(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        for rs in kd.store.list("replicasets", "default")[0]
    )


def _ready(obj: dict[str, Any]) -> bool:
    cond = condition(obj, "Ready")
    return cond is not None and cond["status"] == "True"


def test_on_failure_restarts_count_against_the_backoff_limit(kd: KubeHandle) -> None:
    apply(
        kd,
        job(
            "retry",
            faults={"exit-code": "1", "run-seconds": "0.05", "backoff": "0.1"},
            backoff_limit=2,
            restart_policy="OnFailure",
        ),
    )
    done = kd.kubectl("wait", "--for=condition=failed", "job/retry", "--timeout=60s")
    assert done.returncode == 0, done.stderr
    assert len(events(kd, reason="SuccessfulCreate", name="retry")) == 1  # restarted in place, never replaced
    failed = condition(kd.store.require("jobs", "default", "retry"), "Failed")
    assert failed is not None
    assert failed["reason"] == "BackoffLimitExceeded"


def test_with_slow_apps_a_deleted_pod_stays_terminating_for_its_grace_period(kd: KubeHandle) -> None:
    kd.controllers.kubelet.stop_seconds = 3600  # apps ignore SIGTERM: the grace period decides
    apply(kd, pod("web"))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s").returncode == 0
    assert kd.kubectl("delete", "pod", "web", "--wait=false", "--grace-period=20").returncode == 0
    time.sleep(0.5)
    stored = kd.store.require("pods", "default", "web")
    assert stored["metadata"]["deletionGracePeriodSeconds"] == 20
    kd.clock.advance(10)  # 10 s of the 20 s grace period left (less what real time passes meanwhile)
    time.sleep(0.3)
    assert kd.store.get("pods", "default", "web") is not None
    kd.clock.advance(11)
    eventually(lambda: kd.store.get("pods", "default", "web") is None, what="removal at the end of the grace period")
