"""Evidence of failed specs, through inner pytest sessions whose ``kube`` is the Kubernetes API double read by the real
kubectl: a folder per failed spec, written as it goes, bounded, indexed, printed in the summary and in JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .plugin_support import evidence_folder, index, inner_session, run_folder, steps

CRASHLOOP_SPEC = """
import pytest

@pytest.mark.evidence("deployment/web")
def test_rollout(kube):
    assert False, "the web rollout did not finish"
"""


def test_a_failed_spec_leaves_an_evidence_folder_of_its_deployment(pytester: pytest.Pytester, tmp_path: Path) -> None:
    inner_session(pytester, "crashloop", CRASHLOOP_SPEC)
    art = tmp_path / "art"
    result = pytester.runpytest("--artifacts", str(art), f"--junitxml={tmp_path / 'junit.xml'}")
    result.assert_outcomes(failed=1)
    folder = evidence_folder(art, "test_rollout")
    result.stdout.fnmatch_lines(
        ["*evidence of failed specs (1)*", f"test_inner.py::test_rollout: evidence in *{folder.name} (* steps*"]
    )
    done = steps(folder)
    assert index(folder)["finished"] is True
    assert done["the failure"]["status"] == "ok"
    assert "the web rollout did not finish" in (folder / "failure.txt").read_text()
    assert done["events of the namespace, by time"]["status"] == "ok"
    events = (folder / "events.txt").read_text().splitlines()
    assert events[0].startswith("14:00:00 Normal ScalingReplicaSet")
    assert events[-1].startswith("14:01:50 Warning BackOff (x4)")
    assert done["kubectl describe deployment/web"]["status"] == "ok"
    assert "Name:" in (folder / "deployment-web.describe.txt").read_text()
    kinds = [line for line in (folder / "deployment-web.yaml").read_text().splitlines() if line.startswith("kind: ")]
    assert kinds == ["kind: Deployment", "kind: ReplicaSet", "kind: ReplicaSet", "kind: Pod", "kind: Pod", "kind: Pod"]
    for pod in ("web-5c8d7b9f4-a1b2c", "web-5c8d7b9f4-d3e4f", "web-6d9f7c8b5-x2x7q"):
        assert done[f"kubectl describe pod/{pod}"]["status"] == "ok"
        assert f"log of {pod}/app" in done
    assert "previous log of web-6d9f7c8b5-x2x7q/app" in done  # it restarted; the others did not
    assert "previous log of web-5c8d7b9f4-a1b2c/app" not in done
    explanation = (folder / "deployment-web.explanation.txt").read_text()
    assert explanation.startswith("deployment/web did not roll out: the new pod crash-loops")
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["harness.evidence"] == str(folder)


def test_the_index_says_how_long_each_step_took_and_what_ran(pytester: pytest.Pytester, tmp_path: Path) -> None:
    inner_session(pytester, "crashloop", CRASHLOOP_SPEC)
    pytester.runpytest("--artifacts", str(tmp_path / "art")).assert_outcomes(failed=1)
    folder = evidence_folder(tmp_path / "art", "test_rollout")
    data = index(folder)
    for step in data["steps"]:
        assert step["status"] in ("ok", "failed", "not-found", "not-started", "none", "cut")
        assert step["seconds"] is not None
        assert step["seconds"] >= 0
    describe = steps(folder)["kubectl describe deployment/web"]
    assert describe["command"] == "kubectl describe deployment web"
    assert describe["file"] == "deployment-web.describe.txt"
    assert describe["bytes"] == (folder / "deployment-web.describe.txt").stat().st_size
    text = (folder / "INDEX.txt").read_text()
    assert text.startswith("evidence of test_inner.py::test_rollout (failed in call): complete,")
    assert "deployment-web.describe.txt" in text


def test_an_object_that_does_not_exist_is_not_found_in_the_evidence(pytester: pytest.Pytester, tmp_path: Path) -> None:
    inner_session(
        pytester,
        "crashloop",
        """
import pytest

@pytest.mark.evidence("deployment/nope", "secret/missing", "pods:app=nothing")
def test_missing(kube):
    assert False
""",
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(failed=1)  # a failure of the spec, not a collection error
    done = steps(evidence_folder(tmp_path / "art", "test_missing"))
    assert done["read deployment/nope with its ReplicaSets and pods"]["status"] == "not-found"
    assert done["kubectl describe deployment/nope"]["status"] == "not-found"
    assert 'deployments.apps "nope" not found' in done["kubectl describe deployment/nope"]["error"]
    assert done["kubectl get secret/missing -o yaml"]["status"] == "not-found"
    assert done["pods -l app=nothing"]["status"] == "none"
    assert done["explain deployment/nope"]["status"] == "ok"
    assert "INTERNALERROR" not in result.stdout.str()


def test_a_container_that_never_started_has_its_log_recorded_as_not_started(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    inner_session(pytester, "imagepull", CRASHLOOP_SPEC)
    pytester.runpytest("--artifacts", str(tmp_path / "art")).assert_outcomes(failed=1)
    folder = evidence_folder(tmp_path / "art", "test_rollout")
    step = steps(folder)["log of web-6d9f7c8b5-k8s9z/app"]
    assert step["status"] == "not-started"
    assert step["error"] == (
        "the container never started (ImagePullBackOff: Back-off pulling image "
        '"registry.local/web:missing"); it has no log'
    )
    assert step["file"] is None


def test_collection_stays_within_its_budget_when_the_api_server_is_slow(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    inner_session(
        pytester,
        "crashloop",
        """
import pytest

@pytest.mark.evidence("deployment/web")
def test_slow(kd, kube):
    kd.fault("latency", delay=2.0)   # every request to the API server now takes 2 s more
    assert False
""",
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"), "--evidence-budget", "4")
    result.assert_outcomes(failed=1)
    data = index(evidence_folder(tmp_path / "art", "test_slow"))
    assert data["finished"] is True
    assert data["elapsed"] < 4 + 6.0  # generous: the budget, plus killing and reaping the last kubectl children
    cut = [s for s in data["steps"] if s["status"] == "cut"]
    assert cut
    assert all("4s budget" in s["error"] for s in cut)
    explained = steps(evidence_folder(tmp_path / "art", "test_slow"))["explain deployment/web"]
    assert explained["status"] == "ok"  # made from what was read: memory only, never cut


def test_a_failure_in_teardown_is_collected_too(pytester: pytest.Pytester, tmp_path: Path) -> None:
    inner_session(
        pytester,
        "crashloop",
        """
import pytest

@pytest.fixture
def flaky_teardown(kube):
    yield
    raise RuntimeError("could not restore the stub agent's pacing")

@pytest.mark.evidence("deployment/web")
def test_passes_then_teardown_fails(kube, flaky_teardown):
    pass

def test_later(kube):  # keeps the module's double up through the first spec's teardown
    pass
""",
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(passed=2, errors=1)
    folder = evidence_folder(tmp_path / "art", "test_passes_then_teardown_fails")
    failure = (folder / "failure.txt").read_text()
    assert "failed in teardown" in failure
    assert "could not restore the stub agent's pacing" in failure
    assert steps(folder)["kubectl describe deployment/web"]["status"] == "ok"


MIXED_FAILURES = """
import pytest

@pytest.fixture
def flaky_teardown(kube):
    yield
    raise RuntimeError("could not restore the stub agent's pacing")

@pytest.mark.evidence("deployment/web")
def test_fails_twice(kube, flaky_teardown):
    assert False, "the web rollout did not finish"

def test_rollout(kube):
    assert False, "no ready pod"

def test_plain():
    assert 1 == 2

def test_later(kube):  # keeps the module's double up through the first spec's teardown
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_evidence_count_accounts_for_every_failed_spec_pytest_counts(
    pytester: pytest.Pytester, tmp_path: Path, workers: list[str]
) -> None:
    # Said "evidence of failed specs (2)" beside pytest's "3 failed, 1 error": a spec failing in call and teardown is
    # counted twice by pytest, and a plain spec's failure had no row at all.
    inner_session(pytester, "crashloop", MIXED_FAILURES)
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"), "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=1, failed=3, errors=1)
    out = result.stdout.str()
    heading = [line for line in out.splitlines() if "evidence of failed specs" in line]
    assert len(heading) == 1, out
    assert "(2 of 3 failed specs; pytest counts 1 of them twice (failed in two phases))" in heading[0]
    rows = {line.split(": ", 1)[0].rsplit("/", 1)[-1]: line for line in out.splitlines() if ": evidence in " in line}
    assert rows.keys() == {"test_inner.py::test_fails_twice", "test_inner.py::test_rollout"}, out
    assert rows["test_inner.py::test_fails_twice"].endswith("; failed in call and teardown")
    assert "failed in" not in rows["test_inner.py::test_rollout"].split(" evidence in ")[1]
    result.stdout.fnmatch_lines(["*::test_plain: no evidence: it reached no cluster, fake or port-forward"])


def test_waits_and_fake_journals_are_part_of_the_evidence(pytester: pytest.Pytester, tmp_path: Path) -> None:
    inner_session(
        pytester,
        "crashloop",
        """
from harness import wait_for_sync

def test_waits(kd, kube):
    kube.kubectl("get", "pods")
    wait_for_sync("a pod called never", lambda: None, timeout=0.6, interval=0.1)
""",
    )
    pytester.runpytest("--artifacts", str(tmp_path / "art")).assert_outcomes(failed=1)
    folder = evidence_folder(tmp_path / "art", "test_waits")
    waits = (folder / "waits.txt").read_text().splitlines()
    assert waits[0].startswith("a pod called never: timeout after 0.6")
    assert waits[1].lstrip().startswith("#1 ")
    data = json.loads((folder / "waits.json").read_text())
    assert data[0]["outcome"] == "timeout"
    assert len(data[0]["attempts"]) >= 2
    journal = [json.loads(line) for line in (folder / "journal-kd.jsonl").read_text().splitlines()]
    assert any(entry["path"] == "/api/v1/namespaces/shop/pods" and entry["method"] == "GET" for entry in journal)


def test_a_spec_with_nothing_of_a_cluster_gets_no_folder(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_inner="def test_plain():\n    assert 1 == 2\n")
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(failed=1)
    assert not (tmp_path / "art").exists()  # nothing to keep: no run folder, no report
    assert "evidence of failed specs" not in result.stdout.str()


def test_an_unwritable_artifacts_folder_is_a_clear_error_at_session_start(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    pytester.makepyfile(test_inner="def test_never_runs():\n    pass\n")
    result = pytester.runpytest("--artifacts", str(blocker / "art"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: the artifacts folder '{blocker / 'art'}' is not writable (*): evidence of "
            "failed specs could not be kept; pass --artifacts DIR with a writable folder"
        ]
    )
    assert "Traceback" not in result.stderr.str()
    assert "test_never_runs" not in result.stdout.str()


def test_a_spec_killed_by_pytest_timeout_mid_wait_still_gets_its_evidence(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    inner_session(
        pytester,
        "crashloop",
        """
import pytest

@pytest.mark.timeout(4)
def test_stuck_rollout(kube):
    kube.rollout_status("web", timeout=120)   # kubectl waits far past the spec's own timeout
""",
    )
    art = tmp_path / "art"
    result = pytester.runpytest_subprocess("--artifacts", str(art), "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Failed: Timeout (>4.0s) from pytest-timeout*"])
    folder = evidence_folder(art, "test_stuck_rollout")
    assert "Timeout (>4.0s) from pytest-timeout" in (folder / "failure.txt").read_text()
    data = index(folder)
    assert data["finished"] is True
    done = steps(folder)
    assert done["kubectl describe deployment/web"]["status"] == "ok"  # the workload rollout_status was waiting on
    assert (
        (folder / "deployment-web.explanation.txt")
        .read_text()
        .startswith("deployment/web did not roll out: the new pod crash-loops")
    )
    assert "harness leak audit" not in result.stdout.str()  # the interrupted kubectl's group was killed


def test_a_port_forward_that_died_leaves_kubectls_stderr_in_the_evidence(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    inner_session(
        pytester,
        "crashloop",
        """
import socket
from harness import wait_for_sync

POD = "web-6d9f7c8b5-x2x7q"

def test_forward_dies(kd, kube, forwards):
    with socket.socket() as app:   # the pod's port 8080
        app.bind(("127.0.0.1", 0))
        app.listen(8)
        kd.portforward.map("shop", POD, 8080, "127.0.0.1", app.getsockname()[1])
        forward = forwards.get(kube, f"pod/{POD}", 8080)
        kd.portforward.fail_next("shop", POD)
        with socket.create_connection(("127.0.0.1", forward.local_port), timeout=5) as client:
            client.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            wait_for_sync("kubectl to exit", lambda: forward.exit, timeout=20, interval=0.1)
    assert False, "the gateway hop died"
""",
    )
    art = tmp_path / "art"
    pytester.runpytest("--artifacts", str(art)).assert_outcomes(failed=1)
    folder = evidence_folder(art, "test_forward_dies")
    text = (folder / "port-forwards.txt").read_text()
    assert text.startswith("pod/web-6d9f7c8b5-x2x7q :8080 -> local ")
    assert ": kubectl exited rc=1" in text.splitlines()[0]
    assert "stderr | " in text
    assert "an error occurred forwarding" in text
    page = (run_folder(art) / "report.html").read_text()
    assert 'data-kind="forward-died"' in page


def test_a_forward_opened_with_port_forward_directly_is_in_the_evidence_and_the_report(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """The README's first example opens its forward with ``port_forward()``, no pool: it is recorded all the same."""
    inner_session(
        pytester,
        "crashloop",
        """
import socket
from harness import port_forward

POD = "web-6d9f7c8b5-x2x7q"

def test_direct(kd, kube):
    with socket.socket() as app:   # the pod's port 8080
        app.bind(("127.0.0.1", 0))
        app.listen(8)
        kd.portforward.map("shop", POD, 8080, "127.0.0.1", app.getsockname()[1])
        with port_forward(kube, f"pod/{POD}", 8080) as forward:
            socket.create_connection(("127.0.0.1", forward.local_port), timeout=5).close()
    assert False, "the reply never came"
""",
    )
    art = tmp_path / "art"
    pytester.runpytest("--artifacts", str(art)).assert_outcomes(failed=1)
    text = (evidence_folder(art, "test_direct") / "port-forwards.txt").read_text()
    assert text.startswith("pod/web-6d9f7c8b5-x2x7q :8080 -> local ")
    page = (run_folder(art) / "report.html").read_text()
    assert "port-forward pod/web-6d9f7c8b5-x2x7q" in page


def test_agent_runs_created_since_the_specs_since_are_kept(pytester: pytest.Pytester, tmp_path: Path) -> None:
    inner_session(
        pytester,
        None,
        """
import json
import pytest

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "agentruns.core.controller-agent.dev"},
       "spec": {"group": "core.controller-agent.dev", "scope": "Namespaced",
                "names": {"plural": "agentruns", "singular": "agentrun", "kind": "AgentRun"},
                "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}

def run(name):
    return {"apiVersion": "core.controller-agent.dev/v1alpha1", "kind": "AgentRun",
            "metadata": {"name": name, "namespace": "shop"}, "spec": {"agentRef": "stub-agent"}}

@pytest.mark.evidence("agentruns")
def test_turn(kd, kube, since):
    kube.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    kd.store.create("agentruns.core.controller-agent.dev", run("run-of-this-turn"))
    assert False, "timed out waiting for the reply"
""",
    )
    pytester.makeconftest(
        pytester.path.joinpath("conftest.py").read_text()
        + """

@pytest.fixture(autouse=True)
def shop(kd):
    if kd.store.get("namespaces", None, "shop") is None:
        kd.store.create("namespaces", {"metadata": {"name": "shop"}})
"""
    )
    pytester.runpytest("--artifacts", str(tmp_path / "art")).assert_outcomes(failed=1)
    folder = evidence_folder(tmp_path / "art", "test_turn")
    assert steps(folder)["AgentRuns created since the spec's since"]["status"] == "ok"
    runs = (folder / "agentruns.yaml").read_text()
    assert "name: run-of-this-turn" in runs
    assert "agentRef: stub-agent" in runs


def test_a_cluster_spec_refused_by_the_context_guard_gets_no_folder(
    pytester: pytest.Pytester, kubectl_standin: object, tmp_path: Path
) -> None:
    kubectl_standin.set_current_context("gke_prod_europe")  # type: ignore[attr-defined]
    pytester.makepyfile(
        test_inner="""
import pytest

@pytest.mark.cluster
def test_needs_the_cluster(kube):
    kube.kubectl("get", "pods")
"""
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(errors=1)
    assert not (tmp_path / "art").exists()  # refused before its kube: it touched nothing, so no run folder or report


@pytest.mark.parametrize("target", ["web", "pods:", "deployment/", "a/b/c"])
def test_an_evidence_target_that_names_nothing_is_a_usage_error_at_collection(
    pytester: pytest.Pytester, tmp_path: Path, target: str
) -> None:
    # A bare name used to be read as a Deployment: the spec's evidence then held nothing of what was meant.
    pytester.makepyfile(
        test_inner=f"import pytest\n\n@pytest.mark.evidence({target!r})\ndef test_x():\n    assert False\n"
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: test_inner.py::test_x: @pytest.mark.evidence({target!r}) names nothing to keep: give kind/name*"]
    )
