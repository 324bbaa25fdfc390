"""``kubectl logs`` against the double: every flag, ``--previous`` of a crash-looping container, ``-f`` ending when the
container stops, kubectl's default container, and the API server's and kubelet's real errors."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

import fakes.kube
from fakes.kube import KubeHandle
from harness import process
from specs.kube.conftest import require_kubectl
from specs.kube.workloads import (
    apply,
    container_status,
    eventually,
    pod,
    waiting_reason,
)

pytestmark = pytest.mark.timeout(120)
TWO = [{"name": "web", "image": "registry.local/web:1"}, {"name": "sidecar", "image": "registry.local/proxy:1"}]


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve() as handle:
        yield handle


def _ready(kd: KubeHandle, name: str) -> None:
    done = kd.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=30s")
    assert done.returncode == 0, done.stderr


def _running(kd: KubeHandle, name: str) -> bool:
    statuses = (kd.store.require("pods", "default", name).get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all("running" in s["state"] for s in statuses)


def test_logs_from_the_manifest_and_from_python(kd: KubeHandle) -> None:
    apply(kd, pod("web", faults={"logs": "listening on :8080\nready"}))
    _ready(kd, "web")
    kd.controllers.logs.append("default", "web", "GET /healthz 200")
    done = kd.kubectl("logs", "web")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "listening on :8080\nready\nGET /healthz 200\n"


def test_kubectl_defaults_to_the_first_container_and_says_so(kd: KubeHandle) -> None:
    apply(kd, pod("two", containers=TWO, faults={"logs.web": "from web", "logs.sidecar": "from sidecar"}))
    _ready(kd, "two")
    done = kd.kubectl("logs", "two")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from web\n"
    assert 'Defaulted container "web" out of: web, sidecar' in done.stderr
    picked = kd.kubectl("logs", "two", "-c", "sidecar")
    assert picked.stdout == "from sidecar\n"
    assert "Defaulted" not in picked.stderr


def test_the_default_container_annotation_picks_silently(kd: KubeHandle) -> None:
    apply(
        kd,
        pod(
            "two",
            containers=TWO,
            faults={"logs.sidecar": "from sidecar"},
            annotations={"kubectl.kubernetes.io/default-container": "sidecar"},
        ),
    )
    _ready(kd, "two")
    done = kd.kubectl("logs", "two")
    assert done.stdout == "from sidecar\n"
    assert "Defaulted" not in done.stderr


def test_previous_logs_of_a_crash_looping_container(kd: KubeHandle) -> None:
    apply(kd, pod("crash", faults={"crash-loop": "true", "backoff": "0.2", "logs": "starting\npanic: no config"}))
    eventually(lambda: container_status(kd, "crash").get("restartCount", 0) >= 2, what="two restarts")
    done = kd.kubectl("logs", "crash", "--previous")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "starting\npanic: no config\n"


def test_previous_without_a_terminated_container_is_the_kubelets_400(kd: KubeHandle) -> None:
    apply(kd, pod("web"))
    _ready(kd, "web")
    done = kd.kubectl("logs", "web", "--previous")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (BadRequest): previous terminated container "app" in pod "web" not found'
    )


def test_a_pending_container_is_waiting_to_start(kd: KubeHandle) -> None:
    apply(kd, pod("slow", faults={"start-delay": "300"}))
    eventually(
        lambda: kd.store.require("pods", "default", "slow").get("status", {}).get("containerStatuses"),
        what="container statuses",
    )
    done = kd.kubectl("logs", "slow")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (BadRequest): container "app" in pod "slow" is waiting to start: ContainerCreating'
    )


def test_an_image_that_cannot_be_pulled_is_its_own_message(kd: KubeHandle) -> None:
    apply(kd, pod("pull", faults={"image-pull-error": "true"}))
    eventually(lambda: waiting_reason(kd, "pull") == "ImagePullBackOff", what="ImagePullBackOff")
    done = kd.kubectl("logs", "pull")
    assert done.stderr.strip() == (
        'Error from server (BadRequest): container "app" in pod "pull" is waiting to '
        "start: trying and failing to pull image"
    )


def test_an_unscheduled_pod_has_empty_logs(kd: KubeHandle) -> None:
    apply(kd, pod("stuck", faults={"unschedulable": "true"}))
    eventually(
        lambda: (kd.store.require("pods", "default", "stuck").get("status") or {}).get("conditions"),
        what="PodScheduled=False",
    )
    done = kd.kubectl("logs", "stuck")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_tail_timestamps_since_and_limit_bytes(kd: KubeHandle) -> None:
    apply(kd, pod("web", faults={"logs": "one\ntwo"}))
    _ready(kd, "web")
    kd.clock.advance(600)  # ten minutes pass on the double
    kd.controllers.logs.append("default", "web", "three", "four")
    assert kd.kubectl("logs", "web", "--tail=1").stdout == "four\n"
    assert kd.kubectl("logs", "web", "--since=5m").stdout == "three\nfour\n"
    assert kd.kubectl("logs", "web", "--limit-bytes=6").stdout == "one\ntw"
    stamped = kd.kubectl("logs", "web", "--timestamps", "--tail=2").stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["three", "four"]
    stamp = stamped[0].split(" ", 1)[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z", stamp), stamp
    written = datetime.fromisoformat(stamp[:26].rstrip("Z")).replace(tzinfo=UTC).timestamp()
    assert abs(written - kd.clock.time()) < 60  # the double's clock...
    assert written - time.time() > 500  # ...ten minutes ahead of the host's
    since = kd.requests(path_prefix="/api/v1/namespaces/default/pods/web/log")
    assert any(e.query_params.get("sinceSeconds") == ["300"] for e in since)


def test_follow_streams_new_lines_and_ends_when_the_container_stops(kd: KubeHandle) -> None:
    apply(kd, pod("task", restart_policy="Never", faults={"run-seconds": "600", "logs": "begin"}))
    eventually(lambda: _running(kd, "task"), what="the container to run")
    follow = process.spawn(kd.kubectl_argv("logs", "-f", "task"), env=kd.env())
    try:
        eventually(
            lambda: [
                e
                for e in kd.requests(path_prefix="/api/v1/namespaces/default/pods/task/log")
                if e.query_params.get("follow") == ["true"]
            ],
            what="kubectl to follow",
        )
        kd.controllers.logs.append("default", "task", "working", "done")
        kd.clock.advance(600)  # the task's container exits
        out, err = follow.communicate(timeout=30)
    finally:
        process.kill_group(follow)
    assert follow.returncode == 0, err
    assert out.decode() == "begin\nworking\ndone\n"
    assert kd.store.require("pods", "default", "task")["status"]["phase"] == "Succeeded"


def test_follow_of_a_finished_container_returns_at_once(kd: KubeHandle) -> None:
    apply(kd, pod("task", restart_policy="Never", faults={"run-seconds": "0.1", "logs": "all done"}))
    eventually(
        lambda: kd.store.require("pods", "default", "task")["status"].get("phase") == "Succeeded", what="Succeeded"
    )
    done = kd.kubectl("logs", "-f", "task", timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "all done\n"


# --- the API, without kubectl's client-side checks ----------------------------------------------------------------


def _get(kd: KubeHandle, path: str, **params: str) -> httpx.Response:
    return httpx.get(kd.url + path, params=params, timeout=10.0)


def test_the_api_wants_a_container_name_for_a_multi_container_pod(kd: KubeHandle) -> None:
    apply(kd, pod("two", containers=TWO))
    _ready(kd, "two")
    answer = _get(kd, "/api/v1/namespaces/default/pods/two/log")
    assert answer.status_code == 400
    assert answer.json()["message"] == "a container name must be specified for pod two, choose one of: [web sidecar]"
    wrong = _get(kd, "/api/v1/namespaces/default/pods/two/log", container="nope")
    assert wrong.json()["message"] == "container nope is not valid for pod two"


def test_invalid_log_options_are_422(kd: KubeHandle) -> None:
    apply(kd, pod("web"))
    _ready(kd, "web")
    answer = _get(kd, "/api/v1/namespaces/default/pods/web/log", tailLines="-1")
    assert answer.status_code == 422
    body = answer.json()
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'
    )
    both = _get(kd, "/api/v1/namespaces/default/pods/web/log", sinceSeconds="10", sinceTime="2025-01-01T00:00:00Z")
    assert both.status_code == 422
    assert "at most one of `sinceTime` or `sinceSeconds` may be specified" in both.json()["message"]
    garbage = _get(kd, "/api/v1/namespaces/default/pods/web/log", follow="maybe")
    assert garbage.status_code == 400
    assert json.loads(garbage.text)["kind"] == "Status"


def test_appending_to_a_missing_pod_is_a_key_error(kd: KubeHandle) -> None:
    with pytest.raises(KeyError, match="default/ghost"):
        kd.controllers.logs.append("default", "ghost", "line")


def _followers(kd: KubeHandle) -> int:
    return kd.controllers.logs.followers


def test_a_follow_ends_on_the_server_when_kubectl_goes_away(kd: KubeHandle) -> None:
    apply(kd, pod("web", faults={"logs": "up"}))
    _ready(kd, "web")
    follow = process.spawn(kd.kubectl_argv("logs", "-f", "web"), env=kd.env())
    try:
        eventually(lambda: _followers(kd) == 1, what="the double to hold the follow stream")
    finally:
        process.kill_group(follow)
    eventually(lambda: _followers(kd) == 0, what="the follow stream to end after kubectl died")


def test_stopping_the_double_ends_a_follow(kd: KubeHandle) -> None:
    with fakes.kube.serve() as other:
        apply(other, pod("web", faults={"logs": "up"}))
        _ready(other, "web")
        follow = process.spawn(other.kubectl_argv("logs", "-f", "web"), env=other.env())
        try:
            eventually(lambda: _followers(other) == 1, what="the double to hold the follow stream")
        except BaseException:
            process.kill_group(follow)
            raise
    try:
        out, _ = follow.communicate(timeout=30)
    finally:
        process.kill_group(follow)
    assert out.decode() == "up\n"
