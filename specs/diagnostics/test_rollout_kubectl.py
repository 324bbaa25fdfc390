"""Rollout failures explained through the real kubectl, against the Kubernetes API double holding recorded objects.

``Kube.rollout_status`` and a ``wait_for`` on ``rollout_complete`` raise ``RolloutFailed`` (an ``AssertionError``,
and a ``WaitTimeout``) whose first line is the cause; ``python -m harness diagnose`` prints the same explanation
through the context guard.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.kube.objects import bare_double, load_objects
from harness import Kube, RolloutFailed, RolloutTerminal, WaitTimeout, explain_workload, rollout_complete, wait_for_sync
from harness.errors import KubectlError, StopWaiting
from harness.testing.apiserver import refusing_port, silent_port, write_kubeconfig

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
    first, second, third = message.splitlines()[:3]
    assert first == (
        "deployment/web did not roll out: the new pod crash-loops (container app, last terminated Error exit 1)"
    )
    assert second == "  gave up: error: timed out waiting for the condition"
    assert third.startswith("      kubectl exited 1: kubectl")
    # Cause first: no chained exception whose banner would print kubectl's words before the explanation.
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ is True
    assert isinstance(caught.value.gave_up, KubectlError)
    assert isinstance(caught.value, AssertionError)
    assert caught.value.explanation.healthy is False
    assert "Warning BackOff (x4)" in message


def test_progress_deadline_ends_kubectl_at_once_and_is_named(kd: Any, shop: Kube) -> None:
    load_into(kd, "progress_deadline")
    with pytest.raises(RolloutFailed) as caught:
        shop.rollout_status("web", timeout=60, grace=5)  # kubectl gives up by itself on ProgressDeadlineExceeded
    first, second, third = str(caught.value).splitlines()[:3]
    assert first.startswith(
        'deployment/web did not roll out: ProgressDeadlineExceeded (ReplicaSet "web-6d9f7c8b5" has '
        "timed out progressing.)"
    )
    assert isinstance(caught.value, RolloutTerminal)
    assert second.startswith("  terminal, not a timeout: ProgressDeadlineExceeded; waiting longer cannot help")
    assert third == '  kubectl: error: deployment "web" exceeded its progress deadline'


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
    assert caught.value.__cause__ is None  # the wait's own message is inside, after the explanation
    assert isinstance(caught.value.gave_up, WaitTimeout)
    assert caught.value.summary is not None
    first, second = str(caught.value).splitlines()[:2]
    assert first.startswith("deployment/web did not roll out: the new pod cannot be scheduled (0/1 nodes are available")
    assert second.startswith("  gave up: timed out after 1.5s waiting for deployment/web to roll out")


def test_a_wait_stopped_by_the_progress_deadline_explains_itself_too(kd: Any, shop: Kube) -> None:
    load_into(kd, "progress_deadline")
    with pytest.raises(RolloutFailed) as caught:
        wait_for_sync("deployment/web to roll out", rollout_complete(shop, "deployment/web"), timeout=30, interval=0.2)
    assert isinstance(caught.value, RolloutTerminal)
    assert isinstance(caught.value.gave_up, StopWaiting)
    assert str(caught.value).splitlines()[1].startswith("  terminal, not a timeout: ProgressDeadlineExceeded;")
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
    return run_diagnose(tmp_path, *args, "--kubeconfig", kd.kubeconfig, "--context", kd.context, allowed=allowed)


def run_diagnose(tmp_path: Path, *args: str, allowed: str = "fake-kube") -> subprocess.CompletedProcess[str]:
    """``python -m harness diagnose args...`` in ``tmp_path``, whose pyproject.toml allows ``allowed``."""
    (tmp_path / "pyproject.toml").write_text(f'[tool.harness]\nallowed_contexts = ["{allowed}"]\nnamespace = "shop"\n')
    return run_in(tmp_path, *args)


def run_in(folder: Path, *args: str, kubeconfig: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m harness diagnose args...`` with ``folder`` as the current folder (and ``$KUBECONFIG``) and as
    ``$HOME``, so kubectl's discovery cache (``~/.kube/cache``) is written there, not in the user's home."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(folder))
    if kubeconfig is not None:
        env["KUBECONFIG"] = kubeconfig
    return subprocess.run(
        [sys.executable, "-m", "harness", "diagnose", *args],
        cwd=folder,
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
    assert lines[0].startswith("deployment/web did not roll out: the new pod is stuck in ImagePullBackOff")
    assert lines[-1] == "(context fake-kube, namespace shop)"
    assert "timeline (UTC):" in done.stdout


def test_diagnose_exits_0_for_a_ready_pod(kd: Any, shop: Kube, tmp_path: Path) -> None:
    load_into(kd, "old_pods_serving")
    done = diagnose(kd, tmp_path, "pod/web-6d9f7c8b5-b9c0d")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "pod/web-6d9f7c8b5-b9c0d is ready"


def test_diagnose_goes_through_the_context_guard(kd: Any, tmp_path: Path) -> None:
    done = diagnose(kd, tmp_path, "deployment/web", allowed="minikube")
    assert done.returncode == 2
    assert "refusing kube context 'fake-kube'" in done.stderr
    assert done.stdout == ""


def test_diagnose_refuses_a_bad_target(kd: Any, tmp_path: Path) -> None:
    done = diagnose(kd, tmp_path, "service/web")
    assert done.returncode == 2
    assert "not a workload reference: 'service/web'" in done.stderr


def test_diagnose_reads_a_bare_name_as_a_deployment(kd: Any, shop: Kube, tmp_path: Path) -> None:
    load_into(kd, "imagepull")
    done = diagnose(kd, tmp_path, "web")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].startswith("deployment/web did not roll out: the new pod is stuck in ImagePull")


def test_diagnose_names_its_own_flag_and_an_allowed_context_of_the_kubeconfig_in_the_guards_fix(
    kd: Any, tmp_path: Path
) -> None:
    """The fix is built from the allow-list and the kubeconfig: a ``kind-*`` allow-list refusal suggests the kind
    context the kubeconfig has, picked with this command's flag; never minikube, never pytest's flag."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9", context="kind-dev")
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nallowed_contexts = ["kind-*"]\n')
    two = f"{kd.kubeconfig}{os.pathsep}{kubeconfig}"  # kubectl merges them: fake-kube and kind-dev
    refused = run_in(tmp_path, "web", "--context", kd.context, kubeconfig=two)
    assert refused.returncode == 2
    assert "refusing kube context 'fake-kube': the harness may only touch kind-*" in refused.stderr
    assert "`kubectl config use-context kind-dev`" in refused.stderr
    assert "`python -m harness diagnose NAME --context kind-dev`" in refused.stderr
    assert f"[tool.harness] allowed_contexts in {tmp_path / 'pyproject.toml'}" in refused.stderr
    assert "minikube" not in refused.stderr
    assert "--kube-context" not in refused.stderr
    none_allowed = diagnose(kd, tmp_path, "web", allowed="kind-*")
    assert "no context in your kubeconfig is allowed: create a local cluster whose context is allowed: " in (
        none_allowed.stderr
    )
    assert "`kind create cluster`" in none_allowed.stderr
    assert "minikube" not in none_allowed.stderr
    missing = run_diagnose(tmp_path, "web", "--kubeconfig", kd.kubeconfig, "--context", "kind-x", allowed="kind-*")
    assert missing.returncode == 2
    assert "context 'kind-x' is not in the kubeconfig" in missing.stderr
    assert "Fix: pass --context with a context that exists" in missing.stderr


def test_diagnose_works_from_any_folder_and_says_when_it_uses_the_defaults(kd: Any, shop: Kube, tmp_path: Path) -> None:
    load_into(kd, "imagepull")
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "pyproject.toml").write_text('[tool.harness]\nallowed_contexts = ["fake-*"]\nnamespace = "shop"\n')
    args = ["--kubeconfig", kd.kubeconfig, "--context", kd.context]
    configured = run_in(elsewhere, "web", *args, "--config", str(project))
    assert configured.returncode == 1, configured.stderr
    assert configured.stdout.splitlines()[-1] == "(context fake-kube, namespace shop)"  # the cause comes first
    assert "using the defaults" not in configured.stderr
    defaults = run_in(elsewhere, "web", *args)
    assert defaults.returncode == 2
    assert f"no [tool.harness] in a pyproject.toml at or above {elsewhere}: using the defaults" in defaults.stderr
    assert "the harness's default allow-list of local cluster contexts" in defaults.stderr
    assert not re.search(r"allowed_contexts in \S*pyproject", defaults.stderr)  # none was read, so none is quoted
    typo = run_in(elsewhere, "web", *args, "--config", str(elsewhere / "missing.toml"))
    assert typo.returncode == 2
    assert f"harness configuration '{elsewhere / 'missing.toml'}' does not exist" in typo.stderr


def test_diagnose_help_lists_the_exit_statuses() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "diagnose", "--help"],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = " ".join(done.stdout.split())  # argparse wraps the epilog
    assert done.returncode == 0
    assert "exit status: 0 rolled out" in text
    assert "1 did not roll out" in text
    assert "2 bad arguments" in text
    assert "3 the cluster cannot be used" in text


# --- diagnose against an API server that cannot be used: the plugin's check, its words, exit 3 ------------------


def test_diagnose_on_a_stopped_cluster_exits_3_naming_it_as_the_plugin_does(tmp_path: Path) -> None:
    with refusing_port() as port:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}", context="minikube")
        done = run_diagnose(tmp_path, "web", "--kubeconfig", str(kubeconfig), allowed="minikube")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout == ""  # no explanation of a rollout nobody could read
    assert done.stderr.startswith(
        f"python -m harness diagnose: cluster unusable: the API server of context 'minikube' (http://127.0.0.1:{port}) "
        "refused the connection on GET /version; nothing listens there: the cluster is stopped; start it with "
        "`minikube start`"  # the context is minikube: its own command
    )


def test_diagnose_on_a_paused_vm_exits_3_within_its_budget(tmp_path: Path) -> None:
    with silent_port() as port:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}", context="minikube")
        started = time.monotonic()
        done = run_diagnose(tmp_path, "web", "--kubeconfig", str(kubeconfig), "--budget", "3", allowed="minikube")
        took = time.monotonic() - started
    assert done.returncode == 3, done.stdout + done.stderr
    assert "cluster unusable: the API server of context 'minikube'" in done.stderr
    said = re.search(
        r"did not answer within ([0-9.]+)s on GET /version; the cluster \(or its VM\) may be paused or overloaded",
        done.stderr,
    )
    assert said is not None, done.stderr
    assert float(said[1]) <= 3.0  # the check's bound is what is left of the budget
    # The exact bound is checked above on diagnose's own clock; the wall clock adds the interpreter's start, which
    # took over 4 s on a loaded 2-core machine. A hang would run into the 60 s timeout of run_diagnose.
    assert took < 3 + 25


def test_diagnose_reads_a_quota_refusal_the_real_controllers_recorded_cause_first(
    kd: Any, shop: Kube, tmp_path: Path
) -> None:
    load_into(kd, "real_quota_refused")  # written by the real kube-controller-manager, read back by the real kubectl
    done = diagnose(kd, tmp_path, "deployment/web")
    assert done.returncode == 1, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("deployment/web did not roll out: ReplicaFailure FailedCreate: pods ")
    assert first.endswith(
        "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1 "
        "(fix: raise the pods limit of ResourceQuota pods or ask for less)"
    )


def test_a_refusal_with_no_pod_of_the_rollout_is_the_headline_and_ends_rollout_status(kd: Any, shop: Kube) -> None:
    # Recorded from the real controllers: a ResourceQuota of 0 pods refused every pod; none of the rollout exists.
    load_into(kd, "real_quota_no_pod")
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "shop"}}
    load_objects(
        kd, [{**quota, "spec": {"hard": {"pods": "0"}}, "status": {"hard": {"pods": "0"}, "used": {"pods": "0"}}}]
    )
    started = time.monotonic()
    with pytest.raises(RolloutTerminal) as caught:
        shop.rollout_status("web", timeout=60, check_every=0.5)
    assert time.monotonic() - started < 30, "the wait ran out its budget instead of stopping"
    first, second = str(caught.value).splitlines()[:2]
    assert first.startswith('deployment/web did not roll out: ReplicaFailure FailedCreate: pods "web-'), first
    assert "is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0" in first
    assert first.endswith("; ResourceQuota q now: pods 0/0")
    assert second.startswith("  terminal, not a timeout: pods refused at admission: ResourceQuota q, which the")
    assert "not explained" not in str(caught.value)


def test_a_refusal_explains_a_timed_out_wait_with_no_pod_cause_first(kd: Any, shop: Kube) -> None:
    load_into(kd, "real_quota_no_pod")  # the quota itself is not there to read: the refusal's numbers count
    with pytest.raises(RolloutFailed) as caught:
        wait_for_sync("web to roll out", rollout_complete(shop, "deployment/web"), timeout=30, interval=0.3)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("deployment/web did not roll out: ReplicaFailure FailedCreate: pods "), lines[0]
    assert "not explained" not in str(caught.value)
