"""Rollout explanations from recorded objects (no cluster): the cause comes first, in kubectl's and the kubelet's words.

Each scenario in ``recorded/`` is a real-shaped Deployment or StatefulSet mid-rollout with its ReplicaSets, pods and
the namespace's events, as ``kubectl get -o json`` prints them.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

import pytest

from harness.podfacts import event_time, pod_facts, sort_events
from harness.rollout import explain, parse_ref, selector_string, workload_status

from .conftest import recorded, snapshot


def headline(name: str) -> str:
    return explain(snapshot(name)).headline


def test_a_crash_loop_names_the_container_its_exit_and_the_previous_log() -> None:
    explanation = explain(snapshot("crashloop"))
    assert explanation.headline == (
        "deployment/web did not roll out: the new pod crash-loops (container app, last terminated Error exit 1)"
    )
    text = explanation.text()
    assert "new ReplicaSet web-6d9f7c8b5 (revision 2" in text
    assert "old ReplicaSet web-5c8d7b9f4 (revision 1, 2 desired, 2 ready)" in text
    assert "CrashLoopBackOff (back-off 40s restarting failed container=app" in text
    assert "4 restarts" in text
    assert "Warning BackOff (x4): Back-off restarting failed container app" in text
    assert "| panic: dial tcp 10.96.0.12:6379: connect: connection refused" in text
    assert explanation.healthy is False


def test_an_image_pull_failure_quotes_the_kubelet() -> None:
    explanation = explain(snapshot("imagepull"))
    assert explanation.headline.startswith("deployment/web did not roll out: the new pod is stuck in ImagePullBackOff")
    assert 'Back-off pulling image "registry.local/web:missing"' in explanation.headline
    assert 'Warning Failed (x3): Failed to pull image "registry.local/web:missing"' in explanation.text()


def test_pods_that_run_but_never_become_ready_show_the_probe_failure() -> None:
    assert headline("never_ready") == (
        "deployment/web did not roll out: 2 of 2 new pods run but never became ready "
        "(Readiness probe failed: HTTP probe failed with statuscode: 503)"
    )


def test_an_unschedulable_pod_gives_the_schedulers_message() -> None:
    message = (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )
    assert headline("unschedulable") == f"deployment/web did not roll out: the new pod cannot be scheduled ({message})"
    assert f"Warning FailedScheduling: {message}" in explain(snapshot("unschedulable")).text()


def test_progress_deadline_exceeded_comes_first_with_the_conditions_message() -> None:
    text = headline("progress_deadline")
    assert text.startswith(
        'deployment/web did not roll out: ProgressDeadlineExceeded (ReplicaSet "web-6d9f7c8b5" '
        "has timed out progressing.)"
    )
    assert 'CreateContainerConfigError (container app, secret "web-secrets" not found)' in text


def test_a_completed_rollout_with_old_pods_still_serving_says_how_many() -> None:
    explanation = explain(snapshot("old_pods_serving"))
    assert explanation.headline.startswith(
        "deployment/web rolled out, but 2 old pod(s) still exist (2 ready, 2 terminating)"
    )
    assert explanation.healthy is False
    assert 'status: deployment "web" successfully rolled out' in explanation.details


def test_a_statefulset_splits_pods_by_revision_and_names_an_oom_kill() -> None:
    explanation = explain(snapshot("statefulset_oom"))
    assert explanation.headline == (
        "statefulset/nats did not roll out: the new pod crash-loops (container app, last terminated OOMKilled exit 137)"
    )
    assert "new revision nats-7b9c6d5e4: 1 pod(s)" in explanation.details
    assert "old revision nats-5f4d8c7b6: 2 pod(s)" in explanation.details


def test_the_timeline_orders_each_pods_steps_and_the_controllers_events() -> None:
    explanation = explain(snapshot("old_pods_serving"))
    stamps = [at for at, _ in explanation.timeline]
    assert stamps == sorted(stamps)
    steps = [what for _, what in explanation.timeline]
    new_pod = [s.split()[-1] for s in steps if s.startswith("pod web-6d9f7c8b5-b9c0d")]
    assert new_pod == ["created", "scheduled", "started", "ready"]
    assert "pod web-5c8d7b9f4-a1b2c deleted" in steps  # deletionTimestamp less its grace period
    assert any(s.startswith("ReplicaSet web-5c8d7b9f4 SuccessfulDelete") for s in steps)


def test_a_pod_that_never_ran_has_no_started_step() -> None:
    pull = next(p for p in recorded("imagepull")["pods"] if p["metadata"]["name"].endswith("k8s9z"))
    facts = pod_facts(pull)
    assert [what for _, what in facts.lifecycle()] == ["created", "scheduled"]
    assert facts.containers[0].stuck


def test_a_rollout_refused_by_a_quota_names_the_replica_failure_first_as_the_real_controllers_write_it() -> None:
    # Recorded from the real kube-controller-manager: the ReplicaSet's pods refused at admission by a ResourceQuota.
    explanation = explain(snapshot("real_quota_refused"))
    assert explanation.headline.startswith("deployment/web did not roll out: ReplicaFailure FailedCreate: pods ")
    assert (
        "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1" in explanation.headline
    )
    lines = explanation.text().splitlines()
    combined = [line for line in lines if "Warning FailedCreate (x" in line]
    assert combined, lines  # the recorder's aggregate: its count says it stands for several, its message is clean
    assert all(": Error creating: pods " in line for line in combined)
    assert not any("combined from similar events" in line for line in lines)


def test_an_image_reference_is_never_clipped_out_of_the_headline() -> None:
    image = "registry.example.com/" + "team/" * 45 + "web:1.2.3"
    data = recorded("imagepull")
    for pod in data["pods"]:
        for status in pod["status"]["containerStatuses"]:
            status["image"] = image
            if "waiting" in status["state"]:
                status["state"]["waiting"]["message"] = f'Back-off pulling image "{image}"'
    headline = explain(snapshot("imagepull", pods=data["pods"])).headline
    assert f'Back-off pulling image "{image}"' in headline


def test_events_of_an_earlier_object_of_the_same_name_stay_out_of_the_explanation() -> None:
    # A namespace reused by several specs: the events of an earlier deployment/web (another uid) are not this one's.
    data = recorded("crashloop")
    earlier = copy.deepcopy([e for e in data["events"] if e["involvedObject"]["kind"] in ("Deployment", "Pod")])
    for event in earlier:
        event["involvedObject"]["uid"] = "an-earlier-object"
        event["message"] = "FROM AN EARLIER SPEC"
    ours = copy.deepcopy(data["events"])
    for event in ours:
        kind, name = event["involvedObject"]["kind"], event["involvedObject"]["name"]
        owner = (
            data["workload"]
            if kind == "Deployment"
            else next((o for o in data["replicasets"] + data["pods"] if o["metadata"]["name"] == name), None)
        )
        if owner is not None:
            event["involvedObject"]["uid"] = owner["metadata"]["uid"]
    text = explain(snapshot("crashloop", events=ours + earlier)).text()
    assert "FROM AN EARLIER SPEC" not in text
    assert text == explain(snapshot("crashloop", events=ours)).text()


def _ready_at(name: str) -> datetime:
    pods = [pod_facts(p) for p in recorded(name)["pods"]]
    return max(p.ready_at for p in pods if p.ready_at is not None)


def test_a_rollout_held_by_min_ready_seconds_says_how_long_its_pods_have_been_ready() -> None:
    # Recorded from the real controllers: 2 pods Ready, none available until Ready for minReadySeconds (300).
    now = _ready_at("real_min_ready_held") + timedelta(seconds=8)
    assert explain(snapshot("real_min_ready_held", now=now)).headline == (
        "deployment/web did not roll out: 2 of 2 new pods are Ready but not yet available: minReadySeconds is 300 s, "
        "Ready for 8.0 s"
    )
    assert headline("real_min_ready_held") == (  # no server time: how long is unknown, the hold still is
        "deployment/web did not roll out: 2 of 2 new pods are Ready but not yet available: minReadySeconds is 300 s"
    )


def test_pods_ready_past_min_ready_seconds_are_not_said_to_be_held() -> None:
    now = _ready_at("real_min_ready_held") + timedelta(seconds=301)
    assert "minReadySeconds" not in explain(snapshot("real_min_ready_held", now=now)).headline


@pytest.mark.parametrize(
    "name",
    [
        "crashloop",
        "imagepull",
        "never_ready",
        "unschedulable",
        "progress_deadline",
        "real_quota_refused",
        "real_quota_no_pod",
    ],
)
def test_explanations_without_events_or_logs_still_name_the_cause(name: str) -> None:
    bare = explain(snapshot(name, events=[], previous_logs={}))
    assert bare.headline.startswith("deployment/web did not roll out: ")
    assert "timeline" not in bare.headline


def test_a_missing_workload_is_not_found_not_a_crash() -> None:
    explanation = explain(snapshot("crashloop", workload=None, missing=True))
    assert explanation.headline == "deployment/web not found in namespace shop"
    assert explanation.healthy is False


def test_an_unreadable_workload_says_why() -> None:
    explanation = explain(snapshot("crashloop", workload=None, problems=["deployment web: kubectl timed out"]))
    assert explanation.headline == (
        "deployment/web could not be read in namespace shop: deployment web: kubectl timed out"
    )


# --- kubectl's own verdict (pkg/polymorphichelpers/rollout_status.go) ------------------------------------------------


def deployment(**status: object) -> dict:
    dep = copy.deepcopy(recorded("crashloop")["workload"])
    dep["status"] = {"observedGeneration": 2, **status}
    return dep


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"observedGeneration": 1}, (False, "Waiting for deployment spec update to be observed...", False)),
        (
            {"updatedReplicas": 1, "replicas": 3},
            (
                False,
                'Waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated...',
                False,
            ),
        ),
        (
            {"updatedReplicas": 2, "replicas": 3},
            (False, 'Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...', False),
        ),
        (
            {"updatedReplicas": 2, "replicas": 2, "availableReplicas": 1},
            (False, 'Waiting for deployment "web" rollout to finish: 1 of 2 updated replicas are available...', False),
        ),
        (
            {"updatedReplicas": 2, "replicas": 2, "availableReplicas": 2},
            (True, 'deployment "web" successfully rolled out', False),
        ),
        (
            {"conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]},
            (False, 'deployment "web" exceeded its progress deadline', True),
        ),
    ],
)
def test_deployment_verdicts_match_kubectl(status: dict, expected: tuple) -> None:
    assert workload_status("deployment", deployment(**status)) == expected


def test_statefulset_verdicts_match_kubectl() -> None:
    sts = copy.deepcopy(recorded("statefulset_oom")["workload"])
    assert workload_status("statefulset", sts) == (False, "Waiting for 1 pods to be ready...", False)
    sts["status"].update(readyReplicas=3, updatedReplicas=3)
    complete = (True, "partitioned roll out complete: 3 new pods have been updated...", False)
    assert workload_status("statefulset", sts) == complete
    del sts["spec"]["updateStrategy"]["rollingUpdate"]
    assert workload_status("statefulset", sts)[0] is False  # revisions still differ
    sts["status"]["currentRevision"] = sts["status"]["updateRevision"]
    assert workload_status("statefulset", sts)[0] is True


# --- small pieces ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("deployment/web", ("deployment", "web")),
        ("deploy/web", ("deployment", "web")),
        ("sts/nats", ("statefulset", "nats")),
        ("pod/web-1", ("pod", "web-1")),
        ("Deployments.apps/x", ("deployment", "x")),
        ("web", ("deployment", "web")),  # a bare name, as Kube.rollout_status reads it
    ],
)
def test_workload_references(ref: str, parsed: tuple[str, str]) -> None:
    assert parse_ref(ref) == parsed


@pytest.mark.parametrize("ref", ["", " ", "service/web", "deployment/", "deployment/a/b"])
def test_bad_workload_references_are_refused(ref: str) -> None:
    with pytest.raises(ValueError, match="not a workload reference"):
        parse_ref(ref)


def test_selectors_become_kubectl_syntax() -> None:
    selector = {
        "matchLabels": {"app": "web", "tier": "api"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    assert selector_string(selector) == "app=web,tier=api,env in (a,b),!canary"


def test_events_sort_on_last_timestamp_or_else_event_time() -> None:
    old_style = {"lastTimestamp": "2026-11-30T14:00:05Z", "eventTime": None, "reason": "A"}
    new_style = {"lastTimestamp": None, "eventTime": "2026-11-30T14:00:03.500000Z", "reason": "B"}
    series = {
        "lastTimestamp": None,
        "eventTime": "2026-11-30T14:00:01.000000Z",
        "series": {"count": 3, "lastObservedTime": "2026-11-30T14:00:09.000000Z"},
        "reason": "C",
    }
    timeless = {"reason": "D"}
    assert [e["reason"] for e in sort_events([old_style, new_style, series, timeless])] == ["D", "B", "A", "C"]
    assert event_time(new_style) is not None


def test_the_pod_timeline_shows_every_container_start_the_api_holds_not_only_the_last() -> None:
    explanation = explain(snapshot("crashloop"))
    pod = next(p for p in explanation.pods if p.restarts)
    total = pod.containers[0].restarts + 1
    steps = [what for _, what in explanation.timeline if what.startswith(f"pod {pod.name} container app started")]
    assert steps[0].endswith(f"started (1 of {total})")
    assert steps[-1].endswith(f"of {total})")
    assert len(steps) >= 2
    exits = [what for _, what in explanation.timeline if what == f"pod {pod.name} container app exited (Error exit 1)"]
    assert len(exits) == 1


def test_an_image_pull_wait_is_on_the_timeline() -> None:
    explanation = explain(snapshot("imagepull"))
    assert any(what.endswith("image pull failing") for _, what in explanation.timeline)


# --- refused at admission, as the real controllers report it (recorded from python -m harness.controlplane) -------


def test_a_deployment_refused_before_any_pod_exists_leads_with_the_refusal_and_its_fix() -> None:
    explanation = explain(snapshot("real_quota_no_pod"))
    assert explanation.headline.startswith(
        'deployment/web did not roll out: ReplicaFailure FailedCreate: pods "web-'
    ), explanation.headline
    assert explanation.headline.endswith(
        "is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0 "
        "(fix: raise the pods limit of ResourceQuota q or ask for less)"
    )
    assert "no pod of the new revision exists yet" not in explanation.headline
    assert explanation.refusal is not None
    assert explanation.refusal.startswith("ReplicaFailure FailedCreate: ")
    assert (
        explanation.terminal == "pods refused at admission: ResourceQuota q, which the rollout's own pods cannot free"
    )


def test_a_refused_statefulset_quotes_its_controllers_event_and_stops_the_wait() -> None:
    explanation = explain(snapshot("real_statefulset_refused"))
    assert explanation.headline.startswith(
        "statefulset/db did not roll out: StatefulSet db FailedCreate: create Pod db-0 in StatefulSet db failed "
        'error: pods "db-0" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0'
    ), explanation.headline
    assert explanation.terminal is not None
    assert "ResourceQuota q" in explanation.terminal
    assert any(line.startswith("statefulset ") and "Warning FailedCreate" in line for line in explanation.details)


def test_a_statefulset_refusal_is_past_once_the_pod_it_named_exists() -> None:
    data = recorded("real_statefulset_refused")
    pod = copy.deepcopy(recorded("statefulset_oom")["pods"][0])
    pod["metadata"]["name"] = "db-0"
    explanation = explain(snapshot("real_statefulset_refused", pods=[pod], events=data["events"]))
    assert explanation.refusal is None
    assert "FailedCreate" not in explanation.headline


def test_a_limit_range_refusal_is_terminal_in_the_admissions_own_words() -> None:
    explanation = explain(snapshot("real_limit_range_refused"))
    assert "is forbidden: maximum cpu usage per Container is 100m, but limit is 500m" in explanation.headline
    assert explanation.headline.endswith("(fix: fit the pod template's resources to the namespace's LimitRange)")
    assert explanation.terminal == "pods refused at admission: limit range"


def test_a_quota_the_rollouts_own_leaving_pod_frees_can_clear_one_it_cannot_cannot() -> None:
    # quota pods=1, used by the rollout's one pod: nothing of the rollout leaves, so nothing frees it
    assert explain(snapshot("real_quota_refused")).terminal is not None
    pods = copy.deepcopy(recorded("real_quota_refused")["pods"])
    pods[0]["metadata"]["deletionTimestamp"] = pods[0]["metadata"]["creationTimestamp"]
    pods[0]["metadata"]["deletionGracePeriodSeconds"] = 30
    leaving = explain(snapshot("real_quota_refused", pods=pods))
    assert leaving.terminal is None  # that pod terminates: its slot comes free
    assert leaving.headline.startswith("deployment/web did not roll out: ReplicaFailure FailedCreate: pods ")


def test_a_quota_that_has_room_again_is_not_terminal_and_says_what_it_holds_now() -> None:
    quota = {"status": {"hard": {"pods": "2"}, "used": {"pods": "1"}}}
    explanation = explain(snapshot("real_quota_refused", quotas={"pods": quota}))
    assert explanation.terminal is None
    assert "; ResourceQuota pods now: pods 1/2" in explanation.headline


def test_a_quota_its_controller_has_not_recounted_since_a_pod_went_is_read_from_the_pods_left() -> None:
    # status.used still holds a pod the ReplicaSet controller deleted: admission's next try meets the recount
    quota: dict[str, Any] = {"spec": {"hard": {"pods": "1"}}, "status": {"hard": {"pods": "1"}, "used": {"pods": "1"}}}
    pods = recorded("real_quota_refused")["pods"]
    stale = explain(snapshot("real_quota_refused", pods=[], quotas={"pods": quota}, namespace_pods=[]))
    assert stale.terminal is None
    assert explain(snapshot("real_quota_refused", quotas={"pods": quota}, namespace_pods=pods)).terminal is not None
    done = copy.deepcopy(pods)
    done[0]["status"]["phase"] = "Succeeded"  # a finished pod counts against no quota
    assert explain(snapshot("real_quota_refused", quotas={"pods": quota}, namespace_pods=done)).terminal is None
    scoped = copy.deepcopy(quota)
    scoped["spec"]["scopes"] = ["NotBestEffort"]  # which pods a scope counts is the controller's to say
    assert explain(snapshot("real_quota_refused", pods=[], quotas={"pods": scoped}, namespace_pods=[])).terminal


def test_a_pod_its_replicaset_was_scaled_below_is_one_the_rollout_frees() -> None:
    # the deployment controller scaled the ReplicaSet to 0 a moment before its controller deleted the pod
    replicasets = copy.deepcopy(recorded("real_quota_refused")["replicasets"])
    assert explain(snapshot("real_quota_refused", replicasets=replicasets)).terminal is not None
    replicasets[0]["spec"]["replicas"] = 0
    assert explain(snapshot("real_quota_refused", replicasets=replicasets)).terminal is None


def test_a_pod_admitted_after_the_rollouts_pods_were_read_ends_the_refusal() -> None:
    # the namespace's pods are read after the quota: one of the ReplicaSet's that the first read lacked was admitted
    quota: dict[str, Any] = {"spec": {"hard": {"pods": "1"}}, "status": {"hard": {"pods": "1"}, "used": {"pods": "1"}}}
    pods = recorded("real_quota_refused")["pods"]
    assert explain(snapshot("real_quota_refused", quotas={"pods": quota}, namespace_pods=pods)).terminal is not None
    admitted = copy.deepcopy(pods[0])
    admitted["metadata"]["name"] += "-next"
    after = explain(snapshot("real_quota_refused", quotas={"pods": quota}, namespace_pods=[*pods, admitted]))
    assert after.terminal is None


def test_a_min_ready_hold_the_wait_cannot_outlast_is_said_and_ends_it() -> None:
    now = _ready_at("real_min_ready_held") + timedelta(seconds=8)
    explanation = explain(snapshot("real_min_ready_held", now=now, budget=60.0, budget_left=50.0))
    assert explanation.headline.endswith(
        "minReadySeconds is 300 s, Ready for 8.0 s; needs 292.0 s more, the wait has 50.0 s left"
    )
    assert explanation.out_of_budget
    assert explanation.terminal == (
        "minReadySeconds outlasts the wait (a new pod needs 292.0 s more Ready, the wait has 50.0 s left)"
    )
    assert explain(snapshot("real_min_ready_held", now=now, budget=600.0, budget_left=500.0)).terminal is None
