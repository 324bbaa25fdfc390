"""Cluster specs split over several targets, in real pytest-xdist runs of a small two-module project.

Each inner run sees the ``local_cluster`` stand-in API server (specs/guard/conftest.py) under two allowed contexts,
``minikube`` and ``kind-b``, and a durations file that makes ``test_long.py`` the long module. Each cluster spec
records which worker ran it, against which context, and each module-scoped fixture records that it ran. No real
cluster is involved. The split itself (LPT, unrecorded specs, the file's merge) is specified in
specs/guard/test_shards.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.apiserver import StubApiServer
from harness.testing.standin import KubectlStandIn

PROJECT = '[tool.harness]\nallowed_contexts = ["minikube", "kind-*"]\nnamespace = "controller-agent"\n'

RECORDING = """
import json, os
import pytest

def record(**fields):
    with open(os.environ["SHARD_LOG"], "a") as log:
        log.write(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), **fields}) + "\\n")
"""

LONG = """
import pytest
from conftest import record

@pytest.fixture(scope="module")
def prepared():
    record(fixture="test_long.py")

@pytest.mark.cluster
@pytest.mark.parametrize("i", range(2))
def test_long(kube, prepared, i):
    record(module="test_long.py", context=kube.context)
"""

SHORT = """
import pytest
from conftest import record

@pytest.fixture(scope="module")
def prepared():
    record(fixture="test_short.py")

@pytest.mark.cluster
@pytest.mark.parametrize("i", range(3))
def test_short(kube, prepared, i):
    record(module="test_short.py", context=kube.context)

@pytest.mark.parametrize("i", range(4))
def test_free(i):
    pass
"""

RECORDED = {
    "test_long.py::test_long[0]": 40.0,
    "test_long.py::test_long[1]": 35.0,
    "test_short.py::test_short[0]": 5.0,
    "test_short.py::test_short[1]": 3.0,
    "test_other.py::test_kept": 9.0,  # a spec this run does not collect: its entry stays
}


@pytest.fixture
def two_contexts(local_cluster: StubApiServer, kubectl_standin: KubectlStandIn, tmp_path: Path) -> Path:
    """The stand-in API server under two contexts, both allowed by the inner project; returns the log's path."""
    kubeconfig = tmp_path / "kubeconfig"  # where local_cluster wrote it (context minikube), as KUBECONFIG
    config = json.loads(kubeconfig.read_text())
    config["contexts"].append({"name": "kind-b", "context": dict(config["contexts"][0]["context"])})
    kubeconfig.write_text(json.dumps(config))
    kubectl_standin.set_contexts("minikube", "kind-b")
    return tmp_path / "shards.jsonl"


def _project(pytester: pytest.Pytester, log: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHARD_LOG", str(log))
    pytester.makefile(".toml", pyproject=PROJECT)
    pytester.makeconftest(RECORDING)
    pytester.makepyfile(test_long=LONG, test_short=SHORT)
    durations = pytester.path / ".harness-durations.json"
    durations.write_text(json.dumps(RECORDED))
    return durations


def _runs(log: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_two_contexts_two_shards_each_on_its_own_worker_and_context(
    pytester: pytest.Pytester, two_contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    durations = _project(pytester, two_contexts, monkeypatch)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "-p", "no:randomly", "--kube-context", "minikube", "--kube-context", "kind-b",
        timeout=240,
    )  # fmt: skip
    result.assert_outcomes(passed=9)
    runs = _runs(two_contexts)
    specs = [r for r in runs if "module" in r]
    where = {
        module: {(r["worker"], r["context"]) for r in specs if r["module"] == module}
        for module in ("test_long.py", "test_short.py")
    }
    # The long module (75 s recorded) is shard 0, on worker 0 and the first context; the short one (8 s recorded, one
    # more counted as the median of the recorded ones, 20 s) is shard 1, on worker 1 and the second context. Each
    # module on one worker only.
    assert where == {"test_long.py": {("gw0", "minikube")}, "test_short.py": {("gw1", "kind-b")}}
    fixtures = sorted(r["fixture"] for r in runs if "fixture" in r)
    assert fixtures == ["test_long.py", "test_short.py"]  # each module-scoped fixture once
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs use kube context 'minikube', API server *, namespace 'controller-agent' (kubectl "
            "*) [[]gw0]",
            "harness: cluster specs use kube context 'kind-b', API server *, namespace 'controller-agent' (kubectl "
            "*) [[]gw1]",
            "harness: cluster specs: 2 shards over kube contexts 'minikube', 'kind-b' (by recorded duration: 75 s, "
            "28 s; 1 with no record counted as 20 s each)",
            "*cluster shards*",
            "cluster specs: 2 shards over kube contexts 'minikube', 'kind-b' (by recorded duration: 75 s, 28 s; 1 "
            "with no record counted as 20 s each); took * s, * s",
            "durations of 5 cluster spec(s) merged into .harness-durations.json",
        ]
    )
    # Merged from the workers' reports: the five cluster specs measured now (each well under its old record), the
    # entry of a spec not run kept, no cluster-free spec, no group suffix.
    after = json.loads(durations.read_text())
    assert sorted(after) == sorted(
        [*(f"test_long.py::test_long[{i}]" for i in range(2)), *(f"test_short.py::test_short[{i}]" for i in range(3))]
        + ["test_other.py::test_kept"]
    )
    assert after["test_other.py::test_kept"] == 9.0
    assert after["test_long.py::test_long[0]"] < 40.0


def test_a_refused_context_fails_the_cluster_specs_of_its_shard_with_the_guards_line(
    pytester: pytest.Pytester, two_contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, two_contexts, monkeypatch)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "-p", "no:randomly", "-rE",
        "--kube-context", "minikube", "--kube-context", "gke_prod_europe",
        timeout=240,
    )  # fmt: skip
    result.assert_outcomes(passed=6, errors=3)  # the long shard and the cluster-free specs pass
    out = result.stdout.lines
    errors = [line for line in out if line.startswith("kube context guard: ")]
    line = (
        "kube context guard: refusing kube context 'gke_prod_europe' (reason and fix once, under 'cluster specs not "
        "run' at the end)"
    )
    assert errors == [line] * 3
    heading = next(i for i, line in enumerate(out) if "cluster specs not run (3): the kube context guard" in line)
    assert out[heading + 1].startswith("refusing kube context 'gke_prod_europe': the harness may only touch minikube")
    assert sorted(line.strip() for line in out[heading + 2 : heading + 5]) == [
        f"test_short.py::test_short[{i}]@cluster-1" for i in range(3)
    ]
    assert {r["context"] for r in _runs(two_contexts) if "module" in r} == {"minikube"}


def test_one_kube_context_keeps_one_shard_on_one_worker_as_before(
    pytester: pytest.Pytester, two_contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, two_contexts, monkeypatch)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "-p", "no:randomly", "--kube-context", "kind-b", timeout=240
    )
    result.assert_outcomes(passed=9)
    specs = [r for r in _runs(two_contexts) if "module" in r]
    assert len({r["worker"] for r in specs}) == 1
    assert {r["context"] for r in specs} == {"kind-b"}
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs use kube context 'kind-b', API server *",
            "harness: cluster specs: one shard, one at a time on one worker: one kube context (by recorded duration: "
            "103 s; 1 with no record *",
        ]
    )


def test_with_fewer_workers_than_contexts_the_header_names_the_contexts_no_worker_takes(
    pytester: pytest.Pytester, two_contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, two_contexts, monkeypatch)
    result = pytester.runpytest_subprocess(
        "-n", "1", "--dist", "loadgroup", "-p", "no:randomly", "--kube-context", "minikube", "--kube-context", "kind-b",
        timeout=240,
    )  # fmt: skip
    result.assert_outcomes(passed=9)
    assert {r["context"] for r in _runs(two_contexts) if "module" in r} == {"minikube"}
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs use kube context 'minikube'*",
            "harness: --kube-context 'kind-b' not used: 1 worker(s) take the first 1 context(s)",
            "harness: cluster specs: one shard, one at a time in one worker (-n 1)*",
        ]
    )


def test_two_contexts_under_dist_load_say_the_specs_spread_over_both(
    pytester: pytest.Pytester, two_contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Was: "one shard, on any of the 2 workers", while the workers held two clusters and specs ran on both.
    _project(pytester, two_contexts, monkeypatch)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "load", "-p", "no:randomly", "--kube-context", "minikube", "--kube-context", "kind-b",
        timeout=240,
    )  # fmt: skip
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs: not split, spread over kube contexts 'minikube', 'kind-b' by --dist load: a "
            "module's specs may run on different targets (--dist loadgroup gives each shard one target) (*"
        ]
    )


def test_without_xdist_the_first_context_is_used_and_the_others_named_as_unused(
    pytester: pytest.Pytester, two_contexts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, two_contexts, monkeypatch)
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", "-p", "no:randomly", "--kube-context", "minikube", "--kube-context", "kind-b", timeout=240
    )
    result.assert_outcomes(passed=9)
    assert {r["context"] for r in _runs(two_contexts) if "module" in r} == {"minikube"}
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs use kube context 'minikube'*",
            "harness: --kube-context 'kind-b' not used: the cluster specs run in one process here*",
            "harness: cluster specs: one shard, one at a time in one process (-n 0 or no xdist)*",
        ]
    )


TWIN = """
'''A twin of another stack, as the harness sees one: its own context, on the stand-in API server.'''
import json, os
from pathlib import Path

from harness.kube import Kube


class Twin:
    def __init__(self):
        self.context = f"twin-{os.getpid()}"  # one per process, as a real twin's
        kubeconfig = json.loads(Path(os.environ["KUBECONFIG"]).read_text())
        kubeconfig["contexts"][0]["name"] = kubeconfig["current-context"] = self.context
        path = Path(os.environ["TWIN_DIR"]) / f"{self.context}.kubeconfig"
        path.write_text(json.dumps(kubeconfig))
        self.kube = Kube(self.context, "controller-agent", allowed=(self.context,),
                         kubectl_path=os.environ["TWIN_KUBECTL"], kubeconfig=str(path))
        self.started = False

    def start(self):
        self.started = True

    def stop(self):
        pass

    def report(self):
        return {"context": self.context} if self.started else None

    def header(self):
        return [f"harness: cluster specs use the tiny twin this process starts ({self.context})"]

    def describe(self, reports):
        return f"{len(reports)} twin(s) started"


def make_stand_in(config):
    return Twin()
"""


def test_against_the_twin_each_worker_runs_one_shard_on_its_own_twin(
    pytester: pytest.Pytester,
    local_cluster: StubApiServer,
    kubectl_standin: KubectlStandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "shards.jsonl"
    _project(pytester, log, monkeypatch)
    pytester.makefile(".toml", pyproject=PROJECT + 'twin = "tiny_twin"\n')
    pytester.makepyfile(tiny_twin=TWIN)
    kubectl_standin.set_current_context(None)  # no cluster: the target is the twin
    monkeypatch.setenv("TWIN_DIR", str(tmp_path))
    monkeypatch.setenv("TWIN_KUBECTL", kubectl_standin.path)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:randomly", timeout=240)
    result.assert_outcomes(passed=9)
    specs = [r for r in _runs(log) if "module" in r]
    workers = {
        module: {r["worker"] for r in specs if r["module"] == module} for module in ("test_long.py", "test_short.py")
    }
    assert workers == {"test_long.py": {"gw0"}, "test_short.py": {"gw1"}}
    contexts = {r["worker"]: r["context"] for r in specs}
    assert len(set(contexts.values())) == 2  # each worker's own twin
    result.stdout.fnmatch_lines(
        [
            "target: twin (*)",  # the same in both workers: once
            f"harness: cluster specs use the tiny twin this process starts ({contexts['gw0']}) [[]gw0]",
            f"harness: cluster specs use the tiny twin this process starts ({contexts['gw1']}) [[]gw1]",
            "harness: cluster specs: 2 shards over 2 twins, one per worker (by recorded duration: 75 s, 28 s; *",
            "*target: twin (*); 2 twin(s) started",
        ]
    )


def test_a_project_that_never_asked_for_a_durations_file_gets_none(
    pytester: pytest.Pytester,
    local_cluster: StubApiServer,
    kubectl_standin: KubectlStandIn,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _project(pytester, tmp_path / "shards.jsonl", monkeypatch).unlink()  # no file, no durations_file key
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--kube-context", "minikube", timeout=240)
    assert result.ret == 0, result.stdout.str()
    assert not (pytester.path / ".harness-durations.json").exists()
    result.stdout.fnmatch_lines(["durations not recorded: no .harness-durations.json (create it, or set *"])


def test_a_shard_of_a_job_leaves_the_durations_file_as_it_is(
    pytester: pytest.Pytester,
    local_cluster: StubApiServer,
    kubectl_standin: KubectlStandIn,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # The other shards of the Job may still be splitting by the file: a merge now could move a spec between shards.
    durations = _project(pytester, tmp_path / "shards.jsonl", monkeypatch)
    before = durations.read_text()
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--kube-context", "minikube", "--job-shard", "0/1", timeout=240
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    assert durations.read_text() == before
    result.stdout.fnmatch_lines(["durations not recorded: a shard of a Job leaves .harness-durations.json as it is"])
