"""Guard specs for the pytest plugin: cluster specs skip or fail by the guard's verdict; waits are reported."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.ids import FIRST, LAST, unique_issue_number

CLUSTER_SPEC = """
import pytest

@pytest.mark.cluster
def test_needs_the_cluster(kube):
    kube.kubectl("get", "pods")

def test_cluster_free():
    pass
"""

WAITING_SPEC = """
import pytest
from harness import wait_for_sync, WaitTimeout

def test_waits():
    assert wait_for_sync("the answer", lambda: 42, timeout=1.0) == 42
    with pytest.raises(WaitTimeout):
        wait_for_sync("a deploy that never rolls out", lambda: None, timeout=0.2, interval=0.05)
"""


def test_cluster_specs_skip_with_one_line_reason_when_there_is_no_context(
    pytester: pytest.Pytester, kubectl_standin, empty_kubeconfig: Path
) -> None:
    kubectl_standin.set_current_context(None)
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("-rs", "--target", "cluster")  # auto would pick the stack twin (specs/helpers)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.re_match_lines(
        [r"SKIPPED \[1\] .*no cluster: no current kube context \(error: current-context is not set\).*"]
    )
    result.stdout.fnmatch_lines(
        ["*cluster specs skipped (1)*", "*::test_needs_the_cluster: no cluster: no current kube context*"]
    )


def test_a_requested_context_that_does_not_exist_fails_with_its_close_matches(
    pytester: pytest.Pytester, kubectl_standin
) -> None:
    # A skip here would leave a CI job that tested nothing green: a context named on purpose must exist.
    kubectl_standin.set_current_context(None).set_contexts("kind-shop", "minikube-old")
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("-rs", "--kube-context", "minikube")  # allowed, and not there
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*context 'minikube' is not in the kubeconfig: did you mean 'minikube-old'? (its contexts: kind-shop, "
            "minikube-old; *). Fix: pass --kube-context with a context that exists, or create*"
        ]
    )


def test_a_current_context_the_kubeconfig_does_not_define_skips_naming_the_close_matches(
    pytester: pytest.Pytester, kubectl_standin
) -> None:
    # Nobody asked for it: like no current context at all, the cluster specs skip, saying why and what is there.
    kubectl_standin.set_current_context("minikube").set_contexts("minikube-old")
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("-rs", "--target", "cluster")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*no cluster: context 'minikube' is not in the kubeconfig: did you mean 'minikube-old'?*"]
    )


def test_cluster_specs_skip_when_kubectl_is_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("-rs", "--target", "cluster")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no cluster: kubectl not found*"])


def test_cluster_specs_fail_before_touching_anything_on_a_foreign_context(
    pytester: pytest.Pytester, kubectl_standin
) -> None:
    kubectl_standin.set_current_context("gke_prod_europe")
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("--target", "cluster")
    result.assert_outcomes(passed=1, errors=1)  # refused at setup, before the test body or any fixture runs
    result.stdout.fnmatch_lines(
        ["*refusing kube context 'gke_prod_europe'*create a local cluster whose context is allowed: `minikube start`*"]
    )
    assert kubectl_standin.argvs() == [["config", "current-context"]]


def test_kube_context_option_is_guarded_too(pytester: pytest.Pytester, kubectl_standin) -> None:
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("--kube-context", "docker-desktop")
    result.assert_outcomes(passed=1, errors=1)  # refused at setup, before the test body or any fixture runs
    assert kubectl_standin.argvs() == []


def test_cluster_specs_run_pinned_on_an_allowed_context(
    pytester: pytest.Pytester, kubectl_standin, local_cluster
) -> None:
    kubectl_standin.answer("get", "pods", stdout="No resources found\n")
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("--namespace", "e2e-ns")
    result.assert_outcomes(passed=2)
    assert kubectl_standin.argvs()[-1] == ["--context", "minikube", "-n", "e2e-ns", "get", "pods"]


def test_waits_are_listed_in_the_terminal_summary_and_junit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(WAITING_SPEC)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(f"--junitxml={junit}", "--harness-waits=all")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*harness waits (every spec)*",
            "*test_waits: ok * 1 attempt (0 hung, 0 failed)  the answer",
            "*test_waits: timeout * attempts (0 hung, 0 failed)  a deploy that never rolls out",
        ]
    )
    properties = {p.get("name"): p.get("value", "") for p in ET.parse(junit).iter("property")}
    assert '"what": "the answer"' in properties["harness.wait.0"]
    assert '"outcome": "timeout"' in properties["harness.wait.1"]


def test_unique_issue_numbers_are_distinct_across_processes(tmp_path: Path) -> None:
    state = tmp_path / "issue-numbers"
    script = (
        "import sys; from pathlib import Path; from harness.ids import unique_issue_number as u;"
        "print(' '.join(str(u(Path(sys.argv[1]))) for _ in range(40)))"
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(state)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    numbers: list[int] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0
        numbers += [int(n) for n in out.split()]
    numbers += [unique_issue_number(state) for _ in range(10)]
    assert len(numbers) == 170 == len(set(numbers))
    assert all(FIRST <= n <= LAST for n in numbers)


def test_unique_issue_numbers_wrap_inside_the_range(tmp_path: Path) -> None:
    state = tmp_path / "issue-numbers"
    state.write_text(str(LAST))
    assert [unique_issue_number(state), unique_issue_number(state)] == [LAST, FIRST]
    state.write_text("garbage")
    assert FIRST <= unique_issue_number(state) <= LAST


def test_a_child_left_running_fails_the_session_and_is_killed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys
        from harness import process

        def test_leaks_a_child():
            proc = process.spawn([sys.executable, "-c", "import time; time.sleep(60)"])
            open("leaked.pid", "w").write(str(proc.pid))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*harness leak audit: child processes outlived their tests and were killed now: pid *time.sleep(60)*"]
    )
    from harness.process import group_alive

    assert not group_alive(int((pytester.path / "leaked.pid").read_text()))


def test_unique_issue_numbers_give_up_on_a_held_lock_within_their_bound(tmp_path: Path) -> None:
    import fcntl
    import os

    state = tmp_path / "issue-numbers"
    holder = os.open(tmp_path / "issue-numbers.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(TimeoutError, match="could not lock"):
            unique_issue_number(state, lock_timeout=0.2)
    finally:
        os.close(holder)
    assert FIRST <= unique_issue_number(state) <= LAST


def test_ctrl_c_names_the_spec_and_the_wait_it_interrupted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner="""
import os, signal
from harness import wait_for_sync

signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal, even where SIGINT came in ignored (`&`)

def test_slow_rollout():
    calls = []
    def probe():
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
        return None
    wait_for_sync("deployment/web to roll out", probe, timeout=60, interval=0.05)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    result.stdout.fnmatch_lines(
        [
            "*interrupted while waiting (1)*",
            "test_inner.py::test_slow_rollout: waiting for deployment/web to roll out: * of 60.0s, * attempt*",
        ]
    )


def test_specs_outside_the_repository_load_the_plugin_without_an_assert_rewrite_warning(
    pytester: pytest.Pytester,
) -> None:
    # pytester's directory is outside the repository, so `harness` is found only through the installed package (as
    # in a user's project), not on sys.path: a plugin module the entry point imported before pytest could mark it
    # for rewriting warned "Module already imported so cannot be rewritten" on every run.
    assert not Path.cwd().is_relative_to(Path(__file__).resolve().parents[2])
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-W", "error::pytest.PytestAssertRewriteWarning")
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.stdout.lines + result.stderr.lines)
    assert "PytestAssertRewriteWarning" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


UNMARKED_SPEC = """
def test_uses_the_cluster_unmarked(kube):
    kube.kubectl("get", "pods")

def test_cluster_free():
    pass
"""


def test_a_spec_using_the_kube_fixture_is_a_cluster_spec_marked_or_not(
    pytester: pytest.Pytester, kubectl_standin, empty_kubeconfig: Path
) -> None:
    kubectl_standin.set_current_context(None)
    pytester.makepyfile(UNMARKED_SPEC)
    result = pytester.runpytest("-rs", "--target", "cluster")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["harness: cluster specs will be skipped: no cluster: *", "*cluster specs skipped (1)*"]
    )
    deselected = pytester.runpytest("-m", "not cluster", "--target", "cluster")
    deselected.assert_outcomes(passed=1, deselected=1)  # `-m` reads the marker it was given


@pytest.mark.parametrize("why", ["no context", "refused context"])
def test_a_run_whose_cluster_specs_never_reached_a_cluster_leaves_no_folder_or_report(
    pytester: pytest.Pytester, kubectl_standin, empty_kubeconfig: Path, why: str
) -> None:
    kubectl_standin.set_current_context(None if why == "no context" else "gke_prod_europe")
    pytester.makepyfile(CLUSTER_SPEC)
    result = pytester.runpytest("--target", "cluster", "--artifacts", str(pytester.path / "art"))
    result.assert_outcomes(passed=1, **({"skipped": 1} if why == "no context" else {"errors": 1}))
    assert not (pytester.path / "art").exists()
    assert "harness report:" not in result.stdout.str()
