"""Rollouts against the double's Deployment controller with the real kubectl builds of the version matrix
(``kubectl_build``: the installed default, the oldest and the newest in ``make test``; every build in ``make
matrix``), and the harness's ``Kube.rollout_restart``/``rollout_status`` on them."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.kubectl_builds import KubectlBuild
from harness import process
from harness.errors import KubectlError, RolloutTerminal
from harness.kube import Kube
from specs.kube.conftest import require_kubectl
from specs.kube.kube_streams import double_for
from specs.kube.workloads import apply, available, deployment, eventually, pods

pytestmark = pytest.mark.timeout(120)
CRASH = {"crash-loop": "true", "backoff": "0.2"}


@pytest.fixture
def kdb(kubectl_env: KubectlBuild) -> Iterator[KubeHandle]:
    with double_for(kubectl_env) as handle:
        yield handle


def _kube(kd: KubeHandle, build: KubectlBuild) -> Kube:
    return Kube(
        kd.context,
        kd.namespace,
        allowed=(kd.context,),
        kubectl_path=build.path,
        kubeconfig=kd.kubeconfig,
        cache_dir=kd.cache_dir,
    )


def test_rollout_status_waits_through_a_rolling_update(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    apply(kdb, deployment("api", replicas=3), kubectl=kubectl_env.path)
    first = kdb.kubectl("rollout", "status", "deployment/api", "--timeout=60s", kubectl=kubectl_env.path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith('deployment "api" successfully rolled out')
    slow = {"start-delay": "300"}  # each new pod starts only when the spec moves the double's clock
    apply(kdb, deployment("api", replicas=3, faults=slow, image="registry.local/app:2.0"), kubectl=kubectl_env.path)
    watches = _watches(kdb)
    status = process.spawn(
        kdb.kubectl_argv("rollout", "status", "deployment/api", "--timeout=60s", kubectl=kubectl_env.path),
        env=kdb.env(),
    )
    try:
        eventually(lambda: _watches(kdb) > watches, what="rollout status to watch the Deployment")
        deadline = time.monotonic() + 60
        while status.poll() is None and time.monotonic() < deadline:
            kdb.clock.advance(300)
            time.sleep(0.2)
        out, err = status.communicate(timeout=10)
    finally:
        process.kill_group(status)
    assert status.returncode == 0, err.decode()
    lines = out.decode().strip().splitlines()
    assert lines[-1] == 'deployment "api" successfully rolled out'
    waiting = [line for line in lines[:-1] if line.startswith('Waiting for deployment "api" rollout to finish: ')]
    assert waiting, lines  # it watched the rollout progress, not just its end
    assert all(
        re.search(
            r"(new replicas have been updated|old replicas are pending termination|updated replicas "
            r"are available)\.\.\.$",
            line,
        )
        for line in waiting
    ), waiting
    assert len(waiting) >= 3  # one new pod at a time (maxSurge 1, maxUnavailable 0 for 3 replicas)
    images = {
        p["spec"]["containers"][0]["image"] for p in pods(kdb, "api") if not p["metadata"].get("deletionTimestamp")
    }
    assert images == {"registry.local/app:2.0"}


def test_rollout_status_fails_on_a_crash_loop_with_kubectls_message(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    apply(kdb, deployment("web", replicas=2, faults=CRASH, deadline=2), kubectl=kubectl_env.path)
    done = kdb.kubectl("rollout", "status", "deployment/web", "--timeout=60s", kubectl=kubectl_env.path)
    assert done.returncode == 1
    assert done.stderr.strip() == 'error: deployment "web" exceeded its progress deadline'
    restarts = [p["status"]["containerStatuses"][0]["restartCount"] for p in pods(kdb, "web")]
    assert all(n >= 1 for n in restarts), restarts


def test_rollout_restart_then_wait_for_available(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    apply(kdb, deployment("api", replicas=2), kubectl=kubectl_env.path)
    eventually(lambda: available(kdb, "api"), what="Available")
    before = {p["metadata"]["name"] for p in pods(kdb, "api")}
    restarted = kdb.kubectl("rollout", "restart", "deployment/api", kubectl=kubectl_env.path)
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.strip() == "deployment.apps/api restarted"
    waited = kdb.kubectl(
        "wait", "--for=condition=Available", "deployment/api", "--timeout=60s", kubectl=kubectl_env.path
    )
    assert waited.returncode == 0, waited.stderr
    assert "deployment.apps/api condition met" in waited.stdout
    done = kdb.kubectl("rollout", "status", "deployment/api", "--timeout=60s", kubectl=kubectl_env.path)
    assert done.returncode == 0, done.stderr
    after = {p["metadata"]["name"] for p in pods(kdb, "api") if not p["metadata"].get("deletionTimestamp")}
    assert len(after) == 2
    assert not after & before  # every pod replaced


def test_harness_rollout_restart_and_status(kdb: KubeHandle, kubectl_env: KubectlBuild) -> None:
    apply(kdb, deployment("api", replicas=2), kubectl=kubectl_env.path)
    kube = _kube(kdb, kubectl_env)
    assert kube.rollout_status("api", timeout=60) == 'deployment "api" successfully rolled out'
    kube.rollout_restart("api")
    assert kube.rollout_status("api", timeout=60) == 'deployment "api" successfully rolled out'
    assert len(kdb.store.list("replicasets", "default")[0]) == 2


def test_harness_rollout_status_of_a_crash_loop_fails_with_the_real_message(
    kdb: KubeHandle, kubectl_env: KubectlBuild
) -> None:
    apply(kdb, deployment("web", replicas=1, deadline=2), kubectl=kubectl_env.path)
    kube = _kube(kdb, kubectl_env)
    kube.rollout_status("web", timeout=60)
    kdb.controllers.kubelet.set_faults(selector={"app": "web"}, crash_loop=True, backoff=0.2)
    kube.rollout_restart("web")
    # Only kubectl's watch decides here (no re-read while it runs, no restart limit), so its own words are in the
    # message: the progress deadline is terminal, raised as a RolloutTerminal carrying kubectl's exit.
    with pytest.raises(RolloutTerminal) as caught:
        kube.rollout_status("web", timeout=60, restart_limit=1000, check_every=600)
    assert isinstance(caught.value.gave_up, KubectlError)
    assert caught.value.gave_up.returncode == 1
    assert 'kubectl: error: deployment "web" exceeded its progress deadline' in str(caught.value)


def _watches(kd: KubeHandle) -> int:
    """How many watches of Deployments the double has been asked for."""
    return sum(
        e.query_params.get("watch") == ["true"]
        for e in kd.requests(path_prefix="/apis/apps/v1/namespaces/default/deployments")
    )


# --- not on the matrix: the double's clock -------------------------------------------------------------------------


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve() as handle:
        yield handle


def test_the_default_progress_deadline_passes_when_the_doubles_clock_jumps(kd: KubeHandle) -> None:
    apply(kd, deployment("web", replicas=1, faults=CRASH))
    status = process.spawn(kd.kubectl_argv("rollout", "status", "deployment/web", "--timeout=60s"), env=kd.env())
    try:
        eventually(lambda: _watches(kd) > 0, what="rollout status to watch")
        time.sleep(0.5)
        assert status.poll() is None  # a crash loop alone does not end it: the 600 s deadline has not passed
        kd.clock.advance(601)
        out, err = status.communicate(timeout=30)
    finally:
        process.kill_group(status)
    assert status.returncode == 1, out
    assert err.decode().strip() == 'error: deployment "web" exceeded its progress deadline'
    d = kd.store.require("deployments", "default", "web")
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert progressing["message"].endswith("has timed out progressing.")
