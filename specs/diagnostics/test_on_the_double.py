"""Rollout failures as they happen, on both targets (specs/targets.py): the controllers (the double's, or the real
kube-controller-manager and kube-scheduler) and the kubelet (the double's simulated one, or kwok) run a real rollout,
a fault annotation on the pod template breaks it, and the harness explains it through the real kubectl.

Faults (``double.stack-harness.dev/*`` annotations, seconds on the double's clock) come from the double's kubelet,
and on the control plane from kwok's Stages in specs/kwok/faults.yaml: crash loop, image pull failure, never ready,
and a progress deadline. An unschedulable pod also carries a nodeSelector no Node has, which the real scheduler reads
(the double reads the annotation instead).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fakes.kube
from harness import Kube, RolloutFailed, RolloutTerminal, explain_workload, rollout_complete, wait_for_sync
from harness.errors import KubectlError
from specs.targets import Target, stage_delay

from .plugin_support import evidence_folder, index, steps

FAULT = "double.stack-harness.dev/"
CRASH_LOGS = "starting web 2.0\nconnecting to redis at redis:6379\npanic: dial tcp 10.96.0.12:6379: connection refused"
NO_NODE = {FAULT + "no-node-has-this": "true"}
"""A nodeSelector no Node matches: the real scheduler's unschedulable pod (the double schedules by annotation)."""
NO_PREVIOUS_LOG = "kwok runs no container: no previous container log"


def deployment(
    name: str,
    image: str,
    *,
    replicas: int = 2,
    faults: dict[str, str] | None = None,
    deadline: int | None = None,
    node_selector: dict[str, str] | None = None,
    cpu: str | None = None,
) -> str:
    container: dict[str, Any] = {"name": "app", "image": image}
    if cpu is not None:  # requests more than any Node has: the real scheduler says Insufficient cpu
        container["resources"] = {"requests": {"cpu": cpu}}
    template: dict[str, Any] = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    if faults:
        template["metadata"]["annotations"] = {FAULT + k: v for k, v in faults.items()}
    if node_selector:
        template["spec"]["nodeSelector"] = node_selector
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec})


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    if "controllers" not in __import__("inspect").signature(fakes.kube.serve).parameters:
        pytest.skip("this double has no controllers")
    with fakes.kube.serve() as handle:
        yield handle


@pytest.fixture
def kube(target: Target) -> Kube:
    return target.kube


def roll_out(kube: Kube, manifest: str) -> None:
    """Apply a healthy first revision and wait for it, then apply ``manifest`` (the broken second revision)."""
    name = json.loads(manifest)["metadata"]["name"]
    kube.kubectl("apply", "-f", "-", input=deployment(name, "registry.local/web:1.0"))
    kube.rollout_status(name, timeout=30)
    kube.kubectl("apply", "-f", "-", input=manifest)


def test_a_crash_looping_rollout_is_explained_with_its_previous_log(target: Target, kube: Kube) -> None:
    roll_out(
        kube,
        deployment(
            "web", "registry.local/web:2.0", faults={"crash-loop": "true", "backoff": "0.3", "logs": CRASH_LOGS}
        ),
    )
    wait_for_sync("the new pod to crash once", lambda: _new_pod_restarted(kube, "web"), timeout=20, interval=0.1)
    with pytest.raises(RolloutFailed) as caught:  # the timeout path: a restart limit the spec never reaches
        kube.rollout_status("web", timeout=3, restart_limit=1000)
    message = str(caught.value)
    first, second, third = message.splitlines()[:3]
    assert first.startswith(
        "deployment/web did not roll out: the new pod crash-loops (container app, last terminated Error exit 1"
    )
    assert second == "  gave up: error: timed out waiting for the condition"  # kubectl's own words, after the cause
    assert third.startswith("      kubectl exited 1: kubectl")
    assert isinstance(caught.value, KubectlError)  # rollout_status's failure is still the kubectl error it explains
    assert "old ReplicaSet" in message
    if target.on_double:  # the control plane: NO_PREVIOUS_LOG
        assert "| panic: dial tcp 10.96.0.12:6379: connection refused" in message
    assert re.search(r"Warning BackOff( \(x\d+\))?: Back-off restarting failed container app", message)


def test_an_image_pull_failure_is_explained(kube: Kube) -> None:
    roll_out(
        kube, deployment("web", "registry.local/web:missing", faults={"image-pull-error": "true", "backoff": "0.3"})
    )
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=3)
    first = str(caught.value).splitlines()[0]
    assert re.match(
        r"deployment/web did not roll out: the new pod is stuck in (ErrImagePull|ImagePullBackOff) "
        r"\(container app, ",
        first,
    ), first
    assert "registry.local/web:missing" in str(caught.value)


def test_a_pod_that_never_becomes_ready_is_explained(target: Target, kube: Kube) -> None:
    roll_out(kube, deployment("web", "registry.local/web:2.0", faults={"never-ready": "true"}))
    if target.on_double:
        target.double.clock.advance(25)  # readiness probe periods pass: the kubelet reports Unhealthy
    else:  # kwok's probe Stage fails the probe once a period (its delay)
        period = stage_delay("double-never-ready-probe")
        wait_for_sync("a readiness probe failure", lambda: _event(kube, "Unhealthy"), timeout=3 * period, interval=0.5)
    with pytest.raises(RolloutFailed) as caught:
        wait_for_sync("deployment/web to roll out", rollout_complete(kube, "deployment/web"), timeout=3, interval=1.0)
    first = str(caught.value).splitlines()[0]
    assert first.startswith("deployment/web did not roll out: the new pod runs but never became ready")
    assert "Readiness probe failed: HTTP probe failed with statuscode: 503" in first


def test_an_unschedulable_pod_is_explained(kube: Kube) -> None:
    roll_out(kube, deployment("web", "registry.local/web:2.0", faults={"unschedulable": "true"}, node_selector=NO_NODE))
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=3)
    first = str(caught.value).splitlines()[0]
    assert first.startswith("deployment/web did not roll out: the new pod cannot be scheduled (0/1 nodes are available")


def test_progress_deadline_exceeded_is_named_first(target: Target, kube: Kube) -> None:
    roll_out(
        kube, deployment("web", "registry.local/web:2.0", deadline=5, faults={"crash-loop": "true", "backoff": "0.3"})
    )
    # The crash must have happened before the deadline passes: on a loaded machine the new pod may still be in its
    # first run when the clock jumps, and then "runs but never became ready" is the true explanation.
    wait_for_sync("the new pod to crash once", lambda: _new_pod_restarted(kube, "web"), timeout=20, interval=0.1)
    deadline = kube.kubectl_json("get", "deployment", "web")["spec"]["progressDeadlineSeconds"]
    if target.on_double:
        target.double.clock.advance(2 * deadline)  # past the progress deadline on the double's clock
    # The real deployment controller marks it once the deadline passed; the restart limit is out of reach meanwhile
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=4 * deadline, restart_limit=1000)
    first, second, third = str(caught.value).splitlines()[:3]
    assert first.startswith('deployment/web did not roll out: ProgressDeadlineExceeded (ReplicaSet "web-')
    assert "has timed out progressing.); the new pod crash-loops" in first
    assert isinstance(caught.value, RolloutTerminal)
    assert second.startswith("  terminal, not a timeout: ProgressDeadlineExceeded; waiting longer cannot help")
    assert "exceeded its progress deadline" in third or third.startswith("  kubectl: Waiting for deployment")


MIN_READY = 300
"""minReadySeconds far beyond any wait here: the pod is Ready and stays unavailable throughout."""


def test_a_rollout_held_by_min_ready_seconds_names_the_hold(kube: Kube) -> None:
    manifest = json.loads(deployment("web", "registry.local/web:1.0", replicas=1))
    manifest["spec"]["minReadySeconds"] = MIN_READY
    kube.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for_sync("the new pod to be Ready", lambda: _pod_ready(kube, "web"), timeout=20, interval=0.1)
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status("web", timeout=2)
    first = str(caught.value).splitlines()[0]
    assert first.startswith(
        f"deployment/web did not roll out: the new pod is Ready but not yet available: minReadySeconds is {MIN_READY} s"
    )
    assert re.search(r", Ready for \d+\.\d s$", first), first


def _pod_ready(kube: Kube, app: str) -> bool | None:
    pods = kube.kubectl_json("get", "pods", "-l", f"app={app}") or {"items": []}
    conditions = [c for pod in pods["items"] for c in pod.get("status", {}).get("conditions", [])]
    return True if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) else None


def _event(kube: Kube, reason: str) -> bool | None:
    """True once an event of ``reason`` exists in the namespace; ``None`` (not yet) before."""
    events = kube.kubectl_json("get", "events") or {"items": []}
    return True if any(event.get("reason") == reason for event in events["items"]) else None


def _new_pod_restarted(kube: Kube, app: str) -> bool | None:
    """True once a pod of ``app`` has restarted; ``None`` (not yet) before."""
    pods = kube.kubectl_json("get", "pods", "-l", f"app={app}") or {"items": []}
    statuses = (status for pod in pods["items"] for status in pod.get("status", {}).get("containerStatuses", []))
    return True if any(status.get("restartCount", 0) > 0 for status in statuses) else None


def test_a_rollout_that_completed_while_old_pods_still_serve_says_how_many(kube: Kube) -> None:
    kube.kubectl(
        "apply",
        "-f",
        "-",
        input=deployment("web", "registry.local/web:1.0", replicas=1, faults={"terminate-delay": "grace"}),
    )
    kube.rollout_status("web", timeout=30)
    kube.kubectl("apply", "-f", "-", input=deployment("web", "registry.local/web:2.0", replicas=1))
    assert kube.rollout_status("web", timeout=30) == 'deployment "web" successfully rolled out'
    explanation = explain_workload(kube, "deployment/web")
    assert explanation.headline.startswith("deployment/web rolled out, but 1 old pod(s) still exist (")
    assert "1 terminating" in explanation.headline


CRASHLOOP_CONFTEST = """
import json
import pytest
import fakes.kube

BROKEN = {manifest!r}

@pytest.fixture(scope="module")
def kd():
    with fakes.kube.serve() as handle:
        yield handle

@pytest.fixture
def kube(kd):
    kube = kd.kube()
    kube.kubectl("apply", "-f", "-", input=BROKEN)
    return kube
"""


PLANE_CONFTEST = """
import pytest
from harness import Kube

@pytest.fixture
def kube():
    return Kube({context!r}, {namespace!r}, allowed=({context!r},), kubectl_path={kubectl!r}, kubeconfig={kubeconfig!r})
"""


def test_the_evidence_of_a_crash_loop_holds_its_previous_log(
    target: Target, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    pytester: pytest.Pytester = request.getfixturevalue("pytester")  # after the run's plane: pytester moves HOME
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    broken = deployment(
        "web", "registry.local/web:2.0", replicas=1, faults={"crash-loop": "true", "backoff": "0.3", "logs": CRASH_LOGS}
    )
    if target.on_double:  # the inner session serves a double of its own, the broken Deployment applied
        pytester.makeconftest(CRASHLOOP_CONFTEST.format(manifest=broken))
    else:  # the inner session's kube is this spec's namespace on the run's plane, the pod already crashed once
        kube = target.kube
        kube.kubectl("apply", "-f", "-", input=broken)
        wait_for_sync("the new pod to crash once", lambda: _new_pod_restarted(kube, "web"), timeout=20, interval=0.1)
        pytester.makeconftest(
            PLANE_CONFTEST.format(
                context=kube.context, namespace=kube.namespace, kubectl=kube.kubectl_path, kubeconfig=kube.kubeconfig
            )
        )
    pytester.makepyfile(
        test_inner="""
def test_rollout(kube):
    kube.rollout_status("web", timeout=3, restart_limit=1000)
"""
    )
    art = tmp_path / "art"
    result = pytester.runpytest("--artifacts", str(art))
    result.assert_outcomes(failed=1)
    folder = evidence_folder(art, "test_rollout")
    assert index(folder)["finished"] is True
    done = steps(folder)
    previous = [name for name in done if name.startswith("previous log of web-")]
    assert len(previous) == 1
    if target.on_double:
        assert done[previous[0]]["status"] == "ok"
        log = (folder / done[previous[0]]["file"]).read_text()
        assert log.splitlines()[-1] == "panic: dial tcp 10.96.0.12:6379: connection refused"
    else:  # NO_PREVIOUS_LOG: the step is there, and says what kwok answered instead
        assert done[previous[0]]["status"] != "ok", done[previous[0]]
    explanation = (folder / "deployment-web.explanation.txt").read_text()
    assert explanation.startswith("deployment/web did not roll out: the new pod crash-loops")
    # Cause first everywhere: failure.txt and the report open with the headline, kubectl's words after it, and the
    # spec's output shows no chained-exception banner (kubectl's error) before the explanation.
    failure = (folder / "failure.txt").read_text().splitlines()
    assert failure[0].startswith("deployment/web did not roll out: the new pod crash-loops")
    assert failure[1] == "  gave up: error: timed out waiting for the condition"
    records = [json.loads(line) for part in (art / folder.parent.name / ".timeline").iterdir() for line in part.open()]
    assert records[0]["failure"].startswith("deployment/web did not roll out: the new pod crash-loops")
    assert "direct cause of the following exception" not in result.stdout.str()
    errors = [line for line in result.stdout.lines if line.startswith("E   ")]
    assert errors[0].endswith(": " + failure[0]) or errors[0] == "E   " + failure[0]
    assert "(x" in (folder / "events.txt").read_text() or "BackOff" in (folder / "events.txt").read_text()
