"""The double's simulated scheduler and kubelet: a pod's phases, container states, restarts and the faults declared on
its annotations or set from Python, as ``kubectl get``/``describe`` and the API show them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.lifecycle import NODE
from specs.kube.conftest import require_kubectl
from specs.kube.workloads import (
    apply,
    available,
    condition,
    container_status,
    deployment,
    events,
    eventually,
    job,
    pod,
    pods,
    waiting_reason,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve() as handle:
        yield handle


def _pod(kd: KubeHandle, name: str) -> dict[str, Any]:
    return kd.store.require("pods", "default", name)


def _container(kd: KubeHandle, name: str) -> dict[str, Any]:
    return container_status(kd, name)


def _row(kd: KubeHandle, name: str) -> list[str]:
    """``kubectl get pod NAME`` columns: NAME READY STATUS RESTARTS AGE..."""
    out = kd.kubectl("get", "pod", name).stdout.splitlines()
    return out[1].split() if len(out) > 1 else []


def test_a_pod_is_scheduled_started_and_ready_with_the_kubelets_events(kd: KubeHandle) -> None:
    apply(kd, pod("web"))
    done = kd.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    obj = _pod(kd, "web")
    assert obj["spec"]["nodeName"] == NODE
    assert obj["status"]["phase"] == "Running"
    assert obj["status"]["podIP"].startswith("10.244.")
    kinds = [c["type"] for c in obj["status"]["conditions"]]
    assert kinds == ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    container = obj["status"]["containerStatuses"][0]
    assert container["ready"] is True
    assert container["started"] is True
    assert container["containerID"].startswith("containerd://")
    assert container["image"] == "registry.local/app:1.0"
    assert "running" in container["state"]
    reasons = [e["reason"] for e in events(kd, name="web")]
    assert reasons == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    assert _row(kd, "web")[1:3] == ["1/1", "Running"]


def test_init_containers_run_first_and_complete(kd: KubeHandle) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "boot"},
        "spec": {
            "initContainers": [{"name": "migrate", "image": "registry.local/migrate:1"}],
            "containers": [{"name": "app", "image": "registry.local/app:1"}],
        },
    }
    apply(kd, json.dumps(manifest))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/boot", "--timeout=30s").returncode == 0
    status = _pod(kd, "boot")["status"]
    init = status["initContainerStatuses"][0]["state"]["terminated"]
    assert (init["exitCode"], init["reason"]) == (0, "Completed")
    started = [e["message"] for e in events(kd, reason="Started", name="boot")]
    assert started == ["Started container migrate", "Started container app"]


def test_start_and_ready_delays_run_on_the_doubles_clock(kd: KubeHandle) -> None:
    apply(kd, pod("slow", faults={"start-delay": "120", "ready-delay": "300"}))
    eventually(lambda: waiting_reason(kd, "slow") == "ContainerCreating", what="ContainerCreating")
    time.sleep(0.3)
    assert _row(kd, "slow")[2] == "ContainerCreating"
    kd.clock.advance(121)
    eventually(lambda: "running" in _container(kd, "slow").get("state", {}), what="the container to start")
    assert _container(kd, "slow")["ready"] is False
    assert _row(kd, "slow")[1:3] == ["0/1", "Running"]
    kd.clock.advance(301)
    eventually(lambda: _container(kd, "slow").get("ready"), what="Ready after the readiness delay")


def test_a_crash_loop_restarts_with_growing_back_off(kd: KubeHandle) -> None:
    apply(kd, pod("crash", faults={"crash-loop": "2", "backoff": "0.2"}))
    eventually(lambda: _container(kd, "crash").get("restartCount", 0) >= 3, what="3 restarts")
    eventually(lambda: waiting_reason(kd, "crash") == "CrashLoopBackOff", what="CrashLoopBackOff")
    status = _container(kd, "crash")
    assert status["ready"] is False
    last = status["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (2, "Error")
    message = status["state"]["waiting"]["message"]
    assert message.startswith("back-off ")
    uid = _pod(kd, "crash")["metadata"]["uid"]
    assert message.endswith(f"restarting failed container=app pod=crash_default({uid})")
    backoff = events(kd, reason="BackOff", name="crash")
    assert len(backoff) == 1  # one Event, counted
    assert backoff[0]["count"] >= 2
    assert backoff[0]["type"] == "Warning"
    assert backoff[0]["involvedObject"]["fieldPath"] == "spec.containers{app}"
    row = _row(kd, "crash")
    assert row[2] in ("CrashLoopBackOff", "Error", "Running")
    assert int(row[3]) >= 3


def test_an_image_pull_failure_is_errimagepull_then_imagepullbackoff(kd: KubeHandle) -> None:
    apply(kd, pod("pull", faults={"image-pull-error": "true"}))
    eventually(lambda: waiting_reason(kd, "pull") == "ImagePullBackOff", what="ImagePullBackOff")
    reasons = [(e["reason"], e["message"]) for e in events(kd, name="pull")]
    assert ("Warning", "Error: ErrImagePull") in [(e["type"], e["message"]) for e in events(kd, name="pull")]
    assert ("Failed", "Error: ImagePullBackOff") in reasons
    assert ("BackOff", 'Back-off pulling image "registry.local/app:1.0"') in reasons
    assert _pod(kd, "pull")["status"]["phase"] == "Pending"
    assert _row(kd, "pull")[2] == "ImagePullBackOff"


def test_a_missing_secret_or_key_is_createcontainerconfigerror_until_it_exists(kd: KubeHandle) -> None:
    # kubelet_pods.go makeEnvironmentVariables: a non-optional secretKeyRef whose Secret or key is missing stops the
    # container before it is created; the kubelet tries again on its next sync and starts it once the key exists.
    env = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]
    apply(kd, pod("cfg", faults={"backoff": "0.2"}, containers=[{"name": "app", "image": "a:1", "env": env}]))
    eventually(lambda: waiting_reason(kd, "cfg") == "CreateContainerConfigError", what="CreateContainerConfigError")
    assert _container(kd, "cfg")["state"]["waiting"]["message"] == 'secret "db" not found'
    assert ("Warning", 'Error: secret "db" not found') in [(e["type"], e["message"]) for e in events(kd, name="cfg")]
    assert _row(kd, "cfg")[2] == "CreateContainerConfigError"
    kd.kubectl("create", "secret", "generic", "db", "--from-literal=user=app")
    expected = "couldn't find key password in Secret default/db"
    eventually(lambda: _container(kd, "cfg")["state"].get("waiting", {}).get("message") == expected, what=expected)
    apply(
        kd, json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "data": {"password": "eA=="}})
    )
    eventually(lambda: "running" in _container(kd, "cfg")["state"], what="the container to start")


def test_never_ready_sends_unhealthy_events(kd: KubeHandle) -> None:
    probe = {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 1}
    apply(
        kd,
        pod(
            "sick",
            faults={"never-ready": 'Get "http://10.244.0.9:8080/ready": connection refused'},
            containers=[{"name": "app", "image": "registry.local/app:1", "readinessProbe": probe}],
        ),
    )
    eventually(
        lambda: [e for e in events(kd, reason="Unhealthy", name="sick") if e["count"] >= 2],
        what="repeated Unhealthy events",
    )
    unhealthy = events(kd, reason="Unhealthy", name="sick")[0]
    assert unhealthy["message"] == 'Readiness probe failed: Get "http://10.244.0.9:8080/ready": connection refused'
    assert _container(kd, "sick")["ready"] is False
    ready = condition(_pod(kd, "sick"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")


def test_unschedulable_until_the_python_fault_is_cleared(kd: KubeHandle) -> None:
    rule = kd.controllers.kubelet.set_faults(name="stuck", unschedulable="")
    apply(kd, pod("stuck"))
    failed = eventually(lambda: events(kd, reason="FailedScheduling", name="stuck"), what="FailedScheduling")
    assert failed[0]["message"].startswith("0/1 nodes are available")
    scheduled = condition(_pod(kd, "stuck"), "PodScheduled")
    assert scheduled is not None
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert "nodeName" not in _pod(kd, "stuck")["spec"]
    kd.controllers.kubelet.clear_faults(rule)
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/stuck", "--timeout=30s").returncode == 0


def test_python_faults_by_label_selector_reach_a_deployments_pods(kd: KubeHandle) -> None:
    kd.controllers.kubelet.set_faults(selector={"app": "api"}, crash_loop=True, backoff=0.2)
    apply(kd, deployment("api", replicas=2))
    apply(kd, deployment("other", replicas=1))
    eventually(
        lambda: (
            all(p["status"].get("containerStatuses", [{}])[0].get("restartCount", 0) >= 2 for p in pods(kd, "api"))
            and len(pods(kd, "api")) == 2
        ),
        what="api pods crash-looping",
    )
    assert available(kd, "other")
    assert not available(kd, "api")


def test_kill_restarts_a_container_and_keeps_its_last_state(kd: KubeHandle) -> None:
    apply(kd, pod("web"))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s").returncode == 0
    kd.controllers.kubelet.kill("default", "web", exit_code=137, reason="OOMKilled")
    eventually(
        lambda: _container(kd, "web").get("restartCount") == 1 and _container(kd, "web").get("ready"),
        what="restarted and Ready",
    )
    last = _container(kd, "web")["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")


def test_set_ready_forces_readiness(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1))
    eventually(lambda: available(kd, "api"), what="Available")
    name = pods(kd, "api")[0]["metadata"]["name"]
    kd.controllers.kubelet.set_ready("default", name, False)
    eventually(lambda: not available(kd, "api"), what="Available=False after the pod turns unready")
    kd.controllers.kubelet.set_ready("default", name, None)
    eventually(lambda: available(kd, "api"), what="Available again")


def test_an_unparsable_fault_annotation_is_a_warning_event_and_ignored(kd: KubeHandle) -> None:
    apply(kd, pod("odd", faults={"start-delay": "soon", "crash-loopy": "yes"}))
    assert kd.kubectl("wait", "--for=condition=Ready", "pod/odd", "--timeout=30s").returncode == 0
    warnings = sorted(e["message"] for e in events(kd, reason="InvalidFault", name="odd"))
    assert len(warnings) == 2
    assert warnings[1] == 'double.stack-harness.dev/start-delay: "soon" is not a number of seconds; ignored'
    assert warnings[0].startswith('double.stack-harness.dev/crash-loopy: "yes" is not a fault this double knows')


def test_set_faults_refuses_an_unknown_field(kd: KubeHandle) -> None:
    with pytest.raises(TypeError, match="crashloop"):
        kd.controllers.kubelet.set_faults(crashloop=True)


class FakeProcess:
    def __init__(self) -> None:
        self.listening = threading.Event()
        self.code: int | None = None
        self.terminated_with: float | None = None

    def ready(self) -> bool:
        return self.listening.is_set()

    @property
    def exit_code(self) -> int | None:
        return self.code

    def terminate(self, grace: float) -> None:
        self.terminated_with = grace
        self.code = 143


class FakeRunner:
    def __init__(self) -> None:
        self.started: list[FakeProcess] = []

    def start(self, pod: dict[str, Any]) -> FakeProcess:
        process = FakeProcess()
        self.started.append(process)
        return process


def test_a_container_runtime_decides_readiness_exit_and_termination(kd: KubeHandle) -> None:
    runner = FakeRunner()
    kd.controllers.kubelet.containers.register("registry.local/twin/*", runner)
    apply(kd, pod("svc", containers=[{"name": "app", "image": "registry.local/twin/api:1"}]))
    eventually(lambda: runner.started, what="the runner to start the pod")
    time.sleep(0.3)
    assert _container(kd, "svc")["ready"] is False  # not listening yet
    runner.started[0].listening.set()
    eventually(lambda: _container(kd, "svc").get("ready"), what="Ready once the process listens")
    done = kd.kubectl("delete", "pod", "svc", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert runner.started[0].terminated_with == 30.0


def test_a_job_pod_ends_with_its_processs_exit_code(kd: KubeHandle) -> None:
    runner = FakeRunner()
    kd.controllers.kubelet.containers.register(
        lambda p: p["metadata"].get("labels", {}).get("job-name") == "agent", runner
    )
    apply(kd, job("agent", backoff_limit=0))
    eventually(lambda: runner.started, what="the runner to start the job's pod")
    runner.started[0].code = 0
    done = kd.kubectl("wait", "--for=condition=complete", "job/agent", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert [p["status"]["phase"] for p in pods(kd)] == ["Succeeded"]
