"""The plugin's session around cluster specs: what the header says, one API server check that ends every cluster
spec at once when the cluster is down, cluster specs that never overlap under xdist, budgets read from the
timer pytest-timeout really starts, and a quiet summary on green runs.

Inner pytest runs see the ``local_cluster`` fixture's stand-in API server and kubectl stand-in (specs/guard/
conftest.py); no real cluster is involved.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.pytest_plugin import _require_timer_hooks
from harness.testing.apiserver import StubApiServer, refusing_port, silent_port, write_kubeconfig
from harness.testing.standin import KubectlStandIn

THREE_WAITING_CLUSTER_SPECS = """
import pytest
from harness import wait_for_sync

@pytest.mark.cluster
@pytest.mark.parametrize("deployment", ["orchestrator", "gateway", "qdrant"])
def test_available(kube, deployment):
    wait_for_sync(f"deployment/{deployment} to be Available",
                  lambda: kube.kubectl_json("get", "deployment", deployment), timeout=120.0, interval=1.0)
"""


def _point_kubeconfig_at(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "down-kubeconfig", server, context="minikube")))


@pytest.mark.parametrize(
    "down, said",
    [
        (
            "refused",
            "refused the connection on GET /version; nothing listens there: the cluster is stopped; start it with "
            "`minikube start`",  # the context is minikube: its own command
        ),
        ("silent", "did not answer within 5.0s on GET /version; the cluster (or its VM) may be paused or overloaded"),
        ("unauthorized", "rejected the credentials (401 Unauthorized) on GET /version"),
        ("no-namespace", "namespace 'controller-agent' does not exist on the API server of context 'minikube'"),
    ],
    ids=["refused", "silent", "unauthorized", "no-namespace"],
)
def test_an_unusable_cluster_ends_every_cluster_spec_at_set_up_with_one_line(
    pytester: pytest.Pytester,
    local_cluster: StubApiServer,
    kubectl_standin: KubectlStandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    down: str,
    said: str,
) -> None:
    pytester.makepyfile(THREE_WAITING_CLUSTER_SPECS)
    with refusing_port() as refused, silent_port() as silent, StubApiServer(status_for={"*": 401}) as rejecting:
        server = {
            "refused": f"http://127.0.0.1:{refused}",
            "silent": f"http://127.0.0.1:{silent}",
            "unauthorized": rejecting.url,
            "no-namespace": StubApiServer().url,
        }[down]
        if down == "no-namespace":
            server = local_cluster.url
            local_cluster.objects.clear()
        _point_kubeconfig_at(server, tmp_path, monkeypatch)
        started = time.monotonic()
        result = pytester.runpytest("-rE", "-p", "no:randomly")
        took = time.monotonic() - started
    result.assert_outcomes(errors=3)
    out = result.stdout.lines
    causes = [line for line in out if line.startswith("cluster unusable: ")]  # each spec's set-up error: one line
    assert len(causes) == 3
    assert all(said in line and f"({server})" in line for line in causes)
    summary = out[
        out.index(next(line for line in out if "cluster specs not run (3): the cluster is unusable" in line)) :
    ]
    assert said in summary[1]  # the cause once, on one line, naming context and server
    assert "context 'minikube'" in summary[1]
    assert [line.strip() for line in summary[2:5]] == [
        f"test_an_unusable_cluster_ends_every_cluster_spec_at_set_up_with_one_line.py::test_available[{name}]"
        for name in ("orchestrator", "gateway", "qdrant")
    ]
    assert took < 30.0  # one bounded check, not three 120 s waits
    assert not [argv for argv in kubectl_standin.argvs() if "deployment" in argv]  # no spec body ran


def test_the_header_names_context_server_and_namespace_before_anything_runs(
    pytester: pytest.Pytester, local_cluster: StubApiServer
) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.cluster\ndef test_c():\n    pass\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            f"harness: cluster specs use kube context 'minikube', API server {local_cluster.url}, namespace "
            f"'controller-agent' (kubectl *)",
        ]
    )


@pytest.mark.parametrize(
    "dist, how",
    [
        ("loadgroup", "one shard, one at a time on one worker: one kube context"),
        (
            "load",
            "one shard, on any of the 2 workers, one at a time per kube context (the cluster lock): --dist load "
            "(only loadgroup keeps a shard on one worker)",
        ),
    ],
)
def test_under_xdist_the_header_and_how_the_cluster_specs_run_come_before_anything_runs(
    pytester: pytest.Pytester, local_cluster: StubApiServer, dist: str, how: str
) -> None:
    pytester.makepyfile(FIVE_CLUSTER_SPECS, test_free="def test_free():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "--dist", dist, "-p", "no:randomly", timeout=120)
    result.assert_outcomes(passed=6)
    out = result.stdout.lines
    header = (
        f"harness: cluster specs use kube context 'minikube', API server {local_cluster.url}, namespace "
        "'controller-agent' (kubectl "
    )
    said = [i for i, line in enumerate(out) if line.startswith(header)]
    assert len(said) == 1, out  # once, though both workers collected the specs: the same context for both
    line_start = f"harness: cluster specs: {how} (no durations recorded: "
    split = [i for i, line in enumerate(out) if line.startswith(line_start)]
    assert split == [said[0] + 1], out
    first_result = next(i for i, line in enumerate(out) if line.startswith("......"))
    assert split[0] < first_result  # before anything runs, not in the summary only


def test_under_xdist_a_run_that_collects_no_cluster_spec_prints_nothing_of_the_harness(
    pytester: pytest.Pytester, local_cluster: StubApiServer
) -> None:
    pytester.makepyfile(test_free="def test_free():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:randomly", timeout=120)
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if line.startswith("harness")]


def test_the_header_says_why_there_is_no_cluster(
    pytester: pytest.Pytester, kubectl_standin: KubectlStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    kubectl_standin.set_current_context(None)
    pytester.makepyfile("import pytest\n\n@pytest.mark.cluster\ndef test_c():\n    pass\n")
    result = pytester.runpytest("--target", "cluster")  # auto would pick the stack twin when there is no cluster
    result.stdout.fnmatch_lines(
        [
            f"harness: cluster specs will be skipped: no cluster: no kubeconfig found: kubectl looked at "
            f"{tmp_path}/.kube/config (its default)*",
        ]
    )


def test_deselecting_cluster_specs_touches_no_kube_context(
    pytester: pytest.Pytester, kubectl_standin: KubectlStandIn
) -> None:
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.cluster\ndef test_c(kube):\n    pass\n\ndef test_free():\n    pass\n"
    )
    result = pytester.runpytest("-m", "not cluster")
    result.assert_outcomes(passed=1, deselected=1)
    said = [line for line in result.stdout.lines if not line.startswith("plugins:")]
    assert not [line for line in said if "harness" in line or "stack target" in line]
    assert kubectl_standin.argvs() == []


def test_the_refusal_picks_an_allowed_context_the_kubeconfig_has(
    pytester: pytest.Pytester, local_cluster: StubApiServer, kubectl_standin: KubectlStandIn
) -> None:
    kubectl_standin.set_current_context("gke_prod_europe")
    pytester.makepyfile("import pytest\n\n@pytest.mark.cluster\ndef test_c(kube):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*Fix: use an allowed context your kubeconfig has (minikube): `kubectl config use-context minikube`, "
            "or for this run only `pytest --kube-context minikube`*"
        ]
    )


FIVE_CLUSTER_SPECS = """
import pytest

@pytest.mark.cluster
@pytest.mark.parametrize("i", range(5))
def test_c(kube, i):
    pass
"""


@pytest.mark.parametrize("how", [("-p", "no:xdist"), ("-n", "2")], ids=["in-process", "xdist"])
def test_a_refused_context_gives_its_reason_once_and_each_spec_one_line(
    pytester: pytest.Pytester, kubectl_standin: KubectlStandIn, how: tuple[str, str]
) -> None:
    kubectl_standin.set_current_context("gke_prod_europe")
    pytester.makepyfile(FIVE_CLUSTER_SPECS)
    args = ("-rE", "-p", "no:randomly", "--target", "cluster", *how)
    # xdist starts worker processes either way: its controller runs in a process of its own so its workers and their
    # reports stay apart from this worker's; the run without xdist runs in this process.
    result = pytester.runpytest_subprocess(*args, timeout=120) if "-n" in how else pytester.runpytest(*args)
    result.assert_outcomes(errors=5)
    out = result.stdout.lines
    whole = [
        line for line in out if "to allow another local cluster, add it to [tool.harness] allowed_contexts" in line
    ]
    assert len(whole) == 1  # the reason and the fix, once
    assert whole[0].startswith("refusing kube context 'gke_prod_europe': the harness may only touch minikube")
    errors = [line for line in out if line.startswith("kube context guard: ")]  # each spec's set-up error
    assert len(errors) == 5
    assert set(errors) == {
        "kube context guard: refusing kube context 'gke_prod_europe' "
        "(reason and fix once, under 'cluster specs not run' at the end)"
    }
    heading = next(i for i, line in enumerate(out) if "cluster specs not run (5): the kube context guard" in line)
    assert out[heading + 1] == whole[0]
    assert sorted(line.strip() for line in out[heading + 2 : heading + 7]) == [
        f"test_a_refused_context_gives_its_reason_once_and_each_spec_one_line.py::test_c[{i}]" for i in range(5)
    ]


OVERLAP_SPECS = """
import json, os, time
import pytest

def _record(kind, started, ended):
    with open(os.environ["OVERLAP_LOG"], "a") as log:
        log.write(json.dumps({"kind": kind, "start": started, "end": ended,
                              "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}) + "\\n")

@pytest.fixture
def stamp(request):
    kind = "disruptive" if request.node.get_closest_marker("disruptive") else (
        "cluster" if request.node.get_closest_marker("cluster") else "free")
    started = time.monotonic()
    yield
    _record(kind, started, time.monotonic())

@pytest.mark.cluster
@pytest.mark.disruptive
@pytest.mark.parametrize("i", range(2))
def test_restart(kube, stamp, i):
    time.sleep(0.3)

@pytest.mark.cluster
@pytest.mark.parametrize("i", range(3))
def test_read(kube, stamp, i):
    time.sleep(0.2)

@pytest.mark.parametrize("i", range(8))
def test_free(stamp, i):
    time.sleep(0.1)
"""


@pytest.mark.parametrize("workers, dist", [("2", "load"), ("4", "load"), ("4", "loadgroup")])
def test_cluster_specs_never_overlap_under_xdist(
    pytester: pytest.Pytester,
    local_cluster: StubApiServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workers: str,
    dist: str,
) -> None:
    log = tmp_path / "overlap.jsonl"
    monkeypatch.setenv("OVERLAP_LOG", str(log))
    pytester.makepyfile(OVERLAP_SPECS)
    result = pytester.runpytest_subprocess("-n", workers, "--dist", dist, "-p", "no:randomly", timeout=240)
    result.assert_outcomes(passed=13)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    cluster = [r for r in runs if r["kind"] != "free"]
    assert len(cluster) == 5
    for a in cluster:
        for b in cluster:
            if a is not b and a["kind"] == "disruptive":
                assert a["end"] <= b["start"] or b["end"] <= a["start"], f"disruptive {a} overlapped {b}"
            if a is not b:
                assert a["end"] <= b["start"] or b["end"] <= a["start"], f"cluster specs {a} and {b} overlapped"
    if dist == "loadgroup":  # the cluster group goes to one worker; the rest spread over the others
        cluster_workers = {r["worker"] for r in cluster}
        assert len(cluster_workers) == 1
        free_workers = {r["worker"] for r in runs if r["kind"] == "free"}
        assert len(free_workers) >= 2, f"cluster-free specs all ran on {free_workers}"


def test_a_cluster_spec_that_cannot_get_the_lock_in_time_says_who_holds_it(
    pytester: pytest.Pytester, local_cluster: StubApiServer, tmp_path: Path
) -> None:
    lock = tmp_path / "harness-state" / "cluster-minikube.lock"
    lock.parent.mkdir(parents=True)
    holder = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        os.write(holder, json.dumps({"pid": 4242, "nodeid": "specs/x.py::test_restart", "since": time.time()}).encode())
        pytester.makepyfile("import pytest\n\n@pytest.mark.cluster\ndef test_c(kube):\n    pass\n")
        result = pytester.runpytest("--cluster-lock-timeout=0.5")
    finally:
        os.close(holder)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cluster lock * still held after 0.5s by pid 4242 (specs/x.py::test_restart*"])


FUNC_ONLY_SPEC = """
import time
import pytest
from harness import WaitTimeout, wait_for_sync

@pytest.fixture
def slow_set_up():
    time.sleep(3.5)

@pytest.mark.timeout(5{marker_args})
def test_body_keeps_its_budget(slow_set_up):
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("a rollout", lambda: None, timeout=1.0, interval=0.1)
    print("WAIT MESSAGE:", str(caught.value).replace("\\n", " / "))
"""


@pytest.mark.parametrize("where", ["marker", "ini"])
def test_a_func_only_timer_gives_the_body_its_whole_budget(pytester: pytest.Pytester, where: str) -> None:
    pytester.makepyfile(FUNC_ONLY_SPEC.format(marker_args=", func_only=True" if where == "marker" else ""))
    if where == "ini":
        pytester.makeini("[pytest]\ntimeout_func_only = true\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    message = next(line for line in result.stdout.lines if "WAIT MESSAGE:" in line)
    # Charged to the body, the 3.5 s set-up would clamp the 1 s budget (5 s less 3.5 s less 1 s for teardown: under 1 s,
    # less still on a slow machine); the body's own 5 s leave 3 s of slack for a loaded machine.
    assert "timed out after 1.0s waiting for a rollout" in message
    assert "budget clamped" not in message


def test_a_pytest_timeout_without_its_timer_hooks_is_a_usage_error() -> None:
    config = SimpleNamespace(
        pluginmanager=SimpleNamespace(hasplugin=lambda name: name == "timeout"), hook=SimpleNamespace()
    )
    with pytest.raises(pytest.UsageError, match="upgrade pytest-timeout"):
        _require_timer_hooks(config)  # type: ignore[arg-type]
    with_hooks = SimpleNamespace(
        pluginmanager=config.pluginmanager, hook=SimpleNamespace(pytest_timeout_set_timer=None)
    )
    _require_timer_hooks(with_hooks)  # type: ignore[arg-type]


GREEN_AND_RED = """
import pytest
from harness import WaitTimeout, wait_for_sync

def test_green_with_an_expected_timeout():
    with pytest.raises(WaitTimeout):
        wait_for_sync("an expected timeout", lambda: None, timeout=0.2, interval=0.05)

def test_red():
    wait_for_sync("a wait that fails the spec", lambda: None, timeout=0.2, interval=0.05)
"""


def test_the_wait_summary_lists_failed_specs_unless_asked_for_all(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(GREEN_AND_RED)
    quiet = pytester.runpytest("-p", "no:randomly")
    quiet.assert_outcomes(passed=1, failed=1)
    assert any("a wait that fails the spec" in line for line in quiet.stdout.lines)
    assert not any("an expected timeout" in line for line in quiet.stdout.lines)
    everything = pytester.runpytest("-p", "no:randomly", "--harness-waits=all")
    assert any(
        re.search(r"test_green_with_an_expected_timeout: timeout .* an expected timeout", line)
        for line in everything.stdout.lines
    )


def test_a_failed_wait_reads_in_one_screen_without_harness_frames(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "from harness import wait_for_sync\n\n"
        "def test_red():\n"
        "    wait_for_sync('a deployment to be Available', lambda: None, timeout=0.3, interval=0.05)\n"
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    failure = result.stdout.str().split("= FAILURES =", 1)[1].split("short test summary", 1)[0]
    assert "harness/waiting.py" not in failure
    assert "anyio" not in failure
    assert "asyncio" not in failure
    assert "wait_for_sync('a deployment to be Available'" in failure  # the spec's own line
    assert "timed out after 0.3s waiting for a deployment to be Available" in failure
    assert len(failure.splitlines()) < 25


def test_no_cluster_lock_file_is_left_when_the_run_ends(
    pytester: pytest.Pytester, local_cluster: StubApiServer, kubectl_standin: KubectlStandIn
) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.cluster\ndef test_c(kube):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    state = Path(os.environ["HARNESS_STATE_DIR"])
    assert state.is_dir()  # the run used it
    assert not list(state.glob("cluster-*.lock"))  # removed by its holder as it let go
