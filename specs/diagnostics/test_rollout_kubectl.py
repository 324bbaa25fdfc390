"""Rollout failures explained through the real kubectl, against the Kubernetes API double holding recorded objects.

``Kube.rollout_status`` and a ``wait_for`` on ``rollout_complete`` raise ``RolloutFailed`` (an ``AssertionError``,
and a ``WaitTimeout``) whose first line is the cause; ``python -m harness diagnose`` prints the same explanation
through the context guard.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Kube, RolloutFailed, WaitTimeout, explain_workload, rollout_complete, wait_for_sync
from harness.errors import KubectlError, StopWaiting
from harness.testing.objects import bare_double

from .conftest import load_into

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    if not os.environ.get("PATH") or subprocess.run(["which", "kubectl"], capture_output=True).returncode:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    with bare_double() as handle:
        yield handle


@pytest.fixture
def shop(kd: Any) -> Kube:
    kd.reset()
    return kd.kube(namespace="shop")


def test_rollout_status_on_a_crash_loop_raises_the_explanation_cause_first(kd: Any, shop: Kube) -> None:
    load_into(kd, "crashloop")
    with pytest.raises(RolloutFailed) as caught:
        shop.rollout_status("web", timeout=1, grace=5)
    message = str(caught.value)
    first, second = message.splitlines()[:2]
    assert first == (
        "deployment/web did not roll out: the new pod crash-loops (container app, last terminated Error exit 1)"
    )
    assert second.startswith("  gave up: ")
    assert "kubectl exited 1:" in second
    assert "timed out waiting for the condition" in second
    assert isinstance(caught.value.__cause__, KubectlError)
    assert isinstance(caught.value, AssertionError)
    assert caught.value.explanation.healthy is False
    assert "Warning BackOff (x4)" in message


def test_progress_deadline_ends_kubectl_at_once_and_is_named(kd: Any, shop: Kube) -> None:
    load_into(kd, "progress_deadline")
    with pytest.raises(RolloutFailed) as caught:
        shop.rollout_status("web", timeout=60, grace=5)  # kubectl gives up by itself on ProgressDeadlineExceeded
    first, second = str(caught.value).splitlines()[:2]
    assert first.startswith(
        'deployment/web did not roll out: ProgressDeadlineExceeded (ReplicaSet "web-6d9f7c8b5" has '
        "timed out progressing.)"
    )
    assert "exceeded its progress deadline" in second


def test_a_wait_on_a_deployment_explains_itself(kd: Any, shop: Kube) -> None:
    load_into(kd, "unschedulable")
    with pytest.raises(RolloutFailed) as caught:
        wait_for_sync(
            "deployment/web to roll out",
            rollout_complete(shop, "deployment/web"),
            timeout=1.5,
            interval=0.2,
            probe_timeout=10,
        )
    assert isinstance(caught.value, WaitTimeout)
    assert isinstance(caught.value.__cause__, WaitTimeout)
    assert caught.value.summary is not None
    first, second = str(caught.value).splitlines()[:2]
    assert first.startswith("deployment/web did not roll out: the new pod cannot be scheduled (0/1 nodes are available")
    assert second.startswith("  gave up: timed out after 1.5s waiting for deployment/web to roll out")


def test_a_wait_stopped_by_the_progress_deadline_explains_itself_too(kd: Any, shop: Kube) -> None:
    load_into(kd, "progress_deadline")
    with pytest.raises(RolloutFailed) as caught:
        wait_for_sync("deployment/web to roll out", rollout_complete(shop, "deployment/web"), timeout=30, interval=0.2)
    assert isinstance(caught.value.__cause__, StopWaiting)
    assert caught.value.summary is not None
    assert caught.value.summary.outcome == "stopped"
    assert caught.value.summary is not None
    assert len(caught.value.summary.attempts) == 1


def test_a_complete_rollout_returns_kubectls_line(kd: Any, shop: Kube) -> None:
    load_into(kd, "old_pods_serving")
    assert shop.rollout_status("web", timeout=10) == 'deployment "web" successfully rolled out'
    explanation = explain_workload(shop, "deployment/web")
    assert explanation.headline.startswith("deployment/web rolled out, but 2 old pod(s) still exist")


def test_a_statefulset_and_a_pod_are_explained_too(kd: Any, shop: Kube) -> None:
    load_into(kd, "statefulset_oom")
    with pytest.raises(RolloutFailed) as caught:
        shop.rollout_status("statefulset/nats", timeout=1, grace=5)
    assert str(caught.value).startswith(
        "statefulset/nats did not roll out: the new pod crash-loops (container app, last terminated OOMKilled exit 137)"
    )
    pod = explain_workload(shop, "pod/nats-2")
    assert pod.headline.startswith("pod/nats-2 is not ready: the pod crash-loops")


def test_explaining_a_missing_deployment_says_not_found(shop: Kube) -> None:
    explanation = explain_workload(shop, "deployment/nope")
    assert explanation.headline == "deployment/nope not found in namespace shop"


# --- python -m harness diagnose --------------------------------------------------------------------------------------


def diagnose(kd: Any, tmp_path: Path, *args: str, allowed: str = "fake-kube") -> subprocess.CompletedProcess[str]:
    (tmp_path / "pyproject.toml").write_text(f'[tool.harness]\nallowed_contexts = ["{allowed}"]\nnamespace = "shop"\n')
    env = dict(os.environ, KUBECACHEDIR=kd.cache_dir, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "harness", "diagnose", *args, "--kubeconfig", kd.kubeconfig, "--context", kd.context],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_diagnose_prints_the_explanation_and_exits_1_for_a_stuck_rollout(kd: Any, shop: Kube, tmp_path: Path) -> None:
    load_into(kd, "imagepull")
    done = diagnose(kd, tmp_path, "deployment/web")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "context fake-kube, namespace shop"
    assert lines[1].startswith("deployment/web did not roll out: the new pod is stuck in ImagePullBackOff")
    assert "timeline (UTC):" in done.stdout


def test_diagnose_exits_0_for_a_ready_pod(kd: Any, shop: Kube, tmp_path: Path) -> None:
    load_into(kd, "old_pods_serving")
    done = diagnose(kd, tmp_path, "pod/web-6d9f7c8b5-b9c0d")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[1] == "pod/web-6d9f7c8b5-b9c0d is ready"


def test_diagnose_goes_through_the_context_guard(kd: Any, tmp_path: Path) -> None:
    done = diagnose(kd, tmp_path, "deployment/web", allowed="minikube")
    assert done.returncode == 2
    assert "refusing kube context 'fake-kube'" in done.stderr
    assert done.stdout == ""


def test_diagnose_refuses_a_bad_target(kd: Any, tmp_path: Path) -> None:
    done = diagnose(kd, tmp_path, "service/web")
    assert done.returncode == 2
    assert "not a workload reference: 'service/web'" in done.stderr
