"""Events as the double's components write them, read by the real kubectl: ``get events --sort-by=.lastTimestamp``,
``describe`` (events found by involvedObject field selectors), counts of repeated events, and the two recorders'
shapes (legacy ``lastTimestamp``/``count`` versus the scheduler's ``eventTime``/``series``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.clock import parse_rfc3339
from specs.kube.conftest import require_kubectl
from specs.kube.workloads import (
    apply,
    available,
    deployment,
    events,
    eventually,
    job,
    pod,
    pods,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve() as handle:
        yield handle


def test_get_events_sorted_by_last_timestamp(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1))
    eventually(lambda: available(kd, "api"), what="Available")
    kd.clock.advance(90)
    apply(kd, pod("late"))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/late", "--timeout=30s").returncode == 0
    done = kd.kubectl("get", "events", "--sort-by=.lastTimestamp")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    legacy = [line for line in lines[1:] if "Scheduled" not in line]  # the scheduler's have no lastTimestamp
    late = [i for i, line in enumerate(legacy) if "pod/late" in line]
    early = [i for i, line in enumerate(legacy) if "deployment/api" in line or "replicaset/api" in line]
    assert late
    assert early
    assert max(early) < min(late), done.stdout
    tables = [
        e
        for e in kd.requests(path_prefix="/api/v1/namespaces/default/events")
        if e.query_params.get("includeObject") == ["Object"]
    ]
    assert tables, "kubectl did not ask for full objects in the Table rows"


def test_describe_pod_shows_its_events_found_by_field_selector(kd: KubeHandle) -> None:
    apply(kd, pod("web"))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s").returncode == 0
    done = kd.kubectl("describe", "pod", "web")
    assert done.returncode == 0, done.stderr
    section = done.stdout.split("Events:", 1)[1]
    assigned = "Successfully assigned default/web to fake-node"
    for reason, source, message in (
        ("Scheduled", "default-scheduler", assigned),
        ("Pulled", "kubelet", "Successfully pulled image"),
        ("Started", "kubelet", "Started container app"),
    ):
        assert any(reason in line and source in line and message in line for line in section.splitlines()), section
    uid = kd.store.require("pods", "default", "web")["metadata"]["uid"]
    selectors = [
        e.query_params.get("fieldSelector", [""])[0]
        for e in kd.requests(path_prefix="/api/v1/namespaces/default/events")
    ]
    assert any(f"involvedObject.uid={uid}" in s and "involvedObject.name=web" in s for s in selectors), selectors


def test_describe_deployment_shows_the_scaling_events(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=2))
    eventually(lambda: available(kd, "api"), what="Available")
    rs = kd.store.list("replicasets", "default")[0][0]["metadata"]["name"]
    done = kd.kubectl("describe", "deployment", "api")
    assert done.returncode == 0, done.stderr
    assert f"NewReplicaSet:   {rs} (2/2 replicas created)" in done.stdout
    assert "Normal  ScalingReplicaSet  " in done.stdout
    assert f"deployment-controller  Scaled up replica set {rs} from 0 to 2" in done.stdout


def test_a_repeated_event_is_counted_on_one_object(kd: KubeHandle) -> None:
    apply(kd, pod("crash", faults={"crash-loop": "true", "backoff": "20"}))  # the next one needs 20 s of clock
    first = eventually(lambda: events(kd, reason="BackOff", name="crash"), what="a BackOff event")[0]
    kd.clock.advance(30)
    again = eventually(
        lambda: [e for e in events(kd, reason="BackOff", name="crash") if e["count"] >= 2],
        what="the BackOff event counted again",
    )[0]
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["firstTimestamp"] == first["firstTimestamp"]
    assert parse_rfc3339(again["lastTimestamp"]) - parse_rfc3339(first["lastTimestamp"]) >= 29
    described = kd.kubectl("describe", "pod", "crash").stdout
    assert "Back-off restarting failed container app in pod crash_default(" in described
    assert f"(x{again['count']} over" in described


def test_kubelet_and_controller_events_have_the_legacy_shape(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1))
    eventually(lambda: available(kd, "api"), what="Available")
    started = events(kd, reason="Started")[0]
    assert started["source"] == {"component": "kubelet", "host": "fake-node"}
    assert started["reportingComponent"] == "kubelet"
    assert started["reportingInstance"] == "fake-node"
    assert started["eventTime"] is None
    assert started["count"] == 1
    assert started["firstTimestamp"] == started["lastTimestamp"]
    assert started["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert started["metadata"]["name"].startswith(started["involvedObject"]["name"] + ".")
    scaled = events(kd, reason="ScalingReplicaSet")[0]
    assert scaled["source"] == {"component": "deployment-controller"}
    assert scaled["involvedObject"]["kind"] == "Deployment"
    assert scaled["involvedObject"]["apiVersion"] == "apps/v1"


def test_scheduler_events_have_the_events_api_shape_and_a_series(kd: KubeHandle) -> None:
    apply(kd, pod("stuck", faults={"unschedulable": "0/1 nodes are available: 1 Insufficient memory."}))
    failed = eventually(lambda: events(kd, reason="FailedScheduling", name="stuck"), what="FailedScheduling")[0]
    assert failed["lastTimestamp"] is None
    assert failed["firstTimestamp"] is None
    assert "count" not in failed
    assert failed["eventTime"].endswith("Z")
    assert "." in failed["eventTime"]  # microseconds (MicroTime)
    assert failed["reportingComponent"] == "default-scheduler"
    assert failed["action"] == "Scheduling"
    assert failed["message"] == "0/1 nodes are available: 1 Insufficient memory."
    kd.clock.advance(31)  # the scheduler tries again
    repeated = eventually(
        lambda: [
            e for e in events(kd, reason="FailedScheduling", name="stuck") if (e.get("series") or {}).get("count") == 2
        ],
        what="a series of 2",
    )[0]
    assert repeated["metadata"]["name"] == failed["metadata"]["name"]


def test_field_selectors_filter_events(kd: KubeHandle) -> None:
    apply(kd, job("once", faults={"run-seconds": "0.1"}))
    assert kd.kubectl("wait", "--for=condition=complete", "job/once", "--timeout=30s").returncode == 0
    done = kd.kubectl(
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=Job,reason=Completed",
        "-o",
        "jsonpath={.items[*].message}",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Job completed"
    pod_name = pods(kd)[0]["metadata"]["name"]
    created = kd.kubectl(
        "get", "events", "--field-selector", "reason=SuccessfulCreate", "-o", "jsonpath={.items[*].message}"
    )
    assert created.stdout == f"Created pod: {pod_name}"
