"""Pods that run to completion (``restartPolicy: Never``/``OnFailure``) and the revision history of a rollback,
with the real kubectl against the double.

A real kubelet ends such a pod when its command exits; the double runs no command, so the pod stays ``Running``
until the ``run-seconds`` annotation, ``kubelet.kill`` or a registered runner ends it (fakes/kube/lifecycle.py).
Phases and terminated states follow the kubelet (``pkg/kubelet/kubelet_pods.go`` ``getPhase``); the Job's
``Complete`` condition the job controller (``pkg/controller/job``). The ``deployment.kubernetes.io/revision-history``
annotation follows ``SetNewReplicaSetAnnotations`` in ``pkg/controller/deployment/util/deployment_util.go``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import fakes.kube
from fakes.kube import KubeHandle
from fakes.kube.controllers.deployment import REVISION_HISTORY_CHARS, with_revision_history
from specs.kube.conftest import require_kubectl
from specs.kube.workloads import apply, condition, deployment, eventually, job, pods

pytestmark = pytest.mark.timeout(120)

REVISION = "deployment.kubernetes.io/revision"
HISTORY = "deployment.kubernetes.io/revision-history"


@pytest.fixture
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve() as handle:
        yield handle


def _phase(kd: KubeHandle, name: str) -> str | None:
    found = kd.store.get("pods", "default", name)
    return None if found is None else (found.get("status") or {}).get("phase")


def test_a_restart_never_pod_runs_until_it_is_killed_with_exit_0(kd: KubeHandle) -> None:
    done = kd.kubectl("run", "debug", "--image=registry.local/tools:1", "--restart=Never", "--", "sleep", "3600")
    assert done.returncode == 0, done.stderr
    eventually(lambda: _phase(kd, "debug") == "Running", what="Running")
    kd.clock.advance(3600)  # an hour on the double's clock: nothing says the command ended
    time.sleep(0.3)
    assert _phase(kd, "debug") == "Running"
    kd.controllers.kubelet.kill("default", "debug", exit_code=0)
    eventually(lambda: _phase(kd, "debug") == "Succeeded", what="Succeeded")
    state = kd.store.require("pods", "default", "debug")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (state["exitCode"], state["reason"]) == (0, "Completed")
    row = kd.kubectl("get", "pod", "debug").stdout.splitlines()[1].split()
    assert row[1:3] == ["0/1", "Completed"]


def test_a_job_stays_active_until_its_pod_is_ended(kd: KubeHandle) -> None:
    apply(kd, job("migrate", backoff_limit=0))
    eventually(lambda: [p for p in pods(kd) if (p.get("status") or {}).get("phase") == "Running"], what="running")
    kd.clock.advance(600)
    time.sleep(0.3)
    stored = kd.store.require("jobs", "default", "migrate")
    assert stored["status"].get("active") == 1
    assert condition(stored, "Complete") is None
    kd.controllers.kubelet.kill("default", pods(kd)[0]["metadata"]["name"], exit_code=0)
    done = kd.kubectl("wait", "--for=condition=complete", "job/migrate", "--timeout=30s")
    assert done.returncode == 0, done.stderr


def test_a_job_whose_template_says_run_seconds_completes_on_the_doubles_clock(kd: KubeHandle) -> None:
    apply(kd, job("report", faults={"run-seconds": "30"}))
    eventually(lambda: [p for p in pods(kd) if (p.get("status") or {}).get("phase") == "Running"], what="running")
    assert condition(kd.store.require("jobs", "default", "report"), "Complete") is None
    kd.clock.advance(31)
    done = kd.kubectl("wait", "--for=condition=complete", "job/report", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert [p["status"]["phase"] for p in pods(kd)] == ["Succeeded"]


def test_an_on_failure_pod_is_restarted_in_place_after_a_non_zero_kill(kd: KubeHandle) -> None:
    apply(kd, job("retry", restart_policy="OnFailure", backoff_limit=3))
    eventually(lambda: [p for p in pods(kd) if (p.get("status") or {}).get("phase") == "Running"], what="running")
    name = pods(kd)[0]["metadata"]["name"]
    kd.controllers.kubelet.kill("default", name, exit_code=2)
    eventually(
        lambda: kd.store.require("pods", "default", name)["status"]["containerStatuses"][0]["restartCount"] == 1,
        what="a restart in place",
    )
    last = kd.store.require("pods", "default", name)["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (2, "Error")
    assert _phase(kd, name) == "Running"


# --- revision-history -----------------------------------------------------------------------------------------


def _replicasets(kd: KubeHandle) -> dict[str, dict[str, str]]:
    """image -> the ReplicaSet's annotations."""
    return {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["metadata"].get("annotations") or {}
        for rs in kd.store.list("replicasets", "default")[0]
    }


def _rolled(kd: KubeHandle, revision: str) -> bool:
    d = kd.store.require("deployments", "default", "api")
    return (d["metadata"].get("annotations") or {}).get(REVISION) == revision and (d.get("status") or {}).get(
        "observedGeneration"
    ) == d["metadata"]["generation"]


def test_rollbacks_record_the_revisions_a_replicaset_had(kd: KubeHandle) -> None:
    apply(kd, deployment("api", replicas=1, image="registry.local/api:1"))
    eventually(lambda: _rolled(kd, "1"), what="revision 1")
    assert kd.kubectl("set", "image", "deployment/api", "app=registry.local/api:2").returncode == 0
    eventually(lambda: _rolled(kd, "2"), what="revision 2")
    assert HISTORY not in _replicasets(kd)["registry.local/api:1"]

    assert kd.kubectl("rollout", "undo", "deployment/api").returncode == 0  # back to :1, as revision 3
    eventually(lambda: _rolled(kd, "3"), what="revision 3")
    first = _replicasets(kd)["registry.local/api:1"]
    assert (first[REVISION], first[HISTORY]) == ("3", "1")

    assert kd.kubectl("rollout", "undo", "deployment/api").returncode == 0  # back to :2, as revision 4
    eventually(lambda: _rolled(kd, "4"), what="revision 4")
    second = _replicasets(kd)["registry.local/api:2"]
    assert (second[REVISION], second[HISTORY]) == ("4", "2")

    assert kd.kubectl("rollout", "undo", "deployment/api").returncode == 0  # :1 again, revision 5
    eventually(lambda: _rolled(kd, "5"), what="revision 5")
    first = _replicasets(kd)["registry.local/api:1"]
    assert (first[REVISION], first[HISTORY]) == ("5", "1,3")
    history = kd.kubectl("rollout", "history", "deployment/api").stdout.split()
    assert [w for w in history if w.isdigit()] == ["4", "5"]


def test_the_history_annotation_drops_its_oldest_revisions_at_2000_characters() -> None:
    assert with_revision_history("", "7") == "7"
    assert with_revision_history("1,3", "5") == "1,3,5"
    long = ",".join(str(n) for n in range(100, 100 + 499))  # 499 revisions of 3 digits: 1995 characters
    assert len(long) == 1995
    assert with_revision_history(long, "9999") == long + ",9999"  # exactly 2000 characters: kept whole
    grown = with_revision_history(long, "99999")
    assert grown is not None
    assert len(grown) <= REVISION_HISTORY_CHARS
    assert grown.endswith(",99999")
    assert grown.startswith("101,")  # the oldest, 100, dropped to make room
